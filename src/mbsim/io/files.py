"""Identity of input files: the SHA-256 of their bytes, and whether a recorded file is still
the one a run read (results files record the inputs, batch plans and `mbsim view` check them)."""

from __future__ import annotations

import hashlib
import os


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of the file's bytes (read in blocks, any size)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def recorded_file_change(path: str, digest: str) -> str | None:
    """What happened to a file since a run recorded ``digest`` for it: "moved or been
    deleted", "changed", or None when it is the same file."""
    if not os.path.isfile(path):
        return "moved or been deleted"
    if file_sha256(path) != digest:
        return "changed"
    return None
