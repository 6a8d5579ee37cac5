"""The ``mbsim`` command: a Typer app that parses, calls the library and prints.

Exit codes (README): 0 success, 1 the simulation failed or was interrupted, 2 bad input or usage,
130 Ctrl-C before a run started (imports, loading). A user error
(:class:`~mbsim.errors.MbsimError`) is printed as one line on stderr; a traceback appears only
with ``--debug``.

Start-up: ``mbsim --help`` must answer in well under a second, so the command modules (which
pull in numpy, numba, scipy, trimesh, h5py) are imported only when their command runs or its
own ``--help`` is asked for. :data:`COMMANDS` names each one as ``"module:attribute"``; add a
command with one line there.
"""

from __future__ import annotations

import signal
import sys

# First, before any heavy import: the SIGINT handler that defers a Ctrl-C away from imports,
# numba compiles and HDF5 calls (see cli/sigint.py for why it must).
from mbsim.cli import sigint

sigint.install()

import importlib  # noqa: E402

import typer  # noqa: E402
import typer.core  # noqa: E402

from mbsim import __version__  # noqa: E402
from mbsim.errors import MbsimError  # noqa: E402

# the click Typer builds on: vendored as typer._click since Typer 0.29, plain click before
_click = getattr(typer.core, "_click", None) or typer.core.click
Command = _click.Command
_Stub = typer.core.TyperCommand

#: name -> ("module:attribute", one-line help). The attribute is a command function or a
#: ``typer.Typer`` sub-app. Imported only when the command is used.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("mbsim.cli.run:run", "Simulate a URDF or a TOML scenario; write results to HDF5."),
    "batch": (
        "mbsim.cli.batch:batch",
        "Run a parameter sweep (TOML) on local cores or a Dask cluster.",
    ),
    "info": (
        "mbsim.cli.info:info",
        "Describe a robot: bodies, joints, DoFs, masses, collision shapes.",
    ),
    "inspect": (
        "mbsim.cli.inspect:inspect",
        "Summarise a results file; --events lists its events.",
    ),
    "export": ("mbsim.cli.export:export", "Export a results table to CSV or NPZ."),
    "plot": (
        "mbsim.cli.plot:plot",
        "Plot joints, body heights/speeds, energy and events (matplotlib).",
    ),
    "view": (
        "mbsim.cli.view:view",
        "Replay a results file in 3D: an HTML page or an animated glTF.",
    ),
    "samples": ("mbsim.cli.samples:app", "List, locate or copy the bundled samples."),
    "bench": ("mbsim.cli.bench:app", "Run the papers' benchmarks (e.g. pendulum)."),
}


#: re-exported for the commands (run, batch): raise a Ctrl-C remembered while deferred
check_interrupt = sigint.check_interrupt
deferred_interrupt = sigint.deferred


#: Commands that compile numba kernels in this process on a cold cache (batch compiles in its
#: workers, which print nothing).
_COMPILES = ("run", "bench")
COMPILE_NOTICE = "mbsim: compiling kernels, first run only (a minute or two; cached afterwards)"


def announce_compiling(stream=None) -> None:
    """Print :data:`COMPILE_NOTICE` once, when numba first compiles a kernel in this process.

    numba fires ``numba:compile`` only on a cache miss (a kernel loaded from its cache index
    fires nothing), so a warm cache prints nothing; nor does a kernel that a helper process
    compiles ahead (simcore/warmup.py), so the notice is also shown when the run first waits
    for the helper. The notice goes to an interactive stderr
    only, and not under ``--quiet`` or ``--json``: piped output stays one line per error.
    """
    from numba.core import event

    from mbsim.simcore import warmup

    shown = []

    def show() -> None:
        out = stream or sys.stderr
        if shown or not out.isatty():
            return
        shown.append(True)
        out.write(COMPILE_NOTICE + "\n")
        out.flush()

    class _Notice(event.Listener):
        def on_start(self, ev) -> None:
            show()

        def on_end(self, ev) -> None:
            pass

    event.register("numba:compile", _Notice())
    # kernels a helper process compiles meanwhile (simcore/warmup.py) fire no event here
    warmup.on_wait(show)


def _load(name: str) -> Command:
    target, help_text = COMMANDS[name]
    module_name, _, attr = target.partition(":")
    # a Ctrl-C during the imports is raised once they are done (sigint.deferred)
    with sigint.deferred():
        # not for --help: registering the listeners imports numba (~1 s)
        if name in _COMPILES and "--help" not in sys.argv[2:]:
            sigint.defer_during_compiles()
            if not {"--quiet", "-q", "--json"} & set(sys.argv[2:]):
                announce_compiling()
        obj = getattr(importlib.import_module(module_name), attr)
    if isinstance(obj, typer.Typer):
        cmd = typer.main.get_group(obj)
        cmd.help = help_text
    else:
        single = typer.Typer(add_completion=False)
        single.command(name, help=help_text)(obj)
        cmd = typer.main.get_command(single)
    cmd.name = name
    return cmd


class _LazyGroup(typer.core.TyperGroup):
    """A Typer group whose subcommands are imported on first use.

    Listing the commands (the root ``--help``) uses the one-line help of :data:`COMMANDS` and
    imports nothing.
    """

    _listing = False

    def list_commands(self, ctx) -> list[str]:
        return [*COMMANDS, *(n for n in self.commands if n not in COMMANDS)]

    def get_command(self, ctx, cmd_name: str) -> Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in COMMANDS:
            return None
        if self._listing:
            help_text = COMMANDS[cmd_name][1]
            return _Stub(cmd_name, help=help_text, short_help=help_text)
        cmd = _load(cmd_name)
        self.commands[cmd_name] = cmd
        return cmd

    def format_help(self, ctx, formatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except _click.exceptions.UsageError as exc:
            if args and args[0] not in COMMANDS and "Did you mean" not in exc.message:
                import difflib

                close = difflib.get_close_matches(args[0], list(COMMANDS))
                if close:
                    exc.message = (
                        exc.message.rstrip(".")
                        + ". Did you mean "
                        + (", ".join(repr(c) for c in close) + "?")
                    )
            raise


app = typer.Typer(
    name="mbsim",
    cls=_LazyGroup,
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


def main() -> None:
    """Console-script entry point: run the app, turning user errors into one line and exit 2.

    Usage errors are Typer's own (exit 2 with its message); Ctrl-C ends with exit 130 and the
    line ``mbsim: interrupted``; everything else that is not an MbsimError is a bug and keeps
    its traceback.
    """
    sigint.install()
    try:
        try:
            sigint.state["armed"] = True
            check_interrupt()  # a Ctrl-C during this module's imports
            app()
        finally:
            sigint.state["armed"] = False
            # a Ctrl-C swallowed by a library during the command is still an interrupt
            check_interrupt()
    except MbsimError as exc:
        if _state["debug"]:
            raise
        typer.echo(f"mbsim: error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        _interrupted()


def _interrupted() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the exit
    sigint.state["seen"] = False  # handled (an in-process caller may call main() again)
    try:
        sys.stderr.write(sigint.INTERRUPTED + "\n")
        sys.stderr.flush()
    finally:
        sys.exit(130)


if __name__ == "__main__":
    main()
