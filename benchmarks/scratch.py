"""One scratch folder per benchmark process, removed when the process ends.

The benchmarks write results files, URDFs and caches they do not keep. Each call of
``scratch_dir`` makes a new folder inside this process's own ``/tmp/mbsim-bench-*`` folder,
which is deleted at interpreter exit (``tempfile.TemporaryDirectory``'s finaliser), so timed
runs do not pay for clean-up and repeated benchmark runs do not fill the disk.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

_ROOT: tempfile.TemporaryDirectory | None = None


def scratch_dir(prefix: str) -> Path:
    """A new empty folder (named ``prefix`` + a random tail) removed when the process ends."""
    global _ROOT
    if _ROOT is None:
        _ROOT = tempfile.TemporaryDirectory(prefix="mbsim-bench-")
    return Path(tempfile.mkdtemp(prefix=prefix, dir=_ROOT.name))
