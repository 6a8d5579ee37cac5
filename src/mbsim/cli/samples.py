"""``mbsim samples``: the bundled sample robots and scenarios."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from mbsim.errors import MbsimError
from mbsim.samples.catalog import sample_names, sample_path, scenario_names

app = typer.Typer(help="List, locate or copy the bundled sample robots.", no_args_is_help=True)


@app.command("list")
def list_samples() -> None:
    """Print the names of the bundled sample robots (pendulum-N and chain-N work for any N),
    then the bundled scenarios as ``sample:NAME.toml``."""
    for name in sample_names():
        typer.echo(name)
    for name in scenario_names():
        typer.echo(f"sample:{name}")


@app.command("path")
def path(name: str = typer.Argument(..., help="Sample name, e.g. pendulum-12.")) -> None:
    """Print the path of a sample's URDF (generated on demand for other N)."""
    typer.echo(str(sample_path(name)))


@app.command("copy")
def copy(
    name: str = typer.Argument(..., help="Sample name, e.g. pendulum-12."),
    dest: Path = typer.Argument(..., help="Folder to copy the URDF into."),
) -> None:
    """Copy a sample's URDF into a folder (with the folder of meshes beside it, if any)."""
    src = sample_path(name)
    if not dest.is_dir():
        raise MbsimError(f"{dest}: destination folder does not exist.")
    target = dest / src.name
    shutil.copyfile(src, target)
    # imported robots keep their meshes in a folder named like the URDF, referenced by
    # relative paths, so the copy is usable only with that folder beside it
    assets = src.parent / src.stem
    if assets.is_dir():
        shutil.copytree(assets, dest / src.stem, dirs_exist_ok=True)
    typer.echo(str(target))
