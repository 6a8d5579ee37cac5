"""The per-step kernel (numba): shape poses, then every candidate pair and each ground
half-space through the cheap rejections (:mod:`~mbsim.collision.prefilter`) to the contact
kernel of its kinds, each pair's points reduced to the cap (:mod:`~mbsim.collision.manifold`),
and the result arrays.

Which method each pair gets (exact = closed form or finite enumeration, error ~1e-15 m):

=====================================  ===================================================
pair                                   method
=====================================  ===================================================
any shape - ground half-space          exact (:mod:`~mbsim.collision.ground`)
sphere - sphere, sphere/capsule -      exact: closest points of the core segments; parallel
capsule                                overlapping capsules give both ends of the overlap
                                       (:mod:`~mbsim.collision.round_pairs`)
sphere - box, cylinder or mesh         exact: closest point on the solid (mesh: brute
                                       force over its triangles)
{sphere, capsule, box, convex} pairs   exact: SAT + feature enumeration + face clipping
                                       (:mod:`mbsim.collision.polytope`) when the work
                                       (vertex x face + edge x edge counts) is under
                                       ``work_limit``; else FCL
capsule - mesh                         exact: signed mesh distance of the core's ends and of
                                       its point nearest the mesh (brute force over the
                                       triangles, if 7 x triangles <= work_limit)
mesh - box or convex                   exact for vertex-face contacts: mesh vertices against
                                       the polytope, polytope vertices against the mesh
                                       (:mod:`~mbsim.collision.mesh_pairs`); FCL's collide
                                       when no vertex is within the margin
mesh - mesh                            exact for face-face and vertex-face contacts: facing
                                       triangle pairs clipped, the reference face's normal
                                       (:func:`~mbsim.collision.mesh_pairs.mesh_mesh`), if
                                       triangles x triangles <= MESH_PAIR_FACTOR x
                                       work_limit; else FCL, unless the meshes' sphere
                                       trees prove every triangle pair beyond the
                                       margin (:mod:`~mbsim.collision.mesh_tree`)
cylinder - other, mesh - other         FCL, refined (:mod:`mbsim.collision.fcl_narrow`)
=====================================  ===================================================

Pairs are ordered (A, B) with B static when one is (a ground half-space is always B), else A the
lower shape index; normals point from B to A; gap = (point_a - point_b) . normal.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from mbsim.collision.ground import cylinder_plane, ground_contacts
from mbsim.collision.manifold import reduce_manifold
from mbsim.collision.mesh_pairs import APART_TOL, capsule_mesh, mesh_mesh, mesh_polytope_in
from mbsim.collision.mesh_tree import BOUND_SLACK, LEAF_BUDGET, NODE_COLS, mesh_pair_apart
from mbsim.collision.polytope import (
    box_rows,
    convex_pair_in,
    pair_work_rows,
    shape_edges,
    shape_faces,
    world_poly_into,
)
from mbsim.collision.prefilter import (
    above_halfspace,
    boxes_apart,
    boxes_apart_in,
    hulls_apart,
    outside_box,
    spheres_apart,
)
from mbsim.collision.round_pairs import round_pair, sphere_solid
from mbsim.collision.shapes import BOX, CAPSULE, CONVEX, CYLINDER, MESH, SPHERE
from mbsim.collision.table import (
    BCX,
    BODY,
    DN,
    EN,
    FN,
    KIND,
    MTN,
    RAD,
    VN,
)


@njit(cache=True)
def shape_poses(si, sf, local_R, local_p, R_world, p_world, Rw, pw, bc, include_static):
    """World pose of every shape, R = R_body R_local and p = R_body p_local + p_body (m), and
    the world centre ``bc`` of its bounding sphere. Static shapes only if include_static."""
    for g in range(si.shape[0]):
        b = si[g, BODY]
        if b < 0:
            if not include_static:
                continue
            for a in range(3):  # loops, not slice assignment: see primitives.copy3
                pw[g, a] = local_p[g, a]
                for k in range(3):
                    Rw[g, a, k] = local_R[g, a, k]
        else:
            Rb = R_world[b]
            for a in range(3):
                s = p_world[b, a]
                for k in range(3):
                    s += Rb[a, k] * local_p[g, k]
                    t = 0.0
                    for m in range(3):
                        t += Rb[a, m] * local_R[g, m, k]
                    Rw[g, a, k] = t
                pw[g, a] = s
        for a in range(3):
            bc[g, a] = pw[g, a] + (
                Rw[g, a, 0] * sf[g, BCX]
                + Rw[g, a, 1] * sf[g, BCX + 1]
                + Rw[g, a, 2] * sf[g, BCX + 2]
            )


def _view_codegen(ndim):
    def codegen(context, builder, sig, args):
        ary = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder)
        pairs = zip(args[1:], sig.args[1:], strict=True)
        dims = [context.cast(builder, v, t, types.intp) for v, t in pairs]
        item = context.get_constant(types.intp, context.get_abi_sizeof(ary.data.type.pointee))
        shape = dims[1:]
        strides = [item] if ndim == 1 else [builder.mul(shape[1], item), item]
        populate_array(
            out,
            data=builder.gep(ary.data, [dims[0]], inbounds=True),
            shape=shape,
            strides=strides,
            itemsize=item,
            meminfo=None,
            parent=None,
        )
        return out._getvalue()

    return codegen


def _c1(a):
    return isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"


@intrinsic
def _rows(typingctx, a, start, nrows, ncols):
    """The (nrows, ncols) C-contiguous view of the 1D C-contiguous array ``a`` from element
    ``start``: ``a[start : start + nrows * ncols].reshape((nrows, ncols))`` without reshape's
    run-time checks (~25 ns each) and without a reference to ``a``'s memory (no meminfo:
    numba counts no references to it, an atomic update ~5 ns each way wherever a kernel
    takes it; issue 15). Only for use while the caller holds ``a`` (the packed table, an
    argument): never returned to Python. The caller guarantees the block lies inside ``a``
    (the packed table's counts)."""
    if not _c1(a):
        return None
    return a.copy(ndim=2, layout="C")(a, start, nrows, ncols), _view_codegen(2)


@intrinsic
def _block(typingctx, a, start, count):
    """``a[start : start + count]`` for a 1D C-contiguous ``a``, unchecked and without a
    reference to ``a``'s memory, as :func:`_rows`."""
    if not _c1(a):
        return None
    return a.copy(layout="C")(a, start, count), _view_codegen(1)


@intrinsic
def _flat(typingctx, a, count):
    """The first ``count`` elements of the C-contiguous array ``a`` (any rank) as a 1D view,
    unchecked and without a reference to ``a``'s memory, as :func:`_rows`."""
    if not (isinstance(a, types.Array) and a.layout == "C"):
        return None
    zero = types.intp
    sig = types.Array(a.dtype, 1, "C")(a, count)

    def codegen(context, builder, sig_, args):
        start = context.get_constant(zero, 0)
        inner = types.Array(a.dtype, 1, "C")(a, zero, count)
        return _view_codegen(1)(context, builder, inner, [args[0], start, args[1]])

    return sig, codegen


@njit(inline="always")
def _layout(offs):
    """Where each array of the packed table starts (see :mod:`mbsim.collision.table`): the
    counts ``offs[0:8]`` (n, nv, nf, nfv, ne, nd, nmv, nmt), then the starts in ``fpack`` of
    sf, V, FN, FD, ED, MV, MB and in ``ipack`` of si, FP, FV, E, MT."""
    n, nv, nf, nfv, ne, nd, nmv, nmt = (
        offs[0],
        offs[1],
        offs[2],
        offs[3],
        offs[4],
        offs[5],
        offs[6],
        offs[7],
    )
    v0 = 15 * n
    fn0 = v0 + 3 * nv
    fd0 = fn0 + 3 * nf
    ed0 = fd0 + nf
    mv0 = ed0 + 3 * nd
    mb0 = mv0 + 3 * nmv
    fp0 = 14 * n
    fv0 = fp0 + 2 * nf
    e0 = fv0 + nfv
    mt0 = e0 + 2 * ne
    counts = (n, nv, nf, nfv, ne, nd, nmv, nmt)
    return counts, (0, v0, fn0, fd0, ed0, mv0, mb0), (0, fp0, fv0, e0, mt0)


@njit(cache=True)
def tree_arrays(fpack, ipack, offs):
    """The meshes' sphere trees packed after the table
    (:func:`mbsim.collision.mesh_tree.build_trees`): TN (nn, NODE_COLS), TI (nn, 3), TP (ntp,),
    TR (n,), as views without references (:func:`unpack_unowned`'s rules)."""
    (n, nv, nf, nfv, ne, nd, nmv, nmt), f, i = _layout(offs)
    nn, ntp = offs[8], offs[9]
    tn0 = f[6] + 4 * nmt
    tr0 = i[4] + 3 * nmt
    TN = _rows(fpack, tn0, nn, NODE_COLS)
    TR = _block(ipack, tr0, n)
    TI = _rows(ipack, tr0 + n, nn, 3)
    TP = _block(ipack, tr0 + n + 3 * nn, ntp)
    return TN, TI, TP, TR


@njit(cache=True)
def unpack(fpack, ipack, offs):
    """The shape table's arrays (see :mod:`mbsim.collision.table`) from their packed form
    (views; from Python, tests: :func:`unpack_unowned` is the kernels')."""
    (n, nv, nf, nfv, ne, nd, nmv, nmt), f, i = _layout(offs)
    sf = fpack[f[0] : f[0] + 15 * n].reshape((n, 15))
    V = fpack[f[1] : f[1] + 3 * nv].reshape((nv, 3))
    FN_ = fpack[f[2] : f[2] + 3 * nf].reshape((nf, 3))
    FD_ = fpack[f[3] : f[3] + nf]
    ED = fpack[f[4] : f[4] + 3 * nd].reshape((nd, 3))
    MV = fpack[f[5] : f[5] + 3 * nmv].reshape((nmv, 3))
    MB = fpack[f[6] : f[6] + 4 * nmt].reshape((nmt, 4))
    si = ipack[i[0] : i[0] + 14 * n].reshape((n, 14))
    FP = ipack[i[1] : i[1] + 2 * nf].reshape((nf, 2))
    FV = ipack[i[2] : i[2] + nfv]
    E = ipack[i[3] : i[3] + 2 * ne].reshape((ne, 2))
    MT = ipack[i[4] : i[4] + 3 * nmt].reshape((nmt, 3))
    return si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB


@njit(cache=True)
def unpack_unowned(fpack, ipack, offs):
    """:func:`unpack` for the kernels: views without references (:func:`_rows`,
    :func:`_block`; ~10 ns for all, against ~300 ns for reshapes and their reference
    counts), valid while the caller holds ``fpack`` and ``ipack``. Never return them to
    Python (they would not keep the table alive): call :func:`unpack` there."""
    (n, nv, nf, nfv, ne, nd, nmv, nmt), f, i = _layout(offs)
    sf = _rows(fpack, f[0], n, 15)
    V = _rows(fpack, f[1], nv, 3)
    FN_ = _rows(fpack, f[2], nf, 3)
    FD_ = _block(fpack, f[3], nf)
    ED = _rows(fpack, f[4], nd, 3)
    MV = _rows(fpack, f[5], nmv, 3)
    MB = _rows(fpack, f[6], nmt, 4)
    si = _rows(ipack, i[0], n, 14)
    FP = _rows(ipack, i[1], nf, 2)
    FV = _block(ipack, i[2], nfv)
    E = _rows(ipack, i[3], ne, 2)
    MT = _rows(ipack, i[4], nmt, 3)
    return si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB


# --------------------------------------------------------------------------- dispatch


def pair_kernel_set(kind: np.ndarray, body: np.ndarray) -> tuple[bool | None, ...]:
    """(polytopes, meshes, cylinders, fcl): True for the optional kernels a scene may need,
    None for those it cannot, from its shapes' kinds and bodies (-1 static).

    A pair has at least one moving shape (two static shapes are never checked, see
    :mod:`mbsim.collision.filters`; static shapes are not checked against the ground plane),
    so the kind pairs possible are (moving kind, any kind). The polytope kernel (SAT +
    clipping) takes {sphere, capsule, box, convex} pairs with a box or convex in them, other
    than sphere - box; the mesh kernels take the pairs with a mesh, the cylinder kernels
    (sphere - cylinder, cylinder - ground plane) those with a cylinder; a pair goes to FCL
    (``fcl``) only through one of these three. numba types None as a constant and compiles
    :func:`narrowphase` once per set without the kernels left out: a scene of spheres,
    capsules and boxes never compiles the mesh kernels, one of spheres on static boxes
    (the paper's pendulum) not the polytope or FCL hand-off code either (most of the first
    run's compile time, issue 15). Results do not depend on the set: a kernel left out is
    never reached.
    """
    kind = np.asarray(kind)
    moving = {int(k) for k in kind[np.asarray(body) >= 0]}
    every = {int(k) for k in kind}
    possible = {frozenset((a, b)) for a in moving for b in every}
    convex = {SPHERE, CAPSULE, BOX, CONVEX}
    polytopes = any(p <= convex and p & {BOX, CONVEX} and p != {SPHERE, BOX} for p in possible)
    meshes = any(MESH in p for p in possible)
    cylinders = any(CYLINDER in p for p in possible)
    fcl = polytopes or meshes or cylinders
    return tuple(True if need else None for need in (polytopes, meshes, cylinders, fcl))


@njit(cache=True)
def _flip(buf, keys, count):
    """Swap the roles of A and B in the first ``count`` rows (points swapped, normal negated)."""
    for k in range(count):
        for a in range(3):
            t = buf[k, a]
            buf[k, a] = buf[k, 3 + a]
            buf[k, 3 + a] = t
            buf[k, 6 + a] = -buf[k, 6 + a]


#: Mesh-mesh pairs with up to this x work_limit triangle pairs take the exact triangle kernel
#: (bounding-sphere rejection ~2 ns per triangle pair: 25 x 20000 pairs ~1 ms); larger ones go
#: to FCL's BVH.
MESH_PAIR_FACTOR = 25


@njit(cache=True)
def _polytope_work(ga, gb, si):
    """Operation count of the exact convex kernel: vertex x face both ways + edge x edge."""
    va, vb = si[ga, VN], si[gb, VN]
    return va * si[gb, FN] + vb * si[ga, FN] + si[ga, EN] * si[gb, EN] + 1


@njit(cache=True)
def pair_contacts(
    ga, gb, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin, work_limit, buf, keys,
    polytopes, meshes, cylinders,
):  # fmt: skip
    """Contacts of shapes A = ga and B = gb into the pair buffer.

    Returns the count, or -1 when the pair is FCL's (cylinder or mesh involved, or a convex
    pair above ``work_limit``), -2 when only FCL's collide is needed (see mesh_polytope).
    ``polytopes``, ``meshes`` and ``cylinders`` (True, or None for a scene without such
    pairs: see :func:`pair_kernel_set`) keep the polytope, mesh and cylinder kernels; a pair
    whose kernel is left out is FCL's (-1)."""
    ka, kb = si[ga, KIND], si[gb, KIND]
    round_a = ka == SPHERE or ka == CAPSULE
    round_b = kb == SPHERE or kb == CAPSULE
    if round_a and round_b:
        return round_pair(ga, gb, si, sf, Rw, pw, margin, buf, keys)
    if ka == SPHERE and (kb == BOX or kb == CYLINDER):
        return sphere_solid(ga, gb, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, cylinders, None)
    if kb == SPHERE and (ka == BOX or ka == CYLINDER):
        count = sphere_solid(gb, ga, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, cylinders, None)
        _flip(buf, keys, count)
        return count
    # numba prunes a branch on ``x is not None`` when x is typed None: a scene without
    # meshes (polytopes) never compiles their kernels (first-run compile time, issue 15)
    if meshes is not None and (ka == MESH or kb == MESH):
        return _mesh_pair(
            ga, gb, ka, kb, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin,
            work_limit, buf, keys,
        )  # fmt: skip
    if polytopes is None:
        return -1
    poly_a = ka == BOX or ka == CONVEX
    poly_b = kb == BOX or kb == CONVEX
    convex_a = round_a or poly_a
    convex_b = round_b or poly_b
    if not (convex_a and convex_b) or _polytope_work(ga, gb, si) > work_limit:
        return -1
    # both cores in world coordinates and the kernel's work rows in one allocation, as views
    # without reference counts (_rows, _block: ~20 allocations a pair before, issue 15)
    nva, nfa, nda = si[ga, VN], si[ga, FN], si[ga, DN]
    nvb, nfb, ndb = si[gb, VN], si[gb, FN], si[gb, DN]
    nw = pair_work_rows(nva, nvb)
    work = np.empty(3 * (nva + nfa + nda + nvb + nfb + ndb + nw) + nfa + nfb)
    vA = _rows(work, 0, nva, 3)
    o = 3 * nva
    nA = _rows(work, o, nfa, 3)
    o += 3 * nfa
    edA = _rows(work, o, nda, 3)
    o += 3 * nda
    vB = _rows(work, o, nvb, 3)
    o += 3 * nvb
    nB = _rows(work, o, nfb, 3)
    o += 3 * nfb
    edB = _rows(work, o, ndb, 3)
    o += 3 * ndb
    W = _rows(work, o, nw, 3)
    o += 3 * nw
    dA = _block(work, o, nfa)
    dB = _block(work, o + nfa, nfb)
    world_poly_into(ga, si, V, FN_, FD_, ED, Rw, pw, vA, nA, dA, edA)
    world_poly_into(gb, si, V, FN_, FD_, ED, Rw, pw, vB, nB, dB, edB)
    boxes = ka == BOX and kb == BOX
    if boxes:
        box_rows(ga, 0, sf, Rw, pw, W)
        box_rows(gb, 1, sf, Rw, pw, W)
    count = convex_pair_in(
        vA, nA, dA, shape_faces(ga, si, FP), shape_edges(ga, si, E), edA, sf[ga, RAD],
        vB, nB, dB, shape_faces(gb, si, FP), shape_edges(gb, si, E), edB, sf[gb, RAD],
        FV, margin, buf, keys, W, boxes,
    )  # fmt: skip
    # read last (no effect): ``work`` lives until the kernel is done with its views
    return count + 0 * work.shape[0]


@njit(cache=True)
def _mesh_pair(
    ga, gb, ka, kb, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin, work_limit,
    buf, keys,
):  # fmt: skip
    """:func:`pair_contacts` of a pair with a mesh (ka or kb is MESH); -1 (FCL) for the pairs
    and sizes the mesh kernels do not take."""
    if ka == SPHERE:
        return sphere_solid(ga, gb, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, None, True)
    if kb == SPHERE:
        count = sphere_solid(gb, ga, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, None, True)
        _flip(buf, keys, count)
        return count
    if ka == CAPSULE and 7 * si[gb, MTN] <= work_limit:
        return capsule_mesh(ga, gb, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys)
    if kb == CAPSULE and 7 * si[ga, MTN] <= work_limit:
        count = capsule_mesh(gb, ga, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys)
        _flip(buf, keys, count)
        return count
    if ka == MESH and kb == MESH and si[ga, MTN] * si[gb, MTN] <= MESH_PAIR_FACTOR * work_limit:
        return mesh_mesh(ga, gb, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys)
    if ka == MESH and (kb == BOX or kb == CONVEX):
        return _mesh_polytope(
            ga, gb, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin, work_limit,
            buf, keys,
        )  # fmt: skip
    if kb == MESH and (ka == BOX or ka == CONVEX):
        count = _mesh_polytope(
            gb, ga, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin, work_limit,
            buf, keys,
        )  # fmt: skip
        _flip(buf, keys, count)
        return count
    return -1


@njit(cache=True)
def _mesh_polytope(
    gm, gp, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin, work_limit, buf, keys
):  # fmt: skip
    """:func:`~mbsim.collision.mesh_pairs.mesh_polytope` with the polytope's world core and
    the kernel's scratch rows in one allocation, as views without reference counts (five
    allocations before; issue 15)."""
    nv, nf, nd = si[gp, VN], si[gp, FN], si[gp, DN]
    work = np.empty(3 * (nv + nf + nd + 8) + nf)
    vP = _rows(work, 0, nv, 3)
    o = 3 * nv
    nP = _rows(work, o, nf, 3)
    o += 3 * nf
    edP = _rows(work, o, nd, 3)
    o += 3 * nd
    scratch = _rows(work, o, 8, 3)
    dP = _block(work, o + 24, nf)
    world_poly_into(gp, si, V, FN_, FD_, ED, Rw, pw, vP, nP, dP, edP)
    count = mesh_polytope_in(
        gm, gp, si, sf, FP, FV, E, MV, MT, MB, Rw, pw, margin, work_limit, buf, keys, vP, nP,
        dP, edP, scratch,
    )  # fmt: skip
    # read last (no effect): ``work`` lives until the kernel is done with its views
    return count + 0 * work.shape[0]


@njit(cache=True)
def _emit(ga, gb, buf, keys, count, cap, chosen, out_i, out_f, nc):
    """Rows (A, B, key) and (point_a, point_b, normal, gap) of the pair's ``count`` points
    reduced to the cap; returns the new row count. The narrowphase calls it for two or more
    points, :func:`_emit_one` for one."""
    m = reduce_manifold(buf, keys, count, cap, chosen)
    for c in range(m):
        row = chosen[c]
        if nc < out_i.shape[0]:
            out_i[nc, 0] = ga
            out_i[nc, 1] = gb
            out_i[nc, 2] = keys[row]
            for k in range(10):
                out_f[nc, k] = buf[row, k]
        nc += 1
    return nc


@njit(cache=True)
def _emit_one(ga, gb, buf, keys, out_i, out_f, nc):
    """:func:`_emit` of a pair with one point (a foot on the ground): the point as it is (what
    :func:`reduce_manifold` keeps of one point), without its work array; one return reading
    every array, so numba prunes their reference counts (~5 ns each way, issue 15)."""
    if nc < out_i.shape[0]:
        out_i[nc, 0] = ga
        out_i[nc, 1] = gb
        out_i[nc, 2] = keys[0]
        for k in range(10):
            out_f[nc, k] = buf[0, k]
    # read last (no effect): the arrays then all live to this one return
    return nc + 1 + 0 * (buf.shape[0] + keys.shape[0] + out_i.shape[0] + out_f.shape[0])


@intrinsic
def _unowned(typingctx, a):
    """A view of the whole array ``a`` without a reference to its memory (meminfo and parent
    null): numba's reference counts on it are no-ops (:func:`_rows`). Only while the caller
    holds ``a``; never returned to Python."""
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, sig, args):
        ary = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder, ary._getvalue())
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        return out._getvalue()

    return a(a), codegen


@njit(cache=True)
def narrowphase(
    pairs, allowed, fpack, ipack, offs, Rw, pw, bc, ground, params, buf, keys, out_i, out_f,
    fcl_out, tree_state, polytopes, meshes, cylinders, fcl,
):  # fmt: skip
    """Contacts of the candidate pairs and of every shape against each ground half-space
    (:func:`_narrowphase`, on views of its arrays without reference counts: numba increfs and
    decrefs each array argument of a function whose callees can raise, ~5 ns each way; here
    nothing but the call can, and numba prunes them; issue 15)."""
    return _narrowphase(
        _unowned(pairs), _unowned(allowed), _unowned(fpack), _unowned(ipack), _unowned(offs),
        _unowned(Rw), _unowned(pw), _unowned(bc), _unowned(ground), _unowned(params),
        _unowned(buf), _unowned(keys), _unowned(out_i), _unowned(out_f), _unowned(fcl_out),
        _unowned(tree_state), polytopes, meshes, cylinders, fcl,
    )  # fmt: skip


@njit(cache=True)
def _narrowphase(
    pairs, allowed, fpack, ipack, offs, Rw, pw, bc, ground, params, buf, keys, out_i, out_f,
    fcl_out, tree_state, polytopes, meshes, cylinders, fcl,
):  # fmt: skip
    """Contacts of the candidate pairs and of every shape against each ground half-space.

    pairs: candidate shape pairs from the broadphase (any order, may repeat). allowed:
    (n+m', n+m') filter matrix (row/column n + k = half-space k, m' = max(m, 1)).
    fpack/ipack/offs: the packed shape table. Rw, pw, bc: shape poses and bounding-sphere
    centres (world). ground: (m, 4), row k (nx, ny, nz, d) of the half-space n . x <= d
    (m = 0: none). params: (margin m, cap, work_limit). Writes
    rows of out_i (A, B, key) and out_f (point_a, point_b, normal, gap) and returns (needed
    rows, FCL pair count); when a count exceeds its buffer the caller grows it and calls
    again. FCL's pairs go to fcl_out as (A, B, collide only). tree_state: the certificates of
    large mesh - mesh pairs proved apart (:func:`~mbsim.collision.mesh_tree.mesh_pair_apart`,
    updated here; any table gives the same contacts, a kept one saves traversals).
    polytopes, meshes, cylinders, fcl: the scene's :func:`pair_kernel_set` (numba compiles
    one version per set, with only those kernels).
    """
    si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB = unpack_unowned(fpack, ipack, offs)
    TN, TI, TP, TR = tree_arrays(fpack, ipack, offs)
    margin = params[0]
    tree_tol = margin + APART_TOL
    cap = int(params[1])
    work_limit = int(params[2])
    n = si.shape[0]
    chosen = np.empty(max(cap, 1), dtype=np.int64)
    # boxes_apart_in's work array: the pair buffer's first 33 floats (free while a pair is
    # tested: its points are written after, and emitted before the next pair's test), so
    # no allocation; every caller's buffer has 64 rows or more
    big = buf.shape[0] * buf.shape[1] >= 33
    bw = _flat(buf, 33 if big else 0)
    nc = np.int64(0)  # not a literal 0: numba would compile _emit() for both types
    nfcl = 0
    for k in range(pairs.shape[0]):
        i, j = pairs[k, 0], pairs[k, 1]
        if i == j or not allowed[i, j]:
            continue
        if spheres_apart(i, j, sf, bc, margin):
            continue
        if outside_box(i, j, si, sf, Rw, pw, bc, margin) or outside_box(
            j, i, si, sf, Rw, pw, bc, margin
        ):
            continue
        if (
            si[i, KIND] != SPHERE
            and si[j, KIND] != SPHERE
            and (
                boxes_apart_in(i, j, sf, Rw, pw, margin, bw)
                if big
                else boxes_apart(i, j, sf, Rw, pw, margin)
            )
        ):
            continue
        if si[i, BODY] < 0 or (si[j, BODY] >= 0 and j < i):
            i, j = j, i  # B static if either is; otherwise A the lower index
        count = pair_contacts(i, j, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin,
                              work_limit, buf, keys, polytopes, meshes, cylinders)  # fmt: skip
        if fcl is not None and count < 0:  # count >= 0 when fcl is None (pair_kernel_set)
            if hulls_apart(i, j, si, sf, V, Rw, pw, bc, margin, 12):
                continue
            if (
                meshes is not None
                and si[i, KIND] == MESH
                and si[j, KIND] == MESH
                and mesh_pair_apart(
                    i,
                    j,
                    si,
                    MV,
                    MT,
                    MB,
                    TN,
                    TI,
                    TP,
                    TR,
                    Rw,
                    pw,
                    tree_tol,
                    BOUND_SLACK,
                    LEAF_BUDGET,
                    tree_state,
                )
            ):
                continue  # every triangle pair beyond the margin: FCL would find nothing
            if nfcl < fcl_out.shape[0]:
                fcl_out[nfcl, 0] = i
                fcl_out[nfcl, 1] = j
                fcl_out[nfcl, 2] = 1 if count == -2 else 0
            nfcl += 1
            continue
        if count == 1:
            nc = _emit_one(i, j, buf, keys, out_i, out_f, nc)
        elif count > 1:
            nc = _emit(i, j, buf, keys, count, cap, chosen, out_i, out_f, nc)
    for k in range(ground.shape[0]):
        hn = ground[k, :3]
        hd = ground[k, 3]
        gh = n + k  # the half-space's shape index
        for g in range(n):
            if si[g, BODY] < 0 or not allowed[g, gh]:
                continue
            if above_halfspace(g, sf, bc, ground, k, margin):
                continue
            if cylinders is not None and si[g, KIND] == CYLINDER:
                count = cylinder_plane(g, sf, Rw[g], pw[g], hn, hd, margin, buf, keys)
            else:
                count = ground_contacts(g, si, sf, V, Rw, pw, hn, hd, margin, buf, keys)
            if count == 1:
                nc = _emit_one(g, gh, buf, keys, out_i, out_f, nc)
            elif count > 1:
                nc = _emit(g, gh, buf, keys, count, cap, chosen, out_i, out_f, nc)
    return nc, nfcl


@njit(cache=True)
def finish(out_i, out_f, nc, ipack, offs, n_total, R_world, p_world):
    """The result arrays, packed: ints (6, nc) = body_a, body_b, geom_a, geom_b, pair_id,
    feature_key; floats (5, nc, 3) = point_a, point_b, local_a, local_b, normal, and gaps (nc,).
    Local points are R_body^T (p - p_body); static points stay in world coordinates.
    pair_id = A * n_total + B."""
    ints = np.empty((6, nc), np.int64)
    vecs = np.empty((5, nc, 3))
    gap = np.empty(nc)
    finish_into(out_i, out_f, nc, ipack, offs, n_total, R_world, p_world, ints, vecs, gap)
    return ints, vecs, gap


@njit(cache=True)
def finish_into(out_i, out_f, nc, ipack, offs, n_total, R_world, p_world, ints, vecs, gap):
    """:func:`finish`'s arrays written into ``ints`` (6, nc), ``vecs`` (5, nc, 3) and ``gap``
    (nc,) given (the compiled loop's contact stage: its own buffers, no allocation a step)."""
    n = offs[0]
    si = _rows(ipack, 0, n, 14)
    for c in range(nc):
        a, b = out_i[c, 0], out_i[c, 1]
        ba = si[a, BODY] if a < n else -1
        bb = si[b, BODY] if b < n else -1
        ints[0, c] = ba
        ints[1, c] = bb
        ints[2, c] = a
        ints[3, c] = b
        ints[4, c] = a * n_total + b
        ints[5, c] = out_i[c, 2]
        gap[c] = out_f[c, 9]
        for k in range(3):
            vecs[0, c, k] = out_f[c, k]
            vecs[1, c, k] = out_f[c, 3 + k]
            vecs[4, c, k] = out_f[c, 6 + k]
        for side in range(2):
            body = ba if side == 0 else bb
            if body < 0:
                for k in range(3):
                    vecs[2 + side, c, k] = vecs[side, c, k]
            else:
                for k in range(3):
                    s = 0.0
                    for m in range(3):
                        s += R_world[body, m, k] * (vecs[side, c, m] - p_world[body, m])
                    vecs[2 + side, c, k] = s
