"""The pipeline as a ``spark-submit`` application: Spark's master and the connector come from spark-submit.

    spark-submit --master spark://HOST:7077 --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 \\
        .../failsafe/pipeline/submit.py --bootstrap-server BROKER:9092 --output /shared/out --checkpoint /shared/ck
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from failsafe.errors import FailsafeError
from failsafe.pipeline.job import RESULTS_TOPIC, PipelineConfig
from failsafe.pipeline.publish import EXACTLY_ONCE, PUBLISH_MODES
from failsafe.pipeline.run import run_pipeline
from failsafe.pipeline.session import SessionSpec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="failsafe-pipeline", description="failsafe's sales pipeline under spark-submit"
    )
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--trigger-s", type=float, default=5.0)
    parser.add_argument("--watermark", default="2 minutes")
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--no-publish", action="store_true")
    parser.add_argument("--publish", choices=PUBLISH_MODES, default=EXACTLY_ONCE)
    parser.add_argument("--transactional-id-prefix", default=None)
    args = parser.parse_args(argv)
    config = PipelineConfig(
        bootstrap_servers=args.bootstrap_server,
        output_dir=args.output,
        checkpoint_dir=args.checkpoint,
        trigger_s=args.trigger_s,
        watermark_delay=args.watermark,
        available_now=args.available_now,
        results_topic=None if args.no_publish else RESULTS_TOPIC,
        publish=args.publish,
        transactional_prefix=args.transactional_id_prefix,
    )
    try:
        summary = run_pipeline(
            config,
            SessionSpec(master=None),
            lambda p: print(f"{p['query']}: batch {p['batch_id']} · {p['num_input_rows']} rows", file=sys.stderr),
        )
    except FailsafeError as e:
        print(f"failsafe: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    print(f"stopped after {summary.batches} batches, {summary.input_rows} records read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
