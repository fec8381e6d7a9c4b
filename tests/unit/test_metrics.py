"""Nodes' metrics: the ports they are served on, what a scrape keeps, and the watch that records them into the
history."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from failsafe.cluster.observe.metrics import ScrapeError, endpoints, parse, scrape
from failsafe.cluster.spec import ClusterSpec
from failsafe.errors import UserError
from failsafe.history.load import load_history
from failsafe.history.recorder import Recorder
from failsafe.scenarios.observers.metrics_watch import MetricsWatch
from tests.helpers import free_port_block

EXPOSITION = """# HELP kafka_server_replicamanager_underreplicatedpartitions UnderReplicatedPartitions
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 3.0
# TYPE kafka_network_requestmetrics_totaltimems gauge
kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"} 12.5
kafka_network_requestmetrics_totaltimems{request="FetchFollower",quantile="0.50"} NaN
# TYPE jvm_memory_used_bytes gauge
jvm_memory_used_bytes{area="heap"} 1.0E8
# TYPE jvm_gc_collection_seconds summary
jvm_gc_collection_seconds_count{gc="G1 Young Generation"} 4
jvm_gc_collection_seconds_sum{gc="G1 Young Generation"} 0.25
"""


def test_a_scrape_keeps_kafkas_metrics_and_gc_with_labels_in_one_order_and_nan_as_none() -> None:
    samples = {(s["metric"], s["labels"]): s["value"] for s in parse(EXPOSITION)}
    assert samples == {
        ("kafka_server_replicamanager_underreplicatedpartitions", ""): 3.0,
        ("kafka_network_requestmetrics_totaltimems", 'quantile="0.99",request="Produce"'): 12.5,
        ("kafka_network_requestmetrics_totaltimems", 'quantile="0.50",request="FetchFollower"'): None,
        ("jvm_gc_collection_seconds_count", 'gc="G1 Young Generation"'): 4.0,
        ("jvm_gc_collection_seconds_sum", 'gc="G1 Young Generation"'): 0.25,
    }


def test_metrics_ports_go_by_role_so_a_node_keeps_its_port() -> None:
    spec = ClusterSpec(brokers=3, controllers=2, base_port=9092)
    assert {n.name: url for n, url in endpoints(spec).items()} == {
        "server-1000": "http://127.0.0.1:9442/metrics",
        "server-1001": "http://127.0.0.1:9443/metrics",
        "server-0": "http://127.0.0.1:9392/metrics",
        "server-1": "http://127.0.0.1:9393/metrics",
        "server-2": "http://127.0.0.1:9394/metrics",
    }
    # ZooKeeper nodes are numbered from 1 like brokers 1, 2: every node keeps an endpoint of its own.
    zk = ClusterSpec.zookeeper_mode(zookeepers=3, brokers=3, metrics_base_port=20000)
    assert {n.name: url for n, url in endpoints(zk).items()} == {
        "zookeeper-1": "http://127.0.0.1:20090/metrics",
        "zookeeper-2": "http://127.0.0.1:20091/metrics",
        "zookeeper-3": "http://127.0.0.1:20092/metrics",
        "server-0": "http://127.0.0.1:20000/metrics",
        "server-1": "http://127.0.0.1:20001/metrics",
        "server-2": "http://127.0.0.1:20002/metrics",
    }
    assert endpoints(ClusterSpec(metrics=False)) == {}


def test_metrics_ports_that_overlap_a_listener_are_one_clear_line() -> None:
    with pytest.raises(UserError, match="metrics ports from 9192 overlap"):
        ClusterSpec(metrics_base_port=9192).validate()
    ClusterSpec(metrics=False, metrics_base_port=9192).validate()


def test_a_cluster_made_before_metrics_runs_without_them() -> None:
    old = ClusterSpec().to_json()
    del old["metrics"], old["metrics_base_port"]
    assert ClusterSpec.from_json(old).metrics is False
    assert ClusterSpec.from_json(ClusterSpec().to_json()).metrics is True


class _Exporter(BaseHTTPRequestHandler):
    body = EXPOSITION.encode()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def exporter() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_node_that_answers_nothing_is_a_scrape_error_naming_its_url() -> None:
    port = free_port_block(1)
    with pytest.raises(ScrapeError, match=f"http://127.0.0.1:{port}/metrics: .*refused"):
        scrape(f"http://127.0.0.1:{port}/metrics", timeout_s=1.0)


def test_the_watch_records_each_nodes_samples_and_each_failed_scrape(exporter: int, tmp_path: Path) -> None:
    dead = free_port_block(1)
    path = tmp_path / "history.jsonl"
    with Recorder(path, flush_interval_s=0.01) as recorder:
        watch = MetricsWatch(
            {
                (0, "server-0"): f"http://127.0.0.1:{exporter}/metrics",
                (1, "zookeeper-1"): f"http://127.0.0.1:{dead}/metrics",
            },
            recorder,
            interval_s=0.05,
            timeout_s=1.0,
        ).start()
        pause = threading.Event()
        while watch.scrapes < 8 and not pause.wait(0.05):
            pass
        watch.stop()
    history = load_history(path)
    served = history.metrics.filter(pl.col("node") == 0)
    assert served.height >= 5 and set(served["metric"]) >= {"kafka_server_replicamanager_underreplicatedpartitions"}
    assert history.metrics.filter(pl.col("node") == 1).height == 0
    assert history.metrics_errors["node_name"].unique().to_list() == ["zookeeper-1"]
    assert served["node_name"].unique().to_list() == ["server-0"]
    assert history.metrics_errors["error"].str.contains(f"127.0.0.1:{dead}").all()


def test_a_cluster_without_metrics_is_not_scraped(tmp_path: Path) -> None:
    with Recorder(tmp_path / "history.jsonl") as recorder:
        assert MetricsWatch.for_cluster(SimpleNamespace(spec=ClusterSpec(metrics=False)), recorder).urls == {}
        assert len(MetricsWatch.for_cluster(SimpleNamespace(spec=ClusterSpec()), recorder).urls) == 4


def test_the_console_shows_a_brokers_numbers_the_active_controllers_counts_and_why_a_node_is_unreadable() -> None:
    from failsafe.console.views import metrics_view

    broker = metrics_view("u0", parse(EXPOSITION), None)
    assert broker == {"url": "u0", "under_replicated": 3.0, "produce_p99_ms": 12.5}
    controller = [
        {"metric": f"kafka_controller_kafkacontroller_{m}", "labels": "", "value": v}
        for m, v in (("activecontrollercount", 1.0), ("fencedbrokercount", 1.0), ("offlinepartitionscount", 0.0))
    ]
    assert metrics_view("u1", controller, None) == {"url": "u1", "fenced_brokers": 1.0, "offline_partitions": 0.0}
    standby = [{**s, "value": 0.0} if "activecontroller" in s["metric"] else s for s in controller]
    assert metrics_view("u2", standby, None) == {"url": "u2"}
    assert metrics_view("u3", None, "u3: timed out") == {"url": "u3", "error": "u3: timed out"}


class _HalfAnswer(BaseHTTPRequestHandler):
    """An exporter that dies in the middle of its answer (a node killed while it serves a scrape)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.wfile.write(b"kafka_server_replicamanager_underreplicatedpartitions 1.0\n")

    def log_message(self, *args) -> None:
        pass


def test_an_answer_cut_short_is_a_scrape_error_and_the_watch_goes_on(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HalfAnswer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    try:
        with pytest.raises(ScrapeError, match="IncompleteRead|incomplete"):
            scrape(url, timeout_s=2.0)
        with Recorder(tmp_path / "history.jsonl", flush_interval_s=0.01) as recorder:
            watch = MetricsWatch({(0, "server-0"): url}, recorder, interval_s=0.05, timeout_s=2.0).start()
            pause = threading.Event()
            while watch.scrapes < 3 and not pause.wait(0.05):
                pass
            watch.stop()
    finally:
        server.shutdown()
        server.server_close()
    assert load_history(tmp_path / "history.jsonl").metrics_errors.height >= 3
