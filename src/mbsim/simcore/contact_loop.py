"""Contact steps inside the compiled loop of steps (free_loop.py, issue 15).

:func:`~mbsim.simcore.free_loop.free_run_kernel` stops at the first step in which a pair may
touch unless it is handed the stage built here (:class:`ContactStage`); with it it takes
that step itself, compiled, as the step-by-step path would take it through
``OSStepper._general_step`` and the compiled contact step (contact_fused.py):

1. :func:`contact_set`: the scene's detection (``CollisionScene.detect``) for the numba
   pairs only: ``narrowphase`` on the broadphase's candidates, ``finish_into`` and the
   smooth radii (``scene._smooth_radii_kernel``), into views of the stage's buffers shaped
   as the arrays ``detect`` builds a Contacts of. A pair FCL must take, more rows than the
   buffers hold, or a body-pair manifold that would need reducing
   (``manifold.body_pair_keep``) stops the loop: Python takes that step. A scene with
   per-pair margins never runs here (:meth:`ContactStage.build`);
2. :func:`fused_step`: ``contact_step_kernel`` with the inputs ``ContactFuser.step`` gives
   it (the pair table's mu and restitution of each contact, the core radii when the
   curvature term takes them, the fuser's options and Lemke pivot caps), collisions and
   their impact phase included, an LCP that splits into islands solved block by block. A
   collision with the energy-consistent impact option (IMPACT), or an LCP the first attempt
   does not settle, a Lemke path included that one budget chunk does not end (FALLBACK),
   stop the loop before the step: Python takes it;
3. :func:`contact_events`: the contact events ``Simulator.events_of`` derives, by the same
   identity rule ((pair_id, feature_key); a key seen twice in one step keeps its first
   place and its last index and sliding flag, as the dict there does): contact_begin,
   stick / slip of a persisting contact, the impacts of a collision, and contact_end (in
   the order of the contacts acting before the step) of the contacts acting before it and
   not after. Each row holds
   what ``Simulator._write_events`` writes: the bodies, the mid point of the two contact
   points, the normal and the step's normal and tangent impulses (zero at contact_end).

The loop's kernel takes the stage as one record (:class:`StageType`, a numba structref:
one pointer, however many arrays it holds) and hands it to the stage's kernels
(:func:`stage_contacts`, :func:`stage_step`, :func:`stage_events`, :func:`stage_rows`),
which keep the step's contacts and the contact step's outputs in it.

The recorded rows of a contact step get the contacts ``Simulator._record`` writes (bodies,
mid point, normal, impulses, gap) and the diagnostics (LCP size, pivots, residual, solver,
contacts, penetration). Units: SI (m, N s).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.experimental import structref
from numba.extending import overload

from mbsim.collision.manifold import BODY_PAIR
from mbsim.collision.narrowphase import finish_into, narrowphase
from mbsim.collision.scene import Contacts, _smooth_radii_kernel
from mbsim.simcore.contact_fused import (
    _NO_ROWS,
    I_IMPACT,
    I_KE_AFTER,
    I_KE_BEFORE,
    ContactFuser,
    _joint_table,
    borrowed,
    contact_step_kernel,
    joint_rows_table,
    make_step,
    step_work,
)
from mbsim.simcore.joint_rows import _near_limits
from mbsim.simcore.lcp import warm as warm_start
from mbsim.simcore.lcp.warm_table import WarmTable, mark, undo
from mbsim.simcore.native_call import EMPTY, address_table, native_caller
from mbsim.simcore.spatial import borrowed_all, c_view

#: the contact event kinds of the loop's rows (Simulator.events_of's names: EVENT_NAMES)
BEGIN, END, STICK, SLIP, IMPACT_ROW = 0, 1, 2, 3, 4
EVENT_NAMES = ("contact_begin", "contact_end", "stick", "slip", "impact")
#: the most contacts of one step the loop takes (more: Python takes the step); the size of
#: the arrays of the contacts acting
MAX_CONTACTS = 256
#: the most contacts a step has whose contact step (contact_fused.contact_step_kernel) takes
#: all its work arrays from the stage's buffers (ContactStage._work: ~0.35 MB); a step of
#: more allocates its own
WORK_CONTACTS = 16
#: the narrowphase kernel set (narrowphase.pair_kernel_set) of the loop's detection for a
#: scene that needs any optional kernel: all of them. The loop with its contact stage is the
#: largest compilation there is (~40 s), and it is compiled again for each kernel set it
#: links; with two tiers (a scene of round shapes only: none; any other: all) a user's
#: second scene kind, and the test suite, reuse it. Results do not depend on the set (a
#: kernel a scene cannot need is never reached), so detection here still agrees bit for bit
#: with CollisionScene.detect's own set.
ALL_KERNELS = (True, True, True, True)
#: calls contact_step_kernel (which returns its int64 code) through its address: compiled
#: once, on its own (or by the compile-ahead helper, warmup.py), not again inside the loop
_call_code = native_caller(types.int64)


#: the fields of the loop's contact stage (:class:`StageType`), in the order
#: :func:`make_stage` takes them: ``detect`` the detection tuple (:meth:`ContactStage.__init__`),
#: ``step`` the contact step's record (contact_fused.StepType: the Model and Data arrays, the
#: options, the warm table; the step's contacts and outputs, :func:`fused_step`), ``ktab``
#: the table of contact_step_kernel's compilations (native_call.py; empty before
#: :meth:`ContactStage.link`), the pair table's ``mu_tab`` and ``eps_tab``, whether the
#: curvature term takes the core radii (``core``), the most LCP rows the kernel takes
#: (``max_rows``), the contacts acting and the last step's contacts
#: (``act_pf``, ``act_is``, ``last_i``, ``last_v``, ``last_f``), the kernel's info slots,
#: the counters ``cst`` (contacts acting, last step's contacts, event rows, contact rows,
#: contact steps), the event and contact row buffers, the recorded rows' (contacts,
#: penetration), the run's (max penetration, worst LCP residual), the gain row's info slots,
#: the penetration bound, the warm start's flag, table and undo log (lcp/warm_table.py),
#: the step's contacts (:func:`stage_contacts`; empty before the first), and the buffers of
#: MAX_CONTACTS contacts whose first rows :func:`fused_step` lends the contact step's record
#: (each contact's mu and restitution, then the kernel's outputs z, fn, tangent, sliding,
#: hit, vn_before, vn_after, p_impact), and the buffers of the step's 1-DoF joint rows whose
#: first rows :func:`stage_joint_rows` lends the record's j_* fields (with a work vector of nv),
#: and those of the step's contacts (:func:`contact_set`: ints in ``c_int``, 6 a contact;
#: vecs, gap and the two radii in ``c_flt``, 18 a contact)
STAGE_FIELDS = (
    "detect", "step", "ktab", "mu_tab", "eps_tab", "core", "max_rows", "act_pf", "act_is",
    "last_i", "last_v", "last_f", "info", "cst", "ev_i", "ev_f", "rc_i", "rc_f", "rec_cd",
    "stats", "gain", "max_pen", "warm", "wtab", "wund", "ints", "vecs", "gap", "ra", "rb",
    "b_mu", "b_eps", "b_z", "b_fn", "b_tangent", "b_sliding", "b_hit", "b_vn_before",
    "b_vn_after", "b_p_impact", "jb_dof", "jb_sign", "jb_shift", "jb_gap", "jb_qv", "c_int",
    "c_flt",
)  # fmt: skip


@structref.register
class StageType(types.StructRef):
    """numba type of the loop's contact stage: one reference to a record of the stage's
    arrays and tuples (:data:`STAGE_FIELDS`). The loop's kernel takes it, and hands it to
    the stage's kernels, as one pointer: as a tuple of its ~100 arrays passed and copied by
    value, it made LLVM's SROA pass most of the loop's compile time (docs/results.md,
    "Compile time of the contact loop")."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class StageRef(structref.StructRefProxy):
    """A contact stage record (:class:`StageType`) held in Python: made by
    :func:`make_stage`, read only by compiled code (Python keeps its own references to the
    same arrays, :class:`ContactStage`)."""


structref.define_boxing(StageType, StageRef)


def _new_stage(*fields):
    raise NotImplementedError("compiled code only")


@overload(_new_stage)
def _new_stage_impl(*fields):
    stage_type = StageType(list(zip(STAGE_FIELDS, fields, strict=True)))
    body = "".join(
        f"    s.{n} = borrowed_all(fields[{i}])[0]\n" for i, n in enumerate(STAGE_FIELDS)
    )
    src = f"def impl(*fields):\n    s = new(stage_type)\n{body}    return s\n"
    scope = {
        "new": structref.new, "stage_type": stage_type, "borrowed_all": borrowed_all,
        "__name__": __name__,
    }  # fmt: skip
    exec(src, scope)  # one assignment per field: the record's constructor
    return scope["impl"]


@njit(cache=True)
def make_stage(
    detect, step, ktab, mu_tab, eps_tab, core, max_rows, act_pf, act_is, last_i, last_v,
    last_f, info, cst, ev_i, ev_f, rc_i, rc_f, rec_cd, stats, gain, max_pen, warm, wtab, wund,
    ints, vecs, gap, ra, rb, b_mu, b_eps, b_z, b_fn, b_tangent, b_sliding, b_hit, b_vn_before,
    b_vn_after, b_p_impact, jb_dof, jb_sign, jb_shift, jb_gap, jb_qv, c_int, c_flt,
):  # fmt: skip
    """The contact stage record (:class:`StageType`) of these fields (:data:`STAGE_FIELDS`);
    it holds the arrays themselves, not copies, borrowed (spatial.borrowed_all: numba counts
    no references of them when the loop's kernels read them; :class:`ContactStage` keeps every
    one alive while its record is used). The step's contacts, which :func:`stage_contacts`
    puts in the record, are views of its buffers ``c_int`` and ``c_flt``."""
    return _new_stage(
        detect, step, ktab, mu_tab, eps_tab, core, max_rows, act_pf, act_is, last_i, last_v,
        last_f, info, cst, ev_i, ev_f, rc_i, rc_f, rec_cd, stats, gain, max_pen, warm, wtab,
        wund, ints, vecs, gap, ra, rb, b_mu, b_eps, b_z, b_fn, b_tangent, b_sliding, b_hit,
        b_vn_before, b_vn_after, b_p_impact, jb_dof, jb_sign, jb_shift, jb_gap, jb_qv, c_int,
        c_flt,
    )  # fmt: skip


@njit(cache=True)
def contact_set(pairs, Rw, pw, bc, R_world, p_world, stage):
    """The step's contacts (module docstring, 1) for the shape poses Rw, pw, bc and the body
    poses R_world, p_world: (nc, or -1 when Python must detect them; ints (6, nc): body_a,
    body_b, geom_a, geom_b, pair_id, feature_key; vecs (5, nc, 3): point_a, point_b,
    local_a, local_b, normal; gap (nc,); radius_a, radius_b (nc,)), as CollisionScene.detect
    returns them. ``stage``: the stage record (:func:`make_stage`), whose ``detect`` is
    :class:`ContactStage`'s detection tuple."""
    (
        allowed, fpack, ipack, offs, ground, params, buf, keys, out_i, out_f, fcl_out,
        tree_state, polytopes, meshes, cylinders, fcl, n_shapes, shape_kind, shape_radius,
        body_pair_cap,
    ) = stage.detect  # fmt: skip
    nc, nfcl = narrowphase(
        pairs, allowed, fpack, ipack, offs, Rw, pw, bc, ground, params, buf, keys, out_i,
        out_f, fcl_out, tree_state, polytopes, meshes, cylinders, fcl,
    )  # fmt: skip
    ok = nfcl == 0 and nc <= out_i.shape[0] and nc <= MAX_CONTACTS
    if body_pair_cap > 0 and nc > body_pair_cap:
        ok = False  # body_pair_keep would drop some: Python's
    m = nc if ok else 0
    # the contacts in the stage's own buffers (c_int, c_flt), C-contiguous views: no
    # allocation a step
    ints = stage.c_int[: 6 * m].reshape(6, m)
    cf = stage.c_flt
    vecs = cf[: 15 * m].reshape(5, m, 3)
    gap = cf[15 * m : 16 * m]
    ra = cf[16 * m : 17 * m]
    rb = cf[17 * m : 18 * m]
    finish_into(out_i, out_f, m, ipack, offs, n_shapes, R_world, p_world, ints, vecs, gap)
    _smooth_radii_kernel(ints[2], ints[3], ints[5], shape_kind, shape_radius, ra, rb)
    return (m if ok else -1), ints, vecs, gap, ra, rb


@njit(cache=True)
def fused_step(stage, q, v, tau, qdd, v_new):
    """``contact_step_kernel`` on the step's contacts (the record's ``ints``, ``vecs``,
    ``gap``, ``ra``, ``rb``: :func:`stage_contacts`) as ``ContactFuser.step`` calls it (module
    docstring, 2). ``stage``: the stage record (:func:`make_stage`), whose ``step`` is the
    kernel's record (contact_fused.StepType: the Model and Data arrays, the options, the info
    slots ``info``, the warm start's flag and the loop's copy of its store with the copy's
    undo log, lcp/warm_table.py: the kernel updates the copy, the loop marks it after a step
    it keeps). This lends that record (spatial.borrowed: no reference counts) the
    step's contacts, their pair parameters (from ``mu_tab``, ``eps_tab``), (q, v, tau, qdd),
    v_new and the outputs (the first rows of the stage's buffers ``b_*``: z, fn, tangent,
    sliding, hit (cleared), vn_before, vn_after, p_impact, read there by the events and rows),
    then calls the kernel. Returns (the kernel's code, or -1 for an LCP of more rows than the
    kernel takes or when ``ktab`` (:meth:`ContactStage.link`) holds no compilation of it for
    the record's type; the LCP's rows); v_new gets v+. The kernel is called through its
    address (native_call.py): compiled with this function, it would be compiled again inside
    it and again inside the loop."""
    s = stage.step
    nu = stage.gap.shape[0]
    k = s.cos_a.shape[0] + 1
    # the joint friction rows' unknowns first (the record's j_* fields: ContactStage.arrays)
    n = s.j_dof.shape[0] + s.j_bound.shape[0] + nu * (k + 1)
    if n > stage.max_rows:
        return -1, n
    s.z = borrowed(stage.b_z[:n])
    s.fn = borrowed(stage.b_fn[:nu])
    s.tangent = borrowed(stage.b_tangent[:nu])
    s.sliding = borrowed(stage.b_sliding[:nu])
    s.hit = borrowed(stage.b_hit[:nu])
    s.vn_before = borrowed(stage.b_vn_before[:nu])
    s.vn_after = borrowed(stage.b_vn_after[:nu])
    s.p_impact = borrowed(stage.b_p_impact[:nu])
    s.mu = borrowed(stage.b_mu[:nu])
    s.eps = borrowed(stage.b_eps[:nu])
    mu, eps, hit = s.mu, s.eps, s.hit
    ints = stage.ints
    mu_tab = stage.mu_tab
    eps_tab = stage.eps_tab
    for i in range(nu):
        mu[i] = mu_tab[ints[2, i], ints[3, i]]
        eps[i] = eps_tab[ints[2, i], ints[3, i]]
        hit[i] = False
    s.body_a = borrowed(ints[0])
    s.body_b = borrowed(ints[1])
    vecs = stage.vecs
    s.local_a = borrowed(vecs[2])
    s.local_b = borrowed(vecs[3])
    s.normal = borrowed(vecs[4])
    s.gap = borrowed(stage.gap)
    if stage.core:  # else the record's radii stay empty
        s.radius_a = borrowed(stage.ra)
        s.radius_b = borrowed(stage.rb)
    s.q_pos = borrowed(q)
    s.v = borrowed(v)
    s.tau = borrowed(tau)
    s.qdd = borrowed(qdd)
    s.v_new = borrowed(v_new)
    info = s.info
    for i in range(info.shape[0]):
        info[i] = 0.0
    linked, code = _call_code(stage.ktab, s)
    if not linked:
        return -1, n
    return code, n


@njit(cache=True, inline="always")
def _find(pairs, feats, n, p, f):
    """The index of (p, f) among the first n entries, or -1."""
    for j in range(n):
        if pairs[j] == p and feats[j] == f:
            return j
    return -1


@njit(cache=True, inline="always")
def _event_row(ev_i, ev_f, ne, step, kind, body_a, body_b, point_a, point_b, normal, t, f):
    """Row ``ne`` of the event buffers (:func:`record_events`): step, kind, the bodies, the
    mid point of the two contact points, the normal, ``f`` in the normal impulse's place and
    ``t`` in the tangent impulse's; the impact slots NaN (an impact row fills them after)."""
    ev_i[ne, 0] = step
    ev_i[ne, 1] = kind
    ev_i[ne, 2] = body_a
    ev_i[ne, 3] = body_b
    for c in range(3):
        ev_f[ne, c] = 0.5 * (point_a[c] + point_b[c])
        ev_f[ne, 3 + c] = normal[c]
        ev_f[ne, 7 + c] = t[c]
    ev_f[ne, 6] = f
    for c in range(10, 14):
        ev_f[ne, c] = np.nan


@njit(cache=True)
def record_events(
    step, nc, ints, vecs, fn, tangent, sliding, impact, hit, p_impact, vn_before, vn_after,
    ke_before, ke_after, act_pf, act_is, n_act, last_i, last_v, ev_i, ev_f, ne, work,
):  # fmt: skip
    """The contact event rows of step ``step`` (module docstring, 3), written from row ``ne``
    of ``ev_i`` (rows, 4: step, kind, body_a, body_b) and ``ev_f`` (rows, 14: mid point,
    normal, normal impulse, tangent impulse, then NaN but for an impact: its normal velocity
    before and after and the kinetic energy before and after the collision). An impact row
    (the step was a collision, ``impact``: the contacts in ``hit``) holds the contact's
    impulse of the impact phase ``p_impact`` in the tangent impulse's place: the run loop
    splits it as ``Impact.records`` does (stepper.py), after the contacts' rows and before
    the ended ones, as ``Simulator.events_of`` orders them. ``act_pf`` (C, 2): (pair_id,
    feature_key) of the ``n_act`` contacts acting before the step, ``act_is`` (C, 2) their
    index among the last step's contacts and sliding flag; ``last_i`` (6, C) and ``last_v``
    (5, C, 3) the last step's contacts, as contact_set returns them. On return the acting
    contacts are the step's (updated in place). ``work``: int64 work of at least 4 nc (the
    step's contacts' keys and flags). Returns (rows now, contacts acting)."""
    new_pf = c_view(work, 0, (nc, 2))
    new_is = c_view(work, 2 * nc, (nc, 2))
    n_new = 0
    for i in range(nc):
        p, f = ints[4, i], ints[5, i]
        s = 1 if sliding[i] else 0
        j = _find(new_pf[:, 0], new_pf[:, 1], n_new, p, f)
        if j < 0:
            new_pf[n_new, 0] = p
            new_pf[n_new, 1] = f
            j = n_new
            n_new += 1
        new_is[j, 0] = i
        new_is[j, 1] = s
        a = _find(act_pf[:, 0], act_pf[:, 1], n_act, p, f)
        kind = -1
        if a < 0:
            kind = BEGIN
        elif act_is[a, 1] != s:
            kind = SLIP if s else STICK
        if kind >= 0:
            _event_row(ev_i, ev_f, ne, step, kind, ints[0, i], ints[1, i], vecs[0, i],
                       vecs[1, i], vecs[4, i], tangent[i], fn[i])  # fmt: skip
            ne += 1
    if impact:
        for i in range(nc):
            if not hit[i]:
                continue
            _event_row(ev_i, ev_f, ne, step, IMPACT_ROW, ints[0, i], ints[1, i], vecs[0, i],
                       vecs[1, i], vecs[4, i], p_impact[i], np.nan)  # fmt: skip
            ev_f[ne, 10] = vn_before[i]
            ev_f[ne, 11] = vn_after[i]
            ev_f[ne, 12] = ke_before
            ev_f[ne, 13] = ke_after
            ne += 1
    for a in range(n_act):
        if _find(new_pf[:, 0], new_pf[:, 1], n_new, act_pf[a, 0], act_pf[a, 1]) >= 0:
            continue
        i = act_is[a, 0]  # among the last step's contacts
        _event_row(ev_i, ev_f, ne, step, END, last_i[0, i], last_i[1, i], last_v[0, i],
                   last_v[1, i], last_v[4, i], last_v[4, i], 0.0)  # fmt: skip
        for c in range(3):  # no tangent impulse (no array of zeros a step)
            ev_f[ne, 7 + c] = 0.0
        ne += 1
    for j in range(n_new):
        act_pf[j, 0] = new_pf[j, 0]
        act_pf[j, 1] = new_pf[j, 1]
        act_is[j, 0] = new_is[j, 0]
        act_is[j, 1] = new_is[j, 1]
    return ne, n_new


@njit(cache=True)
def keep_warm(stage):
    """The loop keeps the step: so are its changes to the loop's copy of the warm store
    (lcp/warm_table.mark on the record's ``wtab``, ``wund``)."""
    mark(stage.wtab, stage.wund)


@njit(cache=True)
def keep_last(nc, ints, vecs, gap, ra, rb, last_i, last_v, last_f):
    """The step's contacts as the last step's (``last_f`` (3, C): gap, radius_a,
    radius_b)."""
    for i in range(nc):
        for a in range(6):
            last_i[a, i] = ints[a, i]
        for a in range(5):
            for c in range(3):
                last_v[a, i, c] = vecs[a, i, c]
        last_f[0, i] = gap[i]
        last_f[1, i] = ra[i]
        last_f[2, i] = rb[i]


@njit(cache=True)
def record_contacts(step, nc, ints, vecs, gap, fn, tangent, rc_i, rc_f, n):
    """The contact rows of a recorded step (``Simulator._record``), written from row ``n`` of
    ``rc_i`` (rows, 3: step, body_a, body_b) and ``rc_f`` (rows, 11: mid point, normal,
    normal impulse, tangent impulse, gap). Returns the rows now."""
    for i in range(nc):
        rc_i[n, 0] = step
        rc_i[n, 1] = ints[0, i]
        rc_i[n, 2] = ints[1, i]
        for c in range(3):
            rc_f[n, c] = 0.5 * (vecs[0, i, c] + vecs[1, i, c])
            rc_f[n, 3 + c] = vecs[4, i, c]
            rc_f[n, 7 + c] = tangent[i, c]
        rc_f[n, 6] = fn[i]
        rc_f[n, 10] = gap[i]
        n += 1
    return n


@njit(cache=True)
def stage_contacts(pairs, Rw, pw, bc, R_world, p_world, stage):
    """:func:`contact_set` into the stage record: its contacts become the record's ``ints``,
    ``vecs``, ``gap``, ``ra``, ``rb``. Returns nc (-1: Python must detect them)."""
    nc, ints, vecs, gap, ra, rb = contact_set(pairs, Rw, pw, bc, R_world, p_world, stage)
    stage.ints = ints
    stage.vecs = vecs
    stage.gap = gap
    stage.ra = ra
    stage.rb = rb
    return nc


@njit(cache=True)
def stage_joint_rows(stage, lower, upper, qi, vi, fdof, q, v, v_free, dt, margin, stab, v_max):
    """The step's 1-DoF joint rows into the contact step's record, its j_* fields as
    ``contact_fused.joint_row_fields`` makes them of the rows ``OSStepper._joint_rows`` builds
    (``JointLimits.rows``): the near limits by ``joint_rows._near_limits`` at (q, v, v_free)
    (lower, upper: each v index's bounds, rad or m; qi, vi: the q and v index of each 1-DoF
    joint; margin, stab, v_max: the limits' margin, the stabilisation and
    max_recovery_speed), then the (+e_k, -e_k) pair of each friction DoF ``fdof`` with no
    allowance. The friction bounds F dt (``j_bound``) are the record's own, the same every
    step. Returns the number of limit rows, or -1 when there are some and the record holds no
    compilation of the joint-row kernel yet (its ``jtab`` empty: the step is Python's, which
    compiles it, :meth:`ContactStage.arrays`)."""
    dof, sign, shift, gap = stage.jb_dof, stage.jb_sign, stage.jb_shift, stage.jb_gap
    qv = stage.jb_qv
    for i in range(qv.shape[0]):
        qv[i] = np.nan  # joint_rows.q_of_v: a free joint's components
    for j in range(qi.shape[0]):
        qv[vi[j]] = q[qi[j]]
    nl = _near_limits(lower, upper, qv, v, v_free, dt, margin, stab, v_max, dof, sign, gap, shift)
    n = nl
    for j in range(fdof.shape[0]):
        dof[n] = fdof[j]
        sign[n] = 1.0
        shift[n] = 0.0
        dof[n + 1] = fdof[j]
        sign[n + 1] = -1.0
        shift[n + 1] = 0.0
        n += 2
    s = stage.step
    s.j_dof = borrowed(dof[:n])
    s.j_sign = borrowed(sign[:n])
    s.j_shift = borrowed(shift[:n])
    s.j_gap = borrowed(gap[:nl])
    return -1 if nl and s.jtab.shape[0] == 0 else nl


@njit(cache=True)
def stage_step(stage, q, v, tau, qdd, v_new):
    """:func:`fused_step` on the record's contacts (:func:`stage_contacts`), its outputs in
    the record's ``step``; v_new gets v+. Returns (its code, the LCP's rows)."""
    return fused_step(stage, q, v, tau, qdd, v_new)


@njit(cache=True)
def stage_events(stage, step, nc):
    """The contact events of step ``step`` (:func:`record_events`) from the record's
    ``nc`` contacts and contact step (none: ``nc`` 0), then those contacts as the last
    step's (:func:`keep_last`); the record's counters ``cst`` updated."""
    info = stage.info
    cst = stage.cst
    s = stage.step  # the contact step's outputs
    # the keys' work: the contact step's int buffer, free after the step (c_view: C layout)
    work = s.wi if s.wi.shape[0] >= 4 * nc else np.empty(4 * nc, dtype=np.int64)
    cst[2], cst[0] = record_events(
        step, nc, stage.ints, stage.vecs, s.fn, s.tangent, s.sliding,
        nc > 0 and info[I_IMPACT] != 0.0, s.hit, s.p_impact, s.vn_before, s.vn_after,
        info[I_KE_BEFORE], info[I_KE_AFTER], stage.act_pf, stage.act_is, cst[0], stage.last_i,
        stage.last_v, stage.ev_i, stage.ev_f, cst[2], work,
    )  # fmt: skip
    keep_last(nc, stage.ints, stage.vecs, stage.gap, stage.ra, stage.rb, stage.last_i,
              stage.last_v, stage.last_f)  # fmt: skip
    cst[1] = nc


@njit(cache=True)
def stage_rows(stage, step, nc):
    """The contact rows of recorded step ``step`` (:func:`record_contacts`) from the
    record's ``nc`` contacts and contact step."""
    cst = stage.cst
    s = stage.step  # the contact step's outputs
    cst[3] = record_contacts(
        step, nc, stage.ints, stage.vecs, stage.gap, s.fn, s.tangent, stage.rc_i, stage.rc_f,
        cst[3],
    )  # fmt: skip


#: contact_fused.contact_signature(), made at the first ContactStage.link of the process
_contact_sig = None
#: the contact step's address table (native_call.address_table) as the last
#: ContactStage.link of this process made it, and the number of compilations it lists:
#: a later link reuses it while the dispatcher holds no other (ContactStage.warm)
_linked: tuple[int, np.ndarray] | None = None


def _same(a, b) -> bool:
    """Whether a record's field ``a`` is ``b``: the same object, or an equal float (the
    options' numbers are converted each call)."""
    return a is b or (type(a) is float and a == b)


class ContactStage:
    """The contact stage of one :class:`~mbsim.simcore.free_loop.FreeLoop`: the record
    :func:`free_run_kernel` takes (module docstring) and the state it carries between
    calls (the contacts acting, the last step's contacts)."""

    @staticmethod
    def eligible(sim) -> bool:
        """Whether the loop may take the contact steps of ``sim`` at all: the compiled
        contact step may (``ContactFuser.eligible``), the scene has no per-pair margins and
        the contact parameters come from the simulator's pair table (or the options')."""
        st = sim.stepper
        c = st.collision
        if c is None or c._margin_table is not None or not ContactFuser.eligible(st):
            return False
        f = st.opt.pair_params_fn
        return f is None or f == sim._contact_params

    def __init__(self, sim) -> None:
        st = sim.stepper
        m, d, o, c = st.model, st.data, st.opt, st.collision
        fuser = st._fused
        fuser._bind()
        fuser._settings = None  # pivot caps read now (ContactFuser.step's rule)
        from mbsim.simcore.contact_fused import budget, lemke_module, pivot_caps

        self._settings = (budget.CHUNK_FLOPS, lemke_module.default_max_pivots)
        max_rows, caps = pivot_caps()
        n = c.n_shapes
        if o.pair_params_fn is None:
            mu, eps = np.full((n, n), float(o.mu)), np.full((n, n), float(o.restitution))
        else:
            mu, eps = sim._pair_mu, sim._pair_eps
        kernels = c._kernels if all(x is None for x in c._kernels) else ALL_KERNELS
        k = max(c._buf.shape[0], 64)
        rows = max(c._out_i.shape[0], 4 * MAX_CONTACTS)
        self.detect = (
            c.allowed, c._fpack, c._ipack, c._offs, np.ascontiguousarray(c.ground, np.float64),
            c._params, np.zeros((k, 10)), np.zeros(k, np.int64), np.zeros((rows, 3), np.int64),
            np.zeros((rows, 10)), np.zeros((16, 3), np.int64), c._tree_state, *kernels,
            int(c.n_shapes),
            c._shape_kind, c._shape_radius, int(c.cap) if c.manifold == BODY_PAIR else 0,
        )  # fmt: skip
        #: the contact step record's fields that do not change between the loop's calls
        #: (:meth:`record` puts the warm start's in): the Model and Data arrays, the edge
        #: angles, the options and the pivot caps
        self._head = (*fuser._head,)
        self._middle = (*fuser._angles,)
        self._opts = (*fuser._opts, caps)
        #: the contact step's work buffers (contact_fused.step_work): every work array of a
        #: step of up to WORK_CONTACTS contacts is a view of them (a larger step makes its own)
        nfw, niw = step_work(WORK_CONTACTS, m.nb, m.nv, fuser._k)
        self._work = (np.zeros(nfw), np.zeros(niw, np.int64))
        self._core = o.curvature_point == "core"
        self._tabs = (np.ascontiguousarray(mu, np.float64), np.ascontiguousarray(eps, np.float64))
        self.ktab = np.zeros((0, 2), np.int64)
        self.linked = False
        C = MAX_CONTACTS
        self.act_pf = np.zeros((C, 2), np.int64)
        self.act_is = np.zeros((C, 2), np.int64)
        self.last_i = np.zeros((6, C), np.int64)
        self.last_v = np.zeros((5, C, 3))
        self.last_f = np.zeros((3, C))
        self.info = np.zeros(10)
        self.max_rows = min(int(max_rows), MAX_CONTACTS * (fuser._k + 1))
        self._kmax = int(max_rows)
        #: the loop's copy of the warm store (lcp/warm_table.py)
        self.wtable = WarmTable(self.max_rows)
        self.gain = np.zeros(7)  # the limit step's info slots of a gain row (free_loop.py)
        self.key = (st, m, d, o, c)
        self._ev = self._rc = self._cd = None
        #: the counters and the summary's penetration and residual the kernel reads and
        #: writes (free_loop.py), filled by :meth:`arrays` each call
        self.cst = np.zeros(5, np.int64)
        self.stats = np.zeros(2)
        #: the simulator's contacts acting and last step's contacts the arrays hold (the
        #: objects: :meth:`arrays`, :meth:`results`); the contact step's record and the
        #: arrays it was made of (:meth:`arrays`); the stage record and its fields (:meth:`record`)
        self._held = (None, None)
        self._step = self._step_key = self._record = None
        e = np.zeros(0)
        #: the record's step contacts before the first
        self._empty = (np.zeros((6, 0), np.int64), np.zeros((5, 0, 3)), e, e, e)
        #: the joint rows: :func:`stage_joint_rows` puts each contact step's rows in the
        #: record's j_* fields when the model has limits or friction; the record keeps the
        #: friction bounds F dt (``joint_row_fields``' j_bound, N m s or N s). The table of
        #: the contact step's joint-row kernel (contact_fused.joint_rows_table) is compiled
        #: now for a model with friction, else taken once a step of the run has compiled it
        #: (:meth:`arrays`; until then the loop leaves a contact step with limit rows to
        #: Python, which compiles it)
        jl = st.joint_limits
        self._jrows, self._jtab = _NO_ROWS, EMPTY
        nf = 0
        if jl is not None and bool(np.any(jl.friction > 0)):
            fdof = np.flatnonzero(jl.friction > 0)
            nf = fdof.shape[0]
            bound = np.asarray(jl.friction[fdof], dtype=np.float64) * float(o.dt)
            self._jrows = (*_NO_ROWS[:3], bound, _NO_ROWS[4])
            self._jtab = joint_rows_table()
        self._joint = jl is not None
        nr = 2 * m.nv + 2 * nf  # JointLimits.rows: at most two limit rows a DoF
        #: the buffers of the contact step's pair parameters and outputs (:func:`fused_step`),
        #: then of its joint rows (:func:`stage_joint_rows`), then of the step's contacts
        #: (:func:`contact_set`)
        self._bufs = (
            np.zeros(C), np.zeros(C), np.zeros(C * (fuser._k + 1) + nr + nf), np.zeros(C),
            np.zeros((C, 3)),
            np.zeros(C, np.bool_), np.zeros(C, np.bool_), np.zeros(C), np.zeros(C),
            np.zeros((C, 3)), np.zeros(nr, np.int64), np.zeros(nr), np.zeros(nr), np.zeros(nr),
            np.zeros(m.nv), np.zeros(6 * C, np.int64), np.zeros(18 * C),
        )  # fmt: skip

    def link(self) -> None:
        """Compile (or load from numba's cache) ``contact_step_kernel`` for the record type
        ContactFuser.step passes, which is that of :func:`fused_step`'s call, and put its
        address in ``ktab`` (native_call.py). Called before the loop's first call with this
        stage, after the compile-ahead helper is done (warmup.wait), or before the run's
        first call when :meth:`warm`."""
        global _contact_sig, _linked
        if _linked is not None and len(contact_step_kernel.overloads) == _linked[0]:
            # compiled in this process already: the same table (the kernel only reads it;
            # numba's compile call and the table's making cost ~0.5 ms a run)
            self.ktab = _linked[1]
            self.linked = True
            return
        if _contact_sig is None:  # the same for any model and options: built once (~1 ms)
            from mbsim.simcore.contact_fused import contact_signature

            _contact_sig = contact_signature()
        contact_step_kernel.compile(_contact_sig)
        self.ktab = address_table(contact_step_kernel)
        self.linked = True
        _linked = (len(contact_step_kernel.overloads), self.ktab)

    @staticmethod
    def warm() -> bool:
        """Whether :meth:`link` costs no compile, load or wait: a stage of this process
        linked the contact step already (numba's dispatcher holds it; the compile-ahead
        helper has nothing left to give it), so a run may link its stage before its first
        contact (``FreeLoop.link_early``)."""
        return _linked is not None

    def current(self) -> bool:
        """Whether the Lemke pivot caps the step record holds are those of the Python path's
        settings now (ContactFuser.step reads them again when they change)."""
        from mbsim.simcore.contact_fused import budget, lemke_module

        return self._settings == (budget.CHUNK_FLOPS, lemke_module.default_max_pivots)

    def arrays(
        self, sim, summary, n_max: int, rows: int, most: int = 0, most_rows: int = 0
    ) -> StageRef:
        """free_run_kernel's ``cl``: the stage record (:func:`make_stage`) of the tuples and
        the state of the contacts acting and of the last step's contacts, from the
        simulator's (``Simulator._active``, ``_prev_contacts``: the step-by-step path's own
        bookkeeping, so either path may take the next step), buffers for ``n_max`` steps and
        ``rows`` recorded rows (made for ``most`` and ``most_rows`` when larger: the run
        loop's longest call, so that its later calls keep them and the record)."""
        had = sim.stepper._fast._last_had_contact
        n_act = len(sim._active) if had else 0
        n_last = len(sim._prev_contacts) if had else 0
        # the arrays already hold these (the last call's results made the simulator's
        # objects of them, or this method filled them from these objects, and no step of
        # the step-by-step path replaced them since): not again
        held = self._held
        self._held = (None, None)  # the call changes them (results says to what)
        if had and not (held[0] is sim._active and held[1] is sim._prev_contacts):
            for j, ((p, f), (i, sliding)) in enumerate(sim._active.items()):
                self.act_pf[j] = p, f
                self.act_is[j] = i, 1 if sliding else 0
            c = sim._prev_contacts
            for a, name in enumerate(("body_a", "body_b", "geom_a", "geom_b", "pair_id",
                                      "feature_key")):  # fmt: skip
                self.last_i[a, :n_last] = getattr(c, name)
            for a, name in enumerate(("point_a", "point_b", "local_a", "local_b", "normal")):
                self.last_v[a, :n_last] = getattr(c, name)
            for a, name in enumerate(("gap", "radius_a", "radius_b")):
                self.last_f[a, :n_last] = getattr(c, name)
        # each step adds at most 3 MAX_CONTACTS event rows and MAX_CONTACTS contact rows;
        # the kernel stops (BUFFERS) before a step they might not hold
        # (np.empty: the kernel writes every element of a row it counts, and only counted
        # rows are read; zeroing ~2 MB cost ~0.3 ms a run)
        ev_rows = max(6 * MAX_CONTACTS, min(n_max * 8, 1 << 15))
        if self._ev is None or self._ev[0].shape[0] < ev_rows:
            ev_rows = max(ev_rows, min(most * 8, 1 << 15))
            self._ev = (np.empty((ev_rows, 4), np.int64), np.empty((ev_rows, 14)))
        rc_rows = max(2 * MAX_CONTACTS, min((rows + 1) * 8, 1 << 14))
        if self._rc is None or self._rc[0].shape[0] < rc_rows:
            rc_rows = max(rc_rows, min((most_rows + 1) * 8, 1 << 14))
            self._rc = (np.empty((rc_rows, 3), np.int64), np.empty((rc_rows, 11)))
        if self._cd is None or self._cd.shape[0] < max(rows, 1):
            self._cd = np.empty((max(rows, most_rows, 1), 2))
        self.cst[:] = (n_act, n_last, 0, 0, 0)
        # the warm start's store (ContactFuser.step's guess and remember), copied in
        store = getattr(sim.stepper.formulation, "warm", None)
        warm = store is not None and warm_start.ENABLED
        self._store = store if warm else None
        if warm:
            self.wtable.load(store)
        self.stats[:] = (summary.max_penetration, summary.worst_lcp_residual)
        o = sim.stepper.opt
        self._fields = (
            self.act_pf, self.act_is, self.last_i, self.last_v, self.last_f, self.info, self.cst,
            *self._ev, *self._rc, self._cd, self.stats, self.gain, float(o.max_penetration),
            warm, self.wtable.tab, self.wtable.und, *self._empty,
        )  # fmt: skip
        if self._joint and self._jtab.shape[0] == 0 and _joint_table[0] is not None:
            self._jtab = _joint_table[0]  # compiled by a contact step with limit rows
        key = (warm, self.wtable.tab[0], self._jtab)
        if self._step is not None and all(
            a is b for a, b in zip(key, self._step_key, strict=True)
        ):  # the record of the last call: the same arrays; the loop's fused_step puts each
            # step's fields in, as it does for every step after a call's first
            return self.record()
        self._step_key = key
        # the contact step's record (contact_fused.StepType), its step fields empty (the
        # loop's fused_step puts each step's in); the types ContactFuser.step's records have
        nv = sim.stepper.model.nv
        e, e3, ei, eb = np.zeros(0), np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0, np.bool_)
        #: the contact step record's fields (the record borrows them: kept alive here)
        self._step_fields = (
            *self._head, ei, e3, ei, e3, e3, e, e, e, e, e, *self._middle, *self._jrows,
            self._jtab, np.zeros(nv),
            np.zeros(nv), np.zeros(nv), np.zeros(nv), *self._opts, warm, self.wtable.tab,
            self.wtable.und, *self._work, np.zeros(nv), np.zeros(nv), e, e, e3, eb, eb, e, e, e3,
            self.info,
        )  # fmt: skip
        self._step = make_step(*self._step_fields)
        return self.record()

    def record(self) -> StageRef:
        """The stage record of :meth:`arrays`' last call, with the table of the contact
        step's compilations as it is now (:meth:`link` fills it): the last one made when
        its fields are the same objects (the loop's kernels put each step's contacts in)."""
        fields = (self._step, self.ktab, *self._fields)
        made = self._record
        if made is not None and all(map(_same, fields, made[0])):
            return made[1]
        rec = make_stage(
            self.detect, self._step, self.ktab, *self._tabs, self._core, self._kmax,
            *self._fields, *self._bufs,
        )  # fmt: skip
        self._record = (fields, rec)
        return rec

    def results(self, sim, n: int, summary) -> tuple:
        """After a call that took ``n`` steps: (contact steps, event rows, recorded contact
        rows) (``FreeLoop.contact_events``, ``contact_records``), and the simulator's and
        stepper's contact bookkeeping as the step-by-step path leaves it after the last
        step (``Simulator._active``, ``_prev_contacts``, ``FreeStepper._last_had_contact``,
        ``OSStepper._contacts``) and the summary's penetration and worst LCP residual."""
        n_act, n_last, ne, nrc, csteps = (int(x) for x in self.cst)
        if n == 0:
            return 0, None, None
        st = sim.stepper
        if n_last:
            # one copy of each table, the fields its rows (C-contiguous, disjoint)
            li = self.last_i[:, :n_last].copy()
            lv = self.last_v[:, :n_last].copy()
            lf = self.last_f[:, :n_last].copy()
            c = Contacts(
                li[0], li[1], li[2], li[3], lv[0], lv[1], lv[2], lv[3], lv[4], lf[0], li[4],
                li[5], lf[1], lf[2],
            )  # fmt: skip
            sim._prev_contacts = st._contacts = c
        else:
            sim._prev_contacts = None
        sim._active = {
            (int(self.act_pf[j, 0]), int(self.act_pf[j, 1])): (
                int(self.act_is[j, 0]), bool(self.act_is[j, 1])
            )
            for j in range(n_act)
        }  # fmt: skip
        self._held = (sim._active, sim._prev_contacts)
        st._fast._last_had_contact = n_last > 0
        store = self._store
        if store is not None and csteps:
            # the store as the kept steps' remember calls leave it, in its order: the step
            # the loop stopped at (its kernel may have run) is undone
            undo(self.wtable.tab, self.wtable.und)
            self.wtable.save(store)
        summary.max_penetration = float(self.stats[0])
        summary.worst_lcp_residual = max(summary.worst_lcp_residual, float(self.stats[1]))
        events = (self._ev[0][:ne].copy(), self._ev[1][:ne].copy()) if ne else None
        rows = (self._rc[0][:nrc].copy(), self._rc[1][:nrc].copy()) if nrc else None
        return csteps, events, rows


__all__ = [
    "ContactStage", "EVENT_NAMES", "MAX_CONTACTS", "STAGE_FIELDS", "StageRef", "StageType",
    "contact_set", "fused_step", "keep_last", "keep_warm", "make_stage", "record_contacts",
    "record_events", "stage_contacts", "stage_events", "stage_rows", "stage_step",
]  # fmt: skip
