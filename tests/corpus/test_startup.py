"""CLI start-up: ``mbsim --help`` imports no command module (so it answers fast; the time is
measured by benchmarks/bench_startup.py), every lazily registered command still loads, and
numba's first compilation is announced once on an interactive stderr.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mbsim.cli import main as cli_main

SRC = Path(__file__).parents[2] / "src"
HEAVY = ("numpy", "numba", "scipy", "h5py", "trimesh", "mbsim.cli.run", "mbsim.simulator")


def _python(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_help_imports_no_heavy_module():
    code = (
        "import sys, json, contextlib, io\n"
        "sys.argv = ['mbsim', '--help']\n"
        "from mbsim.cli.main import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
        "print(json.dumps(buf.getvalue()))\n"
    )
    loaded, text = (json.loads(x) for x in _python(code).strip().splitlines()[-2:])
    assert loaded == []
    for name in cli_main.COMMANDS:  # every command is listed with its one-line help
        assert name in text


@pytest.mark.parametrize("name", list(cli_main.COMMANDS))
def test_every_registered_command_loads_with_its_options(name):
    from typer.testing import CliRunner

    result = CliRunner().invoke(cli_main.app, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and "--help" in result.output


def test_unknown_command_is_a_usage_error_with_a_suggestion():
    from typer.testing import CliRunner

    result = CliRunner().invoke(cli_main.app, ["rn"])
    assert result.exit_code == 2 and "'run'" in result.output


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_first_compilation_is_announced_once():
    from numba import njit

    tty = _Tty()
    cli_main.announce_compiling(tty)

    @njit  # a fresh function: never in any cache, so numba compiles it here
    def twice(x):
        return 2 * x

    assert twice(3) == 6 and twice(1.5) == 3.0  # two compilations, one notice
    assert tty.getvalue() == cli_main.COMPILE_NOTICE + "\n"


def test_no_notice_when_stderr_is_not_a_terminal():
    from numba import njit

    piped = io.StringIO()
    cli_main.announce_compiling(piped)

    @njit
    def thrice(x):
        return 3 * x

    assert thrice(2) == 6 and piped.getvalue() == ""
