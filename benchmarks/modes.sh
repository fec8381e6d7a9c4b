#!/usr/bin/env bash
# ZooKeeper mode against KRaft, side by side (docs/zookeeper.md): a broker kill -9 (broker-failover)
# and a controller kill (controller-broker-failover in ZooKeeper mode, controller-failover in KRaft
# with three controllers), N runs each, each mode under its own defaults. KRaft runs on Kafka 3.9.2
# as well as on the default 4.x, so the mode, not the release, is what differs between the first two.
# Then the live migration under load, M times, each on a fresh ZooKeeper-mode cluster.
#   bash benchmarks/modes.sh [failover|zookeeper-3.9.2|kraft-3.9.2|kraft-4.3.1|migration|migration-clients|all]     N=5 M=3 DIR=/tmp/failsafe-modes
# Statistics (failsafe run --repeat's repeat-*.json, and the migration runs' results) go to docs/benchmarks/modes/.
set -uo pipefail
cd "$(dirname "$0")/.."
WHAT="${1:-all}"
N="${N:-5}"
M="${M:-3}"
DIR="${DIR:-/tmp/failsafe-modes}"
OUT="${OUT:-docs/benchmarks/modes}"
FS="${FS:-.venv/bin/failsafe}"
HEAP=512M
mkdir -p "$OUT" "$DIR"

# label "up options" scenario...: a cluster made with those options, N runs of each scenario on it.
mode() {
  local label="$1" up="$2"
  shift 2
  local dir="$DIR/$label"
  $FS clean --dir "$dir" >/dev/null 2>&1
  echo "== $label: failsafe up $up; $* x $N" >&2
  # shellcheck disable=SC2086
  $FS up --dir "$dir" --heap "$HEAP" $up > "$DIR/$label.up" 2>&1 || { echo "   up failed: $(tail -1 "$DIR/$label.up")" >&2; return; }
  $FS run "$@" --dir "$dir" --repeat "$N" --runs "$dir/runs" > "$DIR/$label.out" 2>&1
  echo "   exit $?" >&2
  for scenario in "$@"; do
    local stats
    stats=$(ls -t "$dir/runs/$scenario"/repeat-*.json 2>/dev/null | head -1)
    [ -n "$stats" ] && cp "$stats" "$OUT/$label-$scenario.json"
  done
  $FS down --dir "$dir" >/dev/null 2>&1
}

wants() { [ "$WHAT" = all ] || [ "$WHAT" = failover ] || [ "$WHAT" = "$1" ]; }
wants zookeeper-3.9.2 && mode zookeeper-3.9.2 "--mode zookeeper" broker-failover controller-broker-failover
wants kraft-3.9.2 && mode kraft-3.9.2 "--kafka-version 3.9.2 --controllers 3" broker-failover controller-failover
wants kraft-4.3.1 && mode kraft-4.3.1 "--controllers 3" broker-failover controller-failover
# The duplicates seen once under librdkafka during a migration, attributed: the catalog workload
# (200 writes/s) M times with librdkafka and M times with Kafka's Java producer.
if [ "$WHAT" = migration-clients ]; then
  for client in librdkafka java; do
    for i in $(seq 1 "$M"); do
      dir="$DIR/migration-$client-$i"
      $FS clean --dir "$dir" >/dev/null 2>&1
      echo "== migration with $client $i/$M" >&2
      sets=()
      [ "$client" = java ] && sets=(--set 'producers[*].driver=kafka-verifiable')
      $FS run zk-to-kraft-migration --dir "$dir" --heap "$HEAP" --runs "$dir/runs" "${sets[@]}" > "$DIR/migration-$client-$i.out" 2>&1
      echo "   exit $?" >&2
      results=$(ls -t "$dir"/runs/zk-to-kraft-migration/*/results.json 2>/dev/null | head -1)
      [ -n "$results" ] && cp "$results" "$OUT/migration-$client-$i.json"
    done
  done
fi
if [ "$WHAT" = migration ] || [ "$WHAT" = all ]; then
  for i in $(seq 1 "$M"); do
    dir="$DIR/migration-$i"
    $FS clean --dir "$dir" >/dev/null 2>&1
    echo "== migration $i/$M" >&2
    # The full workload: 600 writes/s for the whole migration, three consumers.
    $FS run zk-to-kraft-migration --dir "$dir" --heap "$HEAP" --runs "$dir/runs" \
      --set 'producers[0].rate_per_s=600' --set 'consumers[0].count=3' > "$DIR/migration-$i.out" 2>&1
    echo "   exit $?" >&2
    results=$(ls -t "$dir"/runs/zk-to-kraft-migration/*/results.json 2>/dev/null | head -1)
    [ -n "$results" ] && cp "$results" "$OUT/migration-$i.json"
  done
fi
