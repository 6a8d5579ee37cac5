"""The two command-line settings that say where mesh files may be read, shared by ``run``,
``batch`` and ``info``: ``--package-dir NAME=PATH`` (repeatable) and ``--allow-outside-paths``
(:func:`mbsim.io.urdf.resolve_mesh_uri`). They are command-line settings, not scenario keys,
so a scenario file cannot widen what it may read."""

from __future__ import annotations

import os

import typer

from mbsim.errors import MbsimError

PACKAGE_DIR = typer.Option(
    None,
    "--package-dir",
    help="Folder of ROS package NAME for package:// meshes, as NAME=PATH (repeatable).",
)
ALLOW_OUTSIDE_PATHS = typer.Option(
    False,
    "--allow-outside-paths",
    help="Let mesh paths reach outside the URDF's folder and the package folders.",
)


def parse_package_dirs(values: list[str]) -> dict[str, str]:
    """``["NAME=PATH", ...]`` -> ``{NAME: PATH}``; raises MbsimError on a malformed entry."""
    packages: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise MbsimError(f"--package-dir '{value}' is not of the form NAME=PATH.")
        # absolute: batch workers may run in another folder
        packages[name.strip()] = os.path.abspath(path.strip())
    return packages
