"""``failsafe pipeline run`` and ``failsafe pipeline verify``."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from failsafe.cli.options import INTERRUPTED_EXIT, bootstrap_option, dir_option, resolve_bootstrap, stderr, stdout

DEFAULT_OUTPUT = Path("pipeline-output")
DEFAULT_CHECKPOINT = Path("pipeline-checkpoint")
DEFAULT_LEDGER = Path("sales-ledger")


@click.group("pipeline")
def pipeline() -> None:
    """The PySpark Structured Streaming pipeline over demo.purchases, and its exactly-once check."""


@pipeline.command("run")
@dir_option
@bootstrap_option
@click.option(
    "--output",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUTPUT,
    show_default=True,
    help="Where the sink (sales_by_product/, dead_letters/) and progress.jsonl go.",
)
@click.option(
    "--checkpoint",
    "checkpoint_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_CHECKPOINT,
    show_default=True,
    help="Spark's checkpoint: a restarted pipeline continues from here.",
)
@click.option(
    "--trigger-s", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Micro-batch interval."
)
@click.option("--available-now", is_flag=True, help="Process what the topic holds now, then stop.")
@click.option(
    "--watermark",
    "watermark_delay",
    default="2 minutes",
    show_default=True,
    help="How late an event may arrive and still be counted in its window.",
)
@click.option("--master", default="local[2]", show_default=True, help="Spark master.")
@click.option(
    "--max-offsets-per-trigger", type=click.IntRange(min=1), default=None, help="Cap on records per micro-batch."
)
@click.option("--no-publish", is_flag=True, help="Do not publish results to demo.sales-by-product.")
@click.option(
    "--publish",
    "publish",
    type=click.Choice(["exactly-once", "at-least-once"]),
    default="exactly-once",
    show_default=True,
    help="How the totals reach demo.sales-by-product: in Kafka transactions with a marker of each batch, so a "
    "read_committed reader sees every batch once; or by Spark's Kafka sink, where a replayed batch is written again.",
)
@click.option(
    "--transactional-id-prefix",
    default=None,
    metavar="PREFIX",
    help="Exactly-once publishing: the producers' transactional ids are PREFIX-<partition> [default: from Spark's "
    "id of the query]. Give it to name the ids (a fault on their coordinator); a new checkpoint refuses a used one.",
)
@click.option(
    "--enriched-topic",
    default=None,
    metavar="TOPIC",
    help="Also publish the enriched purchase stream to TOPIC, a second query in the same Spark session "
    "(Spark's Kafka sink: at least once; created if missing).",
)
def run_command(
    cluster_dir: Path | None,
    bootstrap_server: str | None,
    output_dir: Path,
    checkpoint_dir: Path,
    trigger_s: float,
    available_now: bool,
    watermark_delay: str,
    master: str,
    max_offsets_per_trigger: int | None,
    no_publish: bool,
    publish: str,
    transactional_id_prefix: str | None,
    enriched_topic: str | None,
) -> int:
    """Aggregate purchases per product and 1-minute window, exactly once, until stopped (Ctrl-C)."""
    from failsafe.jvm.spark import spark_kafka_dist
    from failsafe.pipeline.job import RESULTS_TOPIC, PipelineConfig
    from failsafe.pipeline.run import run_pipeline
    from failsafe.pipeline.session import SessionSpec

    dist = spark_kafka_dist()
    config = PipelineConfig(
        bootstrap_servers=resolve_bootstrap(bootstrap_server, cluster_dir),
        output_dir=output_dir.absolute(),
        checkpoint_dir=checkpoint_dir.absolute(),
        trigger_s=trigger_s,
        available_now=available_now,
        watermark_delay=watermark_delay,
        results_topic=None if no_publish else RESULTS_TOPIC,
        max_offsets_per_trigger=max_offsets_per_trigger,
        publish=publish,
        transactional_prefix=transactional_id_prefix,
    )
    with stderr.status(f"starting Spark ({master}) and the queries") as status:

        def show(progress: dict) -> None:
            rate = progress["processed_rows_per_second"] or 0
            status.update(
                f"{progress['query']}: batch {progress['batch_id']} · {progress['num_input_rows']} rows · "
                f"{rate:,.0f} rows/s · watermark {progress['watermark'] or '-'}"
            )

        with stop_on_signals() as stop:
            summary = run_pipeline(
                config, SessionSpec(master=master, jars=tuple(str(j) for j in dist.jars)), show, stop, enriched_topic
            )
    stdout.print(
        f"pipeline stopped after {summary.batches} batches of sales-by-product, {summary.input_rows} records read, "
        f"{summary.rows_dropped_by_watermark} dropped as later than the watermark; sink in {output_dir}"
    )
    if stop.is_set():
        stderr.print("failsafe: interrupted (the queries were stopped between micro-batches; the checkpoint is kept)")
        return INTERRUPTED_EXIT
    return 0


@pipeline.command("enrich")
@dir_option
@bootstrap_option
@click.option(
    "--topic",
    default="demo.purchases-enriched",
    show_default=True,
    help="Where the enriched purchases go (created if missing).",
)
@click.option(
    "--realtime",
    "realtime_s",
    type=click.FloatRange(min=1),
    default=None,
    metavar="S",
    help="Spark's real-time trigger with a checkpoint every S seconds (needs a task slot per partition of "
    "demo.purchases).",
)
@click.option(
    "--trigger-s",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Micro-batch interval (without --realtime).",
)
@click.option("--available-now", is_flag=True, help="Process what the topic holds now, then stop (micro-batch only).")
@click.option("--master", default=None, help="Spark master [default: local[2]; with --realtime local[8]].")
@click.option(
    "--output",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("enrich-output"),
    show_default=True,
    help="Where progress.jsonl goes.",
)
@click.option(
    "--checkpoint",
    "checkpoint_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("enrich-checkpoint"),
    show_default=True,
)
def enrich_command(
    cluster_dir: Path | None,
    bootstrap_server: str | None,
    topic: str,
    realtime_s: float | None,
    trigger_s: float,
    available_now: bool,
    master: str | None,
    output_dir: Path,
    checkpoint_dir: Path,
) -> int:
    """Valid purchases with their product name and category, published to a topic: the pipeline's stateless part."""
    from failsafe.errors import UserError
    from failsafe.jvm.spark import spark_kafka_dist
    from failsafe.pipeline.job import PipelineConfig
    from failsafe.pipeline.run import run_enrich
    from failsafe.pipeline.session import SessionSpec

    if realtime_s is not None and available_now:
        raise UserError("--available-now is a micro-batch trigger: drop it or --realtime")
    master = master or ("local[8]" if realtime_s is not None else "local[2]")
    dist = spark_kafka_dist()
    config = PipelineConfig(
        bootstrap_servers=resolve_bootstrap(bootstrap_server, cluster_dir),
        output_dir=output_dir.absolute(),
        checkpoint_dir=checkpoint_dir.absolute(),
        trigger_s=trigger_s,
        available_now=available_now,
        results_topic=topic,
    )
    mode = (
        f"real-time, checkpoint every {realtime_s:g} s"
        if realtime_s is not None
        else f"micro-batch every {trigger_s:g} s"
    )
    with (
        stderr.status(f"starting Spark ({master}) and the enriched purchase stream ({mode})") as status,
        stop_on_signals() as stop,
    ):
        summary = run_enrich(
            config,
            SessionSpec(master=master, jars=tuple(str(j) for j in dist.jars)),
            topic,
            realtime_s,
            lambda p: status.update(f"{p['query']}: batch {p['batch_id']} · {p['num_input_rows']} rows"),
            stop,
        )
    stdout.print(
        f"enriched purchase stream stopped after {summary.batches} batches, {summary.input_rows} records read; "
        f"published to {topic}"
    )
    if stop.is_set():
        stderr.print("failsafe: interrupted (the query was stopped; the checkpoint is kept)")
        return INTERRUPTED_EXIT
    return 0


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """Ctrl-C and SIGTERM set an event the run polls, instead of raising wherever Python happens to be
    (inside a py4j call, that leaves the gateway out of step and the stop hangs). A second one raises."""
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@pipeline.command("verify")
@click.option(
    "--output",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUTPUT,
    show_default=True,
)
@click.option(
    "--ledger",
    "ledger_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_LEDGER,
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def verify_command(output_dir: Path, ledger_dir: Path, as_json: bool) -> int:
    """Compare the sink's totals with the simulator's ledger: exit 0 equal, 1 not equal."""
    from failsafe.pipeline.verify import render_verification, verify_output

    result = verify_output(output_dir, ledger_dir)
    if as_json:
        stdout.print_json(json.dumps(result, default=str))
    else:
        render_verification(result, stdout)
    return {True: 0, False: 1}.get(result["valid"], 3)
