"""Where a results file may be written: checks on the output path and the file's creation."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py

from mbsim.io.results.schema import ResultsError


def free_bytes(folder: str) -> int:
    """Free bytes on the file system of ``folder`` (a function so tests can replace it)."""
    return shutil.disk_usage(folder).free


def create_file(path: Path) -> h5py.File:
    """Create the HDF5 file. Some file systems (NFS, some cluster scratch) refuse the lock
    HDF5 takes; the file is then written without one (readers cannot tell a live run from a
    dead one there, nothing else changes)."""
    try:
        return h5py.File(path, "w")
    except OSError as exc:
        if "lock" not in str(exc).lower():
            raise
        path.unlink(missing_ok=True)
        return h5py.File(path, "w", locking=False)


def check_output_path(path: str | os.PathLike[str], force: bool) -> None:
    """Refuse an output file that cannot or must not be written, naming it: a directory, an
    existing file without ``force``, a missing or unwritable folder (ResultsError)."""
    p = Path(os.path.abspath(os.fspath(path)))
    if p.is_dir():
        raise ResultsError(f"{p}: is a directory; give a file name.")
    if p.exists() and not force:
        raise ResultsError(f"{p}: already exists; use --force to overwrite it.")
    folder = p.parent
    if not folder.exists():
        raise ResultsError(f"{p}: the folder {folder} does not exist.")
    if not folder.is_dir():
        raise ResultsError(f"{p}: {folder} is not a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ResultsError(f"{p}: the folder {folder} is not writable.")
