"""Where a results file may be written: checks on the output path, the exclusive lock a run
holds on its file for the whole run, and disk space reserved ahead of each write.

No run may lose or overwrite another run's data (docs/hdf5-format.md, "Who may write a file"):

* :func:`check_output_path` refuses, in one sentence naming the path, a name the file system
  cannot hold (a NUL byte, a component over ``NAME_MAX`` bytes, text that is not a valid file
  name), anything that is not a regular file (a folder, a device node, a pipe, a symbolic
  link), an existing file without ``force``, an input file of the run (``force`` or not), and
  a missing or unwritable folder.
* :class:`FileClaim` opens the file without truncating it, creating it exclusively unless
  ``force``, and takes an exclusive ``flock`` on it that lasts until the run's file is closed.
  A second writer, or a ``--force`` run aimed at a file that is in use, fails to take the lock
  and is refused; it never unlinks or truncates the first run's file. HDF5 is then told not to
  lock the file itself (its own ``flock`` would conflict with ours); readers that ask HDF5 for a
  shared lock still see a live writer. On file systems without ``flock`` (some network file
  systems) the run goes ahead unlocked, as ``mbsim batch``'s folder lock does.
* :meth:`FileClaim.reserve` allocates disk blocks past the end of the file before a flush
  (``fallocate`` with ``FALLOC_FL_KEEP_SIZE``), so HDF5 itself never meets a full disk: a
  write HDF5 cannot complete makes the HDF5 library crash the process (seen as a SIGSEGV in
  ``File.flush()``), while a reservation that fails is an ordinary, clean error.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
from pathlib import Path

from mbsim.io.results.schema import ResultsError

#: Longest file-name component most Linux and macOS file systems accept, in bytes.
NAME_MAX = 255
#: Longest path the kernel accepts, in bytes (Linux PATH_MAX).
PATH_MAX = 4096

_IN_USE = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def free_bytes(folder: str) -> int:
    """Free bytes on the file system of ``folder`` (a function so tests can replace it)."""
    return shutil.disk_usage(folder).free


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as it may appear in a message (a NUL or control byte shown escaped)."""
    text = os.fspath(path)
    return repr(text)[1:-1] if any(ord(ch) < 32 for ch in text) else text


def _check_name(p: str) -> None:
    if "\0" in p:
        raise ResultsError(f"{shown(p)}: the output path holds a NUL byte; give a valid file name.")
    try:
        raw = os.fsencode(p)
    except UnicodeEncodeError:
        raise ResultsError(
            f"{shown(p)}: the output path is not valid text for a file name here."
        ) from None
    name = os.path.basename(p)
    if name in ("", ".", ".."):
        raise ResultsError(f"{shown(p)}: the output path names no file; give a file name.")
    for part in raw.split(b"/"):
        if len(part) > NAME_MAX:
            raise ResultsError(
                f"{shown(p)}: the output file name has a part of {len(part)} bytes; "
                f"file systems allow at most {NAME_MAX}."
            )
    if len(raw) >= PATH_MAX:
        raise ResultsError(
            f"{shown(p)[:200]}...: the output path is {len(raw)} bytes long; "
            f"the system allows at most {PATH_MAX - 1}."
        )


def check_output_path(
    path: str | os.PathLike[str],
    force: bool,
    inputs: tuple[str | os.PathLike[str], ...] | list = (),
) -> None:
    """Refuse an output file that cannot or must not be written, naming it (ResultsError):
    an invalid name, a directory or anything else that is not a regular file, an existing
    file without ``force``, one of the run's ``inputs`` (``force`` or not), a missing or
    unwritable folder."""
    raw = os.fspath(path)
    _check_name(raw)
    p = Path(os.path.abspath(raw))
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            raise ResultsError(f"{p}: {p.parent} is not a folder.") from None
        raise ResultsError(f"{p}: cannot check the output path ({exc.strerror or exc}).") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise ResultsError(f"{p}: is a directory; give a file name.")
        if not stat.S_ISREG(st.st_mode):
            raise ResultsError(
                f"{p}: is not a regular file (a {_kind(st.st_mode)}); results are written "
                "only to regular files, --force or not."
            )
        for f in inputs:
            if _same_file(p, f):
                raise ResultsError(
                    f"{p}: is an input file of this run; give another output name "
                    "(--force does not replace a run's own input)."
                )
        if writer_holds(p):
            raise ResultsError(f"{p}: {IN_USE}.")
        if not force:
            raise ResultsError(f"{p}: already exists; use --force to overwrite it.")
    folder = p.parent
    if not folder.exists():
        raise ResultsError(f"{p}: the folder {folder} does not exist.")
    if not folder.is_dir():
        raise ResultsError(f"{p}: {folder} is not a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ResultsError(f"{p}: the folder {folder} is not writable.")


IN_USE = (
    "another process is using this file (a run writing it, or a program holding it open); "
    "refused, --force or not: wait for it or choose another output name"
)


def writer_holds(path: str | os.PathLike[str]) -> bool:
    """True when another process holds an exclusive lock on ``path`` (a live writer)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in _IN_USE
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISFIFO, "named pipe"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"


def _same_file(p: Path, other: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(p, other) or os.path.realpath(p) == os.path.realpath(other)
    except (OSError, ValueError):
        return False


class FileClaim:
    """The open, exclusively locked results file of one run (see the module docstring).

    Raises ResultsError, naming the path, when the file exists and ``force`` is false, when
    another process holds it (``force`` or not) or when it cannot be opened.
    """

    def __init__(self, path: Path, force: bool) -> None:
        self.path = path
        self.locked = False
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        flags |= getattr(os, "O_CLOEXEC", 0)
        if not force:
            flags |= os.O_EXCL  # two runs racing past the "exists" check: one gets EEXIST
        try:
            self.fd = os.open(path, flags, 0o644)
        except FileExistsError:
            raise ResultsError(f"{path}: already exists; use --force to overwrite it.") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ResultsError(
                    f"{path}: is not a regular file (a symbolic link); results are written "
                    "only to regular files, --force or not."
                ) from None
            raise ResultsError(
                f"{path}: cannot create the results file ({exc.strerror or exc})."
            ) from None
        try:
            st = os.fstat(self.fd)
            if not stat.S_ISREG(st.st_mode):
                raise ResultsError(
                    f"{path}: is not a regular file (a {_kind(st.st_mode)}); results are "
                    "written only to regular files, --force or not."
                )
            self._lock()
            self.ino = (st.st_dev, st.st_ino)
            if not self.still_ours():
                raise ResultsError(
                    f"{path}: was replaced by another process while this run opened it; "
                    "nothing was written."
                )
        except BaseException:
            os.close(self.fd)
            raise

    def _lock(self) -> None:
        import fcntl

        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in _IN_USE:
                raise ResultsError(f"{self.path}: {IN_USE}.") from None
            return  # flock unsupported (some network file systems): go on unlocked
        self.locked = True

    def still_ours(self) -> bool:
        """True while the path still names the file this claim opened (not removed, not
        replaced by another file)."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.ino

    def reserve(self, nbytes: int) -> bool:
        """Allocate ``nbytes`` of disk past the current end of the file without changing its
        size. True when reserved, False when the file system cannot reserve (no
        ``fallocate``: the caller falls back to checking the free space). Raises OSError
        (ENOSPC) when the disk cannot hold them."""
        fallocate = _fallocate()
        if fallocate is None or nbytes <= 0:
            return False
        size = os.fstat(self.fd).st_size
        if fallocate(self.fd, 1, ctypes.c_int64(size), ctypes.c_int64(int(nbytes))) == 0:
            return True  # mode 1 = FALLOC_FL_KEEP_SIZE
        err = ctypes.get_errno()
        if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            return False
        raise OSError(err, os.strerror(err))

    def settle(self) -> None:
        """Open and close the claimed file once more, by its descriptor (``/proc/self/fd``),
        right after HDF5 created it. HDF5 creates the file with ``O_TRUNC``, and ext4 marks
        a file truncated to size 0 to have its delayed-allocation data written out when a
        descriptor of it is next closed (``auto_da_alloc``, meant for programs that rewrite a
        file in place): left set, that writeback is started by HDF5's close at the end of the
        run, ~0.1 ms of system time inside the run's timed finish. Closing a descriptor here,
        while the file holds only its header, spends it on nothing. Nothing else changes
        (durability never relied on it: the writer does not fsync). Best effort."""
        try:
            os.close(os.open(f"/proc/self/fd/{self.fd}", os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            pass

    def release(self) -> None:
        """Give back the reserved blocks past the end of the file (after HDF5 closed it) and
        drop the lock. A second call does nothing."""
        if self.fd < 0:
            return
        try:
            if self.still_ours():
                st = os.fstat(self.fd)
                # ext4 frees the blocks reserved past the end on a truncate to the same size;
                # where that left them (more allocated than the size and some slack), shrinking
                # the file frees every block past the new end. The shrink is avoided when it
                # can be: on ext4 it waits for the last page to be written out (ms of wall).
                os.ftruncate(self.fd, st.st_size)
                st = os.fstat(self.fd)
                if st.st_blocks * 512 > st.st_size + _SLACK_BYTES:
                    os.ftruncate(self.fd, st.st_size + 1)
                    os.ftruncate(self.fd, st.st_size)
        except OSError:
            pass  # the reservation only costs space; the results are already closed
        finally:
            os.close(self.fd)
            self.fd = -1


#: Disk a file may hold past its size without counting as an unreturned reservation (block
#: rounding, a file system's own preallocation); reservations are >= 1 MiB.
_SLACK_BYTES = 1 << 16

_libc: dict = {}


def _fallocate():
    """libc's ``fallocate`` (Linux), or None."""
    if "fallocate" not in _libc:
        fn = None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fn = libc.fallocate
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _libc["fallocate"] = fn
    return _libc["fallocate"]
