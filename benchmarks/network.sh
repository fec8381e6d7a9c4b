#!/usr/bin/env bash
# The network scenarios of docs/network.md, each on a cluster of its own (started by the run in $DIR/LABEL and
# cleaned after), and each run's results.json copied to docs/benchmarks/network/LABEL.json (LABEL-i.json when N > 1).
# Needs root, nft (nftables) and setpriv (util-linux), like every network fault.
#   bash benchmarks/network.sh [all|LABEL ...]     N=1 DIR=/tmp/failsafe-network
# A run may be INVALID on purpose (unclean-election-enabled): that is the result, so a non-zero exit does not stop the script.
set -uo pipefail
cd "$(dirname "$0")/.."
N="${N:-1}"
DIR="${DIR:-/tmp/failsafe-network}"
OUT="${OUT:-docs/benchmarks/network}"
FS="${FS:-.venv/bin/failsafe}"
mkdir -p "$OUT" "$DIR"
WHAT=("${@:-all}")

wants() { [ "${WHAT[0]}" = all ] || [[ " ${WHAT[*]} " == *" $1 "* ]]; }

# label scenario --set ...: N runs, each on a fresh cluster the run starts in $DIR/label.
one() {
  local label="$1" scenario="$2"
  shift 2
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  for i in $(seq 1 "$N"); do
    local dir="$DIR/$label" name="$label"
    [ "$N" -gt 1 ] && name="$label-$i"
    $FS clean --dir "$dir" >/dev/null 2>&1
    echo "== $name: $scenario ${*:-(as in the catalog)}" >&2
    $FS run "$scenario" --dir "$dir" --runs "$dir/runs" "${sets[@]}" > "$DIR/$name.out" 2>&1
    echo "   exit $?" >&2
    local results
    results=$(ls -t "$dir/runs/$scenario"/*/results.json 2>/dev/null | head -1)
    [ -n "$results" ] && cp "$results" "$OUT/$name.json"
    $FS clean --dir "$dir" >/dev/null 2>&1
  done
}

JAVA='producers[*].driver=kafka-verifiable'
wants leader-isolated-librdkafka && one leader-isolated-librdkafka leader-isolated
wants leader-isolated-java && one leader-isolated-java leader-isolated "$JAVA"
wants follower-cut-off && one follower-cut-off follower-cut-off
wants flaky-network && one flaky-network flaky-network
wants zone-outage && one zone-outage zone-outage
wants unclean-election-enabled && one unclean-election-enabled unclean-election
wants unclean-election-disabled && one unclean-election-disabled unclean-election \
  'topics[0].configs."unclean.leader.election.enable"="false"' 'expect[0].op="=="'
# Eligible leader replicas (KIP-966) with min.insync.replicas 2 and acks=all: the same faults.
wants unclean-election-elr && one unclean-election-elr unclean-election \
  'topics[0].configs."min.insync.replicas"="2"' 'producers[0].acks="all"' 'expect[0].op="=="'
exit 0
