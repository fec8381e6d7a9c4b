#!/usr/bin/env bash
# The campaigns behind docs/campaigns.md: randomized fault schedules on one cluster, every run judged.
#   bash benchmarks/campaigns.sh [safe|anything-goes|all|shrink|txn]      DIR=/tmp/failsafe-campaigns
# shrink: failsafe shrink of an anything-goes run (needs that campaign's run directories); not part of all.
# safe: 100 runs of the acks-all workload (RF 3, min.insync.replicas 2, idempotent producers of both
# clients) within the safe envelope; anything-goes: 30 runs of the client matrix with no envelope.
# txn: the transactions workload (docs/transactions.md) for each client (librdkafka, kafka-java) and transaction.version
# (2, 1), TXN_RUNS runs each (default 50), coordinator, leader and client faults within the safe envelope; not part of all.
# TXN_VERSIONS="1" and TXN_CLIENTS="kafka-java" run only those (default: "2 1", "librdkafka kafka-java").
# TXN_FIRST=N goes on from run N of the same seed up to TXN_RUNS in all, and merges the new runs into the stored
# campaign-txn-*.json (the runs before N).
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
  local before made
  before=$(ls -d "$DIR/$label"/*/ 2>/dev/null)
  $FS campaign "$@" --dir "$DIR/cluster" --out "$DIR/$label" > "$DIR/$label.out" 2>&1
  echo "   exit $?" >&2
  # The directory this campaign made (an earlier part's is never taken for it).
  made=$(ls -d "$DIR/$label"/*/ 2>/dev/null | grep -vxF -f <(printf '%s\n' "$before") | tail -1)
  # A part that goes on where an earlier one stopped (--first-run above 0) is merged into what is stored of it.
  local earlier=""
  if [[ " $* " == *" --first-run "* && " $* " != *" --first-run 0 "* && -f "$OUT/campaign-$label.json" ]]; then
    earlier="$OUT/campaign-$label.json"
  fi
  [ -n "$made" ] && [ -f "$made/campaign.json" ] && $PY benchmarks/store_campaign.py "$made/campaign.json" ${earlier:+"$earlier"} "$OUT/campaign-$label.json"
}

if [ "$WHAT" = safe ] || [ "$WHAT" = all ]; then
  campaign safe --workload acks-all --faults kill,pause,terminate,restart,partition,lossy-link,isolate,cut-clients \
    --runs 100 --seed 2611 --duration-s 20 --envelope safe --max-time 75m
fi
if [ "$WHAT" = anything-goes ] || [ "$WHAT" = all ]; then
  campaign anything-goes --workload client-matrix --runs 30 --seed 2612 --duration-s 20 --envelope anything-goes --max-time 30m
fi
if [ "$WHAT" = txn ]; then
  for version in ${TXN_VERSIONS:-2 1}; do
    for client in ${TXN_CLIENTS:-librdkafka kafka-java}; do
      workload="$DIR/transactions-$client-tv$version.toml"
      # The shipped workload with its writers and processor on $client and transaction.version at $version.
      sed -e "s/^version = 2$/version = $version/" \
          -e "s/^name = \"writer\"$/name = \"writer\"\ndriver = \"$client\"/" \
          -e "s/^name = \"ctp\"$/name = \"ctp\"\ndriver = \"$client\"/" \
          src/failsafe/campaigns/workloads/transactions.toml > "$workload"
      campaign "txn-$client-tv$version" --workload "$workload" --faults kill,pause,restart,kill-txn-client,zombie-txn-client \
        --runs $(( ${TXN_RUNS:-50} - ${TXN_FIRST:-0} )) --first-run "${TXN_FIRST:-0}" --seed 2913 --duration-s 20 --envelope safe --max-time "${TXN_MAX_TIME:-75m}"
    done
  done
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
