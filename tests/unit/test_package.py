"""The installed package works outside the checkout: every file failsafe reads at run time is in the wheel (issue 49).

.ci/run goes on from here: it installs the wheel in a clean virtualenv outside the checkout and runs failsafe there.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "failsafe"


def test_every_file_of_the_package_is_in_the_wheel(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("failsafe-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = sorted(
        f"failsafe/{p.relative_to(PACKAGE).as_posix()}"
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    missing = [name for name in wanted if name not in names]
    assert not missing, (
        f"files of src/failsafe the wheel lacks (pyproject.toml [tool.setuptools.package-data]): {missing}"
    )
    assert (
        "failsafe/campaigns/workloads/acks-all.toml" in names
        and "failsafe/scenarios/catalog/broker-failover.toml" in names
    )
