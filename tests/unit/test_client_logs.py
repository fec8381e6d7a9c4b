"""The client's own log lines cited next to an explanation (scenarios/observers/client_logs.py)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from failsafe.scenarios.observers.client_logs import cite, notable_lines

T0 = datetime(2026, 11, 23, 16, 54, 20)
T0_NS = int(T0.timestamp()) * 1_000_000_000

LOG = """\
2026-11-23 16:54:08,805 GETPID [producer#producer-1] [thrd:main]: Acquired PID{Id:0,Epoch:0}
2026-11-23 16:54:20,100 BROKER [producer#producer-1] [thrd:main]: foo [1]: leader -1 epoch -1 -> leader 1 epoch 0
2026-11-23 16:54:32,870 DRAIN [producer#producer-1] [thrd:127.0.0.1:19093/1]: Beginning partition drain in state Assigned for PID{Id:0,Epoch:0} epoch bump for 1 partition(s) with in-flight requests: 2 message(s) timed out on foo [0]
2026-11-23 16:54:32,871 DRAIN [producer#producer-1] [thrd:127.0.0.1:19093/1]: All partitions drained, bumped epoch to PID{Id:0,Epoch:1}
not a log line at all
[2026-11-23 16:54:33,000] WARN [Producer clientId=vproducer] Got error produce response, retrying (org.apache.kafka.clients.producer.internals.Sender)
"""  # noqa: E501 - real librdkafka lines, kept whole


def _explanation(time_ns: int, log: str | None = "logs/producer.client.log") -> dict:
    return {
        "checker": "delivery",
        "anomaly": "duplicate",
        "topic": "foo",
        "partition": 0,
        "time_ns": time_ns,
        "time_s": 30.0,
        "sentence": "value producer:1 was written twice",
        "client": {"client": "librdkafka", "log": log},
    }


def _run(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "producer.client.log").write_text(LOG)
    return tmp_path


def test_only_notable_lines_with_a_time_are_kept() -> None:
    kinds = [line.kind for line in notable_lines(LOG.splitlines())]
    assert kinds == ["new-producer-id", "epoch-bump", "epoch-bump", "retry"]


def test_an_epoch_bump_near_the_anomaly_ends_its_sentence(tmp_path: Path) -> None:
    ack_ns = T0_NS + 13_000_000_000  # 16:54:33.000
    [e] = cite([_explanation(ack_ns)], _run(tmp_path))
    assert "librdkafka logged at" in e["sentence"]
    assert "epoch bump" in e["sentence"] and "(logs/producer.client.log)" in e["sentence"]
    # Times are placed on the explanation's own clock: 0.13 s before its moment at 30.0 s.
    assert [c["time_s"] for c in e["client_log"]] == [29.9, 29.9, 30.0]
    assert {c["kind"] for c in e["client_log"]} == {"epoch-bump", "retry"}


def test_lines_outside_the_window_are_not_cited(tmp_path: Path) -> None:
    far_ns = T0_NS + 120_000_000_000
    [e] = cite([_explanation(far_ns)], _run(tmp_path))
    assert "client_log" not in e and e["sentence"] == "value producer:1 was written twice"


def test_no_log_or_a_missing_file_leaves_the_explanation_alone(tmp_path: Path) -> None:
    ns = T0_NS + 13_000_000_000
    [without] = cite([_explanation(ns, log=None)], tmp_path)
    [missing] = cite([_explanation(ns, log="logs/gone.client.log")], tmp_path)
    assert "client_log" not in without and "client_log" not in missing


def test_metadata_retries_and_a_closing_handle_are_not_cited() -> None:
    noise = [
        "2026-11-23 16:54:40,000 TERMINATE [producer#producer-1] [thrd:127.0.0.1:19092/bootstrap]: Handle is "
        "terminating in state DOWN: 4 refcnts, 0 toppar(s), 0 active toppar(s), 0 outbufs, 0 waitresps, 0 "
        "retrybufs: failed 0 request(s) in retry+outbuf",
        "2026-11-23 16:54:41,000 REQERR [producer#producer-1] [thrd:main]: 127.0.0.1:19093/1: MetadataRequest "
        "failed: Local: Timed out: actions Retry",
    ]
    assert notable_lines(noise) == []
