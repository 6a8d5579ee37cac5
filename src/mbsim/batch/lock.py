"""One sweep at a time per output folder: an advisory lock on ``out_dir/.mbsim-batch.lock``.

Two sweeps writing the same folder would overwrite each other's files and summaries. The lock
is ``flock``-based, so the kernel releases it when the process ends, however it ends: a killed
sweep never leaves a stale lock behind. On file systems without flock support (some network
file systems) the sweep goes ahead unlocked.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from mbsim.errors import MbsimError

LOCK_NAME = ".mbsim-batch.lock"


class FolderLock:
    """Context manager holding the lock of ``folder`` (which must exist)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> FolderLock:
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise MbsimError(
                f"{self.path}: cannot create the sweep's lock file ({exc.strerror or exc})."
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise MbsimError(
                    f"{self.path.parent}: another mbsim batch is writing to this folder; "
                    "wait for it to finish or use another out_dir."
                ) from None
            # flock unsupported here: go on unlocked rather than refuse to run
        self._fd = fd
        return self

    def __exit__(self, *exc) -> bool:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None
        return False
