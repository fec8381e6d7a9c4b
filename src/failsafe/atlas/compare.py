"""``failsafe compare``: the same atlas cells in two modes (two Kafka versions), and which differences are real at N.

Stored cells (store.py) are paired by (fault, profile, client) when one is in mode A and the other in mode B; cells of
other modes are left out, and a cell of A or B without its partner is listed as unpaired. For each pair, over the judged
runs of each side (verdict VALID, INVALID, UNKNOWN or KNOWN; runs that could not be carried out are kept apart in the
store and never counted):

- each time of TIME_MEASURES: p50 and p95 per side (nearest rank, as the atlas shows them), the ratio of the p50s (B
  over A) and a two-sided Mann-Whitney U test (scipy, method "auto": exact when a side has 8 values or fewer and no
  value is tied, a normal approximation otherwise). It compares whole distributions and assumes no shape, which suits
  failover times with a long tail and five runs a side.
- the runs showing each anomaly, the runs that lost acknowledged writes, the INVALID runs and the runs that were not
  VALID: k of n per side and Fisher's exact test (two-sided).

A difference is called significant when p < ALPHA (0.05). Each comparison of two equal distributions is flagged with a
chance of about 1 in 20, so across many cells and measures some flags are expected by chance alone; no correction for
multiple comparisons is applied, and every p is shown so that a reader can apply one (Bonferroni: ALPHA divided by the
number of comparisons). At small N the exact tests are conservative (flag less often than 1 in 20), and some N can
flag nothing: with 3 runs a side the smallest p Mann-Whitney can give is 0.1. ``min_p`` says so for every row.

The JSON (write_json)::

    {"format": 1, "what": "...", "modes": [A, B], "alpha": 0.05,
     "cells": [{"cell": {"fault", "profile", "client"}, "label": "fault · profile · client",
                "ids": {"a": [cell id], "b": [cell id]},  # more than one when a key was passed more than once
                "runs": {"a": n, "b": n}, "verdicts": {"a": {VERDICT: n}, "b": {...}},
                "times": {FIELD: {n_a, n_b, p50_a, p50_b, p95_a, p95_b, ratio, u, p, min_p, significant[, why]}},
                "anomalies": {"lost_acknowledged" | "INVALID" | "not VALID" | CHECKER.ANOMALY:
                              {k_a, n_a, k_b, n_b, p, min_p, significant[, why]}}}],
     "unpaired": [{"cell": {...}, "label": ..., "mode": the mode it has, "missing": the mode it lacks}],
     "significant": ["fault · profile · client · FIELD or row", ...]}

Times are in milliseconds; p, u, min_p, significant are null (with a ``why``) when a side has too few values. The page
(write_html) and the terminal tables (rich_tables) show the same rows: a table per time measure, then one of the counts.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from scipy import stats

from failsafe.atlas.render import show
from failsafe.checkers.common import Verdict
from failsafe.reports.html import CSS
from failsafe.scenarios.store.repeat import spread

FORMAT = 1
ALPHA = 0.05
WHAT = (
    "failsafe compare: the same atlas cells in two modes; times by a two-sided Mann-Whitney U test, runs showing an "
    "anomaly by Fisher's exact test; significant when p < alpha, with no correction for multiple comparisons"
)
TIME_MEASURES: tuple[tuple[str, str], ...] = (
    ("unavailable_ms", "client-visible unavailability"),
    ("new_leader_ms", "time to a new leader"),
    ("followed_stall_ms", "follower stall: write stall on partitions the faulted broker followed"),
    ("new_controller_ms", "time to a new active controller"),
    ("rebalance_pause_ms", "rebalance pause"),
)
# The count rows every pair has, before its anomalies (whose names are CHECKER.ANOMALY, so never one of these).
LOST, INVALID, NOT_VALID = "lost_acknowledged", "INVALID", "not VALID"
JUDGED = frozenset(v.value for v in Verdict)
# Columns of words, left-aligned; the others are numbers.
TEXT_COLUMNS = frozenset(("cell", "runs showing", "significant"))
PAGE_CSS = """
tr.sig td { background: #ffe9b3; font-weight: bold; }
.why { color: #777; font-size: 0.8rem; }
"""


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def mann_whitney(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> dict[str, Any]:
    """Two samples' p50, p95, ratio of p50s (b over a) and a two-sided Mann-Whitney U test (u is a's statistic)."""
    xs, ys = [float(v) for v in a], [float(v) for v in b]
    sa, sb = spread(xs), spread(ys)
    p50_a, p50_b = (sa["median"] if sa else None), (sb["median"] if sb else None)
    out: dict[str, Any] = {
        "n_a": len(xs),
        "n_b": len(ys),
        "p50_a": p50_a,
        "p50_b": p50_b,
        "p95_a": sa["p95"] if sa else None,
        "p95_b": sb["p95"] if sb else None,
        "ratio": p50_b / p50_a if p50_a and p50_b is not None else None,
        "u": None,
        "p": None,
        "min_p": None,
        "significant": None,
    }
    if len(xs) < 2 or len(ys) < 2:
        out["why"] = f"fewer than 2 values on a side (n={len(xs)} and {len(ys)}): no test"
        return out
    # Every run of both sides the same number: no difference, and the normal approximation would divide by zero.
    if len(set(xs) | set(ys)) == 1:
        u, p = len(xs) * len(ys) / 2, 1.0
    else:
        result = stats.mannwhitneyu(xs, ys, alternative="two-sided", method="auto")
        u, p = float(result.statistic), min(float(result.pvalue), 1.0)
    # Both extreme orderings (every a below every b, or above) have probability 1/C(n_a+n_b, n_a) under the exact test.
    min_p = min(1.0, 2 / math.comb(len(xs) + len(ys), len(xs)))
    out.update(u=u, p=p, min_p=min_p, significant=p < alpha)
    if p >= alpha and min_p >= alpha:
        out["why"] = _cannot_reach(len(xs), len(ys), alpha, min_p)
    return out


def fisher(k_a: int, n_a: int, k_b: int, n_b: int, alpha: float = ALPHA) -> dict[str, Any]:
    """k_a of n_a runs against k_b of n_b, by Fisher's exact test (two-sided); p is None when a side has no run."""
    for k, n in ((k_a, n_a), (k_b, n_b)):
        if not 0 <= k <= n:
            raise ValueError(f"runs showing it ({k}) must be between 0 and the runs ({n})")
    out: dict[str, Any] = {
        "k_a": k_a,
        "n_a": n_a,
        "k_b": k_b,
        "n_b": n_b,
        **dict.fromkeys(("p", "min_p", "significant")),
    }
    if n_a == 0 or n_b == 0:
        out["why"] = f"no judged run on a side (n={n_a} and {n_b}): no test"
        return out
    p = _fisher_p(k_a, n_a, k_b, n_b)
    # The smallest p at these n is at a corner: every run of one side shows it and no run of the other (checked
    # against every table for n up to 8).
    min_p = min(_fisher_p(0, n_a, n_b, n_b), _fisher_p(n_a, n_a, 0, n_b))
    out.update(p=p, min_p=min_p, significant=p < alpha)
    if p >= alpha and min_p >= alpha:
        out["why"] = _cannot_reach(n_a, n_b, alpha, min_p)
    return out


def _fisher_p(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    return min(float(stats.fisher_exact([[k_a, n_a - k_a], [k_b, n_b - k_b]]).pvalue), 1.0)


def _cannot_reach(n_a: int, n_b: int, alpha: float, min_p: float) -> str:
    return f"at n={n_a} and {n_b} no difference can reach p < {alpha:g}: the smallest p possible is {min_p:.2g}"


def _judged(cells: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for c in cells for r in c.get("runs") or [] if isinstance(r, dict) and r.get("verdict") in JUDGED]


def _counts(runs_a: list[dict], runs_b: list[dict], alpha: float) -> dict[str, dict[str, Any]]:
    def row(shows) -> dict[str, Any]:
        return fisher(
            sum(1 for r in runs_a if shows(r)), len(runs_a), sum(1 for r in runs_b if shows(r)), len(runs_b), alpha
        )

    rows = {
        LOST: row(lambda r: (_number(r.get("lost_acknowledged")) or 0) > 0),
        INVALID: row(lambda r: r["verdict"] == Verdict.INVALID),
        NOT_VALID: row(lambda r: r["verdict"] != Verdict.VALID),
    }
    names = sorted({str(name) for r in (*runs_a, *runs_b) for name in (r.get("anomalies") or {})})
    for name in names:
        rows.setdefault(name, row(lambda r, name=name: (_number((r.get("anomalies") or {}).get(name)) or 0) > 0))
    return rows


def _verdicts(runs: list[dict]) -> dict[str, int]:
    found: dict[str, int] = {}
    for r in runs:
        found[r["verdict"]] = found.get(r["verdict"], 0) + 1
    return dict(sorted(found.items()))


def compare(cells: list[dict[str, Any]], mode_a: str, mode_b: str, alpha: float = ALPHA) -> dict[str, Any]:
    """The pairs of ``cells`` in ``mode_a`` and ``mode_b``, each measure tested (the module docstring: the format)."""
    if mode_a == mode_b:
        raise ValueError(f"compare needs two modes, and both are {mode_a}")
    # (fault, profile, client) -> side -> its cells, in the order the cells came (the store gives the grid's order).
    groups: dict[tuple[str, str, str], dict[str, list[dict]]] = {}
    for c in cells:
        key = c.get("key") or {}
        side = {mode_a: "a", mode_b: "b"}.get(key.get("mode"))
        if side is not None:
            at = (str(key.get("fault")), str(key.get("profile")), str(key.get("client")))
            groups.setdefault(at, {"a": [], "b": []})[side].append(c)
    pairs: list[dict[str, Any]] = []
    unpaired: list[dict[str, Any]] = []
    significant: list[str] = []
    for (fault, profile, client), sides in groups.items():
        where = {"fault": fault, "profile": profile, "client": client}
        label = " · ".join((fault, profile, client))
        if not sides["a"] or not sides["b"]:
            has, lacks = (mode_a, mode_b) if sides["a"] else (mode_b, mode_a)
            unpaired.append({"cell": where, "label": label, "mode": has, "missing": lacks})
            continue
        runs_a, runs_b = _judged(sides["a"]), _judged(sides["b"])
        times = {
            field: mann_whitney(
                [v for r in runs_a if (v := _number(r.get(field))) is not None],
                [v for r in runs_b if (v := _number(r.get(field))) is not None],
                alpha,
            )
            for field, _ in TIME_MEASURES
        }
        counts = _counts(runs_a, runs_b, alpha)
        significant += [f"{label} · {name}" for name, row in (*times.items(), *counts.items()) if row["significant"]]
        pairs.append(
            {
                "cell": where,
                "label": label,
                "ids": {side: [str(c.get("id")) for c in sides[side]] for side in ("a", "b")},
                "runs": {"a": len(runs_a), "b": len(runs_b)},
                "verdicts": {"a": _verdicts(runs_a), "b": _verdicts(runs_b)},
                "times": times,
                "anomalies": counts,
            }
        )
    return {
        "format": FORMAT,
        "what": WHAT,
        "modes": [mode_a, mode_b],
        "alpha": alpha,
        "cells": pairs,
        "unpaired": unpaired,
        "significant": significant,
    }


# Rows as text, shared by the page and the terminal so both say the same.


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.2g}"


def _flag(row: dict[str, Any]) -> str:
    return "SIGNIFICANT" if row["significant"] else "—" if row["significant"] is None else "no"


def time_headers(result: dict[str, Any]) -> tuple[str, ...]:
    a, b = result["modes"]
    return ("cell", f"n {a}/{b}", f"p50 {a}", f"p50 {b}", f"p95 {a}", f"p95 {b}", "ratio", "p", "significant")


def time_rows(result: dict[str, Any], field: str) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Each pair that has ``field`` on a side: its row's texts, and the test's dict."""
    rows = []
    for pair in result["cells"]:
        t = pair["times"][field]
        if t["n_a"] or t["n_b"]:
            ratio = "—" if t["ratio"] is None else f"×{t['ratio']:.2f}"
            texts = (pair["label"], f"{t['n_a']}/{t['n_b']}")
            texts += tuple(show(field, t[k]) for k in ("p50_a", "p50_b", "p95_a", "p95_b"))
            rows.append(((*texts, ratio, _p(t["p"]), _flag(t)), t))
    return rows


def count_headers(result: dict[str, Any]) -> tuple[str, ...]:
    a, b = result["modes"]
    return ("cell", "runs showing", f"{a} k/n", f"{b} k/n", "p", "significant")


def count_rows(result: dict[str, Any]) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    rows = []
    for pair in result["cells"]:
        for name, f in pair["anomalies"].items():
            texts = (pair["label"], name, f"{f['k_a']}/{f['n_a']}", f"{f['k_b']}/{f['n_b']}", _p(f["p"]), _flag(f))
            rows.append((texts, f))
    return rows


def _tables(result: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...], list]]:
    """(id, title, headers, rows) of every table, the times' first."""
    tables = [(f, f"{title} ({f})", time_headers(result), time_rows(result, f)) for f, title in TIME_MEASURES]
    counts = "runs showing each anomaly, lost acknowledged writes, INVALID, not VALID"
    return [*tables, ("counts", counts, count_headers(result), count_rows(result))]


def _html_table(table_id: str, title: str, headers: tuple[str, ...], rows: list) -> str:
    if not rows:
        return (
            f'<section id="{escape(table_id)}"><h2>{escape(title)}</h2><p class="empty">No pair has it.</p></section>'
        )
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for texts, test in rows:
        why = f'<br><span class="why">{escape(test["why"])}</span>' if test.get("why") else ""
        tds = "".join(
            f"<td>{escape(t)}</td>" if h in TEXT_COLUMNS else f'<td class="num">{escape(t)}</td>'
            for h, t in zip(headers[:-1], texts[:-1], strict=True)
        )
        sig = ' class="sig"' if test["significant"] else ""
        body.append(f"<tr{sig}>{tds}<td>{escape(texts[-1])}{why}</td></tr>")
    return (
        f'<section id="{escape(table_id)}"><h2>{escape(title)}</h2><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )


def render_page(result: dict[str, Any]) -> str:
    a, b = (str(m) for m in result["modes"])
    alpha = float(result["alpha"])
    title = f"failsafe compare: {a} and {b}"
    flagged = result["significant"]
    parts = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">Cells in both modes: {len(result["cells"])}. Times: p50 and p95 over each side\'s runs, '
        f"the ratio of the p50s ({escape(b)} over {escape(a)}) and p of a two-sided Mann-Whitney U test; counts: runs "
        f"showing it of the judged runs, and p of Fisher's exact test. Significant when p &lt; {alpha:g}: about 1 in "
        f"{round(1 / alpha)} comparisons of equal distributions is flagged by chance, and no correction for multiple "
        "comparisons is applied (p is shown so you can apply one).</p>",
        f"<h2>Significant ({len(flagged)})</h2>",
        "<ul>" + "".join(f"<li>{escape(s)}</li>" for s in flagged) + "</ul>"
        if flagged
        else '<p class="empty">No difference is significant.</p>',
    ]
    parts += [_html_table(*t) for t in _tables(result)]
    if result["unpaired"]:
        parts.append(
            "<h2>Unpaired cells</h2><ul>"
            + "".join(
                f"<li>{escape(u['label'])}: only {escape(u['mode'])}, none in {escape(u['missing'])}</li>"
                for u in result["unpaired"]
            )
            + "</ul>"
        )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{CSS}{PAGE_CSS}</style></head>\n<body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def _replace(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)
    return path


def write_json(result: dict[str, Any], path: Path) -> Path:
    """The result as JSON at ``path``, replaced whole; returns the path."""
    return _replace(path, json.dumps(result, indent=2, ensure_ascii=False) + "\n")


def write_html(result: dict[str, Any], path: Path) -> Path:
    """One self-contained page (no script, no network) at ``path``, replaced whole; returns the path."""
    return _replace(path, render_page(result))


def rich_tables(result: dict[str, Any]) -> list[Table]:
    """The page's tables for a terminal: one per time measure, then the counts. Texts are never read as markup."""
    out = []
    for _, title, headers, rows in _tables(result):
        table = Table(title=title, caption=None if rows else "no pair has it")
        for h in headers:
            table.add_column(h, justify="left" if h in TEXT_COLUMNS else "right")
        for texts, test in rows:
            flag = texts[-1] + (f" ({test['why']})" if test.get("why") else "")
            table.add_row(
                *(Text(t) for t in texts[:-1]), Text(flag), style="bold yellow" if test["significant"] else None
            )
        out.append(table)
    return out
