"""Protocol faults on a real cluster made with --protocol-proxy: a Produce answer dropped duplicates a producer without
idempotence and not an idempotent one; a held EndTxn goes through the transactions checker; the proxies carry Kafka's
traffic, end the rules of a failsafe killed mid-fault, and are gone after ``down``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from failsafe.cluster.state import ClusterDir
from failsafe.proxy import proxies
from failsafe.waiting import wait_until
from tests.conftest import RunningCluster, start_cluster, stop_cluster
from tests.e2e.test_lab_scenarios import only_run_dir
from tests.helpers import alive_pids, sigkill_run_when

pytestmark = [pytest.mark.cluster, pytest.mark.breaks_cluster]
RUN_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def proxied(shared_cluster_holder: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    if "cluster" in shared_cluster_holder:
        stop_cluster(shared_cluster_holder.pop("cluster"))
    cluster = start_cluster(tmp_path_factory.mktemp("proxied") / "cluster", "--protocol-proxy")
    yield cluster
    stop_cluster(cluster)  # the last test stopped it already: down again finds nothing running
    assert all(proxies.tracked(cluster.dir, n) is None for n in proxies.names(cluster.dir))


def _run(cluster: RunningCluster, tmp_path: Path, scenario: str, *extra: str) -> tuple[int, dict, list[dict]]:
    runs = tmp_path / "runs"
    result = cluster.cli("run", scenario, "--runs", str(runs), *extra, timeout_s=RUN_TIMEOUT_S)
    run_dir = only_run_dir(runs, scenario)
    assert (run_dir / "results.json").is_file(), result.stdout + result.stderr
    history = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    return result.returncode, json.loads((run_dir / "results.json").read_text()), history


def _taken(history: list[dict]) -> dict[str, int]:
    """Requests each protocol fault took, by fault id, from its stop."""
    return {str(op["fault_id"]): op["details"]["requests"] for op in history if op["f"] == "fault-stop" and op["ok"]}


def test_every_broker_is_reached_through_its_proxy(proxied: RunningCluster) -> None:
    spec = ClusterDir(proxied.dir).load().spec
    for broker in spec.brokers_nodes():
        handle = proxies.running(proxied.dir, broker.name)
        assert handle is not None, broker.name
    listed = proxied.cli("topics", "list")
    assert listed.returncode == 0, listed.stderr
    status = [proxies.running(proxied.dir, b.name).status() for b in spec.brokers_nodes()]
    assert sum(s["frames"].get("requests", 0) for s in status) > 0


# benchmarks/protocol_runs.py runs this cell 3 times (docs/benchmarks/protocol-runs.json): make test-long.
@pytest.mark.long
def test_a_dropped_produce_answer_duplicates_without_idempotence_and_never_with_it(
    proxied: RunningCluster, tmp_path: Path
) -> None:
    code, results, history = _run(proxied, tmp_path, "produce-response-lost")
    delivery = results["checkers"]["delivery"]
    taken = _taken(history)
    assert len(taken) == 2 and all(n > 0 for n in taken.values()), taken
    # The idempotent producer's copies would be INVALID (exit 1); the plain one's are the declared known anomaly.
    assert delivery["counts"]["lost"] == 0
    assert delivery["processes"].get("duplicate-acknowledged", []) in ([], ["plain"]), delivery["processes"]
    assert "idem" not in json.dumps(delivery["processes"])
    assert code in (0, 4) and (code == 4) == bool(delivery["counts"]["duplicate"]), (code, delivery["counts"])


# benchmarks/protocol_runs.py runs this cell 3 times (docs/benchmarks/protocol-runs.json): make test-long.
@pytest.mark.long
def test_a_held_end_txn_is_released_into_the_coordinator_and_judged(proxied: RunningCluster, tmp_path: Path) -> None:
    code, results, history = _run(proxied, tmp_path, "txn-commit-held")
    stop = next(op for op in history if op["f"] == "fault-stop" and op["ok"])
    took = [c for counts in stop["details"]["took"].values() for c in counts["by_api_client"]]
    assert took == [{"api": "EndTxn", "client_id": "writer-0", "requests": 1}], stop["details"]
    transactions = results["checkers"]["transactions"]
    assert transactions["counts"]["lost-write"] == 0 and transactions["counts"]["aborted-read"] == 0, transactions
    assert code == 0, results["checkers"]


def test_a_failsafe_killed_mid_fault_leaves_no_rule_and_down_leaves_no_proxy(
    proxied: RunningCluster, tmp_path: Path
) -> None:
    spec = ClusterDir(proxied.dir).load().spec
    handles = [proxies.running(proxied.dir, b.name) for b in spec.brokers_nodes()]
    sigkill_run_when(
        proxied.dir,
        "produce-response-lost",
        tmp_path,
        lambda: all(h.status()["rules"] for h in handles),
        "the run's protocol faults",
    )
    # The proxies see their rules' owner gone and end them: producers are answered again.
    wait_until(lambda: not any(h.status()["rules"] for h in handles), 10, "a dead failsafe's rules stayed in force")
    stopped = proxied.cli("down")
    assert stopped.returncode == 0, stopped.stderr
    assert alive_pids(proxied.dir) == [], "down left a node or a protocol proxy running"
    assert all(proxies.tracked(proxied.dir, b.name) is None for b in spec.brokers_nodes())
