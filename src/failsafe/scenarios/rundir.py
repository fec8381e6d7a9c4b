"""A run's directory: runs/<scenario>/<UTC time>/ with scenario.json, manifest.json, history.jsonl, results.json, report.html."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from failsafe import __version__
from failsafe.errors import UserError
from failsafe.scenarios.pipeline_schema import PipelineScenario
from failsafe.scenarios.schema import Scenario

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
    def create(cls, runs_root: Path, scenario: Scenario | PipelineScenario) -> RunDir:
        path = Path(runs_root) / scenario.name / _stamp()
        path.mkdir(parents=True)
        (path / SCENARIO).write_text(json.dumps(scenario.raw, indent=2, default=str) + "\n")
        return cls(path)

    @classmethod
    def open(cls, path: Path) -> RunDir:
        path = Path(path)
        if not (path / HISTORY).is_file():
            raise UserError(f"{path} is not a failsafe run directory (no {HISTORY}): pass a directory made by 'failsafe run'")
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
        p = self.path / SCENARIO
        return json.loads(p.read_text()) if p.is_file() else None

    def manifest(self) -> dict | None:
        p = self.path / MANIFEST
        return json.loads(p.read_text()) if p.is_file() else None

    def write_manifest(self, cluster_facts: dict[str, Any], scenario: Scenario | PipelineScenario) -> None:
        """What the run ran on: failsafe, Kafka, Java, Python, the machine, the cluster (``cluster_facts``), the clients."""
        manifest = {
            "format": 1,
            "scenario": scenario.name,
            "kind": scenario.kind,
            "failsafe_version": __version__,
            **cluster_facts,
            "python": platform.python_version(),
            "machine": {"system": platform.system(), "release": platform.release(), "cpus": os.cpu_count()},
            "topics": [asdict(t) for t in getattr(scenario, "topics", ())],
            "producers": [asdict(p) for p in getattr(scenario, "producers", ())],
            "consumers": [asdict(c) for c in getattr(scenario, "consumers", ())],
            "client_logs": client_logs(scenario),
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.path / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")

    @property
    def kind(self) -> str:
        """The scenario kind the run was of (runs made before kinds were recorded: lab, or pipeline by its results file)."""
        data = self.scenario_data() or {}
        if "kind" in data:
            return str(data["kind"])
        return "pipeline" if (self.path / "pipeline-results.json").is_file() else "lab"


def client_logs(scenario: Scenario | PipelineScenario) -> dict[str, str]:
    """Each lab worker's client library log, relative to the run directory (the names the lab workload gives its workers)."""
    names = [f"{p.name}-{i}" if p.count > 1 else p.name for p in getattr(scenario, "producers", ()) for i in range(p.count)]
    names += [f"{c.name}-{i}" for c in getattr(scenario, "consumers", ()) for i in range(c.count)]
    return {name: f"logs/{name}.client.log" for name in names}
