"""``mbsim samples``: the bundled sample robots and scenarios."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from mbsim.errors import MbsimError
from mbsim.samples.catalog import sample_names, sample_path, sample_scenario_path, scenario_names

app = typer.Typer(
    help="List, locate or copy the bundled sample robots and scenarios.", no_args_is_help=True
)


def _is_scenario(name: str) -> bool:
    return name.removeprefix("sample:").endswith(".toml")


def _path_of(name: str) -> Path:
    bare = name.removeprefix("sample:")
    return sample_scenario_path(bare) if _is_scenario(name) else sample_path(bare)


@app.command("list")
def list_samples() -> None:
    """Print the bundled sample robots (run them as sample:NAME; pendulum-N and chain-N work
    for any N), then the bundled scenarios and sweeps as sample:NAME.toml, one name a line."""
    for name in sample_names():
        typer.echo(name)
    for name in scenario_names():
        typer.echo(f"sample:{name}")


@app.command("path")
def path(
    name: str = typer.Argument(..., help="Sample name, e.g. pendulum-12 or pendulum-12.toml."),
) -> None:
    """Print the path of a sample's URDF (generated on demand for other N) or scenario."""
    typer.echo(str(_path_of(name)))


@app.command("copy")
def copy(
    name: str = typer.Argument(..., help="Sample name, e.g. pendulum-12 or panda-table.toml."),
    dest: Path = typer.Argument(..., help="Folder to copy the URDF or scenario into."),
) -> None:
    """Copy a sample's URDF (with the folder of meshes beside it, if any), or a scenario with
    every file it reads, into a folder; prints the copied URDF or scenario."""
    src = _path_of(name)
    if not dest.is_dir():
        raise MbsimError(f"{dest}: destination folder does not exist.")
    for f in sorted(files_of(src)):
        target = dest / f.relative_to(src.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.is_dir():
            shutil.copytree(f, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(f, target)
    typer.echo(str(dest / src.name))


def files_of(src: Path) -> set[Path]:
    """The files (and asset folders) a bundled URDF or scenario needs, all inside the bundled
    folder: a URDF and the folder named like it (imported robots keep their meshes and SRDF
    there, referenced by relative paths); a scenario and every URDF and SRDF it reads (with
    their folders); a sweep and its base scenario's files. ``sample:`` references need no
    copy."""
    import tomllib

    from mbsim.io.scenario import load_scenario

    src = src.resolve()
    if src.suffix != ".toml":
        assets = src.parent / src.stem
        return {src, *([assets] if assets.is_dir() else [])}
    raw = tomllib.loads(src.read_text())
    if "scenario" in raw and "robot" not in raw:  # a sweep file
        base = str(raw["scenario"])
        inner = set() if base.startswith("sample:") else files_of(src.parent / base)
        return {src, *inner}
    files = {src}
    for f in load_scenario(src).input_files():
        f = Path(f).resolve()
        if f.is_relative_to(src.parent) and f != src:
            files |= files_of(f) if f.suffix == ".urdf" else {f}
    return files
