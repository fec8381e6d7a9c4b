#!/usr/bin/env bash
# The cluster's life under load (docs/lifecycle.md): N runs of the rolling upgrade 4.3.1 -> 4.4.0 and of its rollback,
# each step's cost summed up by benchmarks/lifecycle_steps.py; N runs of each dynamic-quorum scenario (a controller
# added and removed, the active one removed and added back on a new disk); N runs of each feature flip and of the ELR
# flip's control (the same run with the flip to the level it already has); and 4.3.1 against 4.4.0 on the same atlas cells
# ('failsafe compare'), its compare.json kept.
#   bash benchmarks/lifecycle.sh [upgrade|rollback|quorum|flips|compare]     N=5 DIR=/tmp/failsafe-lifecycle CELLS='profile=defaults'
# Runs may be INVALID: that is what is being measured, so a non-zero exit of 'failsafe run' does not stop the script.
set -uo pipefail
cd "$(dirname "$0")/.."
WHAT="${1:?upgrade, rollback, quorum, flips or compare}"
N="${N:-5}"
DIR="${DIR:-/tmp/failsafe-lifecycle}"
CELLS="${CELLS:-profile=defaults;client=librdkafka}"
FS="${FS:-.venv/bin/failsafe}"
PYV="$(dirname "$FS")/python"
mkdir -p "$DIR" docs/benchmarks

steps() {  # scenario: N runs (each upgrade on a cluster of its own: the scenario deletes it), then the steps' costs
  local scenario="$1"
  echo "== $scenario: $N runs" >&2
  $FS run "$scenario" --dir "$DIR/cluster" --heap 512M --repeat "$N" --runs "$DIR/runs" > "$DIR/$scenario.out" 2>&1
  echo "   exit $?" >&2
  $PYV benchmarks/lifecycle_steps.py "$DIR/runs/$scenario" --command "N=$N bash benchmarks/lifecycle.sh $WHAT" \
    > "docs/benchmarks/lifecycle-$scenario.json"
}

case "$WHAT" in
  upgrade) steps rolling-upgrade ;;
  rollback) steps rolling-upgrade-rollback ;;
  quorum)
    for scenario in quorum-add-remove-controller quorum-remove-active-controller; do
      echo "== $scenario: $N runs" >&2
      $FS run "$scenario" --dir "$DIR/quorum" --heap 512M --repeat "$N" --runs "$DIR/runs" > "$DIR/$scenario.out" 2>&1
      echo "   exit $?" >&2
    done
    $FS clean --dir "$DIR/quorum" >/dev/null 2>&1 || true
    $PYV benchmarks/lifecycle_steps.py --quorum "$DIR/runs/quorum-add-remove-controller" \
      "$DIR/runs/quorum-remove-active-controller" --command "N=$N bash benchmarks/lifecycle.sh quorum" \
      > docs/benchmarks/lifecycle-quorum.json
    ;;
  flips)
    for scenario in txn-version-flip elr-flip-last-replica control; do
      for i in $(seq "$N"); do
        echo "== $scenario $i" >&2
        if [ "$scenario" = control ]; then
          $FS run elr-flip-last-replica --set 'actions[0].level=1' --dir "$DIR/flips-control" --runs "$DIR/runs-control" \
            > "$DIR/flip-control-$i.out" 2>&1
        else
          $FS run "$scenario" --dir "$DIR/flips-$scenario" --runs "$DIR/runs" > "$DIR/flip-$scenario-$i.out" 2>&1
        fi
        echo "   exit $?" >&2
      done
    done
    for d in flips-txn-version-flip flips-elr-flip-last-replica flips-control; do $FS clean --dir "$DIR/$d" >/dev/null 2>&1; done
    $PYV benchmarks/lifecycle_steps.py --flips "$DIR/runs/txn-version-flip" "$DIR/runs/elr-flip-last-replica" \
      "$DIR/runs-control/elr-flip-last-replica" --command "N=$N bash benchmarks/lifecycle.sh flips" \
      > docs/benchmarks/lifecycle-flips.json
    ;;
  compare)
    $FS compare --kafka 4.3.1,4.4.0 --cells "$CELLS" --repeat "$N" --out "$DIR/compare" --heap 512M > "$DIR/compare.out" 2>&1
    echo "   exit $?" >&2
    cp "$DIR/compare/compare.json" docs/benchmarks/compare-4.3.1-4.4.0.json
    ;;
  *) echo "unknown: $WHAT (upgrade, rollback, quorum, flips or compare)" >&2; exit 2 ;;
esac
$FS down --dir "$DIR/cluster" >/dev/null 2>&1 || true
