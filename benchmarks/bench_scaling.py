"""Steps per second against the number of links and of contacts: mbsim (OS) and MuJoCo.

* links: the bundled/generated ``pendulum-N`` (N = 3 ... 120, ``--links``) in the Sec. 8
  scenario of the OS paper (dt = 0.1 ms, joint_1 at pi/4 rad with 1 rad/s), timed over its
  first ``--link-steps`` steps (default 2000 = 0.2 s: free swing, no contact), mbsim as
  ``mbsim run`` runs it (bench_peers.mbsim_runner: run loop, HDF5 every 10 steps), MuJoCo as a
  bare ``mj_step`` loop (bench_peers.MujocoPendulum, the same URDF and settings).
* contacts: one free 1 kg plate (0.4 m x 0.4 m, 1 cm thick inertia) carrying k spheres of
  radius 2 cm in a grid on its underside (k = 1 ... 64, ``--contacts``), resting on the floor
  from the start (sphere bottoms 0.5 mm above it, within mbsim's 1 mm margin): k contact
  points every step, one body. dt = 1 ms, mu 0.5, no restitution, ``--contact-steps`` steps
  (default 500). MuJoCo compiles the same URDF (condim 3, pyramidal cone, mu 0.5).

Rates are medians of ``--repeat`` runs of thread CPU time (one BLAS thread). Writes a
markdown table to stdout and, with ``--png PATH`` and matplotlib installed, a log-log plot
(``--plot-from`` saved tables: plot rows measured by several runs of the script).
Results go to docs/results.md with the machine and date; nothing here is asserted by tests.
Needs the ``bench`` extra (mujoco).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

import bench_peers as peers  # noqa: E402
from mbsim.bench import pendulum_scenario  # noqa: E402

PLATE, R, CDT = 0.4, 0.02, 1e-3  # m, m, s


def plate_urdf(k: int) -> str:
    """One link: a 1 kg plate with k spheres in a near-square grid under it."""
    cols = math.ceil(math.sqrt(k))
    rows = math.ceil(k / cols)
    spheres = []
    for i in range(k):
        x = (i % cols + 0.5) / cols * PLATE - PLATE / 2
        y = (i // cols + 0.5) / rows * PLATE - PLATE / 2
        spheres.append(
            f'<collision><origin xyz="{x!r} {y!r} 0"/><geometry><sphere radius="{R!r}"/>'
            "</geometry></collision>"
        )
    ixx = (PLATE**2 + 0.01**2) / 12
    return (
        '<?xml version="1.0"?><robot name="plate"><link name="plate"><inertial><mass value="1"/>'
        f'<inertia ixx="{ixx!r}" iyy="{ixx!r}" izz="{PLATE**2 / 6!r}" ixy="0" ixz="0" iyz="0"/>'
        "</inertial>" + "".join(spheres) + "</link></robot>"
    )


def mbsim_plate(urdf: Path, steps: int, path: str):
    from mbsim.io.scenario import load_scenario_text

    text = f"""[simulation]
duration = {steps * CDT!r}
dt = {CDT!r}
gravity = [0.0, 0.0, -9.81]
[robot.plate]
urdf = "{urdf}"
base = "floating"
q0 = {{ "root_joint.z" = {R + 5e-4!r} }}
[contact]
floor = true
mu = 0.5
restitution = 0.0
[output]
path = "{path}"
"""
    return load_scenario_text(text, source=None)


def mujoco_plate(urdf: Path):
    import mujoco

    spec = mujoco.MjSpec.from_file(str(urdf))
    spec.option.timestep = CDT
    spec.option.gravity = [0.0, 0.0, -9.81]
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    body = spec.worldbody.first_body()
    body.add_freejoint()
    body.pos = [0.0, 0.0, R + 5e-4]
    floor = spec.worldbody.add_geom()
    floor.type, floor.size = mujoco.mjtGeom.mjGEOM_PLANE, [5.0, 5.0, 0.1]
    for g in spec.geoms:
        g.friction, g.condim = [0.5, 0.0, 0.0], 3
    m = spec.compile()
    return m, mujoco.MjData(m)


def rate(make, steps: int, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        go = make()
        c0 = time.thread_time()
        go()
        out.append(steps / (time.thread_time() - c0))
    return statistics.median(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, nargs="*", default=[3, 6, 12, 30, 60, 120])
    ap.add_argument("--contacts", type=int, nargs="*", default=[1, 4, 16, 64])
    ap.add_argument("--link-steps", type=int, default=2000)
    ap.add_argument("--contact-steps", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--png", help="write a log-log plot here (needs matplotlib)")
    ap.add_argument(
        "--plot-from", nargs="+", metavar="TABLE",
        help="only plot (to --png) the rows of these saved markdown outputs of this script",
    )  # fmt: skip
    peers.add_manifold_option(ap)
    args = ap.parse_args(argv)
    peers.set_manifold(args)
    if args.plot_from:
        plot(read_tables(args.plot_from), args.png)
        return
    import mujoco

    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, mujoco {mujoco.__version__}; "
        f"median of {args.repeat}, steps/s of thread CPU time; mbsim contact.manifold = "
        f"{args.manifold}\n"
    )
    print("| case | N | mbsim (OS) steps/s | MuJoCo steps/s | mbsim / MuJoCo |")
    print("|---|---|---|---|---|")
    res = {"links": [], "contacts": []}
    for n in args.links:
        s = args.link_steps
        mb = rate(
            lambda n=n, s=s: peers.mbsim_runner(
                lambda p: pendulum_scenario(n, "os", s * peers.DT, peers.DT, output=p)
            ),
            s, args.repeat,
        )  # fmt: skip
        mj_sim = peers.MujocoPendulum(n, s * peers.DT)
        mj = rate(lambda s=s, m=mj_sim: (m.reset(), m.runner(s))[1], s, args.repeat)
        res["links"].append((n, mb, mj))
        print(f"| links | {n} | {mb:.0f} | {mj:.0f} | {mb / mj:.3f} |", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.contacts:
            urdf = Path(tmp) / f"plate-{k}.urdf"
            urdf.write_text(plate_urdf(k))
            s = args.contact_steps
            mb = rate(
                lambda u=urdf, s=s: peers.mbsim_runner(lambda p: mbsim_plate(u, s, p)),
                s, args.repeat,
            )  # fmt: skip
            mj = rate(lambda u=urdf, s=s: peers.mujoco_runner(*mujoco_plate(u), s), s, args.repeat)
            res["contacts"].append((k, mb, mj))
            print(f"| contacts | {k} | {mb:.0f} | {mj:.0f} | {mb / mj:.3f} |", flush=True)
    if args.png:
        plot(res, args.png)


def read_tables(paths) -> dict:
    """The (N, mbsim, MuJoCo) rows of saved outputs of this script, by case, sorted by N.

    A table whose header names ``contact.manifold = body-pair`` gives its contact rows to
    the case "contacts body-pair", plotted as a second mbsim line beside the default's."""
    res = {"links": [], "contacts": [], "contacts body-pair": []}
    for path in paths:
        text = Path(path).read_text()
        body_pair = "contact.manifold = body-pair" in text
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) == 5 and cells[0] in ("links", "contacts"):
                key = "contacts body-pair" if body_pair and cells[0] == "contacts" else cells[0]
                res[key].append((int(cells[1]), float(cells[2]), float(cells[3])))
    return {k: sorted(v) for k, v in res.items()}


def plot(res, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in zip(axes, ("links", "contacts"), ("links N", "contacts k"), strict=True):
        rows = res[key]
        if not rows:
            continue
        x = [r[0] for r in rows]
        ax.loglog(x, [r[1] for r in rows], "o-", label="mbsim (OS), run loop")
        ax.loglog(x, [r[2] for r in rows], "s-", label="MuJoCo, mj_step loop")
        extra = res.get(f"{key} body-pair", [])
        if extra:
            ax.loglog(
                [r[0] for r in extra], [r[1] for r in extra], "^--",
                label="mbsim (OS), contact.manifold = body-pair",
            )  # fmt: skip
        ax.set_xlabel(label)
        ax.set_ylabel("steps/s (CPU)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    axes[0].set_title("pendulum-N, free swing, dt 0.1 ms")
    axes[1].set_title("plate on k spheres resting, dt 1 ms")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
