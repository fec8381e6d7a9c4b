#!/usr/bin/env bash
# `make tour`: the seed tutorial (shared/seeds/000): three brokers, a replicated topic, messages in and out,
# the leader of a partition killed, a new leader from the ISR, the broker back, preferred
# leaders restored. Every step is a failsafe command you can type yourself.
set -euo pipefail
DIR="${1:-failsafe-cluster}"
export FAILSAFE_DIR="$DIR"
FS=".venv/bin/failsafe"
TOPIC=my-failsafe-topic

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
leader_of_0() { $FS topics describe "$TOPIC" | awk -F'\t' '$3 == "Partition: 0" { sub("Leader: ", "", $4); print $4 }'; }
isr_of_0() { $FS topics describe "$TOPIC" | awk -F'\t' '$3 == "Partition: 0" { sub("Isr: ", "", $6); print $6 }'; }
wait_for() {  # wait_for DESCRIPTION TIMEOUT_S COMMAND...: poll an observable condition
  local what="$1" timeout_s="$2"; shift 2
  local deadline=$((SECONDS + timeout_s))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || { echo "demo: $what did not happen within ${timeout_s}s" >&2; exit 1; }
  done
}

trap '$FS down >/dev/null 2>&1 || true' EXIT

[ -d "$DIR" ] && $FS clean >/dev/null
step "failsafe up: 1 KRaft controller, brokers 0,1,2 on 9092-9094"
$FS up
$FS status

step "failsafe topics create $TOPIC --partitions 13 --replication-factor 3"
$FS topics create "$TOPIC" --partitions 13 --replication-factor 3
$FS topics describe "$TOPIC"

step "produce four messages, consume them from the beginning"
printf 'Hi Mom\nHow are you?\nHow are things going?\nGood!\n' | $FS produce "$TOPIC" --print-acks
$FS consume "$TOPIC" --from-beginning --exit-at-end

before=$(leader_of_0)
step "kill -9 broker $before, the leader of partition 0"
$FS broker kill "$before"
new_leader() { local l; l=$(leader_of_0); [ -n "$l" ] && [ "$l" != "$before" ] && [ "$l" != none ]; }
wait_for "a new leader for partition 0" 60 new_leader
echo "partition 0: new leader $(leader_of_0), ISR $(isr_of_0)"
$FS topics describe "$TOPIC"

step "messages still flow with broker $before down"
printf 'message 1\nmessage 2\nmessage 3\n' | $FS produce "$TOPIC" --print-acks
$FS consume "$TOPIC" --from-beginning --exit-at-end

step "failsafe broker start $before: it catches up and rejoins the ISR"
$FS broker start "$before"
isr_full() { [ "$(isr_of_0 | tr ',' '\n' | wc -l)" -eq 3 ]; }
wait_for "the ISR of partition 0 to grow back to 3" 60 isr_full
$FS topics describe "$TOPIC"

step "failsafe leader-election: preferred leaders back"
$FS leader-election --topic "$TOPIC"
$FS topics describe "$TOPIC"

step "failsafe down (data kept in $DIR; 'failsafe clean' deletes it)"
$FS down
trap - EXIT
