"""App scenarios: a user's application between failsafe's verifying producers and the final read of its output, held to
the contract it declares, with the kit's topics, producers (the app's input) and consumers (readers of its output).

    [[apps]]     name, command (a list: any language), input, output, group, instances, env, ready, ready_timeout_s,
                 stop_timeout_s, restart, host, files
    [contract]   form = "each" | "totals"; delivery = "exactly-once" | "at-least-once" | "at-most-once";
                 identity = "value" | "key" | "json:FIELD" | "header:NAME", order = "none" | "per-key" (each);
                 total = "value" | "json:FIELD" (totals)

``command`` runs once per instance under failsafe's supervisor, in its own process group, in the directory failsafe
runs in; ``{python}`` in it is the Python failsafe runs on (it has confluent-kafka). Each instance is given, in its
environment (docs/apps.md): FAILSAFE_BOOTSTRAP_SERVERS, FAILSAFE_INPUT_TOPICS and FAILSAFE_OUTPUT_TOPICS (comma
separated), FAILSAFE_GROUP, FAILSAFE_APP, FAILSAFE_INSTANCE (0, 1, ...), FAILSAFE_INSTANCES, FAILSAFE_PROCESS (this
process's name: ctp-0, ctp-0.1 once started again) and FAILSAFE_TRANSACTIONAL_ID (the same for every start of one
instance, so a new start fences the old one), then the scenario's ``env``.

``ready``: when an instance counts as started: ``group`` (the app's group owns every partition of its input; the
default), ``log:REGEX`` (a line of its output matches), ``port:N`` (127.0.0.1:N accepts a connection; the host's
address:N for an app on a host).

``host``: a host of the cluster's inventory to run every instance on, over SSH (on_host.py); ``files``: the files and
directories (paths relative to where failsafe runs) copied to the app's directory there first, at the same relative
paths.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from failsafe.checkers.app.each import identity_is_valid
from failsafe.faults.apps import APP_INSTANCES
from failsafe.faults.nodes import CONSUMER_GROUPS, TRANSACTIONAL_IDS
from failsafe.scenarios.base import (
    MAX_WORKERS,
    KindInfo,
    fail,
    group_name,
    positive,
    refuse_unknown,
    scenario_name,
    str_dict,
    tables,
    take,
    topic_names,
    worker_name,
)
from failsafe.scenarios.kit.clients import TOP as KIT_TOP
from failsafe.scenarios.kit.clients import ClientsScenario, parse_clients

TOP = KIT_TOP | {"apps", "contract"}
ISOLATION = "isolation.level"
DELIVERIES = ("exactly-once", "at-least-once", "at-most-once")
FORMS = ("each", "totals")
ORDERS = ("none", "per-key")
READY_GROUP = "group"
TIMESTAMP_TYPE = "message.timestamp.type"
# What failsafe does when an instance exits by itself, as an orchestrator's restart policy says (Kubernetes' Never,
# OnFailure, Always): leave it down, start it again when it failed (exit code not 0), or whenever it exits.
RESTARTS = ("never", "on-failure", "always")


@dataclass(frozen=True)
class App:
    name: str
    command: tuple[str, ...]
    input: tuple[str, ...]
    output: tuple[str, ...]
    group: str
    instances: int = 1
    env: dict[str, str] = field(default_factory=dict)
    ready: str = READY_GROUP
    ready_timeout_s: float = 60.0
    # How long a stop (SIGTERM) waits for an instance to exit before it is killed.
    stop_timeout_s: float = 10.0
    restart: str = "never"
    host: str | None = None  # a host of the cluster's inventory (on_host.py); None: where failsafe runs
    files: tuple[str, ...] = ()  # copied to the app's directory on its host

    def processes(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.instances)]


@dataclass(frozen=True)
class Contract:
    """What the app promises: of each input record (``each``, checkers/app/each.py), or of the running total per key it
    publishes (``totals``, checkers/app/totals.py)."""

    form: str = "each"
    delivery: str = "exactly-once"
    identity: str = "value"
    total: str = "value"
    # each: "per-key" asks that the output keep each key's input order (checkers/app/order.py).
    order: str = "none"


@dataclass(frozen=True)
class AppScenario(ClientsScenario):
    apps: tuple[App, ...] = ()
    contract: Contract = Contract()

    def instances(self) -> list[str]:
        return [n for a in self.apps for n in a.processes()]

    def client_hosts(self) -> dict[str, str]:
        """The kit's clients on hosts, and each app placed on one: the engine refuses an unknown host, --attach and a
        fault that cuts the clients' links (failsafe cuts them where it runs) as for the lab's clients."""
        return {**super().client_hosts(), **{a.name: a.host for a in self.apps if a.host}}

    def checker_options(self) -> dict[str, dict]:
        """The contract, for the app checker: the apps' input and output topics, and which readers read committed."""
        options = super().checker_options()
        outputs = sorted({t for a in self.apps for t in a.output})
        readers = {"read_committed": [], "read_uncommitted": []}
        for c in self.consumers:
            if set(c.topics) & set(outputs):
                readers.setdefault(c.properties.get(ISOLATION, "read_committed"), []).extend(c.processes())
        options["app"] = {
            "input_topics": sorted({t for a in self.apps for t in a.input}),
            "output_topics": outputs,
            "delivery": self.contract.delivery,
            "identity": self.contract.identity,
            "form": self.contract.form,
            "total": self.contract.total,
            "order": self.contract.order,
            "committed_readers": readers["read_committed"],
            "uncommitted_readers": readers["read_uncommitted"],
            **options.get("app", {}),
        }
        return options

    def manifest(self) -> dict[str, Any]:
        manifest = super().manifest()
        return {
            **manifest,
            "apps": [asdict(a) for a in self.apps],
            "contract": asdict(self.contract),
            "client_logs": {**manifest["client_logs"], **{n: f"logs/{n}.log" for n in self.instances()}},
        }


def _command(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise TypeError('expected a non-empty list of strings, e.g. ["{python}", "app.py"]')
    return tuple(value)


def _files(value: object) -> tuple[str, ...]:
    """Paths below the directory failsafe runs in, which exist: they keep their relative paths on the host."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TypeError('expected a list of paths, e.g. ["examples/apps/eos_ctp.py"]')
    for v in value:
        path = PurePosixPath(v)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{v!r}: a path relative to the directory failsafe runs in, without '..'")
        if not Path(v).exists():
            raise ValueError(f"{v!r}: no such file or directory here ({Path.cwd()})")
    return tuple(value)


def _restart(value: object) -> str:
    if value not in RESTARTS:
        raise ValueError(f"expected one of {', '.join(RESTARTS)}")
    return str(value)


def _ready(value: object) -> str:
    if value == READY_GROUP:
        return READY_GROUP
    if isinstance(value, str) and value.startswith("log:"):
        try:
            re.compile(value[4:])
        except re.error as e:
            raise ValueError(f"log:REGEX needs a regular expression: {e}") from e
        return value
    if isinstance(value, str) and value.startswith("port:") and value[5:].isdigit() and 0 < int(value[5:]) < 65536:
        return value
    raise ValueError('expected "group", "log:REGEX" or "port:N"')


def parse_app(data: dict, kind: KindInfo) -> AppScenario:
    name = scenario_name(data)
    refuse_unknown(data, name, TOP)
    apps = tuple(
        take(
            a,
            f"{name}.apps[{i}]",
            App,
            ("name", "command", "input", "output", "group"),
            {
                "name": worker_name,
                "command": _command,
                "input": topic_names,
                "output": topic_names,
                "group": group_name,
                "env": str_dict,
                "ready": _ready,
                "ready_timeout_s": positive,
                "stop_timeout_s": positive,
                "restart": _restart,
                "host": worker_name,
                "files": _files,
            },
        )
        for i, a in enumerate(tables(data, "apps", name))
    )
    contract = take(data.get("contract", {}), f"{name}.contract", Contract)
    instances = tuple(n for a in apps for n in a.processes())
    kit_data = {k: v for k, v in data.items() if k not in ("apps", "contract")}
    scenario = parse_clients(
        kit_data,
        kind,
        AppScenario,
        TOP,
        # An instance's FAILSAFE_TRANSACTIONAL_ID is its NAME-INDEX: a txn-coordinator fault may name it.
        clients={APP_INSTANCES: instances, TRANSACTIONAL_IDS: instances, CONSUMER_GROUPS: tuple(a.group for a in apps)},
        apps=apps,
        contract=contract,
    )
    # The broker stamps each output record when it writes it, unless the scenario says otherwise: what the app's pace is
    # measured by (checkers/app/pace.py).
    outputs = {t for a in apps for t in a.output}
    topics = tuple(
        replace(t, configs={TIMESTAMP_TYPE: "LogAppendTime", **t.configs}) if t.name in outputs else t
        for t in scenario.topics
    )
    scenario = replace(scenario, topics=topics, raw=data)
    _validate(scenario)
    return scenario


def _validate(s: AppScenario) -> None:
    where = s.name
    topics = {t.name for t in s.topics}
    if not s.apps:
        raise fail(where, "an app scenario needs [[apps]]")
    if s.contract.delivery not in DELIVERIES:
        raise fail(f"{where}.contract.delivery", f"{s.contract.delivery!r} is not one of {', '.join(DELIVERIES)}")
    if s.contract.form not in FORMS:
        raise fail(f"{where}.contract.form", f"{s.contract.form!r} is not one of {', '.join(FORMS)}")
    if s.contract.order not in ORDERS:
        raise fail(f"{where}.contract.order", f"{s.contract.order!r} is not one of {', '.join(ORDERS)}")
    identity = s.contract.identity
    if not identity_is_valid(identity):
        raise fail(f"{where}.contract.identity", f"{identity!r} is not value, key, json:FIELD or header:NAME")
    total = s.contract.total
    if total != "value" and not (total.startswith("json:") and len(total) > 5):
        raise fail(f"{where}.contract.total", f"{total!r} is not value or json:FIELD")
    if s.contract.form == "totals":
        unkeyed = [p.name for p in s.producers if not p.keys and any(p.topic in a.input for a in s.apps)]
        if unkeyed:
            raise fail(f"{where}.contract.form", f"totals are per key: the input's producers {unkeyed} write no keys")
    written = {p.topic for p in s.producers}
    for i, a in enumerate(s.apps):
        for field_name in ("input", "output"):
            bad = [t for t in getattr(a, field_name) if t not in topics]
            if bad or not getattr(a, field_name):
                raise fail(
                    f"{where}.apps[{i}].{field_name}",
                    f"{list(getattr(a, field_name))!r} must name the scenario's topics {sorted(topics)}",
                )
        if set(a.input) & set(a.output):
            raise fail(f"{where}.apps[{i}]", "input and output must be different topics")
        if not set(a.input) <= written:
            raise fail(
                f"{where}.apps[{i}].input",
                f"{sorted(set(a.input) - written)} has no [[producers]]: failsafe's producers write the app's input",
            )
        if a.files and a.host is None:
            raise fail(f"{where}.apps[{i}].files", "files are copied to the app's host: set host, or leave files out")
        if not 1 <= a.instances <= MAX_WORKERS:
            raise fail(f"{where}.apps[{i}].instances", f"{a.instances} must be 1 to {MAX_WORKERS}")
    outputs = {t for a in s.apps for t in a.output}
    if outputs & written:
        raise fail(where, f"{sorted(outputs & written)} is an app's output and written by [[producers]] too")
    names = [p.name for p in s.producers] + [c.name for c in s.consumers] + [a.name for a in s.apps]
    if len(names) != len(set(names)):
        raise fail(where, f"producer, consumer and app names must be unique: {names}")
