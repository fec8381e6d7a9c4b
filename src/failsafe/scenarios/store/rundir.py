"""A run's directory: runs/<scenario>/<UTC time>/ with scenario.json, manifest.json, history.jsonl, results.json,
report.html."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from failsafe import __version__
from failsafe.errors import UserError
from failsafe.scenarios.base import Scenario

HISTORY = "history.jsonl"
RESULTS = "results.json"
REPORT = "report.html"
SCENARIO = "scenario.json"
MANIFEST = "manifest.json"


def _stamp() -> str:
    now = time.time()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


@dataclass(frozen=True)
class RunDir:
    path: Path

    @classmethod
    def create(cls, runs_root: Path, scenario: Scenario) -> RunDir:
        path = Path(runs_root) / scenario.name / _stamp()
        try:
            path.mkdir(parents=True)
            (path / SCENARIO).write_text(json.dumps(scenario.raw, indent=2, default=str) + "\n")
        except OSError as e:
            raise UserError(
                f"cannot make the run directory {path}: {e.strerror or e} (choose another --runs or --dir)"
            ) from e
        return cls(path)

    @classmethod
    def open(cls, path: Path) -> RunDir:
        path = Path(path)
        if not (path / HISTORY).is_file():
            raise UserError(
                f"{path} is not a failsafe run directory (no {HISTORY}): pass a directory made by 'failsafe run'"
            )
        return cls(path)

    @property
    def history_path(self) -> Path:
        return self.path / HISTORY

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS

    @property
    def report_path(self) -> Path:
        return self.path / REPORT

    def scenario_data(self) -> dict | None:
        """scenario.json, or None when the run has none; a file that is not a JSON object is one clear error."""
        return self._json(SCENARIO)

    def manifest(self) -> dict | None:
        return self._json(MANIFEST)

    def _json(self, name: str) -> dict | None:
        p = self.path / name
        if not p.is_file():
            return None
        try:
            data = json.loads(p.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise UserError(f"{p} is unreadable ({e}): the run's files are damaged; re-run the scenario") from e
        if not isinstance(data, dict):
            raise UserError(f"{p} is not a JSON object: the run's files are damaged; re-run the scenario")
        return data

    def write_manifest(self, cluster_facts: dict[str, Any], scenario: Scenario) -> None:
        """What the run ran on: failsafe, Kafka, Java, Python, the machine, the cluster (``cluster_facts``), the
        clients."""
        manifest = {
            "format": 1,
            "scenario": scenario.name,
            "kind": scenario.kind,
            "failsafe_version": __version__,
            **cluster_facts,
            "python": platform.python_version(),
            "machine": {"system": platform.system(), "release": platform.release(), "cpus": os.cpu_count()},
            **scenario.manifest(),
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.path / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")
