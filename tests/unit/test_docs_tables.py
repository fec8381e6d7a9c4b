"""The docs' tables are rendered from the raw files under docs/benchmarks/ and docs/findings/: the docs
must hold exactly what those files render, and the check must fail when a number changes on either
side (benchmarks/render_docs.py; docs/benchmarks.md, "How the numbers stay true")."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("render_docs", ROOT / "benchmarks" / "render_docs.py")
render_docs = importlib.util.module_from_spec(_spec)
sys.modules["render_docs"] = render_docs  # dataclasses look their module up there
_spec.loader.exec_module(render_docs)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of what the check reads: the docs with their raw files, the README and the Makefile."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    for name in ("README.md", "Makefile"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _blocks(root: Path) -> list[tuple[Path, re.Match]]:
    return [(path, m) for path in render_docs.doc_paths(root) for m in render_docs.BLOCK.finditer(path.read_text())]


def test_every_rendered_table_matches_its_files() -> None:
    problems = render_docs.check(ROOT)
    assert problems == [], "\n".join(problems) + "\n\nRun: .venv/bin/python benchmarks/render_docs.py --write"


def test_every_table_is_placed_and_every_block_names_a_table() -> None:
    names = {m["name"] for _, m in _blocks(ROOT)}
    assert names == set(render_docs.TABLES)


def _set(path: Path, keys: list, value) -> None:
    data = json.loads(path.read_text())
    node = data
    for key in keys[:-1]:
        node = node[key]
    assert node[keys[-1]] != value
    node[keys[-1]] = value
    path.write_text(json.dumps(data, indent=2) + "\n")


@pytest.mark.parametrize(
    ("raw", "keys", "value", "doc"),
    [
        ("docs/benchmarks/cluster.json", ["create_to_ready_s", "median"], 99.9, "docs/benchmarks.md"),
        ("docs/benchmarks/pipeline.json", ["backlog", "steady_records_per_s"], 1234, "docs/benchmarks.md"),
        ("docs/benchmarks/failover.json", ["runs", 0, "max_unavailable_ms"], 99999.0, "docs/failover.md"),
        ("docs/benchmarks/dr-tuned.json", ["times", "dr.rto_first_read_ms", "median"], 777.0, "docs/failover.md"),
        (
            "docs/benchmarks/modes/kraft-4.3.1-broker-failover.json",
            ["times", "availability.median_new_leader_ms", "median"],
            4321.0,
            "docs/zookeeper.md",
        ),
        (
            "docs/findings/stall-rf3-acks-1-librdkafka.json",
            ["times", "availability.stall_by_group.follower", "median"],
            999.0,
            "docs/findings.md",
        ),
        (
            "docs/findings/leader-pause-timeout-librdkafka.json",
            ["anomalies", "delivery.duplicate-acknowledged", "total"],
            3103,
            "docs/findings.md",
        ),
    ],
)
def test_a_changed_number_in_a_raw_file_fails_the_check(repo: Path, raw: str, keys: list, value, doc: str) -> None:
    assert render_docs.check(repo) == []
    _set(repo / raw, keys, value)
    problems = render_docs.check(repo)
    assert problems, f"changing {raw} {keys} to {value} went unnoticed"
    assert any(p.startswith(f"--- {doc} (as written)") for p in problems), problems


def test_a_changed_number_in_any_rendered_block_fails_the_check(repo: Path) -> None:
    blocks = _blocks(repo)
    assert len(blocks) >= len(render_docs.TABLES)
    for path, match in blocks:
        text = path.read_text()
        body_start = match.start("body")
        digit = re.search(r"\d", match["body"])
        assert digit, f"{path.name}: table {match['name']} has no number"
        at = body_start + digit.start()
        path.write_text(text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1 :])
        problems = render_docs.check(repo)
        assert problems, f"{path.name}: a changed digit in table {match['name']} went unnoticed"
        path.write_text(text)
    assert render_docs.check(repo) == []


def test_the_command_line_check_fails_and_write_repairs(repo: Path) -> None:
    script = ROOT / "benchmarks" / "render_docs.py"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(script), *args, "--root", str(repo)], capture_output=True, text=True, timeout=60
        )

    assert run("--check").returncode == 0
    _set(repo / "docs/benchmarks/producer.json", ["median_ratio"], 0.5)
    failed = run("--check")
    assert failed.returncode == 1
    assert "docs/benchmarks.md (as rendered)" in failed.stderr and "**0.50**" in failed.stderr
    assert run("--write").returncode == 0
    assert run("--check").returncode == 0
    assert "**0.50** of it" in (repo / "docs/benchmarks.md").read_text()


def test_a_raw_file_without_a_command_fails_the_check(repo: Path) -> None:
    (repo / "docs/benchmarks/orphan.json").write_text("{}\n")
    assert any("docs/benchmarks/orphan.json: no entry in RAW" in p for p in render_docs.check(repo))


def test_make_bench_must_run_every_command_marked_so(repo: Path) -> None:
    makefile = repo / "Makefile"
    text = makefile.read_text()
    line = next(x for x in text.splitlines() if "bench_cds.py" in x)
    makefile.write_text(text.replace(line + "\n", ""))
    assert any("docs/benchmarks/cds.json" in p and "bench recipe" in p for p in render_docs.check(repo))


def test_a_missing_raw_file_fails_the_check(repo: Path) -> None:
    (repo / "docs/benchmarks/console.json").unlink()
    problems = render_docs.check(repo)
    assert any("table console: cannot render" in p for p in problems)
    assert any("matches no file" in p for p in problems)
