"""``--set PATH=VALUE``: change any field of a scenario before it is validated and run.

PATH is dotted, as the TOML is nested: ``phases.chaos_s``, ``producers[0].acks``,
``producers[*].driver`` (every producer), ``producers[0].properties."max.in.flight.requests.per.connection"``
(a quoted segment may hold dots). VALUE is read as a TOML value (``1``, ``true``, ``"all"``,
``["foo"]``); anything that is not one is taken as a string. The changed scenario is validated
as a whole, so a wrong field or value gets the scenario's own error, and it is what scenario.json
records.
"""

from __future__ import annotations

import copy
import re
import tomllib
from typing import Any

from failsafe.scenarios.base import ScenarioError


class OverrideError(ScenarioError):
    """A --set that cannot be applied: no '=', a path that does not parse or leads nowhere."""


# Deeper than any scenario's table: a path or value this deep is not a scenario field.
MAX_DEPTH = 32


def parse_path(path: str) -> list[str | int]:
    """``producers[0].properties."a.b"`` -> ['producers', 0, 'properties', 'a.b']; ``[*]`` becomes '*'."""
    steps: list[str | int] = []
    rest = path
    while rest:
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 1:
                raise OverrideError(f"--set {path}: an opening quote without its closing one")
            steps.append(rest[1:end])
            rest = rest[end + 1 :]
        else:
            match = re.match(r"([A-Za-z0-9_-]+)((?:\[(?:\d+|\*)\])*)", rest)
            if not match or not match.group(1):
                raise OverrideError(
                    f'--set {path}: cannot read the path at {rest!r}; write NAME, NAME[N], NAME[*] or "a.quoted.name"'
                )
            steps.append(match.group(1))
            steps.extend(int(i) if i.isdigit() else "*" for i in re.findall(r"\[(\d+|\*)\]", match.group(2)))
            rest = rest[match.end() :]
        if rest.startswith("."):
            rest = rest[1:]
            if not rest:
                raise OverrideError(f"--set {path}: the path ends with '.'")
        elif rest:
            raise OverrideError(f"--set {path}: expected '.' at {rest!r}")
    if not steps:
        raise OverrideError("--set: an empty path; write PATH=VALUE, e.g. producers[0].acks=1")
    if len(steps) > MAX_DEPTH:
        raise OverrideError(f"--set {path[:60]}...: a path of {len(steps)} steps, deeper than any scenario field")
    return steps


def parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError as e:
        raise OverrideError(f"--set ...={text[:40]}...: a value nested too deep to be a scenario field") from e


def _apply(node: Any, steps: list[str | int], value: Any, where: str) -> None:
    step, rest = steps[0], steps[1:]
    if step == "*":
        if not isinstance(node, list) or not node:
            raise OverrideError(f"--set {where}: [*] needs a non-empty list here")
        for index in range(len(node)):
            _apply(node, [index, *rest], copy.deepcopy(value), where)
        return
    if isinstance(step, int):
        if not isinstance(node, list) or step >= len(node):
            size = len(node) if isinstance(node, list) else 0
            raise OverrideError(f"--set {where}: index {step} is out of range (the list has {size} entries)")
        if rest:
            _apply(node[step], rest, value, where)
        else:
            node[step] = value
        return
    if not isinstance(node, dict):
        raise OverrideError(f"--set {where}: {step!r} is inside something that is not a table")
    if rest:
        child = node.get(step)
        if child is None:
            child = node[step] = {} if not isinstance(rest[0], int) and rest[0] != "*" else []
        _apply(child, rest, value, where)
    else:
        node[step] = value


def apply_overrides(data: dict, assignments: tuple[str, ...] | list[str]) -> dict:
    """A copy of the scenario's raw data with every PATH=VALUE applied in order."""
    data = copy.deepcopy(data)
    for assignment in assignments:
        path, sep, text = assignment.partition("=")
        if not sep:
            raise OverrideError(f"--set {assignment}: expected PATH=VALUE, e.g. producers[0].acks=1")
        _apply(data, parse_path(path.strip()), parse_value(text.strip()), path.strip())
    return data
