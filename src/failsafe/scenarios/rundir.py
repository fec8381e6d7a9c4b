"""A run's directory: runs/<scenario>/<UTC time>/ with scenario.json, manifest.json, history.jsonl, results.json, report.html."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from failsafe import __version__
from failsafe.cluster.lifecycle import Cluster
from failsafe.dist.java import find_java
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

    def write_manifest(self, cluster: Cluster, scenario: Scenario | PipelineScenario) -> None:
        java = find_java()
        spec = cluster.spec
        manifest = {
            "format": 1,
            "scenario": scenario.name,
            "failsafe_version": __version__,
            "kafka_version": spec.kafka_version,
            "java": {"executable": str(java.executable), "major": java.major},
            "python": platform.python_version(),
            "machine": {"system": platform.system(), "release": platform.release(), "cpus": os.cpu_count()},
            "cluster_dir": str(cluster.dir.root.resolve()),
            "bootstrap_servers": cluster.bootstrap_servers,
            "cluster": spec.to_json(),
            "nodes": [{"id": n.node_id, "roles": list(n.roles), "port": n.port, "controller_port": n.controller_port} for n in spec.nodes()],
            "topics": [asdict(t) for t in getattr(scenario, "topics", ())],
            "producers": [asdict(p) for p in getattr(scenario, "producers", ())],
            "consumers": [asdict(c) for c in getattr(scenario, "consumers", ())],
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.path / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n")
