"""Reproduce Figs. 7 and 8 of Bhalerao, Crean and Anderson (001 Sec. 4.1): RK4 with the LCP.

Fig. 7 -- energy drift without contact. The 8-body pendulum (``chain_urdf(8, pinned=True)``:
bodies of 1 kg and 1 m, point P hinged to the ground at height 1 m) is released from rest,
horizontal, and swings for ``--fig7-duration`` s at dt = 1 ms with

* ``explicit Euler``: q+ = q + dt v, v+ = v + dt qdd(q, v) -- the paper's "forward Euler";
  mbsim has no such option, so this loop lives here and calls mbsim's ABA;
* ``mbsim euler``: mbsim's ``integrator = "euler"``, semi-implicit (v+ first, then q+ = q +
  dt v+), the scheme of 000 and of every complementarity time stepper;
* ``mbsim rk4``: ``integrator = "rk4"`` (contact impulses, none here, held as forces).

|Delta E|(t) = |E(t) - E(0)| (total energy, J) is plotted on a log axis.

Fig. 8 -- the free 3-body chain (``chain_urdf(3)``) falling on the floor, frictionless and
inelastic contacts at P and Q (mu = 0, restitution 0), contact margin ``--margin`` (2 cm, so a
contact enters the LCP a step or more before it closes at the ~7 m/s reached here),
self-collision off, dt = 1 ms. Initial state from the paper's text: the centre of mass of body 1
at (x, z) = (0, 2.3) m and its orientation -pi/6 from the ground (the paper's positive angle is
counter-clockwise in its x-y figure; mbsim's hinge axis is +y, which is clockwise seen with x
right and z up, so -pi/6 there is joint_1 = +pi/6 here: body 1 descends from P towards Q), the
other relative angles 0. Body 1's frame is at P and its centre 0.5 m along it, and the sliders
start at (0, 0, 1), so base_x = -0.5 cos(pi/6), base_z = 2.3 + 0.5 sin(pi/6) - 1, joint_1 = pi/6.
With no horizontal force the x coordinate of the system's centre of mass must stay put; its
drift dCM and the penetration of P and Q are measured for

* (a) mbsim euler, mbsim's default gap rule (position level when separated, 20 % of a
  penetration removed per step);
* (a') mbsim euler with the position-level gap everywhere (``gap_floor = -inf``), 001's Euler;
* (b) rk4, position-level gap, no cap (``gap_floor = -inf``);
* (c) rk4, ``gap_floor = 0`` (velocity level once penetrating: 001's switch after impact);
* (d) rk4, ``gap_floor = -1e-5`` m (001's g_Neps, mbsim's rk4 default);

with mbsim's rk4 contact rows, written for the held-force step's own position update
(``rk4_gap_rows = "trapezoid"``, stepper docstring), and (b*)-(d*) the same with 001's literal
procedure, rows for the Euler update q + dt v+ (``rk4_gap_rows = "euler"``), plus (e*)
``gap_floor = -5e-5`` m: 001's rule of thumb (g_Neps of the order of the Euler scheme's own
penetration) applied to our (a'), which penetrated 5e-5 m before the J-dot v gap prediction.

``gap_floor`` and ``rk4_gap_rows`` are set on ``sim.options`` (the stepper's ``opt``; -inf is
not a TOML-friendly override). Penetrations are measured from the end-of-step kinematics
(sphere centre height minus radius). No timing here, so the shared machine does not matter.

Usage: python benchmarks/bench_rk4.py [--quick] [--fig7-png docs/fig7-energy.png]
       [--fig8-png docs/fig8-chain3.png]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from pathlib import Path

import numpy as np

from mbsim.io.scenario import scenario_from_urdf
from mbsim.samples.generators import CONTACT_SPHERE_RADIUS, chain_urdf
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import aba
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simulator import Simulator
from scratch import scratch_dir

_TMP = scratch_dir("bench_rk4_")
DT = 1e-3
#: the paper's initial pose of Fig. 8 (see the module docstring)
THETA = math.pi / 6
Q0_FIG8 = {
    "base_x": -0.5 * math.cos(THETA),
    "base_z": 2.3 + 0.5 * math.sin(THETA) - 1.0,
    "joint_1": THETA,
}
#: Fig. 8 cases: label -> (integrator, gap_floor, rk4_gap_rows); None = mbsim's Euler rule
FIG8_CASES = {
    "(a) euler, mbsim gap rule": ("euler", None, "trapezoid"),
    "(a') euler, gap_floor=-inf": ("euler", -math.inf, "trapezoid"),
    "(b) rk4, gap_floor=-inf": ("rk4", -math.inf, "trapezoid"),
    "(c) rk4, gap_floor=0": ("rk4", 0.0, "trapezoid"),
    "(d) rk4, gap_floor=-1e-5": ("rk4", -1e-5, "trapezoid"),
    "(b*) rk4, Euler rows, gap_floor=-inf": ("rk4", -math.inf, "euler"),
    "(c*) rk4, Euler rows, gap_floor=0": ("rk4", 0.0, "euler"),
    "(d*) rk4, Euler rows, gap_floor=-1e-5": ("rk4", -1e-5, "euler"),
    "(e*) rk4, Euler rows, gap_floor=-5e-5": ("rk4", -5e-5, "euler"),
}


def _urdf(name: str, text: str) -> Path:
    path = _TMP / name
    path.write_text(text)
    return path


# ----------------------------------------------------------------------------------- Fig. 7
def fig7(duration: float) -> dict:
    """|E(t) - E(0)| (J) every step for the three schemes on the pinned 8-body pendulum."""
    urdf = _urdf("chain-pinned-8.urdf", chain_urdf(8, pinned=True))
    out = {}
    for scheme in ("explicit Euler", "mbsim euler", "mbsim rk4"):
        integ = "rk4" if scheme == "mbsim rk4" else "euler"
        sc = scenario_from_urdf(
            urdf, name="pendulum", self_collision=False, mu=0.0, dt=DT, duration=duration,
            integrator=integ, output=str(_TMP / "unused.h5"),
        )  # fmt: skip
        sim = Simulator(sc)
        m = sim.model
        d = Data(m)
        e0 = float(sim.energy()[2])
        n = sc.simulation.n_steps
        t = np.arange(1, n + 1) * DT
        de = np.empty(n)
        zero = np.zeros(m.nv)
        for k in range(n):
            if scheme == "explicit Euler":
                qdd = aba(m, d, sim.q, sim.v, zero)
                sim.q, sim.v = sim.q + DT * sim.v, sim.v + DT * qdd
            else:
                sim.step()
            de[k] = abs(float(sim.energy()[2]) - e0)
        out[scheme] = (t, de, e0)
    return out


def fig7_table(res: dict, duration: float) -> None:
    windows = [w for w in (0.5, 1.0, 2.0, 5.0) if w < duration] + [duration]
    e0 = next(iter(res.values()))[2]
    print(f"\nFig. 7: max |Delta E| (J) over [0, t], E(0) = {e0:.4g} J, dt = 1 ms\n")
    print("| scheme | " + " | ".join(f"t = {w:g} s" for w in windows) + " |")
    print("|---" * (len(windows) + 1) + "|")
    for scheme, (t, de, _) in res.items():
        cells = " | ".join(f"{de[t <= w + 1e-12].max():.2e}" for w in windows)
        print(f"| {scheme} | {cells} |")
    rk = res["mbsim rk4"]
    for scheme in ("explicit Euler", "mbsim euler"):
        t, de, _ = res[scheme]
        ratios = [de[t <= w + 1e-12].max() / rk[1][rk[0] <= w + 1e-12].max() for w in windows]
        print(
            f"\n{scheme} / rk4 max drift ratio: "
            + ", ".join(f"{r:.1e} (t <= {w:g} s)" for r, w in zip(ratios, windows, strict=True))
        )


def fig7_plot(res: dict, png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for (scheme, (t, de, _)), c in zip(res.items(), ("tab:orange", "tab:red", "tab:blue"),
                                         strict=True):  # fmt: skip
        ax.semilogy(t, np.maximum(de, 1e-16), color=c, lw=0.8, label=scheme)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("|E(t) - E(0)| (J)")
    ax.set_title("8-body pendulum, no contact, dt = 1 ms (cf. 001 Fig. 7)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"\nfigure: {png}")


# ----------------------------------------------------------------------------------- Fig. 8
def fig8_run(integrator: str, gap_floor, rows: str, duration: float, margin: float) -> dict:
    urdf = _urdf("chain-3.urdf", chain_urdf(3))
    sc = scenario_from_urdf(
        urdf, name="chain", floor=True, self_collision=False, mu=0.0, restitution=0.0,
        margin=margin, dt=DT, duration=duration, integrator=integrator, q0=Q0_FIG8,
        output=str(_TMP / "unused.h5"),
    )  # fmt: skip
    sim = Simulator(sc)
    sim.stepper.configure(gap_floor=gap_floor, rk4_gap_rows=rows)
    assert sim.stepper.opt is sim.options
    m = sim.model
    d = Data(m)
    b1 = m.body_names.index("link1")
    b3 = m.body_names.index("link3")
    r = CONTACT_SPHERE_RADIUS

    def measure():
        forward_kinematics(m, d, sim.q)
        com = d.p_world + np.einsum("ijk,ik->ij", d.R_world, m.com)
        cm = m.mass @ com / m.mass.sum()
        gp = d.p_world[b1, 2] - r  # P: origin of link1
        gq = (d.p_world[b3] + d.R_world[b3] @ np.array([1.0, 0.0, 0.0]))[2] - r  # Q
        return cm[0], gp, gq, com[b1], d.R_world[b1]

    x0, gp, gq, c1, R1 = measure()
    start = {"cm_body1": c1, "angle_body1": math.atan2(R1[2, 0], R1[0, 0]), "gap_P": gp,
             "gap_Q": gq}  # fmt: skip
    n = sc.simulation.n_steps
    t = np.arange(1, n + 1) * DT
    dcm, gaps = np.empty(n), np.empty((n, 2))
    impacts = impact_steps = 0
    first_impact = None
    for k in range(n):
        rep = sim.step()
        if rep.impacts:
            impacts += len(rep.impacts)
            impact_steps += 1
            if first_impact is None:
                first_impact = sim.t
        x, gp, gq, _, _ = measure()
        dcm[k] = x - x0
        gaps[k] = gp, gq
    pen = np.maximum(0.0, -gaps.min(axis=1))
    after = (t >= first_impact) & (t <= first_impact + 0.05) if first_impact else t < 0
    return {
        "t": t, "dcm": dcm, "gaps": gaps, "pen": pen, "start": start, "impacts": impacts,
        "impact_steps": impact_steps, "first_impact": first_impact,
        "gap_first": float(gaps[after].min(initial=np.inf)),
        "t_maxpen": float(t[np.argmax(pen)]), "energy": float(sim.energy()[2]),
    }  # fmt: skip


def fig8(duration: float, margin: float) -> dict:
    return {label: fig8_run(*case, duration, margin) for label, case in FIG8_CASES.items()}


def fig8_table(res: dict, duration: float, margin: float) -> None:
    s = next(iter(res.values()))["start"]
    print(
        f"\nFig. 8: 3-body chain, {duration:g} s, dt = 1 ms, mu = 0, restitution 0, margin "
        f"{margin:g} m. Start: body 1 centre (x, z) = ({s['cm_body1'][0]:.4f}, "
        f"{s['cm_body1'][2]:.4f}) m, angle {s['angle_body1']:.4f} rad (-pi/6 = "
        f"{-math.pi / 6:.4f}), gaps P {s['gap_P']:.3f} m, Q {s['gap_Q']:.3f} m\n"
    )
    print(
        "| case | max abs dCM_x (m) | final dCM_x (m) | max penetration (m) | at t (s) "
        "| 1st impact at t (s) | min gap in the 50 ms after it (m) | impacts (steps) | E end (J) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, r in res.items():
        print(
            f"| {label} | {np.abs(r['dcm']).max():.2e} | {r['dcm'][-1]:.2e} | "
            f"{r['pen'].max():.2e} | {r['t_maxpen']:.3f} | {r['first_impact']:.3f} | "
            f"{r['gap_first']:.2e} | "
            f"{r['impacts']} ({r['impact_steps']}) | {r['energy']:.3f} |"
        )
    a = np.abs(res["(a) euler, mbsim gap rule"]["dcm"]).max()
    b = np.abs(res["(b) rk4, gap_floor=-inf"]["dcm"]).max()
    print(f"\nCM drift improvement euler (a) / rk4 (b): {a / b:.1e} (paper: ~1e4)")


def fig8_plot(res: dict, png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(9, 10), sharex=True)
    colors = ("tab:red", "tab:orange", "tab:blue", "tab:green", "tab:purple", "tab:cyan",
              "tab:olive", "tab:pink", "tab:brown")  # fmt: skip
    for (label, r), c in zip(res.items(), colors, strict=True):
        ax[0].semilogy(r["t"], np.maximum(np.abs(r["dcm"]), 1e-16), color=c, lw=0.8,
                       label=label)  # fmt: skip
        ax[1].semilogy(r["t"], np.maximum(r["pen"], 1e-9), color=c, lw=0.8)
        ax[2].plot(r["t"], r["gaps"][:, 0] * 1e3, color=c, lw=0.8)
        ax[2].plot(r["t"], r["gaps"][:, 1] * 1e3, color=c, lw=0.8, ls="--")
    ax[0].set_ylabel("|x_CM(t) - x_CM(0)| (m)")
    ax[0].legend(fontsize=8)
    ax[1].set_ylabel("penetration max(0, -gap) (m)")
    ax[1].set_ylim(1e-9, 1e-1)
    ax[2].set_ylabel("gap of P (solid), Q (dashed) (mm)")
    ax[2].set_ylim(-4, 6)
    ax[2].set_xlabel("time (s)")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
    fig.suptitle("3-body chain on the floor, mu = 0, e = 0, dt = 1 ms (cf. 001 Fig. 8)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"\nfigure: {png}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fig7-duration", type=float, default=None, help="s (10; quick 2)")
    ap.add_argument("--fig8-duration", type=float, default=2.0, help="s")
    ap.add_argument("--margin", type=float, default=0.02, help="contact margin, m")
    ap.add_argument("--fig7-png", default="")
    ap.add_argument("--fig8-png", default="")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    d7 = args.fig7_duration or (2.0 if args.quick else 10.0)
    print(f"# {time.strftime('%Y-%m-%d')} on {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}")  # fmt: skip
    r7 = fig7(d7)
    fig7_table(r7, d7)
    if args.fig7_png:
        fig7_plot(r7, args.fig7_png)
    r8 = fig8(args.fig8_duration, args.margin)
    fig8_table(r8, args.fig8_duration, args.margin)
    if args.fig8_png:
        fig8_plot(r8, args.fig8_png)


if __name__ == "__main__":
    main()
