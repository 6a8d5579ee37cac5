"""A run's identity: what makes two runs the same run, so resuming a sweep reuses a results
file only when it was written for exactly these overrides and these input files.

identity = SHA-256 of the canonical JSON of ``{"overrides": ..., "inputs": [...]}`` where
``overrides`` are the run's dotted keys and values (fixed ``[set]`` values included, keys
sorted) and ``inputs`` the SHA-256 of every file the resolved scenario reads (the base
scenario, URDFs, SRDFs) in scenario order. File contents, not paths, are hashed, so moving a
sweep folder keeps its results valid while editing a URDF or the base scenario invalidates
them. The output path is left out: it follows from the run id.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from mbsim.io.files import file_sha256


class FileHashes:
    """SHA-256 of files, each file read once per sweep (every run shares the URDFs)."""

    def __init__(self) -> None:
        self._cache: dict[Path, str] = {}

    def __call__(self, path: str | os.PathLike[str]) -> str:
        p = Path(os.path.abspath(os.fspath(path)))
        if p not in self._cache:
            self._cache[p] = file_sha256(p)
        return self._cache[p]


def canonical_json(value: object) -> str:
    """Compact JSON with sorted keys; floats in Python's shortest round-trip form."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def run_identity(overrides: dict[str, object], input_sha256: list[str]) -> str:
    """The identity (hex SHA-256) of a run with these overrides and input-file hashes."""
    text = canonical_json({"overrides": overrides, "inputs": list(input_sha256)})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
