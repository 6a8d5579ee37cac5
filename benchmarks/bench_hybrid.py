"""Reproduce Figs. 5 and 6 of Bhalerao, Crean and Anderson (001 Sec. 3.4): O(n) against O(n^3).

The system is 001's planar chain (``chain_urdf(n)``: n bodies of mass 1 kg and length 1 m,
free in the x-z plane through two massless sliders and a hinge, released at rest, horizontal,
at height 1 m), simulated for 2 s at dt = 1 ms (2000 steps) in three cases:

* ``none``: no contact (``contact_points=""``, no floor) -- Fig. 5;
* ``P``: one contact, point P (left end of body 1, the root) against the floor -- Fig. 6;
* ``PQ``: two contacts, P and Q (right end of body n) against the floor -- Fig. 6.

Contacts are inelastic (restitution 0) with mbsim's default friction mu = 0.5 (4 friction
directions); margin 1 mm; self-collision off (the only shapes are the 1 cm spheres at P and Q).
Each case runs with both forward-dynamics paths of the stepper (OS formulation, Lemke):

* ``aba``: ``dynamics="aba", delassus="upsilon"`` -- O(n) articulated-body forward dynamics, the
  O(n) impulse response M^-1 J^T f and the O(n) + O(nc^2) Upsilon compliance (mbsim's default);
* ``crba``: ``dynamics="crba", delassus="dense"`` -- the traditional O(n^3) path: RNEA bias,
  CRBA mass matrix, Cholesky, the dense node Jacobian for M^-1 J^T f and Lambda = J M^-1 J^T.

The time of a run is the thread CPU time (``time.thread_time``) of the ``Simulator.step`` loop,
model and collision-scene construction excluded, the minimum over ``--repeats`` runs
interleaved over sizes: other tenants of the shared machine only ever add time, and spread the
repeats by up to 2x, so the minimum is the least disturbed run (the spread is printed).
OpenBLAS is pinned to one thread (set before numpy loads), so the dense path's LAPACK work
runs in the timed thread. CPU time rather than wall time, because the machine is shared.
Slopes are least squares in log-log over n >= ``--fit-from``.

The script also checks that both paths end in the same state, times one forward-dynamics
call of each path per size (the per-body cost behind the DCA question of 001 Sec. 3.3) and
writes the log-log figure.

Usage: python benchmarks/bench_hybrid.py [--quick] [--sizes 1 2 4 ... 256] [--repeats 3]
       [--png docs/fig5-6-chain.png]
"""

from __future__ import annotations

import os

# One BLAS thread: thread CPU time then counts all of the dense path's LAPACK work.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from mbsim.io.scenario import scenario_from_urdf  # noqa: E402
from mbsim.samples.generators import chain_urdf  # noqa: E402
from mbsim.simcore.data import Data  # noqa: E402
from mbsim.simcore.forward import make_dynamics  # noqa: E402
from mbsim.simulator import Simulator  # noqa: E402
from scratch import scratch_dir  # noqa: E402

#: case -> (contact points on the chain, built-in floor)
CASES = {"none": ("", False), "P": ("P", True), "PQ": ("PQ", True)}
#: path -> stepper options; labels say exactly what each curve uses
PATHS = {
    "aba": {"dynamics": "aba", "delassus": "upsilon"},
    "crba": {"dynamics": "crba", "delassus": "dense"},
}
LABELS = {
    "aba": 'O(n): dynamics="aba", delassus="upsilon"',
    "crba": 'O(n^3): dynamics="crba", delassus="dense"',
}
CASE_LABELS = {"none": "no contact", "P": "contact at P", "PQ": "contacts at P and Q"}

_TMP = scratch_dir("bench_hybrid_")


def chain_file(n: int, points: str) -> Path:
    """The chain URDF with the given contact points, written once into a temporary folder."""
    path = _TMP / f"chain{points or '0'}-{n}.urdf"
    if not path.exists():
        path.write_text(chain_urdf(n, contact_points=points))
    return path


def make_sim(n: int, case: str, path: str, duration: float, dt: float) -> Simulator:
    points, floor = CASES[case]
    sc = scenario_from_urdf(
        chain_file(n, points),
        name="chain",
        floor=floor,
        self_collision=False,
        restitution=0.0,
        dt=dt,
        duration=duration,
        output=str(_TMP / "unused.h5"),
        **PATHS[path],
    )
    return Simulator(sc)


def run_once(n: int, case: str, path: str, duration: float, dt: float) -> dict:
    """One timed run: thread CPU and wall seconds of the step loop, steps with contact, the
    LCP sizes met and the final state."""
    sim = make_sim(n, case, path, duration, dt)
    steps = sim.scenario.simulation.n_steps
    contact_steps = 0
    sizes = set()
    t_cpu, t_wall = time.thread_time(), time.perf_counter()
    for _ in range(steps):
        rep = sim.step()
        if rep.n_contacts:
            contact_steps += 1
            sizes.add(rep.lcp_size)
    cpu = time.thread_time() - t_cpu
    wall = time.perf_counter() - t_wall
    return {
        "cpu": cpu,
        "wall": wall,
        "steps": steps,
        "contact_steps": contact_steps,
        "lcp_sizes": sorted(sizes),
        "q": sim.q.copy(),
        "v": sim.v.copy(),
    }


def warm_up(dt: float) -> None:
    """Load the numba caches and scipy's LAPACK wrappers on every code path (contact
    included: the chain lands at t = 0.45 s) before anything is timed."""
    for case in CASES:
        for path in PATHS:
            run_once(2, case, path, 0.5, dt)


def kernel_costs(sizes, repeats: int = 7, number: int = 50) -> dict:
    """Median microseconds (thread CPU) of one forward-dynamics call qdd = M^-1 (tau - C) of
    each path on the free chain at a random state: ABA (O(n)) and RNEA + CRBA + Cholesky."""
    rng = np.random.default_rng(0)
    out = {}
    for n in sizes:
        sim = make_sim(n, "none", "aba", 0.01, 1e-3)
        m = sim.model
        q = rng.uniform(-1.0, 1.0, m.nq)
        v = rng.uniform(-1.0, 1.0, m.nv)
        tau = np.zeros(m.nv)
        row = {}
        for path in PATHS:
            dyn = make_dynamics(PATHS[path]["dynamics"], m)
            d = Data(m)
            dyn.accel(d, q, v, tau)
            times = []
            for _ in range(repeats):
                t0 = time.thread_time()
                for _ in range(number):
                    dyn.accel(d, q, v, tau)
                times.append((time.thread_time() - t0) / number * 1e6)
            row[path] = statistics.median(times)
        out[n] = row
    return out


def slope(ns, ts, fit_from: int) -> float:
    """Least-squares slope of log t against log n over n >= fit_from."""
    pts = [(n, t) for n, t in zip(ns, ts, strict=True) if n >= fit_from]
    if len(pts) < 2:
        return float("nan")
    x = np.log([p[0] for p in pts])
    y = np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def plot(png: str, sizes, best: dict, duration: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6))
    colors = {"aba": "tab:blue", "crba": "tab:red"}
    styles = {"none": ("o", "-"), "P": ("s", "--"), "PQ": ("^", ":")}
    for path in PATHS:
        for case in CASES:
            mk, ls = styles[case]
            ts = [best[(n, case, path)] for n in sizes]
            ax.loglog(
                sizes, ts, marker=mk, ls=ls, color=colors[path],
                label=f"{LABELS[path]}, {CASE_LABELS[case]}",
            )  # fmt: skip
    # reference slopes 1 and 3 through the last point of the two-contact case, over the
    # last three sizes
    n_hi = np.array([sizes[max(0, len(sizes) - 3)], sizes[-1]], dtype=float)
    for path, k in (("aba", 1), ("crba", 3)):
        t_end = best[(sizes[-1], "PQ", path)]
        ax.loglog(n_hi, t_end * (n_hi / n_hi[-1]) ** k, color="0.5", lw=0.8)
        ax.annotate(f"slope {k}", (n_hi[0], t_end * (n_hi[0] / n_hi[-1]) ** k), color="0.4")
    ax.set_xlabel("number of bodies n")
    ax.set_ylabel(f"thread CPU time per {duration:g} s run (s)")
    ax.set_title("Planar chain, dt = 1 ms (cf. 001 Figs. 5 and 6); shared 2-core machine")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"\nfigure: {png}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=None)
    ap.add_argument("--duration", type=float, default=None, help="simulated seconds (2)")
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--fit-from", type=int, default=16)
    ap.add_argument("--check-n", type=int, default=8, help="size whose final states are shown")
    ap.add_argument("--png", default="")
    ap.add_argument("--quick", action="store_true", help="n <= 32, 0.6 s runs")
    args = ap.parse_args(argv)
    sizes = args.sizes or (
        [1, 2, 4, 8, 16, 32] if args.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256]
    )
    duration = args.duration or (0.6 if args.quick else 2.0)
    repeats = args.repeats or 3

    print(
        f"# {time.strftime('%Y-%m-%d')} on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs (shared), Python {platform.python_version()}, numpy "
        f"{np.__version__}; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    )
    print(f"# chain n = {sizes}, {duration:g} s at dt = {args.dt:g} s, minimum of {repeats}")
    warm_up(args.dt)

    runs: dict = {}
    for _ in range(repeats):
        for n in sizes:
            for case in CASES:
                for path in PATHS:
                    r = run_once(n, case, path, duration, args.dt)
                    runs.setdefault((n, case, path), []).append(r)
            print(f"  rep done for n = {n}", file=sys.stderr, flush=True)
    best = {k: min(r["cpu"] for r in rs) for k, rs in runs.items()}
    spread = sorted(max(r["cpu"] for r in rs) / min(r["cpu"] for r in rs) for rs in runs.values())

    print(f"\nThread CPU seconds per {duration:g} s run ({round(duration / args.dt)} steps):\n")
    head = " | ".join(f"{c} {p}" for c in CASES for p in PATHS)
    print(f"| n | {head} | crba/aba (PQ) | contact steps (PQ) | LCP sizes (PQ) |")
    print("|---" * (2 * len(CASES) + 4) + "|")
    for n in sizes:
        cells = " | ".join(f"{best[(n, c, p)]:.3f}" for c in CASES for p in PATHS)
        r0 = runs[(n, "PQ", "aba")][0]
        ratio = best[(n, "PQ", "crba")] / best[(n, "PQ", "aba")]
        sz = ", ".join(map(str, r0["lcp_sizes"])) or "-"
        print(f"| {n} | {cells} | {ratio:.1f} | {r0['contact_steps']} | {sz} |")

    print(
        f"\nSpread of the {repeats} repeats (max/min CPU time of a configuration): median "
        f"{statistics.median(spread):.2f}, worst {spread[-1]:.2f}"
    )

    last3 = sizes[-3] if len(sizes) >= 3 else sizes[0]
    print(f"\nLog-log slopes (least squares over n >= {args.fit_from}, and n >= {last3}):\n")
    print(f"| case | path | slope n >= {args.fit_from} | slope n >= {last3} |")
    print("|---|---|---|---|")
    for case in CASES:
        for path in PATHS:
            ts = [best[(n, case, path)] for n in sizes]
            s1 = slope(sizes, ts, args.fit_from)
            s2 = slope(sizes, ts, last3)
            print(f"| {CASE_LABELS[case]} | {LABELS[path]} | {s1:.2f} | {s2:.2f} |")

    print("\nFinal state, aba path against crba path (max abs difference after the run):\n")
    print("| n | case | max abs dq | max abs dv |")
    print("|---|---|---|---|")
    for n in sizes:
        for case in CASES:
            a, b = runs[(n, case, "aba")][0], runs[(n, case, "crba")][0]
            dq = float(np.max(np.abs(a["q"] - b["q"])))
            dv = float(np.max(np.abs(a["v"] - b["v"])))
            mark = " (--check-n)" if n == args.check_n else ""
            print(f"| {n}{mark} | {case} | {dq:.1e} | {dv:.1e} |")

    kc = kernel_costs(sizes)
    print("\nOne forward-dynamics call qdd = M^-1 (tau - C), median us of thread CPU:\n")
    print("| n | aba (ABA) | crba (RNEA + CRBA + Cholesky) | crba/aba |")
    print("|---|---|---|---|")
    for n in sizes:
        print(f"| {n} | {kc[n]['aba']:.1f} | {kc[n]['crba']:.1f} | "
              f"{kc[n]['crba'] / kc[n]['aba']:.1f} |")  # fmt: skip
    if len(sizes) >= 2:
        # t = a + b n by linear least squares over all sizes: b is the per-body cost, a the
        # n-independent cost (Python, collision, LCP); the O(n) path only
        steps = round(duration / args.dt)
        ns = np.array(sizes, dtype=float)
        b_k, a_k = np.polyfit(ns, [kc[n]["aba"] for n in sizes], 1)
        print(
            f"\nLinear fit t = a + b n over n = {sizes[0]}..{sizes[-1]}, aba path: one ABA call "
            f"a = {a_k:.1f} us, b = {b_k:.2f} us/body"
        )
        print("\n| case | a: n-independent us per step | b: us per body per step |")
        print("|---|---|---|")
        for c in CASES:
            per_step = [best[(n, c, "aba")] / steps * 1e6 for n in sizes]
            b, a = np.polyfit(ns, per_step, 1)
            print(f"| {CASE_LABELS[c]} (mean over the {steps} steps) | {a:.0f} | {b:.2f} |")
    if args.png:
        plot(args.png, sizes, best, duration)


if __name__ == "__main__":
    main()
