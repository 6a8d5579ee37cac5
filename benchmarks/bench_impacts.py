"""Energy of impacts with and without ``energy_consistent_impacts`` (000 Sec. 7, Kane's paradox).

The n-link pendulum of 000 Sec. 8 (dt 0.1 ms, mu 0.5, restitution 0.7, self-collision on, floor
and a wall 4 m away, joint_1 at pi/4 with 1 rad/s, gravity 9.8) is run twice through
``Simulator.run``:

* ``off``: mbsim's default, the decompression of 000 Eqs. 56-58 as written: the recovered
  impulse theta = eps (n . p_c) n is applied, then an LCP keeps every contact non-penetrating.
  With friction and several simultaneous contacts this Poisson-type restitution can *gain*
  kinetic energy (Kane's paradox);
* ``on``: ``StepOptions.energy_consistent_impacts = True``: theta is halved (up to 30 times)
  until the kinetic energy after the impact does not exceed the energy before it.

Scenarios: the bundled ``sample_robots/pendulum-12.toml`` (the paper's 12 links) run for
``--duration`` s (default 4: the scenario's 3 s, plus 1 s because mbsim's pendulum first touches
the wall at t = 3.05 s), and, because no impact of the 12-link run gains energy,
``mbsim.bench.pendulum_scenario(n)`` (the same settings) for n = 24 and 30, 3 s each, where one
does.

The scenario has no key for the option, so it is set on ``sim.options`` after the Simulator is
built (the stepper keeps the same object as ``opt``; the script checks that it took effect).
Every step's report is captured by wrapping ``sim.step``: the impacts (``Impact.energy_before``
and ``energy_after`` are the kinetic energies, J, just before and after the collision phase; an
impulse leaves the potential energy unchanged), the first contact with the floor, the wall and
between links, and the total energy every ``--energy-every`` steps. ``RunSummary.energy_gains``
and ``events`` are reported beside the script's own counts. Wall times are from a shared
2-core machine and are only indicative.

Usage: python benchmarks/bench_impacts.py [--quick] [--duration 4]
       [--png docs/fig-impacts-energy.png]
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import Counter

import numpy as np

from mbsim.bench import pendulum_scenario
from mbsim.io.scenario import load_scenario
from mbsim.names import split_link_ref
from mbsim.samples.catalog import bundled_dir
from mbsim.simulator import Simulator

MODES = {"off": False, "on": True}


def scenario(links: int, duration: float):
    """pendulum-12.toml as bundled (with the duration given), or the same set-up for n links."""
    if links == 12:
        flags = {"output": "/dev/null", "duration": duration}
        return load_scenario(bundled_dir() / "pendulum-12.toml", flags=flags)
    return pendulum_scenario(links, "os", duration)


def run(links: int, duration: float, mode: bool, every: int) -> dict:
    sim = Simulator(scenario(links, duration))
    sim.stepper.configure(energy_consistent_impacts=mode)
    if sim.stepper.opt.energy_consistent_impacts is not mode:
        raise RuntimeError("energy_consistent_impacts did not reach the stepper")
    links_of = sim.scene.links
    rec = {
        "t": [0.0], "E": [float(sim.energy()[2])], "impacts": [], "first": {},
        "impact_steps": 0, "kinds": Counter(), "E3": None,
    }  # fmt: skip
    step = sim.step
    k3 = round(3.0 / sim.options.dt)

    def kind_of(c, i):
        # static contacts labelled by link ("floor", "wall"), whatever tree holds it
        return "self" if c.body_b[i] >= 0 else split_link_ref(links_of[c.geom_b[i]])[1]

    def recording_step():
        rep = step()
        c = rep.contacts
        for i in range(rep.n_contacts):
            rec["first"].setdefault(kind_of(c, i), sim.t)
        if rep.impacts:
            rec["impact_steps"] += 1
            for imp in rep.impacts:
                kind = kind_of(c, imp.index)
                rec["kinds"][kind] += 1
                rec["impacts"].append((sim.t, imp.energy_before, imp.energy_after, kind))
        if sim.step_index % every == 0 or sim.step_index == k3:
            e = float(sim.energy()[2])
            if sim.step_index % every == 0:
                rec["t"].append(sim.t)
                rec["E"].append(e)
            if sim.step_index == k3:
                rec["E3"] = e
        return rep

    sim.step = recording_step
    rec["summary"] = sim.run(None)
    rec["E_end"] = float(sim.energy()[2])
    rec["t"] = np.array(rec["t"])
    rec["E"] = np.array(rec["E"])
    return rec


def _t(x) -> str:
    return "-" if x is None else f"{x:.4f}"


def report(links: int, duration: float, res: dict) -> None:
    print(f"\n### {links}-link pendulum, {duration:g} s at dt = 0.1 ms\n")
    rows = [
        "impacts (contacts in a collision phase)",
        "steps with a collision phase",
        "impacts by surface",
        "impacts that gained kinetic energy (script / RunSummary.energy_gains)",
        "largest gain in one impact (J)",
        "largest relative gain (gain / KE before)",
        "sum of the gains (J)",
        "total energy at t = 0 (J)",
        "total energy at t = 3 s (J)",
        f"total energy at the end, t = {duration:g} s (J)",
        "first floor contact (s)",
        "first wall contact (s)",
        "first link-link contact (s)",
        "events (RunSummary)",
        "max penetration (m)",
        "wall time (s, shared machine)",
    ]
    cols = {}
    for name, r in res.items():
        imps = r["impacts"]
        gains = [(a - b, (a - b) / b if b > 0 else np.inf) for _, b, a, _ in imps if a > b]
        s = r["summary"]
        cols[name] = [
            f"{len(imps)}",
            f"{r['impact_steps']}",
            ", ".join(f"{k} {v}" for k, v in sorted(r["kinds"].items())) or "-",
            f"{len(gains)} / {s.energy_gains}",
            f"{max((g for g, _ in gains), default=0.0):.3g}",
            f"{max((g for _, g in gains), default=0.0):.3g}",
            f"{sum(g for g, _ in gains):.3g}",
            f"{r['E'][0]:.4f}",
            "-" if r["E3"] is None else f"{r['E3']:.4f}",
            f"{r['E_end']:.4f}",
            _t(r["first"].get("floor")),
            _t(r["first"].get("wall")),
            _t(r["first"].get("self")),
            ", ".join(f"{k} {v}" for k, v in sorted(s.events.items())),
            f"{s.max_penetration:.2e}",
            f"{s.wall_seconds:.1f}",
        ]
    names = list(res)
    print("| quantity | " + " | ".join(f"energy_consistent_impacts {n}" for n in names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for i, row in enumerate(rows):
        print(f"| {row} | " + " | ".join(cols[n][i] for n in names) + " |")
    for name, r in res.items():
        gained = [x for x in r["impacts"] if x[2] > x[1]]
        if gained:
            print(f"\nimpacts that gained energy with {name}: " + "; ".join(
                f"t = {t:.4f} s, {k}: KE {b:.4g} -> {a:.4g} J" for t, b, a, k in gained
            ))  # fmt: skip
        same = [x for x in res["on"]["impacts"] if any(abs(x[0] - g[0]) < 1e-9 for g in gained)]
        if gained and name == "off" and same:
            print("the same impacts with on: " + "; ".join(
                f"t = {t:.4f} s, {k}: KE {b:.4g} -> {a:.4g} J" for t, b, a, k in same
            ))  # fmt: skip


def plot(all_res: dict, png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(all_res), 1, figsize=(9, 3.2 * len(all_res) + 0.6))
    axes = np.atleast_1d(axes)
    colors = {"off": "tab:red", "on": "tab:blue"}
    for ax, ((links, duration), res) in zip(axes, all_res.items(), strict=True):
        for name, r in res.items():
            ax.plot(r["t"], r["E"], color=colors[name], lw=1.0, ls="-" if name == "off" else "--",
                    label=f"energy_consistent_impacts = {MODES[name]}")  # fmt: skip
            gain_t = [t for t, b, a, _ in r["impacts"] if a > b]
            if gain_t:
                ax.plot(gain_t, np.interp(gain_t, r["t"], r["E"]), "x", color=colors[name],
                        ms=8, mew=2, label=f"impact that gained energy ({name})")  # fmt: skip
        first = res["off"]["first"]
        for kind, ls in (("floor", "--"), ("self", "-."), ("wall", ":")):
            if kind in first:
                ax.axvline(first[kind], color="0.5", ls=ls, lw=0.8, label=f"first {kind} contact")
        ax.set_title(f"{links}-link pendulum, {duration:g} s", fontsize=10)
        ax.set_ylabel("total energy (J)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Kane's paradox guard: e = 0.7, mu = 0.5, dt = 0.1 ms (000 Secs. 7-8)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"\nfigure: {png}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=4.0, help="s, pendulum-12 (4)")
    ap.add_argument("--links", type=int, nargs="*", default=[24, 30],
                    help="further pendulums, 3 s each")  # fmt: skip
    ap.add_argument("--energy-every", type=int, default=10, help="steps between energy samples")
    ap.add_argument("--quick", action="store_true", help="pendulum-12 for 3.1 s only")
    ap.add_argument("--png", default="")
    args = ap.parse_args(argv)
    cases = [(12, 3.1 if args.quick else args.duration)]
    if not args.quick:
        cases += [(n, 3.0) for n in args.links]
    print(f"# {time.strftime('%Y-%m-%d')} on {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}")  # fmt: skip
    all_res = {}
    for links, duration in cases:
        res = {name: run(links, duration, mode, args.energy_every) for name, mode in MODES.items()}
        report(links, duration, res)
        all_res[(links, duration)] = res
    if args.png:
        plot(all_res, args.png)


if __name__ == "__main__":
    main()
