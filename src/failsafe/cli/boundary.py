"""The command line's boundary: every exception that reaches it becomes one line on stderr and an exit code.

    UserError (bad input, wrong state)              one line, exit 2
    another FailsafeError, a wait that timed out,   one line and the path of a log file holding the traceback,
      a bare timeout, an OSError                    exit 5 (failsafe could not carry it out)
    anything else (a crash of failsafe's own)       the same, exit 5

``FAILSAFE_DEBUG=1`` prints the traceback itself too. The log files are in ``$FAILSAFE_CACHE/errors``
(default ``~/.cache/failsafe/errors``), one per error, named by time and process.
"""

from __future__ import annotations

import errno
import os
import sys
import time
import traceback
from pathlib import Path

from failsafe.errors import EXIT_NOT_CARRIED_OUT, EXIT_USAGE, FailsafeError, UserError
from failsafe.waiting import WaitTimeout

# What a path the user gave can be wrong with: a usage error, not failsafe's failure.
_USER_PATH_ERRNOS = (errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS, errno.EEXIST)


def errors_dir() -> Path:
    return Path(os.environ.get("FAILSAFE_CACHE") or Path.home() / ".cache" / "failsafe") / "errors"


def write_traceback(e: BaseException) -> Path | None:
    """The traceback of ``e`` in a new log file; None when even that cannot be written."""
    path = errors_dir() / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"failsafe {' '.join(sys.argv[1:])}\n\n" + "".join(traceback.format_exception(e)))
    except OSError:
        return None
    return path


def describe(e: BaseException) -> tuple[str, int, bool]:
    """The line to print, the exit code, and whether the traceback is worth a log file."""
    if isinstance(e, UserError):
        return str(e), EXIT_USAGE, False
    if isinstance(e, FailsafeError):
        return str(e), e.exit_code, True
    if isinstance(e, WaitTimeout):
        return str(e), EXIT_NOT_CARRIED_OUT, True
    if isinstance(e, TimeoutError):
        # A client library's bare timeout that no layer below named.
        return (
            f"a request timed out{': ' + str(e) if str(e) else ''} (is the cluster up? see 'failsafe status')",
            EXIT_NOT_CARRIED_OUT,
            True,
        )
    if isinstance(e, OSError):
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        code = EXIT_USAGE if e.errno in _USER_PATH_ERRNOS and e.filename else EXIT_NOT_CARRIED_OUT
        return f"{e.strerror or e}{where}", code, code != EXIT_USAGE
    return f"failsafe crashed: {type(e).__name__}: {e}", EXIT_NOT_CARRIED_OUT, True


def report(e: BaseException) -> int:
    """Print ``e`` as one line (with the path of its traceback's log when it is not a user error); return its exit
    code."""
    line, code, logged = describe(e)
    if logged:
        path = write_traceback(e)
        if os.environ.get("FAILSAFE_DEBUG") == "1":
            traceback.print_exception(e, file=sys.stderr)
        if path is not None:
            line += f" (details: {path})"
    print(f"failsafe: {line}", file=sys.stderr)
    return code
