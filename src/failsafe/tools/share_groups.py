"""Share groups (KIP-932) as Kafka's own ShareGroupCommand (kafka-share-groups.sh) describes them.

confluent-kafka's AdminClient has no share-group calls (ListGroups with a type filter, DescribeShareGroups,
DescribeShareGroupOffsets), so Kafka's tool is asked: ``--list``, and ``--describe`` with ``--state``, ``--members``
and ``--offsets``. What it reports per partition is the group's start offset (records below it are all acknowledged
or archived) and its lag; how many records are acquired or archived right now is state of the share-partition leader
that no admin request returns (failsafe's runs count them from their history: the console's share-group view).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from failsafe.errors import UserError
from failsafe.jvm.java import find_java
from failsafe.jvm.jvm import tool_command
from failsafe.jvm.kafka import KafkaDist
from failsafe.supervisor import run_to_end
from failsafe.tools.connections import bootstrap_args
from failsafe.tools.kafka_tools import main_class

TOOL_TIMEOUT_S = 60.0
_NOT_FOUND = re.compile(r"GroupIdNotFoundException: Group (\S+) not found")
_NO_MEMBERS = re.compile(r"Share group '.*' has no active members\.")


@dataclass
class ShareGroupDescription:
    group: str
    coordinator: str = ""
    state: str = ""
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    members: list[dict] = field(
        default_factory=list
    )  # consumer_id, host, client_id, partitions, member_epoch, assignment
    partitions: list[dict] = field(default_factory=list)  # topic, partition, leader_epoch, start_offset, lag

    def to_json(self) -> dict:
        return asdict(self)


def fixed_width_rows(text: str) -> list[dict[str, str]]:
    """The rows of a table Kafka's tools print: a header of upper-case names, each column starting where its name
    starts."""
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if line.startswith("GROUP ")), None)
    if header_at is None:
        return []
    header = lines[header_at]
    starts = [m.start() for m in re.finditer(r"\S+(?: \(\S+\))?", header)]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    rows = []
    for line in lines[header_at + 1 :]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows.append(dict(zip(names, cells, strict=True)))
    return rows


def _number(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


def _run(dist: KafkaDist, bootstrap_servers: str, args: list[str]) -> str:
    done = run_to_end(
        tool_command(find_java(), dist, main_class(dist, "share-groups"), [*bootstrap_args(bootstrap_servers), *args]),
        name="kafka-share-groups",
        timeout_s=TOOL_TIMEOUT_S,
    )
    error = next((line for line in done.output.splitlines() if line.startswith("Error:")), None)
    missing = _NOT_FOUND.search(done.output)
    if missing:
        raise UserError(
            f"share group {missing.group(1)} does not exist: 'failsafe groups list --share' shows the share "
            f"groups there are"
        )
    if done.returncode != 0 or error:
        last = error or (done.output.strip().splitlines()[-1:] or [f"exit {done.returncode}"])[0]
        raise UserError(f"Kafka's kafka-share-groups {' '.join(args)} failed: {last.removeprefix('Error: ')}")
    return done.output


def list_share_groups(dist: KafkaDist, bootstrap_servers: str) -> list[str]:
    return sorted(
        line.strip()
        for line in _run(dist, bootstrap_servers, ["--list"]).splitlines()
        if line.strip() and not line.startswith(("[", "WARN", "SLF4J"))
    )


def describe_share_group(dist: KafkaDist, bootstrap_servers: str, group: str) -> ShareGroupDescription:
    desc = ShareGroupDescription(group)
    for row in fixed_width_rows(
        _run(dist, bootstrap_servers, ["--describe", "--group", group, "--state", "--verbose"])
    ):
        desc.coordinator, desc.state = row.get("COORDINATOR (ID)", ""), row.get("STATE", "")
        desc.group_epoch, desc.assignment_epoch = (
            _number(row.get("GROUP-EPOCH", "")),
            _number(row.get("ASSIGNMENT-EPOCH", "")),
        )
    members = _run(dist, bootstrap_servers, ["--describe", "--group", group, "--members", "--verbose"])
    if not _NO_MEMBERS.search(members):
        desc.members = [
            {
                "consumer_id": r.get("CONSUMER-ID", ""),
                "host": r.get("HOST", ""),
                "client_id": r.get("CLIENT-ID", ""),
                "partitions": _number(r.get("#PARTITIONS", "")),
                "member_epoch": _number(r.get("MEMBER-EPOCH", "")),
                "assignment": [a for a in r.get("ASSIGNMENT", "").split(",") if a and a != "-"],
            }
            for r in fixed_width_rows(members)
        ]
    desc.partitions = [
        {
            "topic": r.get("TOPIC", ""),
            "partition": _number(r.get("PARTITION", "")),
            "leader_epoch": _number(r.get("LEADER-EPOCH", "")),
            "start_offset": _number(r.get("START-OFFSET", "")),
            "lag": _number(r.get("LAG", "")),
        }
        for r in fixed_width_rows(
            _run(dist, bootstrap_servers, ["--describe", "--group", group, "--offsets", "--verbose"])
        )
    ]
    return desc


def format_share_group(desc: ShareGroupDescription) -> str:
    def table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
        cells = [header, *[tuple("-" if v is None else str(v) for v in row) for row in rows]]
        widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
        return [" ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]

    out = table(
        ("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
        [(desc.group, desc.coordinator, desc.state, desc.group_epoch, desc.assignment_epoch, len(desc.members))],
    )
    out.append("")
    if desc.members:
        out += table(
            ("CLIENT-ID", "CONSUMER-ID", "HOST", "MEMBER-EPOCH", "ASSIGNMENT"),
            [
                (m["client_id"], m["consumer_id"], m["host"], m["member_epoch"], ",".join(m["assignment"]) or "-")
                for m in desc.members
            ],
        )
    else:
        out.append(f"Share group '{desc.group}' has no active members.")
    out.append("")
    out += table(
        ("TOPIC", "PARTITION", "START-OFFSET", "LAG"),
        [(p["topic"], p["partition"], p["start_offset"], p["lag"]) for p in desc.partitions],
    )
    return "\n".join(out)
