"""Where a short run's time goes: opening the results file, the run loop, the compiled loop of
steps inside it, finishing the file, and the step's compiled stages timed in isolation.

For a scene of bench_peers.py (default ``panda-free``: the bundled Panda, fixed base, falling
under gravity with its URDF joint damping, dt = 1 ms, 1,500 steps, recording every 10 steps),
in CPU time (``time.thread_time``: the machine is shared), the median of ``--repeat`` runs
after a first one that loads the numba caches:

* ``open``: ``Simulator.open_writer`` (the results file created, header and empty tables);
* ``run``: ``sim.run(writer, record_every=10)``, of which ``kernel`` is the compiled loop
  (``free_loop.free_run_kernel``, Python's call included) and ``calls`` its calls;
* ``finish``: ``writer.finish()``;

then, on the state the run ended in, each stage kernel called in a compiled loop of its own
(``--reps`` times): forward kinematics, the articulated-body factorisation, the bias and
acceleration sweeps (the ABA of a free step) and the compiled joint-limit step
(``limit_step.limit_step_from`` after the free motion, as the loop calls it when a step would
reach a stop; 0 when no stop is near in that state). For ``panda-table`` (the hand pressed on
the table at the run's end) the contact step's stages too, as the loop calls them
(``free_run_kernel``'s contact branch): the shape poses, the broadphase, the step's contact set
(``contact_loop.contact_set``: the narrowphase, ``finish_into`` and the smooth radii), the
narrowphase alone (``narrowphase.narrowphase``) and the compiled contact step
(``contact_loop.fused_step``: ``contact_step_kernel`` from the contacts to v+, its warm start
as the run leaves it) and the loop's own work around them (``_may_touch``, the contact events
of a step whose contacts persist, ``keep_last``); the same for ``box-pile`` (bench_peers' 20
boxes, 0.1 s: its 4 stacks landed, 80 contacts) and ``a1-stand`` / ``laikago-stand``
(bench_peers' quadrupeds standing, 1.5 s). Prints one line each, in ms or ns.

Usage: ``PYTHONPATH=src python benchmarks/bench_run_stages.py [--scene panda-free|a1-stand|...]
[--repeat 7] [--reps 20000]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).parent))
import bench_peers  # noqa: E402
from mbsim.collision.broadphase import aabb_candidates  # noqa: E402
from mbsim.collision.narrowphase import narrowphase, shape_poses  # noqa: E402
from mbsim.simcore import free_loop  # noqa: E402
from mbsim.simcore.contact_loop import (  # noqa: E402
    contact_set,
    fused_step,
    keep_last,
    record_events,
    stage_contacts,
)
from mbsim.simcore.dynamics import (  # noqa: E402
    aba_accel_kernel,
    aba_bias_kernel,
    articulated_kernel,
)
from mbsim.simcore.kinematics import forward_kinematics_kernel  # noqa: E402
from mbsim.simcore.limit_step import FREE_MOTION_DONE, limit_step_from  # noqa: E402
from scratch import scratch_dir  # noqa: E402


@njit
def _repeat(n, kernel, a):
    """``kernel(*a)`` ``n`` times in one compiled loop (no Python call per repetition)."""
    for _ in range(n):
        kernel(*a)


def ns_per_call(kernel, args, reps: int) -> float:
    """CPU ns per call of ``kernel(*args)`` in a compiled loop of ``reps`` calls, after one
    call that compiles or loads it."""
    _repeat(1, kernel, args)
    t = time.thread_time()
    _repeat(reps, kernel, args)
    return (time.thread_time() - t) / reps * 1e9


def simulator(scene: str):
    from mbsim.simulator import Simulator

    path = scratch_dir("stages-") / "run.h5"
    if scene == "box-pile":  # 0.1 s: the layers have landed (bench_peers' pile duration)
        sc = bench_peers.scene_scenario(scene, 0.1, str(path))
    elif scene in bench_peers.STAND_SCENES:  # 1.5 s standing (bench_peers' duration)
        sc = bench_peers.scene_scenario(scene, 1.5, str(path))
    else:
        sc = bench_peers.panda_scenario(scene, 1.5, str(path))
    return Simulator(dataclasses.replace(sc, source=None))


def run_costs(scene: str, repeat: int):
    """(median CPU s of open, run, kernel and finish and the kernel calls, the last run's
    Simulator)."""
    kernel = free_loop.free_run_kernel
    spent = [0.0, 0]

    def timed(*args):
        t = time.thread_time()
        out = kernel(*args)
        spent[0] += time.thread_time() - t
        # (a call of no step, DONE at once, is FreeLoop.advance compiling the kernel before
        # it links the contact stage: not a call of the run's steps)
        spent[1] += not (out[0] == 0 and out[1] == free_loop.DONE)
        return out

    # the run loop compiles the loop's kernel before it links the contact step (free_loop)
    timed.compile, timed.typeof_pyval = kernel.compile, kernel.typeof_pyval
    free_loop.free_run_kernel = timed
    rows = []
    try:
        for _ in range(repeat + 1):
            sim = simulator(scene)
            spent[:] = [0.0, 0]
            t0 = time.thread_time()
            writer = sim.open_writer("bench_run_stages", force=True)
            t1 = time.thread_time()
            sim.run(writer, record_every=10)
            t2 = time.thread_time()
            writer.finish()
            t3 = time.thread_time()
            rows.append((t1 - t0, t2 - t1, spent[0], t3 - t2, spent[1]))
    finally:
        free_loop.free_run_kernel = kernel
    rows = rows[1:]  # the first run loads the numba caches
    names = ("open", "run", "kernel", "finish", "calls")
    return {k: statistics.median(r[i] for r in rows) for i, k in enumerate(names)}, sim


def stage_costs(sim, reps: int) -> dict[str, float]:
    """ns per call of each stage kernel on the state ``sim`` ended in."""
    m, st = sim.model, sim.stepper
    d, o = st.data, st.opt
    loop = sim._free_loop
    loop._bind()
    q = np.array(sim.q, dtype=np.float64)
    v = np.array(sim.v, dtype=np.float64)
    tau = -np.ascontiguousarray(m.damping, dtype=np.float64) * v
    a0 = np.zeros(6)
    a0[3:] = -m.gravity
    geo = (m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis)
    fk = (*geo, q, v, d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias)
    art = (m.parent, m.vi, m.nvj, d.S, m.inertia, d.E, d.r, d.IA, d.U, d.Dinv, d.pivots,
           d.scratch66, d.armature)  # fmt: skip
    bias = (m.parent, m.vi, m.nvj, d.S, m.inertia, d.E, d.r, d.vel, d.cbias, d.IA, d.U, d.Dinv,
            tau, d.pA, d.u)  # fmt: skip
    accel = (m.parent, m.vi, m.nvj, d.S, d.E, d.r, d.cbias, d.U, d.Dinv, d.u, a0, d.acc, d.qdd)
    out = {}
    for name, fn, args in (
        ("kinematics", forward_kinematics_kernel, fk),
        ("articulated", articulated_kernel, art),
        ("aba_bias", aba_bias_kernel, bias),
        ("aba_accel", aba_accel_kernel, accel),
    ):
        out[name] = ns_per_call(fn, args, reps)
    ls = loop._ls_arrays
    dof, side, imp, info, vstart = loop._ls_out
    limit = (
        *geo, m.inertia, m.gravity, m.mass, m.com, d.E, d.r, d.R_world, d.p_world, d.vel,
        d.cbias, d.IA, d.U, d.Dinv, d.pivots, d.pA, d.u, d.acc, d.scratch66, d.qdd, d.armature,
        *ls, float(o.dt), float(o.stabilization), float(o.max_recovery_speed),
        float(o.impact_velocity), float(o.lcp_tol_rel), o.lcp_selection == "least_norm",
        float(o.max_speed), q, v, tau, np.zeros(m.nq), np.zeros(m.nv), vstart, dof, side, imp,
        info, np.int64(FREE_MOTION_DONE),
    )  # fmt: skip
    # the free motion is in the Data (the ABA stages above)
    out["limit_step"] = ns_per_call(limit_step_from, limit, reps)
    out["limit_rows"] = info[0]
    return out


def contact_costs(sim, reps: int) -> dict[str, float]:
    """ns per call of each contact-step stage (module docstring) on the state ``sim`` ended
    in, with the kinematics and the free motion of that state in the stepper's Data, and
    the contacts of that state."""
    m, d = sim.model, sim.stepper.data
    loop = sim._free_loop
    stage = loop._stage
    if stage is None:
        return {}
    q = np.array(sim.q, dtype=np.float64)
    v = np.array(sim.v, dtype=np.float64)
    geo = (m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis)
    forward_kinematics_kernel(*geo, q, v, d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias)
    _, si, sf, local_R, local_p, Rw, pw, bc, _allowed, _ground, _reach, *bp = loop._coll_args
    poses = (si, sf, local_R, local_p, d.R_world, d.p_world, Rw, pw, bc, False)
    shape_poses(*poses)
    broad = (*bp[:7], Rw, pw, *bp[7:])
    pairs = aabb_candidates(*broad)
    cd = stage.detect
    rec = stage.record()  # the stage record of the run's last loop call (contact_loop.py)
    cset = (pairs, Rw, pw, bc, d.R_world, d.p_world, rec)
    narrow = (pairs, *cd[:4], Rw, pw, bc, *cd[4:16])  # contact_set's call
    nc, ints, vecs, gap, ra, rb = contact_set(*cset)
    out = {}
    for name, fn, args in (
        ("shape_poses", shape_poses, poses),
        ("broadphase", aabb_candidates, broad),
        ("contact_set", contact_set, cset),
        ("narrowphase", narrowphase, narrow),
    ):
        out[name] = ns_per_call(fn, args, reps)
    out["pairs"] = pairs.shape[0]
    out["contacts"] = nc
    if nc <= 0:
        return out
    # the free motion of the state (the loop's stage 3; joint damping only, no PD force: the
    # costs do not depend on it), then the contact step from it
    tau = -np.ascontiguousarray(m.damping, dtype=np.float64) * v
    a0 = np.zeros(6)
    a0[3:] = -m.gravity
    articulated_kernel(m.parent, m.vi, m.nvj, d.S, m.inertia, d.E, d.r, d.IA, d.U, d.Dinv,
                       d.pivots, d.scratch66, d.armature)  # fmt: skip
    aba_bias_kernel(m.parent, m.vi, m.nvj, d.S, m.inertia, d.E, d.r, d.vel, d.cbias, d.IA, d.U,
                    d.Dinv, tau, d.pA, d.u)  # fmt: skip
    aba_accel_kernel(m.parent, m.vi, m.nvj, d.S, d.E, d.r, d.cbias, d.U, d.Dinv, d.u, a0, d.acc,
                     d.qdd)  # fmt: skip
    stage_contacts(*cset)  # the step's contacts into the record, as the loop puts them
    fused = (rec, q, v, tau, d.qdd.copy(), np.zeros(m.nv))
    out["fused_step"] = ns_per_call(fused_step, fused, max(reps // 10, 1))
    res = fused_step(*fused)
    out["lcp_rows"] = int(res[1])
    # the loop's own per-step work around the stages (free_loop's contact branch): the
    # touch test on the candidates, the contact events of a step whose contacts persist
    # (the acting set is the step's after the first call) and keeping its contacts
    out["may_touch"] = ns_per_call(
        free_loop._may_touch, (pairs, _allowed, si, sf, bc, _ground, _reach), reps
    )
    # the contact step's outputs: the first rows of the stage's buffers (contact_loop.fused_step)
    fn, tan, sl, hit, vb, va, p_imp = (b[:nc] for b in stage._bufs[3:10])  # then joint rows'
    act_pf, act_is, last_i, last_v = stage.act_pf, stage.act_is, stage.last_i, stage.last_v
    ev_i, ev_f = stage._ev[0], stage._ev[1]
    events = (np.int64(1), nc, ints, vecs, fn, tan, sl, False, hit, p_imp, vb, va, 0.0, 0.0,
              act_pf.copy(), act_is.copy(), np.int64(nc), last_i.copy(), last_v.copy(),
              ev_i.copy(), ev_f.copy(), np.int64(0), stage._work[1])  # fmt: skip
    out["events"] = ns_per_call(record_events, events, reps)
    keep = (nc, ints, vecs, gap, ra, rb, last_i.copy(), last_v.copy(), stage.last_f.copy())
    out["keep_last"] = ns_per_call(keep_last, keep, reps)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    scenes = ("panda-free", "panda-pd", "panda-table", "box-pile", *bench_peers.STAND_SCENES)
    ap.add_argument("--scene", default="panda-free", choices=scenes)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--reps", type=int, default=20000)
    a = ap.parse_args()
    costs, sim = run_costs(a.scene, a.repeat)
    steps = sim.step_index
    total = costs["run"] + costs["finish"]
    loop = sim._free_loop
    print(f"{a.scene}: {steps} steps, {loop.limit_steps} of them limit steps, "
          f"{loop.contact_steps} contact steps in the loop, {loop.steps} in the loop")  # fmt: skip
    for k in ("open", "run", "kernel", "finish"):
        print(f"  {k:12s} {costs[k] * 1e3:8.2f} ms")
    print(f"  {'calls':12s} {costs['calls']:8.0f}")
    print(f"  run + finish {total * 1e3:8.2f} ms: {steps / total:,.0f} steps/s (CPU)")
    counts = ("limit_rows", "pairs", "contacts", "lcp_rows")
    costs = {**stage_costs(sim, a.reps), **contact_costs(sim, a.reps)}
    for k, ns in costs.items():
        print(f"  {k:12s} {ns:8.0f}" + ("" if k in counts else " ns"))


if __name__ == "__main__":
    main()
