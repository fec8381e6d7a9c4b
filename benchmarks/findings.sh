#!/usr/bin/env bash
# The controlled comparisons behind docs/findings.md: each configuration runs N times on one
# cluster (failsafe run --repeat), and its statistics (repeat-*.json) are copied to docs/findings/.
#   bash benchmarks/findings.sh [duplicates|reproduce|stalls|loaded|zookeeper|zookeeper-control|where|cold|coordinator|txn-fence|txn-hang|apps|apps-python|apps-streams|apps-cells|apps-cells-python|apps-cells-streams|apps-cells-restart|all]     N=10 DIR=/tmp/failsafe-findings
# (loaded: two-brokers-down with both cores kept busy; zookeeper: two-brokers-down in ZooKeeper mode,
# zookeeper-control: the same on KRaft with the same 32 s chaos phase; where: where leader-pause-timeout's duplicates
# sit, from N runs' histories by findings_duplicates.py; cold: librdkafka#5586 on cold and warm group coordinators,
# benchmarks/findings_cold.py; coordinator: a librdkafka group after every broker was cut from the controllers (section 8);
# txn-fence: a transaction coordinator frozen past and within transaction.timeout.ms, both clients (section 10);
# txn-hang: librdkafka's processor through a restart or kill of its transaction or group coordinator (section 9); apps:
# the app examples (examples/apps) through an instance kill and a broker kill, the Python transactional service against
# the naive one and Kafka Streams exactly_once_v2 against at_least_once, held to exactly-once, docs/apps.md; apps-cells: the
# same pairs under one fault a cell (coordinators killed, a leader isolated, an instance killed, a rolling restart; or
# apps-cells-python, apps-cells-streams: one pair's), into docs/findings/app-cells; apps-cells-restart: the transactional
# service's cells where an instance exited, with restart = "on-failure"; none of these part of all)
# A configuration's runs may be INVALID: that is what is being counted, so a non-zero exit of
# 'failsafe run' does not stop the script.
set -uo pipefail
cd "$(dirname "$0")/.."
WHAT="${1:-all}"
N="${N:-10}"
DIR="${DIR:-/tmp/failsafe-findings}"
OUT="${OUT:-docs/findings}"
FS="${FS:-.venv/bin/failsafe}"
PYV="$(dirname "$FS")/python"
mkdir -p "$OUT" "$DIR"

# label scenario --set ...: N runs of one configuration; the statistics go to $OUT/label.json.
config() {
  local label="$1" scenario="$2"
  shift 2
  local sets=()
  for s in "$@"; do sets+=(--set "$s"); done
  echo "== $label: $scenario ${*:-(as in the catalog)}" >&2
  local runs="$DIR/runs/$label"
  $FS run "$scenario" --dir "$DIR" --heap 512M --repeat "$N" --runs "$runs" "${EXTRA[@]}" "${sets[@]}" > "$DIR/$label.out" 2>&1
  echo "   exit $?" >&2
  local stats
  stats=$(ls -t "$runs"/*/repeat-*.json 2>/dev/null | head -1)
  [ -n "$stats" ] && cp "$stats" "$OUT/$label.json"
}

EXTRA=()
JAVA=('producers[*].driver=kafka-verifiable')
# Kafka's Java producer refuses delivery.timeout.ms < linger.ms + request.timeout.ms (30 s by default).
JAVA_SHORT_TIMEOUT=("${JAVA[@]}" 'producers[*].properties."request.timeout.ms"="5000"')
ONE_IN_FLIGHT=('producers[*].properties."max.in.flight"="1"')

if [ "$WHAT" = duplicates ] || [ "$WHAT" = all ]; then
  config two-brokers-down-librdkafka two-brokers-down
  config two-brokers-down-librdkafka-max-in-flight-1 two-brokers-down "${ONE_IN_FLIGHT[@]}"
  config two-brokers-down-java two-brokers-down "${JAVA_SHORT_TIMEOUT[@]}"
  config broker-restart-librdkafka broker-restart
  config broker-restart-librdkafka-max-in-flight-1 broker-restart "${ONE_IN_FLIGHT[@]}"
  config broker-restart-java broker-restart "${JAVA[@]}"
fi
if [ "$WHAT" = reproduce ] || [ "$WHAT" = all ]; then
  # The mechanism forced: a frozen leader, messages timing out in flight (delivery.timeout.ms 3 s).
  config leader-pause-timeout-librdkafka leader-pause-timeout
  config leader-pause-timeout-librdkafka-max-in-flight-1 leader-pause-timeout "${ONE_IN_FLIGHT[@]}"
  config leader-pause-timeout-java leader-pause-timeout "${JAVA[@]}"
fi
if [ "$WHAT" = loaded ]; then
  # The seed-lab duplicates were seen on a loaded machine: the same scenario with both cores kept
  # busy by two spinning processes (tracked by pid, stopped when the configuration ends).
  hogs=()
  for _ in 1 2; do python3 -c 'while True: pass' & hogs+=($!); done
  trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
  config two-brokers-down-librdkafka-loaded two-brokers-down
  kill "${hogs[@]}" 2>/dev/null
fi
if [ "$WHAT" = zookeeper ]; then
  # two-brokers-down on a ZooKeeper-mode cluster (Kafka 3.9.2), where a seed-lab run had duplicates again.
  DIR="$DIR/zookeeper"
  mkdir -p "$DIR"
  EXTRA=(--mode zookeeper)
  config two-brokers-down-zookeeper-librdkafka two-brokers-down
  config two-brokers-down-zookeeper-java two-brokers-down "${JAVA_SHORT_TIMEOUT[@]}"
  $FS down --dir "$DIR" >/dev/null 2>&1
fi
if [ "$WHAT" = zookeeper-control ]; then
  # The control for the above: KRaft with the chaos phase as long as ZooKeeper mode's (32 s).
  config two-brokers-down-kraft-chaos32-librdkafka two-brokers-down 'phases.chaos_s=32'
fi
if [ "$WHAT" = where ]; then
  # Which copy of each duplicated value was acknowledged, when it was sent, how far apart the copies are.
  rm -rf "$DIR/runs/leader-pause-timeout-librdkafka-where"
  config leader-pause-timeout-librdkafka-where leader-pause-timeout
  rm -f "$OUT/leader-pause-timeout-librdkafka-where.json"
  # shellcheck disable=SC2046
  "$(dirname "$FS")/python" benchmarks/findings_duplicates.py $(ls -d "$DIR/runs/leader-pause-timeout-librdkafka-where/leader-pause-timeout"/*/) \
    --out "$OUT/leader-pause-timeout-duplicates-where.json"
fi
if [ "$WHAT" = cold ]; then
  # librdkafka#5586 (section 6): the acks-all campaign workload with no fault, each run on a cluster of its own (a cold
  # group coordinator) against runs on one warm cluster, and on Kafka 3.9.2; a cluster per run, so not part of all.
  $PYV benchmarks/findings_cold.py --mode cold --runs "$N" --dir "$DIR/cold" --out "$OUT/cold-coordinator-librdkafka.json"
  $PYV benchmarks/findings_cold.py --mode warm --runs "$N" --dir "$DIR/cold" --out "$OUT/warm-coordinator-librdkafka.json"
  $PYV benchmarks/findings_cold.py --mode cold --runs "$N" --kafka-version 3.9.2 --dir "$DIR/cold" \
    --out "$OUT/cold-coordinator-librdkafka-kafka-3.9.2.json"
fi
if [ "$WHAT" = coordinator ]; then
  # Section 8: every broker cut from the controllers for 20 s (fenced after 9 s), read by a librdkafka group and by
  # Kafka's Java consumer; the same split for 5 s (no broker fenced) as the control.
  config brokers-cut-from-controllers-librdkafka brokers-cut-from-controllers
  config brokers-cut-from-controllers-java brokers-cut-from-controllers 'consumers[*].driver="kafka-verifiable"'
  config brokers-cut-from-controllers-5s-librdkafka brokers-cut-from-controllers faults[0].duration_s=5
  # The librdkafka case again with the members' metadata and broker logs (debug), to see what metadata said.
  N="${N_DEBUG:-4}" config brokers-cut-from-controllers-librdkafka-debug-metadata brokers-cut-from-controllers \
    'consumers[*].properties.debug="cgrp,metadata,broker"'
  $PYV benchmarks/findings_decommissioned.py --runs "$DIR/runs" brokers-cut-from-controllers-librdkafka \
    brokers-cut-from-controllers-java brokers-cut-from-controllers-5s-librdkafka brokers-cut-from-controllers-librdkafka-debug-metadata
fi
if [ "$WHAT" = txn-hang ]; then
  # Section 9: the transactions campaign workload (librdkafka) with one fault 5 s into the chaos phase: a restart of the
  # broker coordinating ctp-0's transactions, a restart of its group's coordinator, a 12 s kill of its group's
  # coordinator (fenced after 9 s: it leaves the metadata), N runs each (KILL_BATCHES for the kill) at transaction.version 1; with N_TV2 set, the
  # kill again at version 2; with N_JAVA set, the kill with Kafka's Java client as the control; with N_SHORT, a 4 s
  # kill; with N_TXN_KILL, a 12 s kill of ctp-0's transaction coordinator; with N_PAUSE, pauses of it (below). On a
  # 3-controller cluster of its own (benchmarks/findings_txn_hang.py).
  hang() {
    local driver="${5:-librdkafka}" suffix="${6:-}"
    [ "$driver" = librdkafka ] || suffix="-$driver$suffix"
    $PYV benchmarks/findings_txn_hang.py --target "$1" --fault "$2" --version "$3" --runs "$4" --driver "$driver" --dir "$DIR/txn" \
      --out "$OUT/txn-hang-$1-coordinator-$2-tv$3$suffix.json"
  }
  hang txn restart 1 "$N"
  hang group restart 1 "$N"
  # The 12 s kill again and again: KILL_BATCHES runs per batch of the same schedule (default N), each stored as -batchI.
  i=1
  for n in ${KILL_BATCHES:-$N}; do hang group kill 1 "$n" librdkafka "-batch$i"; i=$((i + 1)); done
  # The other coordinator killed alone: ctp-0's transaction coordinator, 12 s (N_TXN_KILL runs).
  [ "${N_TXN_KILL:-0}" -gt 0 ] && hang txn kill 1 "$N_TXN_KILL"
  [ "${N_TV2:-0}" -gt 0 ] && hang group kill 2 "$N_TV2"
  [ "${N_JAVA:-0}" -gt 0 ] && hang group kill 1 "$N_JAVA" kafka-java
  # ctp-0's transaction coordinator frozen (SIGSTOP) 15 s, past its 10 s transaction.timeout.ms, at transaction.version 2 (the
  # shape of run 0 of campaign txn-kafka-java-tv2, where the Java processor was told it was fenced with no other ctp-0):
  # Kafka's Java client, librdkafka, and a 5 s pause (within the timeout) with the Java client; N_PAUSE runs each.
  if [ "${N_PAUSE:-0}" -gt 0 ]; then
    P=(--target txn --fault pause --version 2 --runs "$N_PAUSE" --dir "$DIR/txn")
    $PYV benchmarks/findings_txn_hang.py "${P[@]}" --duration-s 15 --driver kafka-java --out "$OUT/txn-hang-txn-coordinator-pause-tv2-kafka-java.json"
    $PYV benchmarks/findings_txn_hang.py "${P[@]}" --duration-s 15 --out "$OUT/txn-hang-txn-coordinator-pause-tv2.json"
    $PYV benchmarks/findings_txn_hang.py "${P[@]}" --duration-s 5 --driver kafka-java --out "$OUT/txn-hang-txn-coordinator-pause-5s-tv2-kafka-java.json"
  fi
  # The control for the fencing: a 4 s kill, over before the broker session timeout (the broker stays in the metadata).
  [ "${N_SHORT:-0}" -gt 0 ] && $PYV benchmarks/findings_txn_hang.py --target group --fault kill --duration-s 4 --version 1 --runs "$N_SHORT" \
    --dir "$DIR/txn" --out "$OUT/txn-hang-group-coordinator-kill-4s-tv1.json"
  $FS down --dir "$DIR/txn" >/dev/null 2>&1 || true
fi
if [ "$WHAT" = txn-fence ]; then
  # Section 10: writer-0's transaction coordinator frozen 15 s (past its
  # 10 s transaction.timeout.ms) or 5 s (within it), librdkafka against Kafka's Java client, transaction.version 2; the
  # control: the 15 s pause with a 60 s timeout (N_CONTROL runs, default N). No other instance of writer-0 is started.
  TV2=('transactions.version=2')
  JAVA_TXN=('writers[*].driver="kafka-java"')
  SHORT=('faults[0].duration_s=5')
  config txn-pause-15s-librdkafka txn-coordinator-pause "${TV2[@]}"
  config txn-pause-5s-librdkafka txn-coordinator-pause "${TV2[@]}" "${SHORT[@]}"
  config txn-pause-15s-java txn-coordinator-pause "${TV2[@]}" "${JAVA_TXN[@]}"
  config txn-pause-5s-java txn-coordinator-pause "${TV2[@]}" "${JAVA_TXN[@]}" "${SHORT[@]}"
  # The control: the same 15 s pause (the coordinator moves: the broker is fenced after 9 s) with a transaction.timeout.ms
  # the pause does not reach.
  LONG_TIMEOUT=('writers[*].transaction_timeout_ms=60000')
  N="${N_CONTROL:-$N}" config txn-pause-15s-timeout-60s-librdkafka txn-coordinator-pause "${TV2[@]}" "${LONG_TIMEOUT[@]}"
  N="${N_CONTROL:-$N}" config txn-pause-15s-timeout-60s-java txn-coordinator-pause "${TV2[@]}" "${JAVA_TXN[@]}" "${LONG_TIMEOUT[@]}"
  $PYV benchmarks/findings_txn_fence.py --runs "$DIR/runs" txn-pause-15s-librdkafka txn-pause-5s-librdkafka txn-pause-15s-java \
    txn-pause-5s-java txn-pause-15s-timeout-60s-librdkafka txn-pause-15s-timeout-60s-java
fi
if [ "$WHAT" = apps ] || [ "$WHAT" = apps-python ]; then
  # One variable each: the service's code (transactions or not), or Streams' processing.guarantee; the same faults and the
  # same exactly-once contract, so what at_least_once and the naive service give up shows as anomalies.
  config app-python-eos examples/apps/eos-broker-and-instance-kill.toml
  config app-python-naive examples/apps/naive-broker-and-instance-kill.toml
  $PYV benchmarks/findings_apps.py --runs "$DIR/runs" app-python-eos app-python-naive
fi
if [ "$WHAT" = apps ] || [ "$WHAT" = apps-streams ]; then
  ALO=('apps[0].env.PROCESSING_GUARANTEE="at_least_once"')
  config app-streams-map-eos examples/apps/streams-map-broker-kill.toml
  config app-streams-map-alo examples/apps/streams-map-broker-kill.toml "${ALO[@]}"
  config app-streams-count-eos examples/apps/streams-count-broker-kill.toml
  config app-streams-count-alo examples/apps/streams-count-broker-kill.toml "${ALO[@]}"
  $PYV benchmarks/findings_apps.py --runs "$DIR/runs" app-streams-map-eos app-streams-map-alo app-streams-count-eos \
    app-streams-count-alo
fi
CELLS=()
cell() { CELLS+=("$1"); mkdir -p docs/findings/app-cells; OUT=docs/findings/app-cells config "$@"; }
# label scenario app group input --set...: the cells of one configuration of a pair. One fault a cell, the same for both
# configurations of a pair (the examples' own faults replaced): the transaction coordinator of instance 0's transactional
# id killed (Python only: a Streams app's transactional ids are its own), the group coordinator of the app's group
# killed, the leader of the input's first partition isolated, instance 0 killed, a rolling restart (each instance
# stopped with SIGTERM and started again once the group owns all its input).
cells() {
  local label="$1" scenario="$2" app="$3" group="$4" input="$5"
  shift 5
  local at='at_s=10'
  if [ "$app" = eos ] || [ "$app" = naive ]; then
    cell "$label-txn-coordinator-kill" "$scenario" "$@" \
      "faults=[{fault=\"kill\", role=\"txn-coordinator\", transactional_id=\"$app-0\", $at, duration_s=10}]"
  fi
  cell "$label-group-coordinator-kill" "$scenario" "$@" \
    "faults=[{fault=\"kill\", role=\"group-coordinator\", group=\"$group\", $at, duration_s=10}]"
  cell "$label-leader-isolated" "$scenario" "$@" \
    "faults=[{fault=\"isolate\", role=\"leader\", partition=\"$input-0\", $at, duration_s=15}]"
  cell "$label-instance-kill" "$scenario" "$@" "faults=[{fault=\"kill-app\", app=\"$app-0\", $at, duration_s=5}]"
  cell "$label-rolling-restart" "$scenario" "$@" \
    "faults=[{fault=\"restart-app\", app=\"$app-0\", at_s=5, duration_s=2}, {fault=\"restart-app\", app=\"$app-1\", at_s=15, duration_s=2}]"
}
if [ "$WHAT" = apps ] || [ "$WHAT" = apps-cells ] || [ "$WHAT" = apps-cells-python ]; then
  cells app-python-eos examples/apps/eos-broker-and-instance-kill.toml eos app-eos app-in
  cells app-python-naive examples/apps/naive-broker-and-instance-kill.toml naive app-naive app-in
fi
if [ "$WHAT" = apps ] || [ "$WHAT" = apps-cells ] || [ "$WHAT" = apps-cells-streams ]; then
  ALO=('apps[0].env.PROCESSING_GUARANTEE="at_least_once"')
  cells app-streams-map-eos examples/apps/streams-map-broker-kill.toml mapper app-streams-map streams-in
  cells app-streams-map-alo examples/apps/streams-map-broker-kill.toml mapper app-streams-map streams-in "${ALO[@]}"
fi
if [ "$WHAT" = apps-cells-restart ]; then
  # The transactional service's unfinished runs are its instances' exits on a fatal error (INVALID_TXN_STATE after a
  # broker's loss): the same cells (those where an instance exited by itself) with restart = "on-failure", an
  # orchestrator's policy, which starts such an instance again; one variable against app-python-eos.
  ON_FAILURE=('apps[0].restart="on-failure"')
  EOS_CELLS=(examples/apps/eos-broker-and-instance-kill.toml "${ON_FAILURE[@]}")
  cell app-python-eos-on-failure-txn-coordinator-kill "${EOS_CELLS[@]}" \
    'faults=[{fault="kill", role="txn-coordinator", transactional_id="eos-0", at_s=10, duration_s=10}]'
  cell app-python-eos-on-failure-group-coordinator-kill "${EOS_CELLS[@]}" \
    'faults=[{fault="kill", role="group-coordinator", group="app-eos", at_s=10, duration_s=10}]'
  cell app-python-eos-on-failure-leader-isolated "${EOS_CELLS[@]}" \
    'faults=[{fault="isolate", role="leader", partition="app-in-0", at_s=10, duration_s=15}]'
fi
if [ ${#CELLS[@]} -gt 0 ]; then
  $PYV benchmarks/findings_apps.py --runs "$DIR/runs" --out docs/findings/app-cells "${CELLS[@]}"
fi
if [ "$WHAT" = stalls ] || [ "$WHAT" = all ]; then
  config stall-rf3-acks-all-librdkafka broker-failover
  config stall-rf2-acks-all-librdkafka broker-failover 'topics[0].replication_factor=2' 'topics[0].configs."min.insync.replicas"="1"'
  config stall-rf3-acks-1-librdkafka broker-failover 'producers[*].acks="1"'
  config stall-rf3-acks-all-java broker-failover "${JAVA[@]}"
  # RF 2 puts some partitions on no replica of the killed broker: do they stall with the Java producer too?
  config stall-rf2-acks-all-java broker-failover 'topics[0].replication_factor=2' 'topics[0].configs."min.insync.replicas"="1"' "${JAVA[@]}"
fi
$FS down --dir "$DIR" >/dev/null 2>&1 || true
