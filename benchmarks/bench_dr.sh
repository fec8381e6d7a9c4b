#!/usr/bin/env bash
# RPO and RTO of dr-failover on a DR pair of 3-broker clusters (RF 3, min.insync.replicas 2): MirrorMaker's default
# intervals against tuned ones, RUNS runs each; then dr-failback, FAILBACK_RUNS runs, with the tuned settings and again with
# Connect's default offset flush (docs/failover.md, "Disaster recovery"; docs/findings.md, section 5).
# Usage: benchmarks/bench_dr.sh [PAIR_DIR] ; RUNS=5, FAILBACK_RUNS=3 and PARTS="tuned defaults failback failback-flush-60s" by default.
# Writes docs/benchmarks/dr-{tuned,defaults,failback,failback-flush-60s}.json.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp/failsafe-dr-bench}
RUNS=${RUNS:-5}
FAILBACK_RUNS=${FAILBACK_RUNS:-3}
PARTS=${PARTS:-tuned defaults failback failback-flush-60s}
F=.venv/bin/failsafe
$F up --dr --dir "$DIR" --brokers 3 --heap 512M
trap '$F down --dir "$DIR"' EXIT
shape=(--set cluster.brokers=3 --set 'topics[0].replication_factor=3' --set 'topics[0].configs={"min.insync.replicas" = "2"}')
latest() { ls -t "$DIR"/runs/"$1"/repeat-*.json | head -1; }
for part in $PARTS; do
  case $part in
    # The catalog's settings: 1 s checkpoint and offset-sync intervals, offset.lag.max 10, Connect's offset flush every
    # 1 s; 30 s of traffic before the disaster.
    tuned)
      $F run dr-failover --dir "$DIR" --repeat "$RUNS" "${shape[@]}" --set phases.warmup_s=30 || true
      cp "$(latest dr-failover)" docs/benchmarks/dr-tuned.json ;;
    # MirrorMaker's defaults (checkpoints and group offset syncs every 60 s, offset.lag.max 100, offset flush every 60 s);
    # 90 s of traffic first, so that at least one checkpoint was emitted and synced before the disaster.
    defaults)
      $F run dr-failover --dir "$DIR" --repeat "$RUNS" "${shape[@]}" --set 'mirror.settings={}' --set phases.warmup_s=90 || true
      cp "$(latest dr-failover)" docs/benchmarks/dr-defaults.json ;;
    # The planned way back with the catalog's settings: what it loses (must be nothing) and re-reads.
    failback)
      $F run dr-failback --dir "$DIR" --repeat "$FAILBACK_RUNS" "${shape[@]}" --set phases.warmup_s=30 || true
      cp "$(latest dr-failback)" docs/benchmarks/dr-failback.json ;;
    # The same with only offset.flush.interval.ms left at Connect's default (60 s): MirrorMaker holds offset syncs back until
    # the flush, so the failback's wait for the group's offsets lasts about that long.
    failback-flush-60s)
      $F run dr-failback --dir "$DIR" --repeat "$FAILBACK_RUNS" "${shape[@]}" --set phases.warmup_s=30 \
        --set 'mirror.settings={"emit.checkpoints.interval.seconds" = 1, "sync.group.offsets.interval.seconds" = 1, "offset.lag.max" = 10}' || true
      cp "$(latest dr-failback)" docs/benchmarks/dr-failback-flush-60s.json ;;
    *) echo "bench_dr.sh: unknown part '$part' in PARTS (use tuned, defaults, failback, failback-flush-60s)" >&2; exit 2 ;;
  esac
done
