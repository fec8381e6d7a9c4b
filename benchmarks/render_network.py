"""The network faults' tables in docs/network.md (render_docs.py renders and checks them)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import RenderError, load, num, secs, source, table

NETWORK_DIR = "docs/benchmarks/network"


def _net(root: Path, label: str) -> tuple[str, dict]:
    rel = f"{NETWORK_DIR}/{label}.json"
    return rel, load(root, rel)


def _fault_view(results: dict) -> tuple[dict, dict]:
    """The first fault's first affected partition and its stalls by group, from the availability checker."""
    faults = results["checkers"]["availability"]["faults"]
    if not faults:
        raise RenderError(f"{results.get('scenario')}: no fault in the availability checker's results")
    fault = faults[0]
    partition = fault["affected_partitions"][0] if fault["affected_partitions"] else {}
    return partition, fault.get("stalls", {})


def _lost_of(p: dict) -> str:
    return f"{num(p['lost'])} of {num(p['acknowledged'])}"


def _stall(stalls: dict, group: str) -> str:
    st = stalls.get(group)
    return (
        "—"
        if not st
        else f"{secs(st['max_stall_ms'])}" + (f" ({st['open']} never acknowledged again)" if st.get("open") else "")
    )


def t_network_leader_isolated(root: Path) -> str:
    cols = [_net(root, "leader-isolated-librdkafka"), _net(root, "leader-isolated-java")]
    views = [(r, *_fault_view(r)) for _, r in cols]
    rows = [
        ["verdict", *(r["verdict"] for r, _, _ in views)],
        [
            "new leader of events-0 after the fault began",
            *(secs(p["new_leader_ms"]) if p.get("new_leader_ms") is not None else "none" for _, p, _ in views),
        ],
        [
            "longest stall of acknowledgements on events-0 (the isolated leader's)",
            *(_stall(st, "led") for _, _, st in views),
        ],
        ["the same on the partitions the isolated broker followed", *(_stall(st, "follower") for _, _, st in views)],
        [
            "availability window of events-0 (`unavailable_ms`)",
            *(secs(p["unavailable_ms"], 3) if p.get("unavailable_ms") is not None else "—" for _, p, _ in views),
        ],
        [
            "acks=all: acknowledged writes lost",
            *(_lost_of(r["checkers"]["delivery"]["by_process"]["acksall"]) for r, _, _ in views),
        ],
        [
            "acks=1: acknowledged writes lost",
            *(_lost_of(r["checkers"]["delivery"]["by_process"]["acks1"]) for r, _, _ in views),
        ],
    ]
    header = [
        "leader-isolated, one run each",
        "librdkafka",
        "Kafka's Java producer (`--set 'producers[*].driver=kafka-verifiable'`)",
    ]
    return table(header, rows) + source(root, *(rel for rel, _ in cols))


def _stall_examples(stalls: dict, group: str) -> str:
    st = stalls.get(group)
    if not st:
        return "—"
    cells = [
        f"{e['topic']}-{e['partition']} {secs(e['stall_ms'])}"
        + (" (never acknowledged again)" if e.get("never_acked_after") else "")
        for e in st["examples"]
    ]
    more = st["partitions"] - len(st["examples"])
    return ", ".join(cells) + (f" and {more} more" if more > 0 else "")


NETWORK_FAULTS = ("follower-cut-off", "flaky-network")


def t_network_faults(root: Path) -> str:
    rows, rels = [], []
    for label in NETWORK_FAULTS:
        rel, r = _net(root, label)
        rels.append(rel)
        faults = r["checkers"]["availability"]["faults"]
        stalls: dict = {}
        for fault in faults:
            for group, st in fault.get("stalls", {}).items():
                stalls.setdefault(group, st)
        counts = r["checkers"]["delivery"]["counts"]
        errors = r["measurements"].get("send_errors") or {}
        rows.append(
            [
                f"`{label}`",
                "; ".join(f["role"] for f in faults),
                r["verdict"],
                f"{num(counts['lost'])} of {num(counts['acknowledged'])}",
                _stall_examples(stalls, "led"),
                _stall_examples(stalls, "follower"),
                _stall_examples(stalls, "unreplicated"),
                ", ".join(f"{num(n)} {e}" for e, n in errors.items()) or "none",
            ]
        )
    header = [
        "scenario",
        "fault",
        "verdict",
        "acknowledged writes lost",
        "longest write stall: partitions the faulted brokers led",
        "partitions they followed",
        "partitions with no replica on them",
        "refused writes",
    ]
    return table(header, rows) + source(root, *rels)


def t_network_zone(root: Path) -> str:
    rel, r = _net(root, "zone-outage")
    faults = r["checkers"]["availability"]["faults"]
    rows = []
    for topic, what in (
        ("zoned", "rack-aware (one replica per rack)"),
        ("unzoned", "RF 3 placed by hand, two replicas of partitions 0 and 1 in rack-0"),
    ):
        led = [p for f in faults for p in f["affected_partitions"] if p["topic"] == topic]
        p = r["checkers"]["delivery"]["by_process"][topic]
        rows.append(
            [
                f"`{topic}`: {what}",
                ", ".join(
                    f"{x['topic']}-{x['partition']} {secs(x['unavailable_ms'])}"
                    for x in sorted(led, key=lambda x: x["partition"])
                )
                or "—",
                num(p["failed"]),
                num(p["unknown"]),
                _lost_of(p),
            ]
        )
    errors = r["measurements"].get("send_errors") or {}
    header = [
        "topic (zone-outage: both brokers of rack-0 killed, 6 brokers in 3 racks)",
        "partitions led from rack-0: unavailable",
        "writes refused",
        "outcome unknown",
        "acknowledged writes lost",
    ]
    note = (
        f"\n\nVerdict {r['verdict']}; send errors: "
        + (", ".join(f"{num(n)} {e}" for e, n in errors.items()) or "none")
        + "."
    )
    return table(header, rows) + note + source(root, rel)


UNCLEAN = (
    ("unclean-election-enabled", "true (the catalog's)"),
    ("unclean-election-disabled", 'false (`--set \'topics[0].configs."unclean.leader.election.enable"="false"\'`)'),
    ("unclean-election-elr", "true, with `min.insync.replicas` 2 and acks=all (eligible leader replicas)"),
)


def t_network_unclean(root: Path) -> str:
    rows, rels = [], []
    for label, what in UNCLEAN:
        rel, r = _net(root, label)
        rels.append(rel)
        led = [p for f in r["checkers"]["availability"]["faults"] for p in f["affected_partitions"]]
        counts = r["checkers"]["delivery"]["counts"]
        leader = (
            "; ".join(
                (
                    f"broker {p['new_leader']} after {secs(p['new_leader_ms'])}"
                    + ("" if p.get("new_leader_in_isr") else ", not in the ISR before: unclean")
                    if p.get("new_leader") is not None
                    else "none of the other brokers"
                )
                for p in led
            )
            or "—"
        )
        unavailable = r["checkers"]["availability"]["max_unavailable_ms"]
        rows.append(
            [
                what,
                r["verdict"],
                leader,
                num(counts["acknowledged"]),
                num(counts["lost-after-read"]),
                num(counts["lost"]),
                secs(unavailable) if unavailable is not None else "—",
            ]
        )
    header = [
        "`unclean.leader.election.enable`",
        "verdict",
        "new leader once broker 0 (the last in the ISR) was killed",
        "acknowledged",
        "lost after a consumer read them (`lost-after-read`)",
        "`lost`",
        "longest unavailability",
    ]
    return table(header, rows) + source(root, *rels)
