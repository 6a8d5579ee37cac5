"""The pendulum benchmark of 000 Sec. 8 (Table 2) and a phase breakdown of the OS step.

``run_pendulum(n, formulation, duration)`` simulates the paper's scenario (pendulum-N against
the floor and the wall, dt 0.1 ms, mu 0.5, restitution 0.7, self-collision on) and reports wall
time, steps per second, the LCP sizes met and the events. ``phase_breakdown`` replays sampled
contact steps of an OS run and times each phase on the same state. Used by ``mbsim bench`` and
``benchmarks/bench_pendulum.py``; numbers go to docs/results.md, never into tests.

Initial condition: the base hinge at 45 degrees (q1 = pi/4, the chain on the left of the
hinge, x < 0) at +1 rad/s about the hinge axis +y, which first lifts the chain further left;
it then falls back and swings from left to right, grazes the floor and reaches the wall, the
order the paper describes. (With -1 rad/s it reaches the wall first and never the floor.)
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from mbsim.io.scenario import load_scenario_text
from mbsim.names import split_link_ref
from mbsim.samples.catalog import sample_path

#: Simulated time of the benchmark (s): every pendulum of Table 2 first touches the floor at
#: 2.14-2.27 s, itself at 2.40-2.54 s and the wall at 3.04-3.30 s (measured, dt = 0.1 ms), so
#: 4 s covers all three kinds of contact for every N.
DEFAULT_DURATION = 4.0

PAPER_TABLE_2 = {  # links: (OS size, NMC/OS size, NMC size, OS s, NMC/OS s, speed-up)
    3: (24, 39, 57, 13.33, 47.79, 3.6),
    6: (24, 54, 90, 10.50, 68.71, 6.5),
    12: (24, 84, 156, 19.06, 305.28, 16.1),
    15: (24, 99, 189, 21.76, 558.10, 25.6),
    24: (24, 144, 288, 38.20, 1899.86, 49.7),
    30: (24, 174, 354, 73.74, 4100.51, 55.6),
}


def pendulum_scenario(
    n: int,
    formulation: str = "os",
    duration: float = DEFAULT_DURATION,
    dt: float = 1e-4,
    output: str = "/dev/null",
):
    """The Sec. 8 scenario for the n-link pendulum as a resolved Scenario (``output``: the
    results path a writer would use; none is opened here)."""
    text = f"""
[simulation]
duration = {duration!r}
dt = {dt!r}
formulation = "{formulation}"
gravity = [0.0, 0.0, -9.8]

[robot.pendulum]
urdf = "{sample_path(f"pendulum-{n}")}"
q0 = {{ joint_1 = {np.pi / 4!r} }}
v0 = {{ joint_1 = 1.0 }}

[environment.room]
urdf = "{sample_path("pendulum-environment")}"

[contact]
mu = 0.5
restitution = 0.7
friction_directions = 4
self_collision = true

[output]
path = "{output}"
"""
    return load_scenario_text(text, source=f"<pendulum-{n} benchmark>")


def run_pendulum(
    n: int, formulation: str = "os", duration: float = DEFAULT_DURATION, dt: float = 1e-4
):
    """Simulate the benchmark; returns a dict of wall time, rates, LCP sizes and events."""
    from mbsim.simulator import Simulator

    sim = Simulator(pendulum_scenario(n, formulation, duration, dt))
    warm = Simulator(pendulum_scenario(n, formulation, 20 * dt, dt))
    warm.run(None)  # compile and warm caches outside the timed run
    sizes: Counter = Counter()
    contacts: Counter = Counter()
    events: Counter = Counter()
    first = {}
    t0 = time.perf_counter()
    for _ in range(sim.scenario.simulation.n_steps):
        rep = sim.step()
        if rep.lcp_size:
            sizes[rep.lcp_size] += 1
        if rep.n_contacts:
            contacts[rep.n_contacts] += 1
            for i in range(rep.n_contacts):
                # label static contacts by link ("floor", "wall"), whatever tree holds it
                link = split_link_ref(sim.scene.links[rep.contacts.geom_b[i]])[1]
                kind = "self" if rep.contacts.body_b[i] >= 0 else link
                first.setdefault(kind, sim.t)
        events["impact"] += len(rep.impacts)
    wall = time.perf_counter() - t0
    steps = sim.scenario.simulation.n_steps
    return {
        "links": n,
        "formulation": formulation,
        "steps": steps,
        "wall_s": wall,
        "steps_per_s": steps / wall,
        "lcp_sizes": dict(sorted(sizes.items())),
        "contacts_per_step": dict(sorted(contacts.items())),
        "first_contact_time_s": first,
        "impacts": events["impact"],
        "final_energy_J": [float(x) for x in sim.energy()],
    }


def phase_breakdown(
    n: int, duration: float = DEFAULT_DURATION, dt: float = 1e-4, max_samples: int = 200
):
    """Median microseconds per phase of the OS step, over sampled contact steps of a run."""
    from mbsim.simcore.dynamics import aba
    from mbsim.simcore.formulations import ContactProblem
    from mbsim.simcore.formulations.minimal import relative_velocity
    from mbsim.simcore.kinematics import forward_kinematics, integrate, node_transforms
    from mbsim.simcore.lcp import solve_lcp
    from mbsim.simulator import Simulator

    sim = Simulator(pendulum_scenario(n, "os", duration, dt))
    st = sim.stepper
    m, d, o = sim.model, st.data, st.opt
    form = st.formulation
    times: dict[str, list[float]] = {}

    def timed(name, fn, reps=5):
        best = np.inf
        out = None
        for _ in range(reps):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        times.setdefault(name, []).append(best * 1e6)
        return out

    samples = 0
    for k in range(sim.scenario.simulation.n_steps):
        q, v = sim.q.copy(), sim.v.copy()
        rep = sim.step()
        if not rep.n_contacts or samples >= max_samples or k % 5:
            continue
        samples += 1
        tau = -m.damping * v
        timed("kinematics", lambda q=q, v=v: forward_kinematics(m, d, q, v))
        c = timed("collision", lambda: sim.scene.detect(d.R_world, d.p_world))
        if not len(c.gap):
            continue
        timed("free motion (ABA)", lambda q=q, v=v, tau=tau: aba(m, d, q, v, tau))
        mu, _ = st._pair_params(c)
        gv = np.where(c.gap > 0.0, c.gap, o.stabilization * c.gap) / o.dt
        pr = ContactProblem.build(
            m, d, q, c, tau, o.nf, mu, gv, o.solver, o.lcp_tol_rel, node_transforms
        )
        timed("Lambda (Upsilon)", lambda pr=pr: form.prepare(pr))
        vf = v + o.dt * aba(m, d, q, v, tau)

        def assemble(pr=pr, vf=vf):
            return pr.contact_rows(form.W(pr), relative_velocity(pr, vf), True)

        M, qv = timed("LCP assembly", assemble)
        res = timed("LCP solve", lambda M=M, qv=qv: solve_lcp(M, qv, solver=o.solver))
        F = pr.impulses(res.z)
        vp = timed("impulses (O(N))", lambda pr=pr, F=F, vf=vf: vf + form.respond(pr, F))
        timed("integration", lambda q=q, vp=vp: integrate(m, q, vp, o.dt))
        timed("output (energy, poses)", lambda: (sim.energy(), sim.body_poses()))
    return {k: float(np.median(v)) for k, v in times.items()}, samples
