"""What one command costs on a host over SSH: in a session of its own, against in one of the shells failsafe keeps open
(hosts/shell.py, docs/hosts.md "How failsafe talks to a host").

    .venv/bin/python benchmarks/bench_ssh_commands.py --dir /tmp/failsafe-ssh --commands 50 --out \
        docs/benchmarks/ssh-commands.json

One test host of this machine (a network namespace with its own sshd, failsafe hosts testbed), idle, logged in as root
(whose login shell and its rc files sshd runs for every session); removed at the end.
"""

from __future__ import annotations

import argparse
import pwd
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import write_summary  # noqa: E402
from failsafe.hosts import testbed  # noqa: E402
from failsafe.hosts.ssh import SshHost  # noqa: E402

COMMAND = "cat /proc/sys/kernel/random/boot_id"


def spread_ms(values: list[float]) -> dict:
    values = sorted(values)
    return {
        "n": len(values),
        "median": round(statistics.median(values) * 1e3, 1),
        "min": round(values[0] * 1e3, 1),
        "max": round(values[-1] * 1e3, 1),
    }


def timed(run, count: int) -> list[float]:
    out = []
    for _ in range(count):
        t0 = time.monotonic()
        result = run()
        out.append(time.monotonic() - t0)
        if not result.ok():
            raise SystemExit(f"bench_ssh_commands: {COMMAND!r} failed: {result.why()}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    reason = testbed.unavailable_reason()
    if reason:
        raise SystemExit(f"bench_ssh_commands: {reason}")
    args.dir.mkdir(parents=True, exist_ok=True)
    bed = testbed.create(args.dir / "bed", 1)
    try:
        ssh = SshHost(bed.inventory().hosts[0])
        ssh.run("true")  # the connection and the first shell, opened once
        # stdin given: a session of its own (SshHost.run), as every command had before the open shells.
        session = timed(lambda: ssh.run(COMMAND, stdin=b""), args.commands)
        shell = timed(lambda: ssh.run(COMMAND), args.commands)
        ssh.close()
    finally:
        left = testbed.destroy(bed)
    user = pwd.getpwnam("root")
    summary = {
        "what": f"{args.commands} commands ({COMMAND}) one after the other on an idle test host over one SSH "
        f"connection",
        "login_shell": user.pw_shell,
        "rc_file": str(Path(user.pw_dir) / ".bashrc"),
        "rc_file_exists": (Path(user.pw_dir) / ".bashrc").exists(),
        "session_ms": spread_ms(session),
        "shell_ms": spread_ms(shell),
        **({"left_on_hosts": left} if left else {}),
    }
    write_summary(summary, args.out)


if __name__ == "__main__":
    main()
