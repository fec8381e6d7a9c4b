# failsafe: `make demo` runs the whole seed lab (every tutorial experiment as a checked scenario) on a
# fresh local cluster; `make tour` walks through seed 000 command by command;
# `make test` runs the test suite (without the tests marked long: `make test-long` runs those). Both run
# `make setup` first and are idempotent.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
FAILSAFE := $(VENV)/bin/failsafe
KAFKA_VERSION ?= 4.3.1
# ZooKeeper mode and the live migration to KRaft (failsafe up --mode zookeeper).
ZOOKEEPER_KAFKA_VERSION ?= 3.9.2
# The newest release, beside the default until the seed lab, the soundness corpus and the atlas's default grid pass on
# it (docs/lifecycle.md); 'failsafe compare' and rolling upgrades run it against the default.
NEXT_KAFKA_VERSION ?= 4.4.0
DEMO_DIR ?= failsafe-cluster
# The long tests (pyproject.toml's markers) repeat on a real cluster what other tests and the benchmarks cover.
PYTEST_ARGS ?= -m "not long"
BENCH_DIR ?= /tmp/failsafe-bench-cluster

.PHONY: setup demo tour test test-long lint bench clean-demo

$(VENV)/.installed: pyproject.toml
	@command -v python3 >/dev/null || { echo "make setup: python3 (3.11+) is missing: install it (Debian: apt-get install python3 python3-venv)" >&2; exit 2; }
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,spark]'
	touch $@

setup: $(VENV)/.installed
	@bash scripts/ensure-java-maven.sh
	$(FAILSAFE) setup --kafka-version $(KAFKA_VERSION) --kafka-version $(ZOOKEEPER_KAFKA_VERSION) --kafka-version $(NEXT_KAFKA_VERSION)

demo: setup
	bash scripts/demo.sh $(DEMO_DIR)

tour: setup
	bash scripts/tour.sh $(DEMO_DIR)

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

test-long: setup
	$(PY) -m pytest -m long

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples

bench: setup
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/bench_cluster.py --runs 5 --out docs/benchmarks/cluster.json
	$(PY) benchmarks/bench_cds.py --rounds 3 --out docs/benchmarks/cds.json
	$(PY) benchmarks/bench_producer.py --dir $(BENCH_DIR) --records 200000 --rounds 3 --out docs/benchmarks/producer.json
	$(PY) benchmarks/bench_check.py --out docs/benchmarks/check.json
	$(PY) benchmarks/bench_failover.py --dir $(BENCH_DIR) --runs 5 --out docs/benchmarks/failover.json
	$(PY) benchmarks/bench_simulator.py --dir $(BENCH_DIR) --records 300000 --rounds 5 --out docs/benchmarks/simulator.json
	$(PY) benchmarks/bench_simulator.py --dir $(BENCH_DIR) --records 300000 --rounds 3 --instances 2 --out docs/benchmarks/simulator-2-instances.json
	$(PY) benchmarks/bench_pipeline.py --dir $(BENCH_DIR) --backlog 200000 --batch 50000 --live-s 60 --out docs/benchmarks/pipeline.json
	$(PY) benchmarks/bench_pipeline.py --dir $(BENCH_DIR) --sustained 5000,10000,16000 --live-s 150 --warmup 60 --out docs/benchmarks/pipeline-state-sustained.json
	$(PY) benchmarks/bench_state_store.py --dir $(BENCH_DIR) --out docs/benchmarks/pipeline-state-store.json
	$(PY) benchmarks/bench_pipeline_scale.py --dir $(BENCH_DIR) --out docs/benchmarks/pipeline-scale.json
	$(PY) benchmarks/bench_transactions.py --dir $(BENCH_DIR) --seconds 15 --rounds 2 --versions 2,1 --out docs/benchmarks/transactions-throughput.json
	$(PY) benchmarks/bench_txn_failover.py --dir $(BENCH_DIR) --runs 5 --versions 2,1 --clients librdkafka,kafka-java --out docs/benchmarks/transactions-failover.json
	$(PY) benchmarks/bench_rebalance.py --dir $(BENCH_DIR) --runs 5 --out docs/benchmarks/rebalance-3.json
	$(PY) benchmarks/bench_rebalance.py --dir $(BENCH_DIR) --runs 5 --members 30 --partitions 60 --keys 240 --faults closed,killed --clients librdkafka --out docs/benchmarks/rebalance-30.json
	$(PY) benchmarks/bench_rebalance.py --dir $(BENCH_DIR) --members 30 --partitions 60 --keys 240 --faults closed --protocols classic-range --clients kafka-java --runs 1 --out /tmp/rebalance-30-java.json
	$(PY) benchmarks/bench_rebalance.py --dir $(BENCH_DIR) --summarize docs/benchmarks/rebalance-30.json --replace-cells /tmp/rebalance-30-java.json --out docs/benchmarks/rebalance-30.json
	$(PY) benchmarks/bench_rebalance.py --dir $(BENCH_DIR) --runs 5 --members 10 --partitions 900 --keys 3600 --rate 1800 --faults joining --protocols classic-range,classic-cooperative-sticky,consumer-uniform --clients librdkafka,kafka-java --out docs/benchmarks/rebalance-900.json
	$(PY) benchmarks/bench_share.py --dir $(BENCH_DIR) --runs 5 --records 200000 --rounds 0 --out docs/benchmarks/share.json
	$(PY) benchmarks/bench_share.py --dir $(BENCH_DIR) --runs 0 --records 200000 --rounds 3 --out docs/benchmarks/share-throughput.json
	$(PY) benchmarks/bench_share.py --dir $(BENCH_DIR) --runs 5 --rounds 0 --driver kafka-verifiable --scenarios share-consumer-killed,share-consumer-paused --out docs/benchmarks/share-java.json
	$(PY) benchmarks/bench_power_loss.py --dir /tmp/failsafe-power --runs 10 --keep-runs /tmp/failsafe-power-runs --out docs/benchmarks/power-loss.json power-loss-single-broker:default,flush1 power-loss-all-brokers:default,flush1 last-replica-standing:default last-replica-standing:elr0
	$(PY) benchmarks/bench_power_loss.py --dir /tmp/failsafe-power --runs 5 --keep-runs /tmp/failsafe-power-runs --out docs/benchmarks/power-loss-kept.json power-loss-rack:default controller-power-loss:default disk-full:default disk-error:default
	$(PY) benchmarks/bench_power_loss.py --dir /tmp/failsafe-power --runs 5 --fresh --keep-runs /tmp/failsafe-power-runs --out docs/benchmarks/power-loss-zookeeper.json controller-power-loss:zookeeper
	$(PY) benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles --runs 3 --out docs/benchmarks/profiles-load.json load:defaults load:fast-failover
	$(PY) benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles --runs 5 --out docs/benchmarks/profiles-pause.json pause-0.5:fast-failover pause-1.5:fast-failover pause-3:fast-failover pause-3:defaults
	$(PY) benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles --runs 20 --out docs/benchmarks/profiles-kill.json kill:defaults kill:fast-failover
	$(PY) benchmarks/bench_profiles.py --dir /tmp/failsafe-profiles --runs 5 --out docs/benchmarks/profiles-java.json kill:fast-failover:java kill:defaults:java
	$(PY) benchmarks/bench_hosts.py --dir /tmp/failsafe-hosts --rounds 2 --kills 3 --runs 5 --out docs/benchmarks/hosts.json
	$(PY) benchmarks/bench_ssh_commands.py --dir /tmp/failsafe-ssh --commands 50 --out docs/benchmarks/ssh-commands.json
	$(PY) benchmarks/examine_disk_faults.py docs/benchmarks/power-loss-kept.json --out docs/benchmarks/disk-faults-seen.json
	$(PY) benchmarks/examine_power_elections.py docs/benchmarks/power-loss.json --scenario last-replica-standing --out docs/benchmarks/power-loss-elections.json
	$(PY) benchmarks/bench_disk_throughput.py --dir /tmp/failsafe-disk-bench --rounds 3 --records 100000 --out docs/benchmarks/disk-throughput.json
	$(PY) benchmarks/bench_sink_duplicates.py --dir $(BENCH_DIR) --runs 10 --out docs/benchmarks/pipeline-sink-duplicates.json
	$(PY) benchmarks/profile_pipeline.py --dir $(BENCH_DIR) --out docs/benchmarks/pipeline-profile.json
	$(PY) benchmarks/profile_pipeline.py --dir $(BENCH_DIR) --publish exactly-once --out docs/benchmarks/pipeline-profile-exactly-once.json
	$(PY) benchmarks/profile_pipeline.py --dir $(BENCH_DIR) --publish at-least-once --out docs/benchmarks/pipeline-profile-at-least-once.json
	$(PY) benchmarks/time_publish_steps.py --dir $(BENCH_DIR) --out docs/benchmarks/publish-steps.json
	$(PY) benchmarks/bench_pipeline_pinned.py --dir $(BENCH_DIR) --out docs/benchmarks/pipeline-pinned.json
	$(PY) benchmarks/bench_pipeline.py --dir $(BENCH_DIR) --sustained 5000,10000,16000 --live-s 150 --warmup 60 --publish exactly-once,at-least-once --out docs/benchmarks/pipeline-publish-sustained.json
	$(PY) benchmarks/bench_realtime.py --dir $(BENCH_DIR) --rate 5000 --duration 90 --warmup 30 --out docs/benchmarks/realtime.json
	$(PY) benchmarks/bench_console.py --dir $(BENCH_DIR) --rounds 5 --idle-s 60 --out docs/benchmarks/console.json
	$(PY) benchmarks/bench_seedlab.py --dir /tmp/failsafe-bench-lab --runs 1 --out docs/benchmarks/seed-lab.json
	bash benchmarks/network.sh
	bash benchmarks/bench_dr.sh
	N=5 bash benchmarks/modes.sh failover
	M=3 bash benchmarks/modes.sh migration
	M=4 bash benchmarks/modes.sh migration-clients
	N=10 bash benchmarks/findings.sh duplicates
	N=10 bash benchmarks/findings.sh reproduce
	N=10 bash benchmarks/findings.sh stalls
	N=10 bash benchmarks/findings.sh loaded
	N=5 bash benchmarks/findings.sh zookeeper
	N=5 bash benchmarks/findings.sh zookeeper-control
	N=3 bash benchmarks/findings.sh where
	N=10 bash benchmarks/findings.sh cold
	N=10 bash benchmarks/findings.sh coordinator
	N=10 KILL_BATCHES="10 30 40" N_TV2=5 N_JAVA=5 N_SHORT=5 N_TXN_KILL=10 N_PAUSE=5 bash benchmarks/findings.sh txn-hang
	N=3 N_CONTROL=3 bash benchmarks/findings.sh txn-fence
	$(PY) benchmarks/render_docs.py --write

clean-demo:
	-$(FAILSAFE) clean --dir $(DEMO_DIR)
