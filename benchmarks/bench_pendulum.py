"""Reproduce the pendulum benchmark of the OS paper (000 Sec. 8): Table 2, Fig. 6, phases.

* Table 2: the n-link pendulum (n = 3, 6, 12, 15, 24, 30) through the same scenario with OS and
  NMC/OS: wall time, steps per second, the LCP sizes met, and the NMC/OS-to-OS speed-up beside
  the paper's.
* Fig. 6: height and vertical velocity of the last link of the 12-link pendulum with OS and
  NMC/OS (PNG with matplotlib if installed), and the largest height difference for
  dt = 0.4, 0.2, 0.1 ms.
* The OS step's phase breakdown for 12 and 30 links (median microseconds per contact step).

Usage: python benchmarks/bench_pendulum.py [--links 3 6 12] [--duration 4] [--png fig6.png]
Results are recorded in docs/results.md with the machine and date.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from mbsim.bench import (
    DEFAULT_DURATION,
    PAPER_TABLE_2,
    pendulum_scenario,
    phase_breakdown,
    run_pendulum,
)
from mbsim.simulator import Simulator


def table2(links, duration):
    print(
        "| links | OS LCP sizes | NMC/OS LCP sizes | OS wall s | OS steps/s | NMC/OS wall s "
        "| speed-up | paper speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in links:
        os_ = run_pendulum(n, "os", duration)
        nmc = run_pendulum(n, "nmc-os", duration)
        sp = nmc["wall_s"] / os_["wall_s"]

        def sizes(r):
            return ", ".join(f"{k}" for k in r["lcp_sizes"]) or "-"

        paper = PAPER_TABLE_2.get(n, (None,) * 6)[5]
        print(
            f"| {n} | {sizes(os_)} | {sizes(nmc)} | {os_['wall_s']:.2f} | "
            f"{os_['steps_per_s']:.0f} | {nmc['wall_s']:.2f} | {sp:.1f} | {paper} |"
        )
        sys.stdout.flush()


def last_link_track(formulation, dt, duration):
    sim = Simulator(pendulum_scenario(12, formulation, duration, dt))
    r = 6.0 / 12
    t, z, vz = [], [], []
    for _ in range(sim.scenario.simulation.n_steps):
        sim.step()
        d = sim.stepper.data
        R, p = d.R_world[-1], d.p_world[-1]
        t.append(sim.t)
        z.append(float((p + R @ np.array([0.0, 0.0, -r]))[2]))
        w_body = d.vel[-1]
        # vertical velocity of the sphere centre: R (v + w x c)
        c = np.array([0.0, 0.0, -r])
        vz.append(float((R @ (w_body[3:] + np.cross(w_body[:3], c)))[2]))
    return np.array(t), np.array(z), np.array(vz)


def fig6(duration, png):
    print("\n| dt (ms) | max abs height difference OS vs NMC/OS (m) |")
    print("|---|---|")
    tracks = {}
    for dt in (4e-4, 2e-4, 1e-4):
        a = last_link_track("os", dt, duration)
        b = last_link_track("nmc-os", dt, duration)
        tracks[dt] = (a, b)
        print(f"| {dt * 1e3:.1f} | {np.max(np.abs(a[1] - b[1])):.3g} |")
    if png:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("(matplotlib missing: no figure)")
            return
        (ta, za, va), (tb, zb, vb) = tracks[1e-4]
        fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        ax[0].plot(ta, za, "r", label="OS")
        ax[0].plot(tb, zb, "b--", label="NMC/OS")
        ax[0].set_ylabel("height of last link (m)")
        ax[0].legend()
        ax[1].plot(ta, va, "r", tb, vb, "b--")
        ax[1].set_ylabel("vertical velocity (m/s)")
        ax[1].set_xlabel("time (s)")
        fig.suptitle("12-link pendulum, dt = 0.1 ms (cf. 000 Fig. 6)")
        fig.savefig(png, dpi=100)
        print(f"figure: {png}")


def phases(duration):
    for n in (12, 30):
        ph, samples = phase_breakdown(n, duration)
        total = sum(ph.values())
        print(f"\nOS phase breakdown, {n} links ({samples} sampled contact steps), median us:")
        print("| phase | us | share |")
        print("|---|---|---|")
        for k, v in ph.items():
            print(f"| {k} | {v:.1f} | {v / total:.0%} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, nargs="*", default=[3, 6, 12, 15, 24, 30])
    ap.add_argument("--duration", type=float, default=DEFAULT_DURATION)
    ap.add_argument("--png", default="")
    ap.add_argument("--skip", nargs="*", default=[], choices=["table2", "fig6", "phases"])
    args = ap.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d')} on {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}")  # fmt: skip
    if "table2" not in args.skip:
        table2(args.links, args.duration)
    if "fig6" not in args.skip:
        fig6(args.duration, args.png)
    if "phases" not in args.skip:
        phases(args.duration)


if __name__ == "__main__":
    main()
