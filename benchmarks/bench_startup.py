"""CLI start-up: how long ``mbsim --help`` takes, and what a first run spends compiling.

Issue 15 ("First use") targets: ``mbsim --help`` answers in <= 0.5 s; a first ``mbsim run``
on a fresh install spends <= 30 s compiling numba kernels and says so on screen.

* ``--help``: the wall time of ``mbsim --help`` in a fresh process, ``--repeat`` times (the
  median and the best are reported; the best is the one least disturbed by other load). For
  reference the bare interpreter (``python -c pass``) and ``import typer`` are timed the same
  way.
* ``--cold``: ``mbsim run sample:pendulum-12.toml --duration 0.01`` with an empty
  ``NUMBA_CACHE_DIR`` (a fresh install's cold cache), then the same again warm. Reported: wall
  time and CPU time (user + sys of the child; on a shared machine the CPU time is the steadier
  figure), the number of kernels compiled and the ten that took longest (inclusive of what
  they inline and call, from numba's ``numba:compile`` events).

* ``--cold-contact``: the whole scenario (``sample:pendulum-12.toml``: the README's first
  run, whose pendulum reaches the floor at 2.25 s, so the contact kernels compile too) cold
  and then warm. The CPU time includes the helper process that compiles the contact step on
  the second core (simcore/warmup.py; ``MBSIM_COMPILE_AHEAD=0`` in the environment turns it
  off for a comparison); the compile lists are the run's own process only. Besides the
  slowest top-level compiles (inclusive), the kernels whose own compilation (their callees'
  excluded) took longest, and the kernels compiled for more than one signature.

Usage::

    python benchmarks/bench_startup.py               # --help only (a few seconds)
    python benchmarks/bench_startup.py --cold        # plus a cold-cache first run (1-2 min)
    python benchmarks/bench_startup.py --cold-contact --repeat 1   # the README's whole run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).parents[1] / "src"
MBSIM = Path(sys.executable).with_name("mbsim")
KEEP: Path | None = None  # --keep: where the cold runs' raw compile records are copied

# Runs the CLI in-process with a numba listener that records every compilation (cache misses).
_DRIVER = r"""
import json, os, sys, time
from numba.core import event

records, stack = [], []

class Rec(event.Listener):
    def on_start(self, ev):
        stack.append(time.perf_counter())
    def on_end(self, ev):
        d = ev.data["dispatcher"]
        records.append((d.py_func.__module__ + "." + d.py_func.__qualname__,
                        time.perf_counter() - stack.pop(), len(stack),
                        str(tuple(ev.data["args"]))))

event.register("numba:compile", Rec())
import mbsim.simcore.warmup as _w
_wait = _w.wait
def _timed_wait():
    t0 = time.time()
    _wait()
    WAITS.append((t0, time.time()))
WAITS = []
_w.wait = _timed_wait
T0 = time.time()
from mbsim.cli.main import main
sys.argv = ["mbsim", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
with open(OUT, "w") as fh:
    json.dump(records, fh)
with open(OUT + ".waits", "w") as fh:
    json.dump({"t0": T0, "end": time.time(), "waits": WAITS, "pid": os.getpid()}, fh)
"""

# Put on the helper's PYTHONPATH (simcore/warmup.py): each process started with
# MBSIM_BENCH_EVENTS set (the driver and its children: the compile-ahead helper) appends its
# compilations (name, seconds, depth, end time, process CPU) to a file of its own, as they
# end (the helper leaves with os._exit: no exit hook runs).
_SITE = r"""
import os
if os.environ.get("MBSIM_BENCH_EVENTS"):
    import json, time
    from numba.core import event
    _path = os.path.join(os.environ["MBSIM_BENCH_EVENTS"], "events-%d.jsonl" % os.getpid())
    _stack = []
    with open(_path, "a") as fh:
        fh.write(json.dumps(["<start>", 0.0, 0, time.time(), time.process_time()]) + "\n")
    class _Rec(event.Listener):
        def on_start(self, ev):
            _stack.append(time.perf_counter())
        def on_end(self, ev):
            d = ev.data["dispatcher"]
            row = [d.py_func.__module__ + "." + d.py_func.__qualname__,
                   time.perf_counter() - _stack.pop(), len(_stack), time.time(),
                   time.process_time()]
            with open(_path, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    event.register("numba:compile", _Rec())
"""


def _env(**extra) -> dict:
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path, **extra)


def _time(cmd: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def bench_help(repeat: int) -> dict:
    env = _env()
    rows = {}
    for label, cmd in [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -c 'import typer'", [sys.executable, "-c", "import typer"]),
        ("mbsim --help", [str(MBSIM), "--help"]),
        ("mbsim run --help", [str(MBSIM), "run", "--help"]),
    ]:
        times = [_time(cmd, env) for _ in range(repeat)]
        walls = [w for w, _ in times]
        rows[label] = {
            "median_s": statistics.median(walls),
            "best_s": min(walls),
            "cpu_best_s": min(c for _, c in times),
        }
    return rows


def _exclusive(records: list) -> dict[str, float]:
    """Seconds each kernel's own compilations took, without the kernels they compiled in
    turn (numba compiles a callee while typing its caller: records end callee first)."""
    own: dict[str, float] = {}
    child = [0.0] * (1 + max((r[2] for r in records), default=0) + 1)
    for name, sec, depth, _sig in records:
        own[name] = own.get(name, 0.0) + sec - child[depth + 1]
        child[depth + 1] = 0.0
        child[depth] += sec
    return own


def _helper_events(evdir: Path, trace: dict) -> list[dict]:
    """The compile-ahead helpers' compilations (the event files of processes that are not
    the driver: the driver's own compilations are recorded by the driver): each helper's
    start and end (s from the driver's start), process CPU and slowest own compiles."""
    out = []
    for f in sorted(evdir.glob("events-*.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        if f.name == f"events-{trace['pid']}.jsonl" or not rows or rows[0][0] != "<start>":
            continue
        start, evs = rows[0], rows[1:]
        if not evs:
            continue
        recs = [(n, sec, depth, "") for n, sec, depth, _t, _c in evs]
        own = sorted(_exclusive(recs).items(), key=lambda r: -r[1])
        out.append({
            "start_s": round(start[3] - trace["t0"], 1),
            "end_s": round(evs[-1][3] - trace["t0"], 1),
            "cpu_s": round(evs[-1][4], 1),
            "compilations": len(evs),
            "slowest_own": [(n, round(s, 2)) for n, s in own[:8]],
        })  # fmt: skip
    return out


def bench_cold(scenario: str, duration: float | None = 0.01) -> dict:
    """A run of ``scenario`` (``duration`` seconds of it, None: the whole scenario) on an
    empty numba cache, then the same again warm."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        site = tmp / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(_SITE)
        env = _env(NUMBA_CACHE_DIR=str(tmp / "numba-cache"))
        env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
        for phase in ("cold", "warm"):
            evdir = tmp / f"{phase}-events"
            evdir.mkdir()
            env["MBSIM_BENCH_EVENTS"] = str(evdir)
            rec = tmp / f"{phase}.json"
            driver = _DRIVER.replace("OUT", repr(str(rec)))
            args = ["run", scenario, "--out", str(tmp / f"{phase}.h5"), "--quiet", "--force"]
            if duration is not None:
                args += ["--duration", str(duration)]
            wall, cpu = _time([sys.executable, "-c", driver, *args], env)
            records = json.loads(rec.read_text())
            if KEEP is not None:  # the raw records, for a closer look
                KEEP.mkdir(parents=True, exist_ok=True)
                shutil.copy(rec, KEEP / rec.name)
                shutil.copytree(evdir, KEEP / evdir.name, dirs_exist_ok=True)
            trace = json.loads(Path(str(rec) + ".waits").read_text())
            helpers = _helper_events(evdir, trace)
            top = [(name, round(sec, 2)) for name, sec, depth, _ in records if depth == 0]
            top.sort(key=lambda r: -r[1])
            own = sorted(_exclusive(records).items(), key=lambda r: -r[1])
            sigs: dict[str, set] = {}
            for name, _sec, _depth, sig in records:
                sigs.setdefault(name, set()).add(sig)
            out[phase] = {
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "kernels_compiled": len(records),
                "top_level_compile_s": round(sum(s for _, s in top), 1),
                "slowest": top[:10],
                "slowest_own": [(name, round(sec, 2)) for name, sec in own[:10]],
                "multiple_signatures": {n: len(s) for n, s in sigs.items() if len(s) > 1},
                "run_s": round(trace["end"] - trace["t0"], 1),
                "waits": [(round(a - trace["t0"], 1), round(b - a, 1)) for a, b in trace["waits"]],
                "helpers": helpers,
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cold", action="store_true", help="also time a cold-cache first run")
    ap.add_argument(
        "--cold-contact",
        action="store_true",
        help="also time the whole scenario (the README's first run, contact included) cold",
    )
    ap.add_argument("--scenario", default="sample:pendulum-12.toml")
    ap.add_argument("--src", type=Path, help="time another checkout's src/ (e.g. main's)")
    ap.add_argument("--keep", type=Path, help="copy the raw compile records to this folder")
    args = ap.parse_args()
    if args.keep is not None:
        global KEEP
        KEEP = args.keep
    if args.src is not None:
        global SRC
        SRC = args.src.resolve()
    print(f"# code under test: {SRC}")
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")  # fmt: skip
    for label, row in bench_help(args.repeat).items():
        print(
            f"{label:28s} median {row['median_s']:.3f} s, best {row['best_s']:.3f} s wall; "
            f"best {row['cpu_best_s']:.3f} s CPU"
        )
    runs = []
    if args.cold:
        runs.append(("100 steps", 0.01))
    if args.cold_contact:
        runs.append(("whole scenario", None))
    for what, duration in runs:
        for phase, row in bench_cold(args.scenario, duration).items():
            print(
                f"{phase} run ({args.scenario}, {what}): {row['wall_s']} s wall, "
                f"{row['cpu_s']} s CPU, {row['kernels_compiled']} compilations, "
                f"{row['top_level_compile_s']} s in top-level compiles"
            )
            if not row["kernels_compiled"]:
                continue
            print("  slowest top-level compiles (inclusive of what they compile in turn):")
            for name, sec in row["slowest"]:
                print(f"    {sec:7.2f} s  {name}")
            print("  slowest kernels by their own compile time (callees' excluded):")
            for name, sec in row["slowest_own"]:
                print(f"    {sec:7.2f} s  {name}")
            for name, n in sorted(row["multiple_signatures"].items()):
                print(f"    compiled for {n} signatures: {name}")
            print(f"  the run (driver) {row['run_s']} s from start to end; waits for the "
                  f"helper (at s, for s): {row['waits']}")  # fmt: skip
            for h in row["helpers"]:
                print(
                    f"  helper: {h['start_s']}-{h['end_s']} s, {h['cpu_s']} s CPU, "
                    f"{h['compilations']} compilations; slowest own:"
                )
                for name, sec in h["slowest_own"]:
                    print(f"    {sec:7.2f} s  {name}")


if __name__ == "__main__":
    main()
