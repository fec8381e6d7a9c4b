"""'failsafe compare' before anything runs: the two releases, the cells on both, bad input in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from failsafe.atlas.grid import select
from failsafe.cli.compare import modes_of, with_modes
from failsafe.errors import UserError
from tests.helpers import assert_one_line_error, run_cli


def test_each_selection_runs_on_both_releases() -> None:
    modes = modes_of("4.3.1,4.4.0")
    assert modes == ("kraft-4.3.1", "kraft-4.4.0")
    cells = select(with_modes(("fault=kill;profile=defaults;client=librdkafka",), modes))
    assert [c.mode for c in cells] == ["kraft-4.3.1", "kraft-4.4.0"]
    assert {(c.fault, c.profile, c.client) for c in cells} == {("kill", "defaults", "librdkafka")}
    # Without --cells: every fault under every profile with librdkafka, on each release.
    assert len(select(with_modes((), modes))) == 7 * 3 * 2


@pytest.mark.parametrize(
    ("versions", "fragment"),
    [("4.3.1", "two different Kafka releases"), ("4.4.0,4.4.0", "two different"), ("4.3.1,9.9.9", "no KRaft mode")],
)
def test_two_releases_the_atlas_has(versions: str, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment):
        modes_of(versions)


def test_the_mode_is_compares_to_choose() -> None:
    with pytest.raises(UserError, match="names the mode"):
        with_modes(("fault=kill;mode=kraft-4.3.1",), ("kraft-4.3.1", "kraft-4.4.0"))
    with pytest.raises(UserError, match="no axis"):
        with_modes(("flavour=kill",), ("kraft-4.3.1", "kraft-4.4.0"))


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_cli("compare", "--kafka", "4.3.1,5.0.0", "--plan", "--out", str(tmp_path / "c"))
    assert_one_line_error(result, "no KRaft mode of Kafka 5.0.0")
    assert not (tmp_path / "c").exists()
