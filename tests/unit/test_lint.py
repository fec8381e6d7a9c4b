"""ruff over every module of the tree (issue 50): `make test` fails on a lint error, and no folder is skipped unseen
(ruff's defaults skip any folder named ``dist``: src/failsafe/jvm was src/failsafe/dist, unlinted)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
TREES = ("src", "tests", "benchmarks", "examples")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
    return subprocess.run([ruff, *args, *TREES], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_checks_every_python_module_of_the_tree() -> None:
    listed = {
        Path(line.strip()).resolve()
        for line in _ruff("check", "--show-files").stdout.splitlines()
        if line.strip().endswith(".py")
    }
    modules = {p.resolve() for tree in TREES for p in (ROOT / tree).rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - listed == set(), "modules ruff does not check"


def test_the_tree_is_formatted() -> None:
    done = _ruff("format", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tree_passes_ruff() -> None:
    done = _ruff("check")
    assert done.returncode == 0, done.stdout + done.stderr
