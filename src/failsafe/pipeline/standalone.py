"""A Spark standalone cluster on 127.0.0.1: one master and N workers, from the installed pyspark's own classes.

Each process is ``pyspark/bin/spark-class org.apache.spark.deploy.{master.Master,worker.Worker}``
(spark-class execs the JVM, so the pid we track is the JVM's), started through the supervisor with
a pidfile like a broker. A worker starts its executors as its own children, in its process group:
SIGKILL to the group is a lost machine, executors and all.

    ROOT/standalone.json   the spec the cluster was made with (ports, workers, cores, memory)
    ROOT/pids/             master.pid, worker-N.pid
    ROOT/logs/             master.log, worker-N.log
    ROOT/work/worker-N/    each worker's work dir (its executors' stdout and stderr, per application)

Readiness is what the master says in its web UI's JSON (``/json/``): status ALIVE, and every worker
registered and ALIVE at its port. Ports: the master at PORT, its UI at PORT+1000, worker N at PORT+1+N
and its UI at PORT+1001+N.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from failsafe.cluster.observe.readiness import port_is_free
from failsafe.errors import ClusterNotRunning, PortInUse, UnknownNode, UserError
from failsafe.supervisor import DOWN, Child, ProcessState, read_pidfile, spawn
from failsafe.waiting import WaitTimeout, wait_until

HOST = "127.0.0.1"
DEFAULT_PORT = 7077
DEFAULT_WORKERS = 2
UI_PORT_OFFSET = 1000
SPEC_FILE = "standalone.json"
MASTER = "master"
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
JSON_TIMEOUT_S = 2.0
# The master and workers only schedule; executors do the work (their heap is spark.executor.memory).
DAEMON_MEMORY = "256m"

Spawner = Callable[..., Child]


@dataclass(frozen=True)
class StandaloneSpec:
    workers: int = DEFAULT_WORKERS
    cores_per_worker: int = 1
    worker_memory: str = "1g"
    port: int = DEFAULT_PORT

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def ui_port(self) -> int:
        return self.port + UI_PORT_OFFSET

    def worker_port(self, worker: int) -> int:
        return self.port + 1 + worker

    def worker_ui_port(self, worker: int) -> int:
        return self.ui_port + 1 + worker

    def ports(self) -> list[int]:
        return [self.port, self.ui_port] + [
            p for w in range(self.workers) for p in (self.worker_port(w), self.worker_ui_port(w))
        ]


class StandaloneCluster:
    """The standalone cluster under ``root``: start, stop, kill a worker, and what the master says."""

    def __init__(self, root: Path, spec: StandaloneSpec, spawner: Spawner = spawn, outlives_us: bool = True) -> None:
        self.root = root
        self.spec = spec
        self.spawner = spawner
        self.outlives_us = outlives_us

    @classmethod
    def open(cls, root: Path) -> StandaloneCluster:
        try:
            data = json.loads((root / SPEC_FILE).read_text())
        except FileNotFoundError:
            raise ClusterNotRunning(
                f"no Spark standalone cluster at {root}: start one with 'failsafe spark up'"
            ) from None
        return cls(root, StandaloneSpec(**data))

    @staticmethod
    def exists(root: Path) -> bool:
        return (root / SPEC_FILE).is_file()

    # -- looking --------------------------------------------------------------------------------
    def names(self) -> list[str]:
        return [MASTER] + [worker_name(w) for w in range(self.spec.workers)]

    def state(self, name: str) -> ProcessState:
        tracked = read_pidfile(self._pidfile(name))
        return tracked.state() if tracked is not None else DOWN

    def pid(self, name: str) -> int | None:
        tracked = read_pidfile(self._pidfile(name))
        return tracked.pid if tracked is not None and tracked.alive() else None

    def master_json(self) -> dict[str, Any] | None:
        """The master's own view (``/json/`` of its web UI), or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.spec.ui_port}/json/", timeout=JSON_TIMEOUT_S) as response:
                return json.loads(response.read())
        except (OSError, ValueError):
            return None

    def worker_executors(self) -> dict[int, list[str]]:
        """The executor ids each answering worker runs (``/json/`` of the worker's web UI), by our index."""
        found = {}
        for worker in range(self.spec.workers):
            try:
                with urllib.request.urlopen(
                    f"http://{HOST}:{self.spec.worker_ui_port(worker)}/json/", timeout=JSON_TIMEOUT_S
                ) as response:
                    found[worker] = [str(e["id"]) for e in json.loads(response.read()).get("executors", [])]
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found

    def registered_workers(self, view: dict[str, Any] | None = None) -> set[int]:
        """The workers the master counts ALIVE, by our index (matched on their port)."""
        view = self.master_json() if view is None else view
        if not view or view.get("status") != "ALIVE":
            return set()
        by_port = {self.spec.worker_port(w): w for w in range(self.spec.workers)}
        return {
            by_port[w["port"]]
            for w in view.get("workers", [])
            if w.get("state") == "ALIVE" and w.get("port") in by_port
        }

    def status(self) -> dict[str, Any]:
        view = self.master_json()
        registered = self.registered_workers(view)
        workers = [
            {
                "worker": w,
                "pid": self.pid(worker_name(w)),
                "state": str(self.state(worker_name(w))),
                "port": self.spec.worker_port(w),
                "ui_port": self.spec.worker_ui_port(w),
                "registered": w in registered,
            }
            for w in range(self.spec.workers)
        ]
        apps = [
            {"id": a.get("id"), "name": a.get("name"), "cores": a.get("cores"), "state": a.get("state")}
            for a in (view or {}).get("activeapps", [])
        ]
        return {
            "root": str(self.root),
            "master_url": self.spec.master_url,
            "ui": f"http://{HOST}:{self.spec.ui_port}",
            "master": {"pid": self.pid(MASTER), "state": str(self.state(MASTER)), "status": (view or {}).get("status")},
            "workers": workers,
            "applications": apps,
            "spec": asdict(self.spec),
        }

    # -- acting ---------------------------------------------------------------------------------
    def start(self, timeout_s: float = READY_TIMEOUT_S, progress: Callable[[str], None] = lambda _: None) -> None:
        """Start the master, then every worker, and wait until the master counts them all."""
        running = [n for n in self.names() if self.state(n) != DOWN]
        if running:
            raise UserError(
                f"a Spark standalone cluster is already running at {self.root} ({', '.join(running)}): "
                f"'failsafe spark status' shows it, 'failsafe spark down' stops it"
            )
        for port in self.spec.ports():
            if not port_is_free(port, HOST):
                raise PortInUse(
                    f"port {port} is already in use: stop what listens there or choose another --port for Spark"
                )
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / SPEC_FILE).write_text(json.dumps(asdict(self.spec), indent=2) + "\n")
        progress(f"starting the Spark master at {self.spec.master_url}")
        self._spawn(
            MASTER,
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                HOST,
                "--port",
                str(self.spec.port),
                "--webui-port",
                str(self.spec.ui_port),
            ],
        )
        self._wait(
            lambda: (self.master_json() or {}).get("status") == "ALIVE", MASTER, timeout_s, "did not answer as ALIVE"
        )
        for w in range(self.spec.workers):
            self.start_worker(w, timeout_s, progress)

    def start_worker(
        self, worker: int, timeout_s: float = READY_TIMEOUT_S, progress: Callable[[str], None] = lambda _: None
    ) -> None:
        name = self._worker(worker)
        if self.state(name) != DOWN:
            raise UserError(f"Spark {name} is already running (pid {self.pid(name)})")
        progress(f"starting Spark {name} ({self.spec.cores_per_worker} core(s), {self.spec.worker_memory})")
        work = self.root / "work" / name
        work.mkdir(parents=True, exist_ok=True)
        self._spawn(
            name,
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                HOST,
                "--port",
                str(self.spec.worker_port(worker)),
                "--webui-port",
                str(self.spec.worker_ui_port(worker)),
                "--cores",
                str(self.spec.cores_per_worker),
                "--memory",
                self.spec.worker_memory,
                "--work-dir",
                str(work),
                self.spec.master_url,
            ],
        )
        self._wait(
            lambda: worker in self.registered_workers(),
            name,
            timeout_s,
            f"was not registered with the master at {self.spec.master_url}",
        )

    def kill_worker(self, worker: int, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """SIGKILL to the worker's process group: the worker and its executors die at once, as a lost machine."""
        name = self._worker(worker)
        tracked = read_pidfile(self._pidfile(name))
        if tracked is None or not tracked.alive():
            raise UserError(f"Spark {name} is not running")
        tracked.signal_group(signal.SIGKILL)
        tracked.wait_gone(timeout_s)
        return tracked.pid

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> list[str]:
        """SIGTERM to every worker (each stops its executors), then to the master; SIGKILL what stays. Returns what was
        running."""
        stopped = []
        for name in [*reversed(self.names()[1:]), MASTER]:
            tracked = read_pidfile(self._pidfile(name))
            if tracked is not None and tracked.alive():
                tracked.stop(timeout_s)
                stopped.append(name)
        return stopped

    # -- helpers --------------------------------------------------------------------------------
    def _pidfile(self, name: str) -> Path:
        return self.root / "pids" / f"{name}.pid"

    def _worker(self, worker: int) -> str:
        if not 0 <= worker < self.spec.workers:
            raise UnknownNode(
                f"no Spark worker {worker}: the cluster at {self.root} has workers 0-{self.spec.workers - 1}"
            )
        return worker_name(worker)

    def _spawn(self, name: str, args: list[str]) -> None:
        spark_home = pyspark_home()
        self.spawner(
            [str(spark_home / "bin" / "spark-class"), *args],
            name=f"spark {name}",
            log_path=self.root / "logs" / f"{name}.log",
            env=daemon_env(spark_home),
            pidfile=self._pidfile(name),
            dies_with_parent=not self.outlives_us,
        )

    def _wait(self, condition: Callable[[], bool], name: str, timeout_s: float, what: str) -> None:
        def ready() -> bool:
            if self.state(name) == DOWN:
                raise UserError(f"Spark {name} exited during start: see {self.root / 'logs' / f'{name}.log'}")
            return condition()

        try:
            wait_until(
                ready,
                timeout_s,
                f"Spark {name} {what} within {timeout_s:g}s: see {self.root / 'logs' / f'{name}.log'}",
                0.25,
            )
        except (UserError, WaitTimeout):
            self.stop()
            raise


def worker_name(worker: int) -> str:
    return f"worker-{worker}"


def pyspark_home() -> Path:
    from failsafe.jvm.spark import installed_pyspark

    _, jars = installed_pyspark()
    return jars.parent


def daemon_env(spark_home: Path) -> dict[str, str]:
    """spark-class's environment: this pyspark, our Java, loopback only, no daemonising, small daemon heaps."""
    from failsafe.jvm.java import find_java

    java = find_java().executable.resolve()
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home),
        "JAVA_HOME": str(java.parent.parent),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_MASTER_HOST": HOST,
        # No REST submission server: it would take port 6066 on every cluster, and 'spark-submit' needs none.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


def is_loopback_master(master: str | None) -> bool:
    """local[*] or a spark:// master on this machine's loopback: the driver binds 127.0.0.1 too."""
    if master is None:
        return True
    if master.startswith("local"):
        return True
    if master.startswith("spark://"):
        hosts = [h.rsplit(":", 1)[0] for h in master.removeprefix("spark://").split(",")]
        return all(h in ("127.0.0.1", "localhost") for h in hosts)
    return False
