"""The sandbox's /etc, prepared once per process instead of assembled on every run.

Each run used to make bwrap create /etc on its root tmpfs, copy in the five synthesized
files and bind-mount each host entry of `SandboxConfig.etc_ro_binds` (ld.so.cache,
alternatives, localtime, python3*): a dozen mount operations, each of which makes bwrap
re-read /proc/self/mountinfo. Here the same tree is written once into a private directory
(the synthesized files plus copies of those host entries) and the run binds that one
directory read-only at /etc.

The copies follow the host: before every run the host entries, every directory and
regular file inside them, /etc itself (for new glob matches) and the prepared directory
are stat'ed (about ten `stat` calls); any change builds a new snapshot. A snapshot that was
replaced is removed once the last run using it has finished, and every snapshot when the
process exits. A process that could not clean up (killed) leaves its snapshots behind:
each snapshot holds an flock while its process lives, and building a snapshot removes the
ones of the same user in the same directory whose lock nobody holds any more.

What is copied is what the hook could already read through the binds: a host entry is
copied only if it is a regular file, a directory or a symlink and everything in it is
readable by others; anything else (a restricted file, a FIFO...) stays an individual
read-only bind as before. Copies are read-only (mode without write bits) and keep the
host's mtimes (with a fresh one, every python3 start would recompile sitecustomize.py: its
.pyc in /usr is checked against the source's mtime), symlinks inside a directory stay
symlinks and a top-level symlink (/etc/localtime) is copied as the file it points to,
which is what the binds showed. The prepared directory is only ever bound
read-only, so the hook cannot change it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import glob
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

ETC = "/etc"
PREFIX = "console-hook-etc-"
LOCK = "owner.lock"  # beside the snapshot's etc/, never bound into the sandbox
_Stamp = tuple[tuple[str, int, int, int, int], ...]


@dataclass
class EtcSnapshot:
    """A prepared /etc: `path` is bound read-only at /etc, `binds` are host paths that
    could not be copied and are bound individually on top of it."""

    path: str
    binds: tuple[str, ...]
    matches: tuple[str, ...]
    watched: tuple[str, ...]  # host directories and files inside copied directories
    own_dirs: tuple[str, ...]  # the snapshot's directories
    stamp: _Stamp
    globbed: tuple[int, ...] | None  # glob_stamp() when `matches` were found
    settled: bool  # all the host mtimes it was built from were old enough
    users: int = 0
    retired: bool = False
    root: str = field(default="", repr=False)
    lock_fd: int = field(default=-1, repr=False)


def _stat_key(path: str, *, follow: bool) -> tuple[str, int, int, int, int]:
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return (path, -1, -1, -1, -1)
    return (path, info.st_ino, info.st_mtime_ns, info.st_size, info.st_mode)


def _stamp(own_dirs: tuple[str, ...], watched: tuple[str, ...], matches: tuple[str, ...]) -> _Stamp:
    # The snapshot's own directories too: a temp cleaner removing a file changes them.
    keys = [_stat_key(path, follow=False) for path in own_dirs]
    keys += [_stat_key(path, follow=True) for path in matches]
    keys += [_stat_key(path, follow=False) for path in watched]
    return tuple(keys)


def _matches(patterns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(path for pattern in patterns for path in sorted(glob.glob(pattern)))


# A change in the same clock tick as the stat that saw the previous one would keep the
# same mtime: stamps this recent are not trusted (the work is redone until they settle).
_SETTLE_NS = 2_000_000_000


def settled(mtimes: Iterable[int]) -> bool:
    """All these mtimes are old enough for an unchanged one to mean an unchanged file."""
    horizon = time.time_ns() - _SETTLE_NS
    return all(mtime < horizon for mtime in mtimes)


def glob_stamp(patterns: tuple[str, ...]) -> tuple[int, ...] | None:
    """The mtimes of the directories the patterns are matched in: while they hold, so do
    the matches. None when a directory part is itself a pattern (then: glob every time)."""
    stamp = []
    for pattern in patterns:
        directory = os.path.dirname(pattern)
        if glob.has_magic(directory):
            return None
        try:
            stamp.append(os.stat(directory).st_mtime_ns)
        except OSError:
            stamp.append(-1)
    return tuple(stamp)


def _world_traversable(path: str) -> bool:
    """Every directory from / to `path` can be searched by any user (host nobody must
    reach the prepared directory when it starts bwrap for a root agent)."""
    path = os.path.realpath(path)
    while True:
        try:
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def _base_dir(as_root: bool) -> str | None:
    candidates = [tempfile.gettempdir()]
    if as_root:
        candidates += ["/tmp", "/dev/shm", "/var/tmp"]  # noqa: S108 - searched for a usable one
    for candidate in candidates:
        if os.path.isdir(candidate) and (not as_root or _world_traversable(candidate)):
            return candidate
    return None


class _NotCopyable(Exception):
    pass


def _copy_tree(source: str, dest: str, watched: list[str]) -> None:
    """Copy a host directory: subdirectories and regular files (read-only copies),
    symlinks as symlinks; anything not readable by others refuses the whole entry."""
    info = os.stat(source)
    if info.st_mode & 0o005 != 0o005:
        raise _NotCopyable(source)
    os.mkdir(dest)
    watched.append(source)
    with os.scandir(source) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            target = os.path.join(dest, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir(follow_symlinks=False):
                _copy_tree(entry.path, target, watched)
            elif entry.is_file(follow_symlinks=False):
                _copy_file(entry.path, target)
                watched.append(entry.path)
            else:
                raise _NotCopyable(entry.path)
    os.chmod(dest, stat.S_IMODE(info.st_mode) & 0o555)


def _copy_file(source: str, dest: str) -> None:
    info = os.stat(source)
    if not info.st_mode & stat.S_IROTH:
        raise _NotCopyable(source)
    shutil.copyfile(source, dest)
    # The host's mtime, as the bind showed it: Python checks a .pyc against its source's
    # mtime, and /etc/python3.X/sitecustomize.py (imported by every python3 start) with a
    # fresh mtime would be recompiled on every run (its .pyc in the read-only /usr is stale).
    os.utime(dest, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.chmod(dest, stat.S_IMODE(info.st_mode) & 0o555)


def _mountpoint(source: str, target: str) -> None:
    """Where bwrap binds a host entry that was not copied: the snapshot is read-only once
    bound, so bwrap could not create it there itself."""
    if os.path.lexists(target):
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.isdir(source):
        os.mkdir(target)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))


def _build(
    base: str, files: Mapping[str, bytes], matches: tuple[str, ...], globbed: tuple[int, ...] | None
) -> EtcSnapshot:
    root = tempfile.mkdtemp(prefix=PREFIX, dir=base)
    lock_fd = -1
    try:
        lock_fd = _hold_lock(root)
        os.chmod(root, 0o755)  # noqa: S103 - host nobody (a root agent's bwrap) must reach it
        path = os.path.join(root, "etc")
        os.mkdir(path)
        for dest, data in files.items():
            target = os.path.join(path, os.path.relpath(dest, ETC))
            with open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444), "wb") as fh:
                fh.write(data)
        binds: list[str] = []
        watched: list[str] = []
        for source in matches:
            target = os.path.join(path, os.path.relpath(source, ETC))
            if os.path.dirname(source) == ETC and not os.path.lexists(target):
                entry_watched: list[str] = []
                try:
                    if os.path.isdir(source):
                        _copy_tree(source, target, entry_watched)
                    elif os.path.isfile(source):
                        _copy_file(source, target)
                    else:
                        raise _NotCopyable(source)
                except (_NotCopyable, OSError):
                    _remove(target)
                else:
                    watched += entry_watched
                    continue
            binds.append(source)
            if source.startswith(ETC + "/"):
                _mountpoint(source, target)
        os.chmod(path, 0o555)  # noqa: S103 - read-only; what the hook reads as /etc
        own_dirs = tuple(dirpath for dirpath, _dirs, _files in os.walk(path))
    except BaseException:
        _remove(root)
        if lock_fd != -1:
            os.close(lock_fd)
        raise
    stamp = _stamp(own_dirs, tuple(watched), matches)
    host_mtimes = [key[2] for key in stamp[len(own_dirs) :]]
    return EtcSnapshot(
        path=path,
        binds=tuple(binds),
        matches=matches,
        watched=tuple(watched),
        own_dirs=own_dirs,
        stamp=stamp,
        globbed=globbed,
        settled=settled(host_mtimes) and settled(globbed or ()),
        root=root,
        lock_fd=lock_fd,
    )


def _hold_lock(root: str) -> int:
    """This process's lock on a new snapshot, held until the snapshot is removed or the
    process ends. Taken on a temporary name, then renamed: a cleaner that finds the lock
    file always finds it locked."""
    pending = os.path.join(root, f".{LOCK}")
    fd = os.open(pending, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o400)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(pending, os.path.join(root, LOCK))
    except BaseException:
        os.close(fd)
        raise
    return fd


def remove_stale(base: str) -> int:
    """Remove the snapshots in `base` that this user's processes left behind: real
    directories owned by this user whose lock nobody holds. One without a lock file (being
    built right now) is left alone, so is everything of other users. Returns how many."""
    removed = 0
    uid = os.geteuid()
    try:
        with os.scandir(base) as found:
            entries = [entry for entry in found if entry.name.startswith(PREFIX)]
    except OSError:
        return 0
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
            fd = os.open(os.path.join(entry.path, LOCK), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its process still runs (or a forked child of it)
            _remove(entry.path)
            removed += 1
        finally:
            os.close(fd)
    return removed


def _remove(path: str) -> None:
    """Remove a snapshot (its directories are read-only: make them writable first)."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        for dirpath, _dirs, _files in os.walk(path):
            with contextlib.suppress(OSError):
                os.chmod(dirpath, 0o700)
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


class EtcSnapshots:
    """The current snapshot per (synthesized files, patterns), for this process only (a
    forked child builds its own: the parent removes its snapshots when it exits)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: dict[
            tuple[int, tuple[tuple[str, bytes], ...], tuple[str, ...]], EtcSnapshot
        ] = {}
        self._all: dict[int, list[EtcSnapshot]] = {}
        atexit.register(self._remove_all)
        # A child forked while another thread held the lock must not inherit it held.
        os.register_at_fork(after_in_child=self._reset_lock)

    def _reset_lock(self) -> None:
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def acquire(
        self, files: Mapping[str, bytes], patterns: tuple[str, ...], *, as_root: bool
    ) -> Iterator[EtcSnapshot | None]:
        """The snapshot to bind for one run (None: prepare /etc per run instead)."""
        snapshot = self._get(files, patterns, as_root=as_root)
        try:
            yield snapshot
        finally:
            if snapshot is not None:
                self._release(snapshot)

    def _get(
        self, files: Mapping[str, bytes], patterns: tuple[str, ...], *, as_root: bool
    ) -> EtcSnapshot | None:
        key = (os.getpid(), tuple(sorted(files.items())), patterns)
        with self._lock:
            snapshot = self._current.get(key)
            globbed = glob_stamp(patterns)
            if snapshot is not None:
                matches = snapshot.matches
                if globbed is None or globbed != snapshot.globbed:
                    matches = _matches(patterns)
                if (
                    snapshot.settled
                    and matches == snapshot.matches
                    and _stamp(snapshot.own_dirs, snapshot.watched, matches) == snapshot.stamp
                ):
                    snapshot.globbed = globbed
                    snapshot.users += 1
                    return snapshot
                self._retire(snapshot)
                del self._current[key]
            base = _base_dir(as_root)
            if base is None:
                return None
            remove_stale(base)
            try:
                fresh = _build(base, files, _matches(patterns), globbed)
            except OSError:
                return None
            fresh.users = 1
            self._current[key] = fresh
            self._all.setdefault(os.getpid(), []).append(fresh)
            return fresh

    def _release(self, snapshot: EtcSnapshot) -> None:
        with self._lock:
            snapshot.users -= 1
            if snapshot.retired and snapshot.users == 0:
                self._discard(snapshot)

    def _retire(self, snapshot: EtcSnapshot) -> None:
        snapshot.retired = True
        if snapshot.users == 0:
            self._discard(snapshot)

    def _discard(self, snapshot: EtcSnapshot) -> None:
        _remove_owned(snapshot)
        mine = self._all.get(os.getpid(), [])
        if snapshot in mine:
            mine.remove(snapshot)

    def _remove_all(self) -> None:
        for snapshot in self._all.pop(os.getpid(), []):
            _remove_owned(snapshot)


def _remove_owned(snapshot: EtcSnapshot) -> None:
    _remove(snapshot.root)
    if snapshot.lock_fd != -1:
        with contextlib.suppress(OSError):
            os.close(snapshot.lock_fd)
        snapshot.lock_fd = -1


SNAPSHOTS = EtcSnapshots()
