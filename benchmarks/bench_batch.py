"""Throughput of `mbsim batch`: the 16-run sweep of the 6-link pendulum (1 s each, dt = 1e-4 s,
`sample:sweep-pendulum-6.toml`) with --jobs 1, --jobs 2 and on a 2-worker Dask LocalCluster.

Each measurement starts from an empty output folder and is timed from the call of
`mbsim.batch.run_sweep` to its return: planning, worker start-up (a spawned process imports
mbsim and loads the cached numba kernels), the runs and the summary; a LocalCluster is started
before the clock starts and closed after it stops. Reported per mode, for the fastest of
`--repeat` rounds (the modes alternate within a round, so a change in the load of a shared
machine hits every mode alike):

* runs per minute = 16 / wall time * 60;
* parallel efficiency = (runs per minute) / (workers * runs per minute with --jobs 1);
* mean wall and CPU time of one run in its worker (s): CPU below wall means the run waited
  for a core; CPU growing with the number of workers means they slow each other down;
* the 1-minute load average when the measurement ended (2 cores: above 2 means other
  processes were competing for them).

A one-run warm-up sweep first makes sure the numba cache is compiled, so no mode pays for
compilation. Usage:

    python benchmarks/bench_batch.py [--duration 1.0] [--repeat 2] [--modes jobs1 jobs2 dask2]

Results are recorded in docs/results.md with the machine and date.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mbsim.batch import DaskBackend, LocalBackend, load_sweep, run_sweep

SWEEP = "sample:sweep-pendulum-6.toml"


def timed(sweep, factory) -> dict:
    t0 = time.perf_counter()
    result = run_sweep(sweep, factory)
    wall = time.perf_counter() - t0
    counts = result.counts
    if counts["complete"] != len(result.rows):
        raise SystemExit(f"the sweep did not complete: {counts}")
    n = len(result.rows)
    return {
        "wall_s": wall,
        "runs": n,
        "mean_run_wall_s": sum(r["wall_s"] for r in result.rows) / n,
        "mean_run_cpu_s": sum(r["cpu_s"] for r in result.rows) / n,
        "load": os.getloadavg()[0],
    }


def measure(mode: str, sweep) -> dict:
    n = int(mode[4:])
    if mode.startswith("jobs"):
        return timed(sweep, lambda: LocalBackend(n))
    if mode.startswith("dask"):
        from distributed import LocalCluster

        with LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            return timed(sweep, lambda: DaskBackend(cluster.scheduler_address))
    raise SystemExit(f"unknown mode {mode!r} (jobsN or daskN)")


def label(mode: str) -> str:
    n = int(mode[4:])
    return f"--jobs {n}" if mode.startswith("jobs") else f"Dask LocalCluster, {n} workers"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=1.0, help="simulated s per run")
    ap.add_argument("--repeat", type=int, default=2, help="rounds; the fastest counts")
    ap.add_argument("--modes", nargs="+", default=["jobs1", "jobs2", "dask2"])
    ap.add_argument("--keep", action="store_true", help="keep the results (~400 MB a round)")
    args = ap.parse_args()

    base = load_sweep(SWEEP)
    sweep = dataclasses.replace(base, fixed={**base.fixed, "simulation.duration": args.duration})
    root = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        best = run_all(args, sweep, root)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    report(args, sweep, best)


def run_all(args, sweep, root: Path) -> dict[str, dict]:
    # warm-up: the last run of the sweep (the fastest swing: floor, wall and self contacts,
    # so every kernel is used), so that no mode below pays for a numba compilation
    warm = dataclasses.replace(
        sweep,
        out_dir=root / "warm",
        axes=tuple(dataclasses.replace(a, points=a.points[-1:]) for a in sweep.axes),
    )
    timed(warm, lambda: LocalBackend(1))

    best: dict[str, dict] = {}
    for k in range(args.repeat):
        for mode in args.modes:
            r = measure(mode, dataclasses.replace(sweep, out_dir=root / f"{mode}-{k}"))
            print(f"round {k} {mode}: {r}", file=sys.stderr, flush=True)
            if mode not in best or r["wall_s"] < best[mode]["wall_s"]:
                best[mode] = r
    return best


def report(args, sweep, best: dict[str, dict]) -> None:
    serial = best.get("jobs1")
    serial_rate = serial["runs"] / serial["wall_s"] if serial else None
    print(
        f"\n{sweep.n_runs} runs of {args.duration:g} s each, best of {args.repeat}; "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    )
    print(
        "\n| mode | workers | wall s | runs/min | parallel efficiency | mean run wall s "
        "| mean run CPU s | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for mode in args.modes:
        r, n = best[mode], int(mode[4:])
        rate = r["runs"] / r["wall_s"]
        eff = f"{rate / (n * serial_rate):.2f}" if serial_rate else "-"
        print(
            f"| {label(mode)} | {n} | {r['wall_s']:.1f} | {60 * rate:.1f} | {eff} | "
            f"{r['mean_run_wall_s']:.2f} | {r['mean_run_cpu_s']:.2f} | {r['load']:.1f} |"
        )


if __name__ == "__main__":
    main()
