"""The ``mbsim`` command: a Typer app that parses, calls the library and prints.

Exit codes (DESIGN.md): 0 success, 1 the simulation failed, 2 bad input or usage. A user error
(:class:`~mbsim.errors.MbsimError`) is printed as one line on stderr; a traceback appears only
with ``--debug``.
"""

from __future__ import annotations

import sys

import typer

from mbsim import __version__
from mbsim.cli import batch as batch_cmd
from mbsim.cli import bench as bench_cmd
from mbsim.cli import export as export_cmd
from mbsim.cli import info as info_cmd
from mbsim.cli import inspect as inspect_cmd
from mbsim.cli import plot as plot_cmd
from mbsim.cli import run as run_cmd
from mbsim.cli import samples as samples_cmd
from mbsim.cli.view import view
from mbsim.errors import MbsimError

app = typer.Typer(
    name="mbsim",
    help="Simulate URDF robots in contact (operational-space complementarity formulation).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mbsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Simulate URDF robots in contact (operational-space complementarity formulation)."""
    _state["debug"] = debug


app.command("run", help="Simulate a URDF or a TOML scenario; write results to HDF5.")(run_cmd.run)
app.command("batch", help="Run a parameter sweep (TOML) on local cores or a Dask cluster.")(
    batch_cmd.batch
)
app.command("info", help="Describe a robot: bodies, joints, DoFs, masses, collision shapes.")(
    info_cmd.info
)
app.command("inspect", help="Summarise a results file; --events lists its events.")(
    inspect_cmd.inspect
)
app.command("export", help="Export a results table to CSV or NPZ.")(export_cmd.export)
app.command("plot", help="Plot joints, body heights/speeds, energy and events (matplotlib).")(
    plot_cmd.plot
)
app.command("view", help="Replay a results file in 3D: an HTML page or an animated glTF.")(view)
app.add_typer(samples_cmd.app, name="samples", help="List, locate or copy the bundled samples.")
app.add_typer(bench_cmd.app, name="bench", help="Run the papers' benchmarks (e.g. pendulum).")


def main() -> None:
    """Console-script entry point: run the app, turning user errors into one line and exit 2.

    Usage errors are Typer's own (exit 2 with its message); everything else that is not an
    MbsimError is a bug and keeps its traceback.
    """
    try:
        app()
    except MbsimError as exc:
        if _state["debug"]:
            raise
        typer.echo(f"mbsim: error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
