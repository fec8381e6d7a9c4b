"""compare: the same atlas cells on two Kafka releases, N runs each, and which differences are real at N
(docs/lifecycle.md)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from failsafe.cli.atlas import atlas_run_options
from failsafe.cli.hosts import load_inventory
from failsafe.cli.options import stdout
from failsafe.errors import UserError

DEFAULT_OUT = Path("failsafe-compare")
# The cells compared when --cells is not given: the atlas's default grid's KRaft part (every fault under every
# profile, librdkafka), on each release.
DEFAULT_CELLS = "client=librdkafka"
COMPARE_JSON = "compare.json"
COMPARE_HTML = "compare.html"


def modes_of(versions: str) -> tuple[str, str]:
    """``A,B`` -> the atlas's KRaft modes of the two releases; one UserError for anything else."""
    from failsafe.atlas.grid import MODE_BY_NAME

    names = [v.strip() for v in versions.split(",") if v.strip()]
    if len(names) != 2 or names[0] == names[1]:
        raise UserError(f"--kafka {versions!r}: name two different Kafka releases, e.g. --kafka 4.3.1,4.4.0")
    modes = tuple(f"kraft-{v}" for v in names)
    unknown = [v for v, m in zip(names, modes, strict=True) if m not in MODE_BY_NAME]
    if unknown:
        known = ", ".join(m.kafka_version for m in MODE_BY_NAME.values() if m.cluster_mode == "kraft")
        raise UserError(f"--kafka: the atlas has no KRaft mode of Kafka {unknown[0]}: choose from {known}")
    return modes[0], modes[1]


def with_modes(selections: tuple[str, ...], modes: tuple[str, str]) -> list[str]:
    """Each --cells selection on both releases' modes; a selection that names the mode axis is refused."""
    from failsafe.atlas.grid import parse_selection

    out = []
    for text in selections or (DEFAULT_CELLS,):
        parse_selection(text)  # the atlas's own errors, in its words
        if any(part.split("=", 1)[0].strip() == "mode" for part in text.split(";")):
            raise UserError(f"--cells {text!r} names the mode: --kafka chooses it (leave mode= out)")
        out.append(f"{text};mode={','.join(modes)}")
    return out


@click.command("compare")
@click.option(
    "--kafka",
    "versions",
    required=True,
    metavar="A,B",
    help="The two Kafka releases to compare, e.g. --kafka 4.3.1,4.4.0 (each the atlas's KRaft mode of it).",
)
@click.option(
    "--cells",
    "selections",
    multiple=True,
    metavar="AXIS=V,V;...",
    help="The cells, as the atlas's --cells without mode=, e.g. 'fault=kill,pause;profile=defaults;client=librdkafka' "
    f"(repeatable) [default: {DEFAULT_CELLS!r}: every fault under every profile].",
)
@click.option("--repeat", "runs", type=click.IntRange(1, 1000), default=None, help="Runs per cell [default: 5].")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="The comparison's directory: an atlas of both releases' cells, compare.json, compare.html. The same --out "
    "again resumes it; 'failsafe atlas --out DIR --render-only' draws its heat maps.",
)
@atlas_run_options("compare.json and compare.html")
def compare_command(
    versions: str,
    selections: tuple[str, ...],
    runs: int | None,
    out_dir: Path,
    cluster_dir: Path | None,
    heap: str | None,
    base_port: int | None,
    plan_only: bool,
    render_only: bool,
    inventory_file: Path | None,
    hosts_list: str | None,
    user: str | None,
    key: Path | None,
) -> int:
    """Compare two Kafka releases on the same failover cells: N runs of each cell on each, one table per measure
    (client-visible unavailability, time to a new leader, follower stall, time to a new controller, rebalance pause:
    p50 and p95 of each side, Mann-Whitney's p) and one of the runs with each anomaly, acknowledged loss, INVALID
    (Fisher's exact test's p). A difference is marked significant at p < 0.05, without a correction for the number of
    comparisons (every p is shown).

    The runs are an atlas (docs/atlas.md) of the cells on both releases' KRaft modes, one cluster per release and
    profile, resumable with the same command. Exits as the atlas does over every run: 0 all VALID, 1 one INVALID, 2
    usage, 3 UNKNOWN, 4 KNOWN, 5 a cell still lacks runs failsafe could not carry out; a difference between the
    releases is a finding, not an exit code.
    """
    from failsafe.atlas.grid import DEFAULT_RUNS, select
    from failsafe.atlas.runner import Plan, atlas_exit_code
    from failsafe.atlas.store import Store
    from failsafe.cli.atlas import _run

    modes = modes_of(versions)
    cells = select(with_modes(selections, modes))
    n = runs if runs is not None else DEFAULT_RUNS
    store = Store(out_dir)
    plan = Plan(cells, n, store)
    if not render_only:
        for line in plan.describe():
            stdout.print(line, soft_wrap=True)
        if plan_only:
            return 0
        if plan.runs_to_do():
            inventory = (
                load_inventory(inventory_file, hosts_list, user, key)
                if inventory_file or hosts_list or user or key
                else None
            )
            command = shlex.join(
                [
                    "failsafe",
                    "compare",
                    "--kafka",
                    versions,
                    *(a for s in selections for a in ("--cells", s)),
                    "--repeat",
                    str(n),
                    "--out",
                    str(out_dir),
                ]
            )
            _run(
                plan,
                tuple(with_modes(selections, modes)),
                False,
                n,
                out_dir,
                cluster_dir,
                heap,
                base_port,
                inventory,
                command=command,
            )
    _write(store, plan, modes, out_dir)
    return atlas_exit_code(plan)


def _write(store, plan, modes: tuple[str, str], out_dir: Path) -> None:
    from failsafe.atlas.compare import compare, rich_tables, write_html, write_json
    from failsafe.atlas.render import write_html as write_atlas_html

    chosen = {c.id for c in plan.cells}
    result = compare([d for d in store.all_cells() if d.get("id") in chosen], *modes)
    for table in rich_tables(result):
        stdout.print(table)
    significant = result["significant"]
    stdout.print(
        f"{len(significant)} significant difference(s) at p < {result['alpha']:g}"
        + (": " + "; ".join(significant) if significant else "")
        + f" ({len(result['cells'])} cells compared, {len(result['unpaired'])} without a partner)",
        soft_wrap=True,
    )
    store.write_bundle()
    write_atlas_html(out_dir, store.all_cells())
    stdout.print(
        f"{write_json(result, out_dir / COMPARE_JSON)} and {write_html(result, out_dir / COMPARE_HTML)}; the runs' "
        f"heat maps in {out_dir / 'atlas.html'}"
    )
