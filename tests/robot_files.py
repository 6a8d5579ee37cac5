"""Robot files of the installed test corpora, or a skip when the corpus is not installed."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest


def erd_urdf(relative: str) -> Path:
    """example-robot-data's file ``relative`` under its ``robots`` folder (the cmeel package's
    share), or skip the calling test when the package or the file is not installed."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    urdf = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")) / relative
    if not urdf.is_file():
        pytest.skip(f"{urdf} is not installed")
    return urdf
