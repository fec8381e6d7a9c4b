"""A cluster for a test session: started once (or the one already running at its directory), faults applied and undone
around a block, scenarios run as 'failsafe run' runs them and their verdicts read back.

Runs and cluster starts go through failsafe's own command line, in a child process, exactly as a user's shell would
run them: the same exit codes, the same run directories. A fault is applied in this process through the fault
registry (faults/), on the cluster's run site, and undone when the block ends, whatever the block raised.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failsafe.errors import UserError
from failsafe.waiting import wait_until

VERDICT_OF_EXIT = {0: "VALID", 1: "INVALID", 3: "UNKNOWN", 4: "KNOWN"}
HEAL_TIMEOUT_S = 120.0


def failsafe_cli(*args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
    """failsafe's command line in a child process, as a shell runs it."""
    return subprocess.run(
        [sys.executable, "-m", "failsafe.cli.main", *args], capture_output=True, text=True, timeout=timeout_s
    )


@dataclass(frozen=True)
class RunResult:
    """One run of a scenario: its exit code and verdict, its results, its anomalies explained, where its report is."""

    exit_code: int
    verdict: str
    run_dir: Path | None
    results: dict = field(default_factory=dict)
    explanations: list[dict] = field(default_factory=list)
    output: str = ""

    @property
    def report(self) -> Path | None:
        return self.run_dir / "report.html" if self.run_dir is not None else None

    def message(self) -> str:
        """What a failed assertion says: the verdict, each violation, each anomaly in one sentence, the report."""
        lines = [f"{self.verdict} (exit {self.exit_code})" + (f": {self.run_dir}" if self.run_dir else "")]
        for name, checker in (self.results.get("checkers") or {}).items():
            if isinstance(checker, Mapping) and checker.get("violations"):
                lines.append(f"  {name}: {', '.join(checker['violations'])}")
            if isinstance(checker, Mapping) and checker.get("reason"):
                lines.append(f"  {name}: {checker['reason']}")
        lines += [f"  - {e.get('checker')} {e.get('anomaly')}: {e.get('sentence', '')}" for e in self.explanations]
        if self.run_dir is None:
            lines.append(self.output[-2000:])
        elif self.report is not None and self.report.exists():
            lines.append(f"  report: {self.report}")
        return "\n".join(lines)

    def assert_valid(self) -> None:
        assert self.verdict == "VALID", self.message()


class FailsafeCluster:
    def __init__(self, root: Path, started_here: bool = False) -> None:
        self.root = Path(root)
        self.started_here = started_here

    @classmethod
    def session(cls, root: Path, kafka_version: str | None = None, brokers: int = 3) -> FailsafeCluster:
        """The cluster at ``root``: the one running there, or one started now (stopped by ``close``)."""
        from failsafe.cluster.topology.directory import find_topology

        existing = find_topology(Path(root))
        if existing is not None and existing.running():
            return cls(root)
        args = ["up", "--dir", str(root), "--brokers", str(brokers)]
        if kafka_version:
            args += ["--kafka-version", kafka_version]
        done = failsafe_cli(*args)
        if done.returncode != 0:
            raise UserError(f"failsafe up --dir {root}: {(done.stderr or done.stdout).strip()}")
        return cls(root, started_here=existing is None)

    @property
    def bootstrap_servers(self) -> str:
        return self._site().bootstrap_servers

    def _site(self) -> Any:
        from failsafe.cluster.topology.directory import open_topology

        return open_topology(self.root).fault_target

    def run(
        self,
        scenario: str | Path,
        *,
        overrides: Sequence[str] = (),
        runs_dir: Path | None = None,
        timeout_s: float = 900,
    ) -> RunResult:
        """Run ``scenario`` (a catalog name, a .toml file, or TOML text) on this cluster, as 'failsafe run' does."""
        text = str(scenario)
        runs = Path(runs_dir) if runs_dir is not None else Path(tempfile.mkdtemp(prefix="failsafe-runs-"))
        if "\n" in text:
            # TOML text: kept beside the runs it made, in a file of its own (never one left in the temporary directory).
            runs.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(suffix=".toml", prefix="scenario-", dir=runs)
            with open(handle, "w") as file:
                file.write(text)
            text = name
        args = ["run", text, "--dir", str(self.root), "--runs", str(runs)]
        for override in overrides:
            args += ["--set", override]
        done = failsafe_cli(*args, timeout_s=timeout_s)
        dirs = sorted(p.parent for p in runs.rglob("results.json"))
        if not dirs:
            return RunResult(done.returncode, VERDICT_OF_EXIT.get(done.returncode, "ERROR"), None, output=done.stderr)
        run_dir = dirs[-1]
        results = json.loads((run_dir / "results.json").read_text())
        explained = failsafe_cli("explain", str(run_dir), "--json", timeout_s=300)
        explanations = json.loads(explained.stdout) if explained.returncode == 0 and explained.stdout.strip() else []
        verdict = str(results.get("verdict") or VERDICT_OF_EXIT.get(done.returncode, "ERROR"))
        return RunResult(done.returncode, verdict, run_dir, results, explanations, done.stdout + done.stderr)

    @contextmanager
    def fault(self, name: str, **fields: Any) -> Iterator[Any]:
        """Fault ``name`` with its fields as a scenario writes them (``with cluster.fault("kill", role="leader",
        partition="orders-0")``), in force inside the block and undone after it; yields what was applied."""
        from confluent_kafka.admin import AdminClient

        from failsafe.faults import FAULT_TYPES, FaultContext, FaultSpec, FaultTargets
        from failsafe.scenarios.observers.observe import partitions_of
        from failsafe.tools.admin import client_config

        fault_type = FAULT_TYPES.get(name)
        if fault_type is None:
            raise UserError(f"no fault named {name!r}; the faults are {', '.join(sorted(FAULT_TYPES))}")
        site = self._site()
        admin = AdminClient(client_config(site.bootstrap_servers))

        def partition(label: str) -> dict | None:
            topic, _, number = label.rpartition("-")
            metadata = admin.list_topics(timeout=10)
            found = partitions_of(metadata, [topic])
            return next((p for p in found if str(p["partition"]) == number), None)

        topics = {t: len(m.partitions) for t, m in admin.list_topics(timeout=10).topics.items()}
        ctx = FaultContext(where=f"fault {name}", topics=topics, brokers=site.spec.brokers, combined=site.spec.combined)
        params = fault_type.parse(fields, ctx)
        leash: list[Any] = []

        def network_leash() -> Any:
            if not leash:
                leash.append(site.net_leash(self.root / "logs" / "pytest-network-leash.log"))
            return leash[0]

        spec = FaultSpec(name, 0.0, None, params)
        applied = fault_type.start(spec, FaultTargets(site, _NoClients(), partition, network_leash))
        try:
            yield applied
        finally:
            try:
                if applied.undo_action is not None and not applied.undone:
                    applied.undo_action()
            finally:
                for held in leash:
                    if held is not None:
                        held.close()

    def heal(self, timeout_s: float = HEAL_TIMEOUT_S) -> None:
        """Every node up again (a test that left one down, or a fault whose undo failed): 'failsafe up' at its
        directory, then until every node is up."""
        from failsafe.cluster.topology.directory import open_topology

        if not open_topology(self.root).not_up():
            return
        done = failsafe_cli("up", "--dir", str(self.root))
        if done.returncode != 0:
            raise UserError(f"failsafe up --dir {self.root}: {(done.stderr or done.stdout).strip()}")
        wait_until(lambda: not open_topology(self.root).not_up(), timeout_s, f"{self.root}: a node is still down")

    def close(self) -> None:
        """Stop the cluster if this session started it."""
        if self.started_here:
            failsafe_cli("down", "--dir", str(self.root))


class _NoClients:
    """A fault from a test acts on the cluster; the test's own clients are the test's."""

    def _none(self, *args: Any) -> Any:
        raise UserError("a fault from a test acts on nodes and links: a client fault needs a scenario's clients")

    kill_client = close_client = restart_client = process_of = wait_settled = pause_client = resume_client = _none
