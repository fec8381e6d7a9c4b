#!/usr/bin/env bash
# The installed package, outside the checkout (issue 49): failsafe built as a wheel, installed in a clean virtualenv in a
# directory of its own, its commands run there, and one short scenario on a cluster it starts and stops. Needs `make setup`
# first (the checkout's .venv builds the wheel; Kafka's jars are in ~/.cache/failsafe).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/failsafe-installed.XXXXXX)
trap 'rm -rf "$work"' EXIT
.venv/bin/pip wheel --no-deps -q -w "$work/wheel" .
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$work"/wheel/failsafe-*.whl
cd "$work"
fs="$work/venv/bin/failsafe"
"$fs" scenarios | grep -q broker-failover || { echo "check-installed: 'failsafe scenarios' lists no broker-failover" >&2; exit 1; }
"$fs" campaign --help | tr -d " \n" | grep -q "(acks-all,client-matrix,transactions)" || { echo "check-installed: 'failsafe campaign --help' lists no workload" >&2; exit 1; }
"$fs" run pubsub --dir "$work/cluster" --base-port 19092 --heap 512m --set phases.chaos_s=3 --set phases.warmup_s=1 >"$work/run.log" 2>&1 \
  || { tail -20 "$work/run.log" >&2; echo "check-installed: 'failsafe run pubsub' from the installed package failed" >&2; exit 1; }
echo "check-installed: the wheel installed outside the checkout lists its scenarios and workloads and ran pubsub: VALID"
