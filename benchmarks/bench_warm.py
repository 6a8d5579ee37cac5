"""How often the LCP warm start (simcore/lcp/warm.py) answers a contact step without Lemke.

Runs a bundled scenario (default ``sample:panda-table.toml``) the way ``mbsim run`` does
(``Simulator.run`` with an HDF5 writer in a temporary folder, recording every 10 steps: the
compiled contact loop and step take the contact steps they are eligible for) and reports,
from the OS formulation's warm store (``WarmStart.tried`` and ``accepted``, per LCP block,
counted by the compiled paths and the Python chain alike):

* ``guessed``: LCP blocks for which the store held an active set (every contact LCP after
  the first one of the same size and rows);
* ``accepted``: blocks answered by the guess (no Lemke pivot);
* ``missed``: guessed blocks whose guess failed and that Lemke's chain solved instead;

and the thread CPU time of the run (steps per second). ``--cold`` runs with the warm start
off (``warm.ENABLED = False``) for comparison. Usage::

    PYTHONPATH=src python benchmarks/bench_warm.py [--scenario sample:panda-table.toml]
        [--duration 1.5] [--repeat 1] [--cold]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from scratch import scratch_dir  # noqa: E402


def run_once(scenario: str, duration: float | None) -> dict:
    """One run of ``scenario``: steps, CPU seconds and the warm store's counters."""
    from mbsim.io.scenario import load_scenario
    from mbsim.simulator import Simulator

    tmp = scratch_dir("warm-")
    overrides = {"output.path": str(Path(tmp) / "run.h5")}
    if duration is not None:
        overrides["simulation.duration"] = duration
    sim = Simulator(load_scenario(scenario, overrides=overrides))
    writer = sim.open_writer("bench_warm", force=True)
    c0 = time.thread_time()
    sim.run(writer, record_every=10)
    writer.finish()
    cpu = time.thread_time() - c0
    store = getattr(sim.stepper.formulation, "warm", None)
    tried = store.tried if store is not None else 0
    accepted = store.accepted if store is not None else 0
    steps = int(round(sim.t / sim.scenario.simulation.dt))
    return {"steps": steps, "cpu": cpu, "guessed": tried, "accepted": accepted}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="sample:panda-table.toml")
    ap.add_argument("--duration", type=float, default=None, help="simulated s (the file's)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs; median CPU rate")
    ap.add_argument("--cold", action="store_true", help="warm start off (warm.ENABLED)")
    args = ap.parse_args(argv)
    from mbsim.simcore.lcp import warm

    warm.ENABLED = not args.cold
    run_once(args.scenario, args.duration)  # loads or compiles the kernels off the clock
    runs = [run_once(args.scenario, args.duration) for _ in range(args.repeat)]
    r = runs[-1]
    rate = statistics.median(x["steps"] / x["cpu"] for x in runs)
    missed = r["guessed"] - r["accepted"]
    share = missed / r["guessed"] if r["guessed"] else float("nan")
    print(
        f"{args.scenario}: {r['steps']} steps, {rate:.0f} steps/s (CPU, median of "
        f"{len(runs)}); warm start {'off' if args.cold else 'on'}: {r['guessed']} blocks "
        f"guessed, {r['accepted']} accepted, {missed} missed ({100 * share:.1f} %: Lemke)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
