#!/usr/bin/env bash
# Run failsafe scenarios and gate a CI job on the verdict (docs/ci.md): the job fails unless the run was VALID.
#
#   scripts/gate.sh SCENARIO [failsafe run options...]     e.g. scripts/gate.sh my-service.toml --runs runs
#
# FAILSAFE: the failsafe command (default: failsafe on PATH). FAILSAFE_ALLOW_KNOWN=1: KNOWN (exit 4, only anomalies
# the scenario declares known, each citing the documented behaviour) passes too. Exits with failsafe's own code.
set -u
"${FAILSAFE:-failsafe}" run "$@"
code=$?
case $code in
  0) echo "gate: VALID" ;;
  1) echo "gate: INVALID: the run broke what it checks; 'failsafe explain RUN_DIR' says how" ;;
  2) echo "gate: usage: the scenario or an option is wrong (the line above says which)" ;;
  3) echo "gate: UNKNOWN: the run could not be judged (it did not finish, or a partition was not read)" ;;
  4)
    if [ "${FAILSAFE_ALLOW_KNOWN:-0}" = 1 ]; then
      echo "gate: KNOWN, allowed by FAILSAFE_ALLOW_KNOWN"
      exit 0
    fi
    echo "gate: KNOWN: only anomalies the scenario declares known" ;;
  *) echo "gate: failsafe could not carry the run out (exit $code)" ;;
esac
exit "$code"
