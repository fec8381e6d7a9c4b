"""The soundness suite's table: the corpus's mutants judged by the code before the single durability judge and after it
(docs/benchmarks/soundness.json, benchmarks/bench_soundness.py). Reads only JSON."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks.render_base import load, num, source, table

_VERDICTS = ("VALID", "KNOWN", "INVALID", "UNKNOWN", "REFUSED")


def t_soundness(root: Path) -> str:
    rel = "docs/benchmarks/soundness.json"
    d = load(root, rel)["by_label"]
    labels = [label for label in ("before", "after") if label in d]
    header = ["judged by", "runs", "kinds", "mutations", "mutants", *_VERDICTS, "wall"]
    rows = []
    for label in labels:
        s = d[label]
        verdicts = s["verdicts"]
        rows.append(
            [
                f"**{label}**" if label == "after" else label,
                str(s["runs"]),
                str(len(s["kinds"])),
                str(s["mutations"]),
                num(s["mutants"]),
                *[
                    (f"**{verdicts.get(v, 0)}**" if v in ("VALID", "KNOWN") else str(verdicts.get(v, 0)))
                    for v in _VERDICTS
                ],
                f"{s['wall_s']:.0f} s",
            ]
        )
    by_mutation = ""
    if "before" in d:
        holes = Counter((row["mutation"]) for row in d["before"]["rows"] if row["verdict"] in ("VALID", "KNOWN"))
        judged = Counter(row["mutation"] for row in d["before"]["rows"])
        after = Counter(
            row["mutation"] for row in d.get("after", {}).get("rows", []) if row["verdict"] in ("VALID", "KNOWN")
        )
        by_mutation = "\n\n" + table(
            ["mutation", "mutants", "VALID or KNOWN before", "after"],
            [[m, str(judged[m]), str(holes[m]), str(after[m])] for m in judged],
        )
    return table(header, rows) + by_mutation + source(root, rel)


def t_bad_input_sweep(root: Path) -> str:
    rel = "docs/benchmarks/bad-input-sweep.json"
    d = load(root, rel)
    o = d["outcomes"]
    rows = [
        ["refused in one line naming the field (exit 2)", num(o.get("refused naming the field", 0))],
        [
            "refused in one line naming a field it conflicts with (a renamed topic its producers still name, "
            "a lock longer than the drain)",
            num(o.get("refused", 0)),
        ],
        ["accepted (a value the field takes)", num(o.get("accepted", 0))],
        ["**crashed** (exit 5)", f"**{num(o.get('crash', 0))}**"],
        ["**hung** (no answer in 10 s)", f"**{num(o.get('hang', 0))}**"],
    ]
    header = [
        f"{num(d['cases'])} cases: {d['scenarios']} catalog scenarios x every field x {len(d['bad_values'])} "
        f"bad values",
        "outcome",
    ]
    return table(header, rows) + f"\n\nBad values: {', '.join(d['bad_values'])}." + source(root, rel)


def t_cold_catalog(root: Path) -> str:
    rel, again = "docs/benchmarks/cold-catalog.json", "docs/benchmarks/cold-reruns.json"
    d, r = load(root, rel), load(root, again)
    runs = d["catalog"] + d["seed_lab"]
    header = ["exit", "runs", "scenarios"]
    rows = [
        [
            code,
            str(n),
            ", ".join(sorted({x["scenario"] for x in runs if str(x["exit_code"]) == code}))
            if code != "0"
            else f"{sum(1 for x in d['catalog'] if x['exit_code'] == 0)} catalog scenarios and the seed lab "
            f"{len(d['seed_lab'])} times",
        ]
        for code, n in d["exit_codes"].items()
    ]
    why = []
    for x in d["catalog"]:
        if x["exit_code"] != 0:
            for run in x["runs"]:
                reason = "; ".join(
                    filter(None, [", ".join(run["unexplained"]), ", ".join(f"known {k}" for k in run["known"])])
                )
                why.append([x["scenario"], run["verdict"], reason])
    again_rows = [[x["scenario"], str(x["exit_code"]), "; ".join(_why(run) for run in x["runs"])] for x in r["catalog"]]
    stale = load(root, STALE)
    stale_rows = [
        [x["scenario"], str(x["exit_code"]), "; ".join(_why(run) for run in x["runs"])] for x in stale["catalog"]
    ]
    return (
        table(header, rows)
        + "\n\n"
        + table(["scenario (cold)", "verdict", "what decided it"], why)
        + "\n\nRun again, cold:\n\n"
        + table(["scenario", "exit", "violations"], again_rows)
        + "\n\nAfter `stale-delivery` was split from `double-delivery` and declared known for librdkafka, cold:\n\n"
        + table(["scenario", "exit", "verdict and why"], stale_rows)
        + source(root, rel, again, STALE)
    )


STALE = "docs/benchmarks/cold-stale.json"


def _why(run: dict) -> str:
    """A run's verdict and what decided it: its unexplained violations, then the known ones it matched."""
    reasons = [*run["unexplained"], *(f"known {k}" for k in run["known"])]
    return run["verdict"] + (f" ({', '.join(reasons)})" if reasons else "")
