"""Scenario expectations, evaluated against the checkers' results: a path into them, a comparator, a value.

A path is dotted; ``*`` matches every element of a list or every value of a table, and a segment
such as ``acksall-*`` matches every key with that prefix. With several matches, every match must
satisfy the comparator (``any`` needs one). A path that matches nothing is ``unknown``: nothing
was measured, so nothing is claimed.
"""

from __future__ import annotations

import fnmatch
import operator
from typing import Any

from failsafe.scenarios.base import Expectation

_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def resolve(results: dict, path: str) -> list[Any]:
    current: list[Any] = [results]
    for segment in path.split("."):
        nxt: list[Any] = []
        for item in current:
            if isinstance(item, dict):
                if any(c in segment for c in "*?["):
                    nxt.extend(v for k, v in item.items() if fnmatch.fnmatchcase(str(k), segment))
                elif segment in item:
                    nxt.append(item[segment])
            elif isinstance(item, list):
                if segment == "*":
                    nxt.extend(item)
                elif segment.isdigit() and int(segment) < len(item):
                    nxt.append(item[int(segment)])
        current = nxt
    return current


def _expected(e: Expectation) -> str:
    if e.op in ("all", "any", "none"):
        return f"{e.op} of {e.check}"
    return f"{e.check} {e.op} {e.value!r}"


def evaluate(e: Expectation, results: dict) -> dict:
    values = resolve(results, e.check)
    out = {"name": e.name, "description": e.description, "expected": _expected(e)}
    if not values:
        return {**out, "valid": "unknown", "observed": None, "error": f"nothing measured at {e.check}"}
    observed: Any = values[0] if len(values) == 1 else values
    try:
        if e.op == "all":
            valid = all(bool(v) for v in values)
        elif e.op == "any":
            valid = any(bool(v) for v in values)
        elif e.op == "none":
            valid = not any(bool(v) for v in values)
        elif e.op == "contains":
            valid = all(isinstance(v, list) and e.value in v for v in values)
        else:
            if any(v is None for v in values) and e.value is not None:
                return {**out, "valid": "unknown", "observed": observed, "error": f"{e.check} was not measured"}
            valid = all(_COMPARE[e.op](v, e.value) for v in values)
    except TypeError as err:
        return {**out, "valid": "unknown", "observed": observed, "error": str(err)}
    return {**out, "valid": bool(valid), "observed": observed}


def evaluate_all(expectations: tuple[Expectation, ...], results: dict) -> list[dict]:
    return [evaluate(e, results) for e in expectations]
