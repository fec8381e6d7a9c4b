"""The process that serves one disk layer: ``python -m failsafe.disk.daemon BACKING MOUNTPOINT CONTROL``.

It mounts itself (libfuse, as root through mount(2)), answers the owner on the control socket, and
returns when the mountpoint is unmounted. Unmounted after a power loss, the backing directory holds
only what was durable; unmounted without one (a clean shutdown) it holds everything written.
Exit codes: 0 unmounted, 2 cannot start (libfuse missing, a bad directory), 1 anything else.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

FSNAME = "failsafe-disk"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="failsafe.disk.daemon")
    parser.add_argument("backing", type=Path)
    parser.add_argument("mountpoint", type=Path)
    parser.add_argument("control")
    parser.add_argument(
        "--metadata", default="journal", help="when directory changes become durable: journal (any fsync) or posix"
    )
    args = parser.parse_args(argv)
    try:
        from failsafe.disk.fusefs import Fuse, Volatile
    except (OSError, ImportError) as e:  # mfusepy raises OSError at import when libfuse is missing
        print(
            f"failsafe.disk.daemon: mfusepy over libfuse 3 is not usable ({e}): install libfuse 3 (Debian: apt-get "
            "install fuse3) and failsafe's dependencies (make setup)",
            file=sys.stderr,
        )
        return 2
    if not args.backing.is_dir() or not args.mountpoint.is_dir():
        print(f"failsafe.disk.daemon: {args.backing} and {args.mountpoint} must both be directories", file=sys.stderr)
        return 2
    from failsafe.disk.injection import Injection
    from failsafe.supervisor.control import serve

    try:
        ops = Volatile(args.backing.resolve(), args.metadata)
    except ValueError as e:
        print(f"failsafe.disk.daemon: {e}", file=sys.stderr)
        return 2

    def handle(message: dict[str, Any]) -> dict[str, Any]:
        if message.get("op") == "status":
            return ops.status()
        if message.get("op") == "lose":
            return ops.lose(torn=bool(message.get("torn")), seed=int(message.get("seed", 0)))
        if message.get("op") == "inject":
            return ops.inject(Injection.from_message(message))
        if message.get("op") == "clear":
            return ops.clear(message.get("kind"))
        raise ValueError(f"unknown request {message.get('op')!r}")

    server = serve(args.control, handle)
    try:
        # foreground: the owner tracks this very process; threads: a slow fsync must not stop reads of other files;
        # allow_other: a node runs under a group id of its own (network faults match its packets by it), and FUSE
        # refuses every process whose ids differ from the mounter's unless told otherwise.
        Fuse(
            ops,
            str(args.mountpoint),
            foreground=True,
            nothreads=False,
            fsname=FSNAME,
            subtype=FSNAME,
            hard_remove=True,
            allow_other=True,
        )
    finally:
        server.close()
        ops.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
