#!/usr/bin/env bash
# The campaigns behind docs/campaigns.md: randomized fault schedules on one cluster, every run judged.
#   bash benchmarks/campaigns.sh [safe|anything-goes|all|shrink]      DIR=/tmp/failsafe-campaigns
# shrink: failsafe shrink of an anything-goes run (needs that campaign's run directories); not part of all.
# safe: 100 runs of the acks-all workload (RF 3, min.insync.replicas 2, idempotent producers of both
# clients) within the safe envelope; anything-goes: 30 runs of the client matrix with no envelope.
# Each campaign's campaign.json goes to docs/benchmarks/campaign-<what>.json with the machine's run
# directories cut to their names. A campaign with INVALID runs exits 1: that is what is counted, so it
# does not stop the script.
set -uo pipefail
cd "$(dirname "$0")/.."
WHAT="${1:-all}"
DIR="${DIR:-/tmp/failsafe-campaigns}"
OUT="${OUT:-docs/benchmarks}"
FS="${FS:-.venv/bin/failsafe}"
PY="${PY:-.venv/bin/python}"
mkdir -p "$DIR"

# label campaign-options...: one campaign; its campaign.json becomes $OUT/campaign-label.json.
campaign() {
  local label="$1"
  shift
  echo "== campaign $label: $*" >&2
  $FS campaign "$@" --dir "$DIR/cluster" --out "$DIR/$label" > "$DIR/$label.out" 2>&1
  echo "   exit $?" >&2
  local made
  made=$(ls -td "$DIR/$label"/*/ 2>/dev/null | head -1)
  [ -n "$made" ] && $PY benchmarks/store_campaign.py "$made/campaign.json" "$OUT/campaign-$label.json"
}

if [ "$WHAT" = safe ] || [ "$WHAT" = all ]; then
  campaign safe --workload acks-all --faults kill,pause,terminate,restart,partition,lossy-link,isolate,cut-clients \
    --runs 100 --seed 2611 --duration-s 20 --envelope safe --max-time 75m
fi
if [ "$WHAT" = anything-goes ] || [ "$WHAT" = all ]; then
  campaign anything-goes --workload client-matrix --runs 30 --seed 2612 --duration-s 20 --envelope anything-goes --max-time 30m
fi
if [ "$WHAT" = shrink ]; then
  # Run 21 of the anything-goes campaign (a kill of every replica of events-2, then a split): the acks=1 writers'
  # loss kept while faults are dropped, shortened and moved; the smallest schedule then runs 10 more times.
  run=$(ls -d "$DIR"/anything-goes/*/client-matrix-s2612-r021/*/ 2>/dev/null | head -1)
  [ -n "$run" ] || { echo "no run 21 of an anything-goes campaign under $DIR: run 'bash benchmarks/campaigns.sh anything-goes' first" >&2; exit 2; }
  $FS shrink "$run" --anomaly delivery.lost-write --tries 3 --max-runs 24 --confirm 10 --dir "$DIR/cluster" > "$DIR/shrink-r021.out" 2>&1
  echo "   shrink exit $?" >&2
  $PY benchmarks/store_shrink.py "$run/shrink/shrink.json" "$OUT/shrink-client-matrix-r021.json"
fi
