#!/usr/bin/env bash
# The cluster's life under load (docs/lifecycle.md): N runs of the rolling upgrade 4.3.1 -> 4.4.0 (upgrade39: from 3.9.2
# in KRaft mode) and of its rollback,
# each step's cost summed up by benchmarks/lifecycle_steps.py; N runs of each dynamic-quorum scenario (a controller
# added and removed, the active one removed and added back on a new disk); N runs of each feature flip and of the ELR
# flip's control (the same run with the flip to the level it already has); and 4.3.1 against 4.4.0 on the same atlas cells
# ('failsafe compare'), its compare.json kept; N runs of each reassignment scenario (a move to a new broker, alone and
# with a kill -9 of its destination or its source mid-move).
#   bash benchmarks/lifecycle.sh [upgrade|upgrade39|rollback|quorum|flips|flips-group|reassign|reassign-control|compare]     N=5 DIR=/tmp/failsafe-lifecycle CELLS='profile=defaults'
# Runs may be INVALID: that is what is being measured, so a non-zero exit of 'failsafe run' does not stop the script.
set -uo pipefail
cd "$(dirname "$0")/.."
WHAT="${1:?upgrade, upgrade39, rollback, quorum, flips, flips-group, reassign, reassign-control or compare}"
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
  upgrade39) steps rolling-upgrade-from-3.9 ;;
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
  reassign)
    for scenario in reassign-under-load reassign-destination-killed reassign-source-killed; do
      echo "== $scenario: $N runs" >&2
      $FS run "$scenario" --dir "$DIR/reassign" --heap 512M --repeat "$N" --runs "$DIR/runs" > "$DIR/$scenario.out" 2>&1
      echo "   exit $?" >&2
    done
    $PYV benchmarks/lifecycle_steps.py --reassign "$DIR/runs/reassign-under-load" "$DIR/runs/reassign-destination-killed" \
      "$DIR/runs/reassign-source-killed" --command "N=$N bash benchmarks/lifecycle.sh reassign" \
      > docs/benchmarks/lifecycle-reassign.json
    ;;
  flips-group)
    # group.version 1 -> 0 -> 1 under KIP-848 consumers, and its control (the first flip to 1, the level it has).
    for scenario in group-version-flip control; do
      for i in $(seq "$N"); do
        echo "== $scenario $i" >&2
        if [ "$scenario" = control ]; then
          $FS run group-version-flip --set 'actions[0].level=1' --dir "$DIR/flips-group-control" \
            --runs "$DIR/runs-control" > "$DIR/flip-group-control-$i.out" 2>&1
        else
          $FS run group-version-flip --dir "$DIR/flips-group" --runs "$DIR/runs" > "$DIR/flip-group-$i.out" 2>&1
        fi
        echo "   exit $?" >&2
      done
    done
    for d in flips-group flips-group-control; do $FS clean --dir "$DIR/$d" >/dev/null 2>&1; done
    $PYV benchmarks/lifecycle_steps.py --flips "$DIR/runs/group-version-flip" "$DIR/runs-control/group-version-flip" \
      --command "N=$N bash benchmarks/lifecycle.sh flips-group" > docs/benchmarks/lifecycle-flips-group.json
    ;;
  reassign-control)
    # reassign-under-load with a throttle no move reaches: what the throttle, left on until --verify, costs.
    echo "== reassign-under-load, throttle 1000000000: $N runs" >&2
    $FS run reassign-under-load --set 'actions[1].throttle=1000000000' --dir "$DIR/reassign-control" --heap 512M \
      --repeat "$N" --runs "$DIR/runs-control" > "$DIR/reassign-control.out" 2>&1
    echo "   exit $?" >&2
    $PYV benchmarks/lifecycle_steps.py --reassign "$DIR/runs-control/reassign-under-load" \
      --command "N=$N bash benchmarks/lifecycle.sh reassign-control" > docs/benchmarks/lifecycle-reassign-control.json
    ;;
  compare)
    $FS compare --kafka 4.3.1,4.4.0 --cells "$CELLS" --repeat "$N" --out "$DIR/compare" --heap 512M > "$DIR/compare.out" 2>&1
    echo "   exit $?" >&2
    cp "$DIR/compare/compare.json" docs/benchmarks/compare-4.3.1-4.4.0.json
    ;;
  *) echo "unknown: $WHAT (upgrade, upgrade39, rollback, quorum, flips, flips-group, reassign, reassign-control or compare)" >&2; exit 2 ;;
esac
$FS down --dir "$DIR/cluster" >/dev/null 2>&1 || true
