"""Damaged or crafted results files given to inspect, export, plot and `run --from` (issue 17).

Each file is built here from a good one (the closed-form bouncing ball of test_results.py) by
a known damage: flipped bytes, a truncated tail, a table replaced by something of the wrong
form, a code outside its enum. Every command must answer with one sentence and exit 2 (or,
for flipped bytes that land in unused space or in a number, read the file), never a
traceback, never a native crash. The commands run in a child process, so a crash of the HDF5
library is seen as one rather than taking the test session down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from test_results import write_ball_file

DRIVER = """
import contextlib, io, json, sys, traceback
import matplotlib
matplotlib.use("Agg")
from mbsim.cli.main import main

out = []
for argv in json.loads(open(sys.argv[1]).read()):
    print(" ".join(argv), file=sys.__stderr__, flush=True)  # the last line names a crash
    err = io.StringIO()
    sys.argv = ["mbsim", *argv]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            main()
        rc = 0
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        rc, err = "traceback", io.StringIO(traceback.format_exc())
    out.append({"argv": argv, "rc": rc, "stderr": err.getvalue()})
print(json.dumps(out))
"""


def _replace(f: h5py.File, name: str, data, dtype=None) -> None:
    del f[name]
    f.create_dataset(name, data=data, dtype=dtype)


def crafted(good: Path, folder: Path) -> dict[str, Path]:
    """One file per kind of damage to the layout (docs/hdf5-format.md)."""
    edits = {
        "trajectory-is-a-dataset": lambda f: _replace(f, "trajectory", [1.0, 2.0, 3.0]),
        "scalar-time": lambda f: _replace(f, "trajectory/time", 1.0),
        "time-as-text": lambda f: _replace(
            f, "trajectory/time", ["a"] * len(f["trajectory/time"]), h5py.string_dtype()
        ),
        "q-of-the-wrong-width": lambda f: _replace(
            f, "trajectory/q", np.zeros((len(f["trajectory/time"]), 5))
        ),
        "bad-event-kind": lambda f: _replace(
            f, "events/kind", np.full(len(f["events/kind"]), 9, np.uint8)
        ),
        "bad-solver-code": lambda f: _replace(
            f, "diagnostics/solver", np.full(len(f["diagnostics/solver"]), 200, np.uint8)
        ),
        "event-body-out-of-range": lambda f: _replace(
            f, "events/body_a", np.full(len(f["events/body_a"]), 99, np.int32)
        ),
        "no-model": lambda f: f.__delitem__("model"),
        "body-names-scalar": lambda f: _replace(f, "model/body_names", "ball", h5py.string_dtype()),
        "no-scenario-text": lambda f: f.__delitem__("scenario/toml"),
        "rows-attribute-garbage": lambda f: f["trajectory"].attrs.__setitem__("rows", "many"),
        "diagnostics-is-a-dataset": lambda f: _replace(f, "diagnostics", [0]),
    }
    out = {}
    for name, edit in edits.items():
        path = folder / f"{name}.h5"
        path.write_bytes(good.read_bytes())
        with h5py.File(path, "r+") as f:
            edit(f)
        out[name] = path
    return out


def flipped(good: Path, folder: Path, n: int = 24) -> dict[str, Path]:
    """Copies of ``good`` with 64 bytes inverted at spread offsets, and a truncated one."""
    data = good.read_bytes()
    rng = np.random.default_rng(17)
    out = {}
    for k, offset in enumerate(sorted(rng.integers(0, len(data) - 64, n))):
        b = bytearray(data)
        b[offset : offset + 64] = bytes(x ^ 0xFF for x in b[offset : offset + 64])
        path = folder / f"flip-{k:02d}-at-{offset}.h5"
        path.write_bytes(bytes(b))
        out[path.stem] = path
    path = folder / "truncated.h5"
    path.write_bytes(data[: len(data) // 2])
    out["truncated"] = path
    return out


def commands(path: Path, folder: Path, plot: bool) -> list[list[str]]:
    stem = folder / f"{path.stem}-out"
    out = [
        ["inspect", str(path)],
        ["inspect", str(path), "--events", "--json"],
        ["export", str(path), "--format", "csv", "-o", f"{stem}.csv", "--force"],
        ["run", "--from", str(path), "--out", f"{stem}.h5"],
    ]
    if plot:
        out.append(["plot", str(path), "--energy", "--events", "-o", f"{stem}.png", "--force"])
    return out


def drive(tmp_path: Path, argvs: list[list[str]]) -> list[dict]:
    (tmp_path / "cases.json").write_text(json.dumps(argvs))
    (tmp_path / "driver.py").write_text(DRIVER)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "cases.json")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    last = done.stderr.strip().splitlines()[-1:] or [""]
    assert done.returncode == 0, f"the commands crashed (exit {done.returncode}) at: {last[0]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_one_sentence(case: dict) -> None:
    assert case["rc"] == 2, case
    lines = case["stderr"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mbsim: error: "), case
    assert "Traceback" not in case["stderr"], case


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("good") / "ball.h5"
    write_ball_file(path, 1500)
    return path


def test_crafted_files_get_one_sentence_and_exit_2(good: Path, tmp_path: Path):
    files = crafted(good, tmp_path)
    argvs = [argv for p in files.values() for argv in commands(p, tmp_path, plot=True)]
    for case in drive(tmp_path, argvs):
        assert_one_sentence(case)
        assert "damaged" in case["stderr"] or "not an mbsim" in case["stderr"], case


def test_flipped_and_truncated_files_never_give_a_traceback(good: Path, tmp_path: Path):
    files = flipped(good, tmp_path)
    argvs = [
        argv for i, p in enumerate(files.values()) for argv in commands(p, tmp_path, i % 4 == 0)
    ]
    refused = 0
    for case in drive(tmp_path, argvs):
        assert case["rc"] != "traceback", case["stderr"]
        if case["argv"][0] == "run":
            assert case["rc"] == 2, case  # ball.urdf does not exist: never a run
        if case["rc"] != 0:
            assert_one_sentence(case)
            refused += 1
    assert refused > 0  # the truncated file at least is refused
