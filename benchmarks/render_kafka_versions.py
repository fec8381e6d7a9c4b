"""The tables of what changed between two Kafka releases' configuration (render_docs.py renders and checks them): per
family of ConfigDef keys the keys added, removed and whose default changed, the broker keys added that bear on
failover, and the default feature levels at each release's latest production metadata.version, from
docs/benchmarks/kafka-config-diff-4.3.1-4.4.0.json (benchmarks/kafka_config_diff.py)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.render_base import load, source, table

CONFIG_DIFF = "docs/benchmarks/kafka-config-diff-4.3.1-4.4.0.json"

FAMILIES = {
    "broker": "broker (KafkaConfig)",
    "topic": "topic (LogConfig)",
    "group": "group, dynamic (GroupConfig)",
    "producer": "producer",
    "consumer": "consumer",
    "admin": "admin client",
}
# Words in a broker key's name that make it matter for failover.
FAILOVER_WORDS = (
    "replica",
    "leader",
    "isr",
    "controller",
    "quorum",
    "group",
    "transaction",
    "fetch",
    "session",
    "timeout",
    "offload",
    "metadata",
)


def _value(text: str | None) -> str:
    if text is None:
        return "—"
    return f"`{text}`" if text else '`""`'


def _count(n: int | None) -> str:
    return "—" if n is None else str(n)


def _changed(d: dict) -> str:
    changes = [f"`{c['key']}` {_value(c['from'])} → {_value(c['to'])}" for c in d.get("default_changed", [])]
    changes += [f"`{c['key']}` type {c['from']} → {c['to']}" for c in d.get("type_changed", [])]
    return "; ".join(changes) or "none"


def t_kafka_config_diff(root: Path) -> str:
    data = load(root, CONFIG_DIFF)
    old, new = data["from"], data["to"]
    rows = []
    for family, d in data["families"].items():
        label = FAMILIES.get(family, family)
        if "unavailable_in" in d:
            missing = ", ".join(d["unavailable_in"])
            rows.append([label, _count(d["count_from"]), _count(d["count_to"]), f"not in {missing}", "—", "—"])
            continue
        rows.append(
            [
                label,
                str(d["count_from"]),
                str(d["count_to"]),
                str(len(d["added"])),
                str(len(d["removed"])),
                _changed(d),
            ]
        )
    families = table(
        ["keys", f"in {old}", f"in {new}", "added", "removed", "defaults (or types) changed"],
        rows,
    )

    broker = data["families"].get("broker", {})
    failover = [a for a in broker.get("added", []) if any(w in a["key"] for w in FAILOVER_WORDS)]
    words = ", ".join(FAILOVER_WORDS)
    if failover:
        keys = "\n".join(f"- `{a['key']}` ({a['type']}, default {_value(a['default'])})" for a in failover)
    else:
        keys = "none"
    failover_text = (
        f"Broker keys added in {new} whose name contains any of {words} "
        f"({len(failover)} of the {len(broker.get('added', []))} added):\n\n{keys}"
    )

    levels = data["features"]
    a, b = levels["from"], levels["to"]
    names = [n for n in a if not n.startswith("metadata.version")]
    names += [n for n in b if not n.startswith("metadata.version") and n not in names]

    def level(side: dict, name: str) -> str:
        return "—" if side.get(name) is None else str(side[name])

    feature_rows = [
        [
            "metadata.version (latest production)",
            f"{a['metadata.version']} (level {a['metadata.version.level']})",
            f"{b['metadata.version']} (level {b['metadata.version.level']})",
            "**yes**" if a["metadata.version"] != b["metadata.version"] else "no",
        ]
    ]
    feature_rows += [
        [name, level(a, name), level(b, name), "**yes**" if a.get(name) != b.get(name) else "no"] for name in names
    ]
    features = table(["feature", old, new, "changed"], feature_rows)

    note = (
        "Keys as each release's jars declare them (ConfigDef.configKeys(), internal keys included), defaults as "
        f"Java prints them ({data.get('java') or 'JVM not recorded'})."
    )
    feature_lead = (
        "Default feature levels at each release's latest production metadata.version (the default of its "
        "`--release-version`), as its `kafka-features version-mapping` prints them:"
    )
    return f"{families}\n\n{note}\n\n{failover_text}\n\n{feature_lead}\n\n{features}" + source(root, CONFIG_DIFF)
