"""A local directory copied to a host, only what changed (docs/hosts.md).

rsync's quick check, over SFTP: a file is copied when the host has none at its path, or one of another size or
modification time; each copy is written under a temporary name, given the local file's mode and time, then
renamed. One ``find`` lists the host's side; nothing is deleted there unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from failsafe.hosts.ssh import SshHost, quote


@dataclass(frozen=True)
class Synced:
    files: int  # files copied
    bytes: int  # their bytes
    kept: int  # files already there, unchanged
    deleted: int


def sync_tree(ssh: SshHost, local: Path, remote: PurePosixPath, *, delete: bool = False) -> Synced:
    """Make ``remote`` on the host hold what ``local`` holds (regular files; symlinks are followed)."""
    wanted = {p.relative_to(local).as_posix(): p.stat() for p in sorted(local.rglob("*")) if p.is_file()}
    listing = ssh.check(
        f"mkdir -p {quote(remote)} && cd {quote(remote)} && find . -type f -printf '%P\\t%s\\t%T@\\n'",
        what=f"listing {remote}",
    )
    there: dict[str, tuple[int, int]] = {}
    for line in listing.splitlines():
        rel, size, mtime = line.rsplit("\t", 2)
        there[rel] = (int(size), int(float(mtime)))
    changed = [rel for rel, st in wanted.items() if there.get(rel) != (st.st_size, int(st.st_mtime))]
    extra = sorted(set(there) - set(wanted)) if delete else []
    dirs = sorted({str(remote / PurePosixPath(rel).parent) for rel in changed} - {str(remote)})
    if dirs:
        ssh.check(f"mkdir -p {quote(*dirs)}", what=f"making directories under {remote}")
    copied = 0
    if changed:
        with ssh.sftp() as sftp:
            for rel in changed:
                st = wanted[rel]
                target = str(remote / rel)
                partial = f"{target}.failsafe-partial"
                sftp.put(str(local / rel), partial, confirm=True)
                sftp.chmod(partial, st.st_mode & 0o777)
                sftp.utime(partial, (int(st.st_atime), int(st.st_mtime)))
                sftp.posix_rename(partial, target)
                copied += st.st_size
    if extra:
        ssh.check(f"cd {quote(remote)} && rm -f -- {quote(*extra)}", what=f"deleting stale files under {remote}")
    return Synced(len(changed), copied, len(wanted) - len(changed), len(extra))


def sync_file(ssh: SshHost, local: Path, remote: PurePosixPath) -> bool:
    """One file, when it changed; True if it was copied."""
    st = local.stat()
    out = ssh.run(f"stat -c '%s %Y' {quote(remote)} 2>/dev/null").stdout.split()
    if out == [str(st.st_size), str(int(st.st_mtime))]:
        return False
    ssh.check(f"mkdir -p {quote(remote.parent)}", what=f"making {remote.parent}")
    with ssh.sftp() as sftp:
        partial = f"{remote}.failsafe-partial"
        sftp.put(str(local), partial, confirm=True)
        sftp.chmod(partial, st.st_mode & 0o777)
        sftp.utime(partial, (int(st.st_atime), int(st.st_mtime)))
        sftp.posix_rename(partial, str(remote))
    return True


def tree_bytes(local: Path) -> int:
    return sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
