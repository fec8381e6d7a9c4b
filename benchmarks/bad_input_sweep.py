"""The bad-input sweep: every field of every catalog scenario replaced by each of a set of bad values, parsed as
`failsafe run` parses a scenario (in-process, no cluster), and each outcome counted: refused in one line naming the
field (what bad input must get: exit 2), refused without naming it, a crash (any other exception: exit 5), a hang (no
answer in 10 s), or accepted (the value was one the field takes).

    .venv/bin/python benchmarks/bad_input_sweep.py --out docs/benchmarks/bad-input-sweep.json
"""

from __future__ import annotations

import argparse
import copy
import signal
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import write_summary  # noqa: E402

HANG_S = 10
BAD_VALUES: dict[str, object] = {
    "nan": float("nan"),
    "inf": float("inf"),
    "-1": -1,
    "-10^12": -(10**12),
    "2^40": 2**40,
    "empty string": "",
    "300 x": "x" * 300,
    "../..": "../..",
    "empty list": [],
    "empty table": {},
    "true": True,
    "digits as text": "12",
    "deep list": [[[[[[[[[[1]]]]]]]]]],
    "10^6": 10**6,
    "control character": "a\x01b",
}


class Hang(Exception):
    pass


def _leaves(node: object, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in _leaves(v, (*path, k))] or [path]
    if isinstance(node, list) and node and all(isinstance(x, dict) for x in node):
        return [leaf for i, v in enumerate(node) for leaf in _leaves(v, (*path, i))]
    return [path]


def _set(data: dict, path: tuple, value: object) -> dict:
    data = copy.deepcopy(data)
    node: object = data
    for step in path[:-1]:
        node = node[step]  # type: ignore[index]
    node[path[-1]] = copy.deepcopy(value)  # type: ignore[index]
    return data


def _field(path: tuple) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def sweep() -> dict:
    from failsafe.errors import UserError
    from failsafe.scenarios.kinds import parse_table
    from failsafe.scenarios.registry import catalog_names, read_scenario

    def alarm(*_: object) -> None:
        raise Hang

    signal.signal(signal.SIGALRM, alarm)
    outcomes: Counter = Counter()
    crashes, hangs, unnamed = [], [], []
    started = time.monotonic()
    cases = 0
    for name in catalog_names():
        base = read_scenario(name).data
        for path in _leaves(base):
            if not path or path == ("kind",):
                continue
            for label, value in BAD_VALUES.items():
                data = _set(base, path, value)
                cases += 1
                signal.alarm(HANG_S)
                try:
                    parse_table(data, f"catalog scenario {name}")
                    outcomes["accepted"] += 1
                except UserError as e:
                    message = str(e)
                    field = path[-1] if isinstance(path[-1], str) else path[-2]
                    if "\n" not in message and (str(field) in message or _field(path) in message):
                        outcomes["refused naming the field"] += 1
                    else:
                        outcomes["refused"] += 1
                        unnamed.append(
                            {"scenario": name, "field": _field(path), "value": label, "message": message[:200]}
                        )
                except Hang:
                    outcomes["hang"] += 1
                    hangs.append({"scenario": name, "field": _field(path), "value": label})
                except Exception as e:  # noqa: BLE001 - what the sweep is for: any other exception is a crash (exit 5)
                    outcomes["crash"] += 1
                    crashes.append(
                        {
                            "scenario": name,
                            "field": _field(path),
                            "value": label,
                            "error": f"{type(e).__name__}: {e}"[:200],
                        }
                    )
                finally:
                    signal.alarm(0)
    kinds = Counter(f"{c['field'].rsplit('.', 1)[-1]}: {c['error'][:80]}" for c in crashes)
    return {
        "cases": cases,
        "scenarios": len(catalog_names()),
        "bad_values": list(BAD_VALUES),
        "outcomes": dict(outcomes),
        "crash_kinds": dict(kinds.most_common()),
        "crashes": crashes[:50],
        "hangs": hangs[:50],
        "refused_without_the_field": unnamed[:50],
        "wall_s": round(time.monotonic() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    summary = sweep()
    print(f"{summary['cases']} cases in {summary['wall_s']} s: {summary['outcomes']}", file=sys.stderr)
    write_summary(summary, parser.parse_args().out)


if __name__ == "__main__":
    main()
