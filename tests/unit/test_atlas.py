"""The failover atlas without a cluster: the --cells syntax, the default grid and its estimate, groups, resume with a
fake launcher, a cell's p50/p95 from results.json, atlas.html and the docs tables (docs/atlas.md)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from benchmarks.render_atlas import EMPTY, t_atlas_cells, t_atlas_unavailability

from failsafe.atlas.grid import (
    BUDGET_S,
    DEFAULT_RUNS,
    FULL_GRID,
    PROFILE_SET,
    Cell,
    parse_selection,
    run_estimate_s,
    select,
)
from failsafe.atlas.render import render_page, write_html
from failsafe.atlas.runner import Group, Plan, RunOutcome, atlas_exit_code, group_cells, run_atlas
from failsafe.atlas.store import Store, run_record, summarise
from failsafe.cli.main import main
from failsafe.errors import UserError

KILL = Cell("kill", "defaults", "librdkafka", "kraft-4.3.1")
# Run directories of the fake launcher: unique across invocations, as failsafe's time-stamped ones are.
RUN_NAMES = itertools.count()


def results(
    unavailable_ms: float | None = 1000.0,
    followed_ms: float | None = 900.0,
    new_leader_ms: float | None = 800.0,
    lost: int = 0,
    verdict: str | None = None,
    breakdown: dict | None = None,
    open_followed: int = 0,
) -> dict:
    verdict = verdict or ("INVALID" if lost else "VALID")
    delivery = {"valid": not lost, "counts": {"lost": lost, "lost-allowed": 0}, "violations": ["lost"] if lost else []}
    out = {
        "verdict": verdict,
        "valid": verdict == "VALID" if verdict != "UNKNOWN" else "unknown",
        "checkers": {
            "availability": {
                "valid": True,
                "max_unavailable_ms": unavailable_ms,
                "median_new_leader_ms": new_leader_ms,
                "stall_by_group": {
                    "led": {"max_stall_ms": 5.0},
                    "follower": {"max_stall_ms": followed_ms, "open": open_followed},
                },
            },
            "delivery": delivery,
        },
        "measurements": {"new_controller_ms": None},
    }
    if breakdown is not None:
        out["measurements"]["failover_breakdown"] = breakdown
    return out


# -- the --cells syntax ------------------------------------------------------------------------------------------------


def test_a_selection_is_every_combination_of_the_values_named() -> None:
    cells = select(["fault=kill,pause;profile=*;client=librdkafka;mode=kraft-4.3.1"])
    assert (
        len(cells) == 2 * 3
        and {c.fault for c in cells} == {"kill", "pause"}
        and {c.profile for c in cells} == {"defaults", "fast-failover", "durable"}
    )
    assert all(c.client == "librdkafka" and c.mode == "kraft-4.3.1" for c in cells)


def test_an_axis_left_out_is_all_of_it_and_selections_add_up() -> None:
    assert len(select(["fault=kill"])) == 3 * 2 * 4  # profiles × clients × modes
    both = select(["fault=kill;mode=kraft-4.3.1", "fault=kill,sigterm;mode=kraft-4.3.1;client=librdkafka"])
    assert len(both) == 6 + 3 and len(set(both)) == len(both)
    # In the grid's order whatever the order of the values.
    assert parse_selection(" mode = zookeeper-3.9.2 , kraft-4.3.1 ; fault=pause")["mode"] == (
        "kraft-4.3.1",
        "zookeeper-3.9.2",
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("fault=kil", "no fault 'kil'"),
        ("faults=kill", "no axis 'faults'"),
        ("fault=kill;fault=pause", "fault is given twice"),
        ("mode=", "mode has no value"),
        ("kill", "is not AXIS=VALUES"),
        ("", "is empty"),
        (" ; ", "is empty"),
    ],
)
def test_a_bad_selection_is_one_line_naming_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(UserError, match=re.escape(words)) as e:
        select([text])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "args",
    [["--cells", "fault=kil"], ["--cells", "client=java"], ["--full", "--cells", "fault=kill"], ["--repeat", "0"]],
)
def test_a_bad_selection_exits_2_with_one_line_and_starts_nothing(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["atlas", *args, "--out", str(tmp_path / "atlas")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "atlas").exists()


# -- the grid, its cells and the estimate ------------------------------------------------------------------------------


def test_the_default_grid_fits_three_hours(tmp_path: Path) -> None:
    cells = select([])
    plan = Plan(cells, DEFAULT_RUNS, Store(tmp_path))
    assert len(cells) == 26 and plan.runs_to_do() == 130 and len(plan.groups) == 5
    assert plan.estimate_s() <= BUDGET_S
    # The kill column across clients and modes, and all faults × profiles on KRaft 4.3.1 with librdkafka.
    assert {(c.client, c.mode) for c in cells if c.fault == "kill" and c.profile == "defaults"} == {
        (cl, m) for cl in ("librdkafka", "kafka-java") for m in ("kraft-4.3.1", "kraft-3.9.2", "zookeeper-3.9.2")
    }
    full = Plan(select([], full=True), DEFAULT_RUNS, Store(tmp_path))
    assert len(full.cells) == len(FULL_GRID) == 168 and full.runs_to_do() == 840 and full.estimate_s() > BUDGET_S


def test_the_plan_says_the_estimate_before_starting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["atlas", "--plan", "--out", str(tmp_path / "atlas")]) == 0
    out = capsys.readouterr().out
    assert "26 cells in 5 groups" in out and "130 runs to do on 5 clusters: estimate 1h24m" in out
    assert not (tmp_path / "atlas").exists()


def test_an_estimate_rests_on_the_scenarios_phases() -> None:
    zookeeper_kill = Cell("kill", "defaults", "librdkafka", "zookeeper-3.9.2")
    # broker-failover's [zookeeper] table: a 32 s chaos phase instead of 16.
    assert run_estimate_s(zookeeper_kill) - run_estimate_s(KILL) == pytest.approx(16)
    assert run_estimate_s(Cell("kill", "defaults", "kafka-java", "kraft-4.3.1")) > run_estimate_s(KILL)
    assert run_estimate_s(Cell("follower-cut-off", "defaults", "librdkafka", "kraft-4.3.1")) > run_estimate_s(KILL)


def test_a_cell_is_its_scenario_with_the_set_changes_of_its_values() -> None:
    assert KILL.scenario == "broker-failover" and KILL.overrides() == ()
    java = Cell("kill", "durable", "kafka-java", "kraft-4.3.1")
    assert java.overrides() == (
        'producers[*].driver="kafka-verifiable"',
        'consumers[*].driver="kafka-verifiable"',
        PROFILE_SET.format(profile="durable"),
    )
    assert Cell("controller-kill", "defaults", "librdkafka", "zookeeper-3.9.2").scenario == "controller-broker-failover"
    assert Cell("leader-isolated", "defaults", "librdkafka", "zookeeper-3.9.2").overrides() == (
        'cluster.mode="zookeeper"',
    )
    assert Cell("leader-isolated", "defaults", "librdkafka", "kraft-3.9.2").overrides() == ()


def test_every_defaults_cell_parses_and_its_group_gets_a_cluster_that_fits() -> None:
    from failsafe.atlas.launch import KafkaLauncher

    launcher = KafkaLauncher(Path("/nonexistent"), Path("/nonexistent"), None, None, lambda _: None, lambda _: None)
    for group in group_cells(select(["fault=kill;profile=defaults"])):
        spec = launcher.spec(group)
        assert spec.kafka_version == group.mode.rsplit("-", 1)[1]
        assert spec.mode == ("zookeeper" if group.mode.startswith("zookeeper") else "kraft")
        if spec.mode == "kraft":
            # controller-kill needs three: every KRaft group has them, even one of kill cells alone.
            assert spec.controllers == 3
    assert len(launcher.scenarios) == 2 * 7 * 4  # every defaults cell of the grid parsed (2 clients, 4 modes)


def test_every_profile_of_the_grid_is_one_this_tree_ships() -> None:
    from failsafe.atlas.launch import parse_cell

    for profile in ("defaults", "fast-failover", "durable"):
        parse_cell(Cell("kill", profile, "librdkafka", "kraft-4.3.1"))


# -- groups
# --------------------------------------------------------------------------------------------------------------


def test_cells_are_grouped_by_mode_and_profile_each_once() -> None:
    cells = select([])
    groups = group_cells(cells)
    assert [g.label for g in groups] == [
        "kraft-4.3.1 · defaults",
        "kraft-4.3.1 · fast-failover",
        "kraft-4.3.1 · durable",
        "kraft-3.9.2 · defaults",
        "zookeeper-3.9.2 · defaults",
    ]
    assert sorted((c for g in groups for c in g.cells), key=cells.index) == cells
    assert all(c.mode == g.mode and c.profile == g.profile for g in groups for c in g.cells)
    assert len(groups[0].cells) == 8  # seven faults with librdkafka and kill with Kafka's Java clients


# -- resume, with a launcher that runs nothing
# ----------------------------------------------------------------------------


class Died(BaseException):
    """The fake's stand-in for Ctrl-C: what an atlas killed in the middle of a run sees."""


class FakeLauncher:
    def __init__(
        self, die_after: int | None = None, fail: set[int] | None = None, broken: set[int] | None = None
    ) -> None:
        self.die_after, self.fail, self.broken = die_after, fail or set(), broken or set()
        self.runs: list[Cell] = []
        self.started: list[str] = []
        self.stopped: list[str] = []
        self.open = 0

    @contextmanager
    def cluster(self, group: Group) -> Iterator[FakeLauncher]:
        assert self.open == 0, "two clusters at once"
        self.open += 1
        self.started.append(group.label)
        try:
            yield self
        finally:
            self.open -= 1
            self.stopped.append(group.label)

    def run(self, cell: Cell, runs_root: Path) -> RunOutcome:
        n = len(self.runs) + 1
        if self.die_after is not None and n > self.die_after:
            raise Died
        self.runs.append(cell)
        run_dir = runs_root / cell.scenario / f"r{next(RUN_NAMES)}"
        run_dir.mkdir(parents=True)
        if n in self.fail:
            return RunOutcome(
                run_dir,
                None,
                1.0,
                error="WaitTimeout: the group never settled",
                broken="node 1 is down" if n in self.broken else None,
            )
        found = results(unavailable_ms=1000.0 * n)
        (run_dir / "results.json").write_text(json.dumps(found))
        return RunOutcome(run_dir, found, 2.0, broken="node 1 is down" if n in self.broken else None)


def _atlas(tmp_path: Path, launcher: FakeLauncher, runs: int = 3) -> tuple[Plan, list[str], int]:
    plan = Plan(
        select(["fault=kill,pause;profile=defaults,durable;client=librdkafka;mode=kraft-4.3.1"]),
        runs,
        Store(tmp_path / "atlas"),
    )
    said: list[str] = []
    code = run_atlas(plan, launcher, said.append, lambda _: None)
    return plan, said, code


def test_a_killed_atlas_goes_on_with_only_the_missing_runs(tmp_path: Path) -> None:
    first = FakeLauncher(die_after=5)
    with pytest.raises(Died):
        _atlas(tmp_path, first)
    assert first.started == first.stopped == ["kraft-4.3.1 · defaults"]  # the cluster is stopped on the way out
    store = Store(tmp_path / "atlas")
    kill, pause = (
        Cell("kill", "defaults", "librdkafka", "kraft-4.3.1"),
        Cell("pause", "defaults", "librdkafka", "kraft-4.3.1"),
    )
    assert len(store.runs(kill)) == 3 and len(store.runs(pause)) == 2

    plan = Plan(select(["fault=kill,pause;profile=defaults,durable;client=librdkafka;mode=kraft-4.3.1"]), 3, store)
    described = "\n".join(plan.describe())
    assert (
        "1 cell complete (skipped), 1 partial, 2 not started" in described
        and "pause · defaults · librdkafka · kraft-4.3.1: 2 of 3" in described
    )

    second = FakeLauncher()
    _, said, code = _atlas(tmp_path, second)
    assert len(second.runs) == 12 - 5 and kill not in second.runs and second.runs.count(pause) == 1
    assert second.started == ["kraft-4.3.1 · defaults", "kraft-4.3.1 · durable"]
    assert any("resuming, 2 of 3 runs stored, 1 to run" in line for line in said)
    assert code == 0 and all(len(store.runs(c)) == 3 for c in plan.cells)
    # Each run's directory is recorded relative to the atlas's directory, and each is a different run.
    dirs = [r["run_dir"] for c in plan.cells for r in store.runs(c)]
    assert len(set(dirs)) == 12 and all(d.startswith("runs/") and (tmp_path / "atlas" / d).is_dir() for d in dirs)

    third = FakeLauncher()
    _atlas(tmp_path, third)
    assert third.runs == [] and third.started == []  # a complete group starts no cluster
    more = FakeLauncher()
    _atlas(tmp_path, more, runs=4)
    assert len(more.runs) == 4 and len(more.started) == 2


def test_a_run_not_carried_out_is_kept_apart_and_run_again(tmp_path: Path) -> None:
    first = FakeLauncher(fail={2})
    plan, said, code = _atlas(tmp_path, first)
    kill = Cell("kill", "defaults", "librdkafka", "kraft-4.3.1")
    assert (
        code == 5
        and len(plan.store.runs(kill)) == 2
        and "the group never settled" in plan.store.errors(kill)[0]["error"]
    )
    assert any("ERROR" in line for line in said)
    second = FakeLauncher()
    _, _, code = _atlas(tmp_path, second)
    assert second.runs == [kill] and code == 0


def test_a_cluster_left_broken_ends_its_group_and_the_next_gets_a_new_one(tmp_path: Path) -> None:
    launcher = FakeLauncher(broken={1})
    plan, said, code = _atlas(tmp_path, launcher)
    assert launcher.started == ["kraft-4.3.1 · defaults", "kraft-4.3.1 · durable"] and len(launcher.runs) == 1 + 6
    assert code == 5 and any("node 1 is down" in line for line in said)
    pause = Cell("pause", "defaults", "librdkafka", "kraft-4.3.1")
    assert plan.store.runs(pause) == [] and "node 1 is down" in plan.store.errors(pause)[0]["error"]


def test_the_exit_code_is_the_worst_over_the_selected_cells(tmp_path: Path) -> None:
    store = Store(tmp_path)
    plan = Plan([KILL], 2, store)
    store.add_run(KILL, 2, tmp_path / "a", results(verdict="KNOWN"), 1.0)
    assert atlas_exit_code(plan) == 4
    store.add_run(KILL, 2, tmp_path / "b", results(lost=3, verdict="INVALID"), 1.0)
    assert atlas_exit_code(plan) == 1


def test_a_stored_cell_run_with_other_changes_is_not_mixed(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.add_run(KILL, 5, tmp_path / "a", results(), 1.0)
    data = json.loads(store.path(KILL).read_text())
    data["overrides"] = ["phases.chaos_s=5"]
    store.path(KILL).write_text(json.dumps(data))
    with pytest.raises(UserError, match="would not be of one cell"):
        Plan([KILL], 5, store)


# -- a cell's JSON
# ------------------------------------------------------------------------------------------------------


def test_a_cells_p50_and_p95_come_from_its_runs_results(tmp_path: Path) -> None:
    store = Store(tmp_path / "atlas")
    # Each run's partitions, pooled over the cell's runs: the percentiles are taken once, over every partition.
    breakdowns = [
        {
            "summary": {"detection_s": {"p50": 99.0}},
            "partitions": [{"detection_s": d, "election_s": 0.5}, {"detection_s": d + 0.5, "election_s": None}],
        }
        for d in (9.0, 8.0, 10.0)
    ]
    for i, (unavailable, followed, lost) in enumerate(
        [(1000, 900, 0), (5000, None, 0), (3000, 700, 2), (2000, 800, 0), (4000, 600, 0)]
    ):
        run_dir = tmp_path / "atlas" / "runs" / KILL.id / "broker-failover" / f"r{i}"
        run_dir.mkdir(parents=True)
        found = results(
            unavailable_ms=unavailable,
            followed_ms=followed,
            lost=lost,
            breakdown=breakdowns[i] if i < 3 else None,
            open_followed=1 if followed is None else 0,
        )
        (run_dir / "results.json").write_text(json.dumps(found))
        data = store.add_run(KILL, 5, run_dir, json.loads((run_dir / "results.json").read_text()), 50.0 + i)
    summary = data["summary"]
    assert summary["unavailable_ms"] == {"n": 5, "p50": 3000.0, "p95": 5000.0, "min": 1000.0, "max": 5000.0}
    assert summary["followed_stall_ms"]["n"] == 4 and summary["followed_stall_ms"]["p50"] == 750.0
    assert summary["followed_stall_open_runs"] == 1
    assert (
        summary["lost_acknowledged_total"] == 2
        and summary["runs_with_loss"] == 1
        and summary["lost_acknowledged"]["p95"] == 2
    )
    assert summary["verdicts"] == {"INVALID": 1, "VALID": 4} and summary["verdict"] == "INVALID"
    assert summary["anomalies"] == {"delivery.lost": 1}
    assert summary["failover_breakdown"]["detection_s"] == {"n": 6, "p50": 9.25, "p95": 10.5, "min": 8.0, "max": 10.5}
    assert (
        summary["failover_breakdown"]["election_s"]["n"] == 3 and summary["failover_breakdown"]["propagation_s"] is None
    )
    stored = json.loads(store.path(KILL).read_text())
    assert stored["key"] == KILL.key() and stored["scenario"] == "broker-failover" and stored["runs_wanted"] == 5
    assert (
        stored["runs"][0]["run_dir"] == f"runs/{KILL.id}/broker-failover/r0"
        and stored["runs"][3].get("failover_breakdown") is None
    )
    # A breakdown that could not be measured is no breakdown, and a run without measures counts in no spread.
    assert "failover_breakdown" not in run_record("r", results(breakdown={"error": "ValueError: x"}), 1.0)
    assert (
        summarise([run_record("r", results(unavailable_ms=None, followed_ms=None, new_leader_ms=None), 1.0)])[
            "unavailable_ms"
        ]
        is None
    )


# -- rendering
# ------------------------------------------------------------------------------------------------------------


def _stored_atlas(tmp_path: Path) -> tuple[Store, list[Cell]]:
    cells = select(
        [
            "fault=kill,pause;profile=defaults;client=*;mode=kraft-4.3.1",
            "fault=kill;profile=durable;mode=zookeeper-3.9.2;client=librdkafka",
        ]
    )
    store = Store(tmp_path / "atlas")
    for n, cell in enumerate(cells):
        for i in range(2):
            run_dir = store.runs_root(cell) / cell.scenario / f"r{i}"
            run_dir.mkdir(parents=True)
            store.add_run(
                cell,
                2,
                run_dir,
                results(unavailable_ms=1000.0 * (n + 1) + i, lost=1 if cell.fault == "pause" and i else 0),
                1.0,
            )
    return store, cells


def test_the_page_has_one_cell_per_grid_cell_linking_to_its_runs(tmp_path: Path) -> None:
    store, cells = _stored_atlas(tmp_path)
    page = write_html(store.out, store.all_cells()).read_text()
    maps = re.findall(r'<table class="heat" data-measure="([a-z_]+)">(.*?)</table>', page, re.DOTALL)
    assert [m for m, _ in maps] == ["unavailable_ms", "followed_stall_ms", "new_leader_ms", "lost_acknowledged"]
    for _, body in maps:
        assert sorted(re.findall(r'<td class="cell" data-cell="([^"]+)"', body)) == sorted(c.id for c in cells)
    links = set(re.findall(r'href="(runs/[^"]+/report\.html)"', page))
    assert links == {f"runs/{c.id}/{c.scenario}/r{i}/report.html" for c in cells for i in range(2)}
    assert all(f'id="cell-{c.id}"' in page for c in cells)
    assert "<script" not in page and render_page([]).count("No cell has a run yet") == 1


def test_the_docs_tables_are_rendered_from_the_stored_atlas(tmp_path: Path) -> None:
    store, cells = _stored_atlas(tmp_path)
    docs = tmp_path / "repo" / "docs" / "benchmarks"
    docs.mkdir(parents=True)
    (docs / "atlas.json").write_text(store.write_bundle().read_text())
    listed = t_atlas_cells(tmp_path / "repo")
    rows = [line for line in listed.splitlines() if line.startswith("| ") and not line.startswith("| fault")]
    assert len(rows) == len(cells) and "`docs/benchmarks/atlas.json`" in listed
    assert (
        "| pause | defaults | librdkafka | kraft-4.3.1 | 2/2 | INVALID 1, VALID 1 |" in listed
        and "**1** in 1 of 2 runs" in listed
    )
    matrix = t_atlas_unavailability(tmp_path / "repo")
    assert (
        "| fault | kraft-4.3.1 librdkafka defaults | kraft-4.3.1 kafka-java defaults | zookeeper-3.9.2 "
        "librdkafka durable |" in matrix
    )
    assert (
        "| kill | 1.00 / 1.00 | 2.00 / 2.00 | 3.00 / 3.00 |" in matrix
        and "| pause | 4.00 / 4.00 | 5.00 / 5.00 | · |" in matrix
    )
    (docs / "atlas.json").write_text(json.dumps({"format": 1, "cells": []}))
    assert t_atlas_cells(tmp_path / "repo").startswith(EMPTY) and t_atlas_unavailability(tmp_path / "repo").startswith(
        EMPTY
    )


# -- the command, and the real launcher's own parts, with nothing started
# -------------------------------------------------------


def test_the_command_stops_on_ctrl_c_saying_how_to_go_on_then_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import failsafe.atlas.launch as launch

    made: list[FakeLauncher] = []

    class CommandLauncher(FakeLauncher):
        def __init__(
            self,
            root: Path,
            out: Path,
            heap: str | None,
            base_port: int | None,
            event: object,
            status: object,
            inventory: object = None,
        ) -> None:
            super().__init__(die_after=2 if not made else None)
            self.root = root
            made.append(self)

        def run(self, cell: Cell, runs_root: Path) -> RunOutcome:
            try:
                return super().run(cell, runs_root)
            except Died:
                raise KeyboardInterrupt from None

        def prepare(self, groups: list[Group]) -> None:
            self.prepared = [g.label for g in groups]

    monkeypatch.setattr(launch, "KafkaLauncher", CommandLauncher)
    args = [
        "atlas",
        "--cells",
        "fault=kill,sigterm;profile=defaults;client=librdkafka;mode=kraft-4.3.1",
        "--repeat",
        "2",
        "--out",
        str(tmp_path / "a"),
    ]
    assert main(args) == 130
    err = capsys.readouterr().err
    assert "atlas interrupted after 2 runs" in err and "run the same command again" in err
    assert made[0].started == made[0].stopped and made[0].root == tmp_path / "a" / "cluster"
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "resuming" in out and made[1].prepared == ["kraft-4.3.1 · defaults"] and len(made[1].runs) == 2
    assert "kill · defaults · librdkafka · kraft-4.3.1" in out and (tmp_path / "a" / "atlas.html").is_file()
    invocations = json.loads((tmp_path / "a" / "invocations.json").read_text())
    assert len(invocations) == 2 and invocations[0]["command"].startswith("failsafe atlas --cells")
    bundle = json.loads((tmp_path / "a" / "atlas.json").read_text())
    assert [c["id"] for c in bundle["cells"]] == [
        Cell(f, "defaults", "librdkafka", "kraft-4.3.1").id for f in ("kill", "sigterm")
    ]
    assert main([*args, "--render-only"]) == 0


class FakeTopology:
    def __init__(self) -> None:
        self.cleaned = 0
        self.fault_target = type("C", (), {"spec": type("S", (), {"kafka_version": "4.3.1"})()})()

    def facts(self) -> dict:
        return {"kafka_version": "4.3.1"}

    def clean(self) -> None:
        self.cleaned += 1


def test_the_group_cluster_is_deleted_after_the_group_also_on_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import failsafe.atlas.launch as launch
    import failsafe.cluster.observe.status as status
    import failsafe.scenarios.engine.placement as placement

    topology = FakeTopology()
    monkeypatch.setattr(placement.SingleCluster, "up", classmethod(lambda cls, *a, **k: topology))
    monkeypatch.setattr(status, "cluster_facts", lambda site: {})
    launcher = launch.KafkaLauncher(tmp_path / "cluster", tmp_path / "out", None, None, lambda _: None, lambda _: None)
    [group] = group_cells([KILL])
    launcher.specs[group] = launcher.spec(group)
    with pytest.raises(KeyboardInterrupt), launcher.cluster(group):
        assert json.loads((tmp_path / "out" / launch.MARKER).read_text())["root"] == str(
            (tmp_path / "cluster").resolve()
        )
        raise KeyboardInterrupt
    assert topology.cleaned == 1 and not (tmp_path / "out" / launch.MARKER).exists()


def test_a_run_not_carried_out_and_a_cluster_left_broken_are_outcomes_not_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import failsafe.atlas.launch as launch
    from failsafe.errors import ClusterNotWhole, ScenarioFailed

    def fail(*args: object, **kwargs: object) -> None:
        raise ScenarioFailed("the consumer group never settled")

    def not_whole(cluster: object, after: str) -> None:
        raise ClusterNotWhole(f"broker 1 is down after {after}")

    monkeypatch.setattr(launch, "run_and_judge", fail)
    monkeypatch.setattr(launch, "require_whole", not_whole)
    topology = FakeTopology()
    scenarios = {KILL: launch.parse_cell(KILL)}
    session = launch.KafkaSession(topology.fault_target, topology.facts(), scenarios, lambda _: None, lambda _: None)  # type: ignore[arg-type]
    outcome = session.run(KILL, tmp_path / "runs")
    assert outcome.results is None and outcome.error == "ScenarioFailed: the consumer group never settled"
    assert (
        outcome.broken == "broker 1 is down after broker-failover"
        and outcome.run_dir is not None
        and outcome.run_dir.is_dir()
    )
