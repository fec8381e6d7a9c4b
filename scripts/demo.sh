#!/usr/bin/env bash
# `make demo`: the whole seed lab on a fresh local cluster. Every experiment of the seed tutorials
# runs as a scenario that is recorded, checked and measured; the run ends with the lab's table and
# the path of each scenario's report.html. The cluster is started for the run and stopped after.
set -euo pipefail
DIR="${1:-failsafe-cluster}"
FS=".venv/bin/failsafe"

if [ -e "$DIR/failsafe-state.json" ]; then
  $FS clean --dir "$DIR" >/dev/null
fi
exec $FS run seed-lab --dir "$DIR"
