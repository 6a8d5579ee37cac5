"""Lambda by the Upsilon recursion in world-aligned coordinates, from the poses (or from q).

The algorithm of :mod:`.upsilon_body` (000 Eqs. 64-69), with the articulated factorisation
computed here rather than taken from ABA, and every spatial quantity in world-aligned
coordinates about the origin of each body's tree root (the world frame Featherstone and
Pinocchio use for ABA, moved to the tree so that a robot far from the origin is as accurate
as one at it). There Xup = 1, so psi = 1 - U D^-1 S^T and neither sweep needs a 6x6
congruence; each body's inertia and S are rotated into those coordinates once (about a third
of the multiply-adds of the body-frame sweeps). One compiled call does it all: optionally the
pose kinematics from q, the articulated sweep, the Upsilon sweep and the assembly.

Why it exists beside the body-frame route: it is the Python entry point for "Lambda at this
configuration" (the README's example, ``benchmarks/bench_compliance.py``'s ``lambda`` and
``benchmarks/bench_delassus.py``'s ``upsilon`` columns), and only with it does Lambda meet
issue 2's target (at least 20x faster than the dense Lambda at N = 120). Measured with
``benchmarks/bench_compliance.py --quick`` (2026-11-25, AMD EPYC, thread CPU time, nc = 4,
from q): ``lambda`` (this kernel) 14.1 us against ``lambda.aba`` (forward_kinematics,
articulated_factor, upsilon_after_aba) 36.9 us at chain N = 120, 24.2 against 66.6 us at
N = 240, 9.2 against 22.1 us on talos; dense 309 us at N = 120, i.e. 22x this kernel and
8.4x the body-frame route. The OS stepper does not call it: after ABA the factorisation is
already in Data and it takes the body-frame route.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from mbsim.simcore.delassus.compressed_tree import common_vertex, compress, zero_blocks
from mbsim.simcore.delassus.nodes import as_nodes, as_q
from mbsim.simcore.delassus.world_frame import (
    OPTS,
    PK,
    SW0,
    UP0,
    UW0,
    WS_COLS,
    articulated_sweep_world,
    children_csr,
    force_to_world,
    inertial_parameters,
    origin_from_root,
    tree_roots,
    u_dinv_world,
)
from mbsim.simcore.kinematics import forward_poses_kernel


@njit(cache=True, inline="always")
def _apply_psi_world(j, nvj, ws, Dinv, M, h):
    """M <- psi_j M = (1 - U_j Dinv_j S_j^T) M in place for a row-major 6x6 block M (a
    36-vector view; world frame, so no transform). ``h`` is 6-vector scratch."""
    n = nvj[j]
    if n == 1:
        g = Dinv[j, 0, 0]
        s0, s1, s2 = ws[j, SW0], ws[j, SW0 + 1], ws[j, SW0 + 2]
        s3, s4, s5 = ws[j, SW0 + 3], ws[j, SW0 + 4], ws[j, SW0 + 5]
        u0, u1, u2 = ws[j, UW0], ws[j, UW0 + 1], ws[j, UW0 + 2]
        u3, u4, u5 = ws[j, UW0 + 3], ws[j, UW0 + 4], ws[j, UW0 + 5]
        for c in range(6):
            t = g * (
                (s0 * M[c] + s1 * M[6 + c] + s2 * M[12 + c])
                + (s3 * M[18 + c] + s4 * M[24 + c] + s5 * M[30 + c])
            )
            M[c] -= u0 * t
            M[6 + c] -= u1 * t
            M[12 + c] -= u2 * t
            M[18 + c] -= u3 * t
            M[24 + c] -= u4 * t
            M[30 + c] -= u5 * t
        return
    for c in range(6):
        for k in range(n):
            t = 0.0
            for x in range(6):
                t += ws[j, SW0 + 6 * k + x] * M[6 * x + c]
            h[k] = t
        for x in range(6):
            t = 0.0
            for k in range(n):
                gk = 0.0
                for m in range(n):
                    gk += Dinv[j, k, m] * h[m]
                t += ws[j, UW0 + 6 * k + x] * gk
            M[6 * x + c] -= t


@njit(cache=True, inline="always")
def _matmul36(A, B, out):
    """out = A B for row-major 6x6 blocks given as 36-vector views (out not aliasing)."""
    for x in range(6):
        z0, z1, z2 = A[6 * x], A[6 * x + 1], A[6 * x + 2]
        z3, z4, z5 = A[6 * x + 3], A[6 * x + 4], A[6 * x + 5]
        for y in range(6):
            out[6 * x + y] = (z0 * B[y] + z1 * B[6 + y]) + (z2 * B[12 + y] + z3 * B[18 + y]) + (
                z4 * B[24 + y] + z5 * B[30 + y]
            )  # fmt: skip


@njit(cache=True, inline="always")
def _unpack(w, off, out):
    """out (6x6) = the symmetric matrix packed at w[off : off + 21]."""
    for a in range(6):
        for b in range(6):
            out[a, b] = w[off + PK[a, b]]


@njit(**OPTS)
def lambda_world_kernel(
    mi, mf, S, E, r, R_world, p_world, U, Dinv, pivots, ws, q, node_body, node_X, Lam
):  # fmt: skip
    """Lambda from q (if ``q`` is not empty) or from the poses in (R_world, p_world), in one
    call: the algorithm of articulated_kernel + upsilon_kernel + lambda_kernel with every
    spatial quantity in world-aligned coordinates about the origin of the body's tree root
    (the world frame Featherstone and Pinocchio use for ABA, moved to the tree).

    A body's inertia and motion subspace are moved to those coordinates once (the articulated
    sweep, :func:`~.world_frame.articulated_sweep_world`, shared with PV-OSIMr); after that
    the propagator is psi = 1 - U D^-1 S^T with no parent-to-child transform, so neither sweep
    needs a 6x6 congruence. Per 1-DoF body (g = D^-1): the inertia from the 10 inertial
    parameters (~65 multiply-adds), U = IA S and Ia = IA - g U U^T (~70, symmetric, packed),
    U back to body axes (~25), and Upsilon = Y - S v^T - v S^T with w = Y U, v = g w -
    (g^2 U.w + g) S / 2 (~90). The 1-DoF code is written out on scalars (packed triangles,
    kept in registers); multi-DoF joints take the general loops. Nodes are then handled as in
    lambda_kernel, except that on a short compressed edge the rank-n factors of psi are
    applied to each node's factor directly instead of forming the 6x6 edge product.

    ``mi`` (int64, (17, max(nb + 1, 5))) rows: parent, jtype, qi, vi, nvj, children start
    (CSR), children list, then the compressed tree of the last node list (rows 7-13, see
    compressed_tree.compress; row 8 becomes the per-vertex "form the edge product" flag)
    with that list in row 14 and [nc or -1, nvert, max depth, nb, nq] in row 15, and the
    tree root of every body in row 16.
    ``mf`` (float64, flat): tree_E (9 nb), tree_r (3 nb), axis (3 nb) and per body
    [m, c (3), Jc (xx xy xz yy yz zz)] (centre of mass and rotational inertia about it, body
    axes).
    Side effects: with q, E, r, R_world, p_world and free joints' S (forward_poses_kernel);
    always U (body axes, as articulated_kernel), Dinv and pivots; ``ws`` (nb, WS_COLS).
    """
    nb = mi[15, 3]
    parent, jtype, qi, vi, nvj, cstart, clist = mi[0], mi[1], mi[2], mi[3], mi[4], mi[5], mi[6]
    if q.shape[0] > 0:
        if q.shape[0] != mi[15, 4]:
            raise ValueError("upsilon_from_poses: q does not match the model's nq")
        forward_poses_kernel(
            parent[:nb], jtype, qi, S, mf[: 9 * nb].reshape((nb, 3, 3)),
            mf[9 * nb : 12 * nb].reshape((nb, 3)), mf[12 * nb : 15 * nb].reshape((nb, 3)), q,
            E, r, R_world, p_world,
        )  # fmt: skip
    # 0. the compressed tree of the nodes, kept in mi[7:16] while the nodes stay the same
    nc = node_body.shape[0]
    iw = mi[7:14]
    cnt, use_edge, vid, vbody, cparent, cdepth = iw[0], iw[1], iw[3], iw[4], iw[5], iw[6]
    memo, key = mi[14], mi[15]
    same = key[0] == nc
    if same:
        for a in range(nc):
            if memo[a] != node_body[a]:
                same = False
                break
    if same:
        nvert, maxd = key[1], key[2]
    else:
        nvert = compress(parent[:nb], node_body, iw)
        maxd = 0
        for a in range(nc):
            maxd = max(maxd, cdepth[vid[node_body[a]]])
        for v in range(nvert):
            # form the psi product of edge v once if it serves more nodes than it has bodies
            use_edge[v] = 0
            if cparent[v] >= 0:
                j = parent[vbody[v]]
                length = 1
                while vid[j] < 0:
                    length += 1
                    j = parent[j]
                k = cnt[vbody[v]]
                use_edge[v] = length * (k - 1) > 3 * k
        key[0] = nc if nc <= nb else -1
        key[1], key[2] = nvert, maxd
        for a in range(min(nc, nb)):
            memo[a] = node_body[a]
    # one scratch allocation: general-path 6x6 blocks; then row-major 6x6 blocks at offsets
    # oE + 36 v (edge products), oU + 36 v (Upsilon at vertex v), oF + 36 (a (maxd + 1) + d)
    # (node factor F_a at compressed depth d) and oH + ... (H = Upsilon F, same indexing)
    nf = nc * (maxd + 1)
    buf = np.empty(36 * (6 + 2 * nvert + 2 * nf) + 6)
    sc = buf[:216].reshape((6, 6, 6))
    # general-path scratch sc: 0 IA or Y, 1 D or Z, 2-3 Cholesky, 4 G = U Dinv, 5 W = Y G
    oE = 216
    oU = oE + 36 * nvert
    oF = oU + 36 * nvert
    oH = oF + 36 * nf
    h = buf[oH + 36 * nf :]
    pr = np.empty(3)
    # 1. tips to base: the articulated factorisation in world coordinates (world_frame.py)
    articulated_sweep_world(
        parent, cstart, clist, vi, nvj, S, R_world, p_world, mi[16],
        mf[15 * nb : 25 * nb].reshape((nb, 10)), U, Dinv, pivots, ws, sc,
    )  # fmt: skip
    # 2. base to tips, only where a node lies below: Upsilon(i) (000 Eq. 68), world axes
    for i in range(nb):
        if cnt[i] == 0:
            continue
        p = parent[i]
        if nvj[i] == 1 and p >= 0:
            y0, y1, y2, y3 = ws[p, 21], ws[p, 22], ws[p, 23], ws[p, 24]  # Y = Upsilon(p)
            y4, y5, y6, y7 = ws[p, 25], ws[p, 26], ws[p, 27], ws[p, 28]
            y8, y9, y10, y11 = ws[p, 29], ws[p, 30], ws[p, 31], ws[p, 32]
            y12, y13, y14, y15 = ws[p, 33], ws[p, 34], ws[p, 35], ws[p, 36]
            y16, y17, y18, y19, y20 = ws[p, 37], ws[p, 38], ws[p, 39], ws[p, 40], ws[p, 41]
            s0, s1, s2 = ws[i, SW0], ws[i, SW0 + 1], ws[i, SW0 + 2]
            s3, s4, s5 = ws[i, SW0 + 3], ws[i, SW0 + 4], ws[i, SW0 + 5]
            u0, u1, u2 = ws[i, UW0], ws[i, UW0 + 1], ws[i, UW0 + 2]
            u3, u4, u5 = ws[i, UW0 + 3], ws[i, UW0 + 4], ws[i, UW0 + 5]
            g = Dinv[i, 0, 0]
            w0 = (y0 * u0 + y1 * u1 + y2 * u2) + (y3 * u3 + y4 * u4 + y5 * u5)
            w1 = (y1 * u0 + y6 * u1 + y7 * u2) + (y8 * u3 + y9 * u4 + y10 * u5)
            w2 = (y2 * u0 + y7 * u1 + y11 * u2) + (y12 * u3 + y13 * u4 + y14 * u5)
            w3 = (y3 * u0 + y8 * u1 + y12 * u2) + (y15 * u3 + y16 * u4 + y17 * u5)
            w4 = (y4 * u0 + y9 * u1 + y13 * u2) + (y16 * u3 + y18 * u4 + y19 * u5)
            w5 = (y5 * u0 + y10 * u1 + y14 * u2) + (y17 * u3 + y19 * u4 + y20 * u5)
            uw = (u0 * w0 + u1 * w1 + u2 * w2) + (u3 * w3 + u4 * w4 + u5 * w5)
            hc = 0.5 * (g * g * uw + g)
            # Upsilon = Y - g (S w^T + w S^T) + (g^2 U.w + g) S S^T = Y - S v^T - v S^T
            v0, v1, v2 = g * w0 - hc * s0, g * w1 - hc * s1, g * w2 - hc * s2
            v3, v4, v5 = g * w3 - hc * s3, g * w4 - hc * s4, g * w5 - hc * s5
            ws[i, 21] = y0 - 2.0 * s0 * v0
            ws[i, 22], ws[i, 23] = y1 - s0 * v1 - v0 * s1, y2 - s0 * v2 - v0 * s2
            ws[i, 24], ws[i, 25] = y3 - s0 * v3 - v0 * s3, y4 - s0 * v4 - v0 * s4
            ws[i, 26] = y5 - s0 * v5 - v0 * s5
            ws[i, 27] = y6 - 2.0 * s1 * v1
            ws[i, 28], ws[i, 29] = y7 - s1 * v2 - v1 * s2, y8 - s1 * v3 - v1 * s3
            ws[i, 30], ws[i, 31] = y9 - s1 * v4 - v1 * s4, y10 - s1 * v5 - v1 * s5
            ws[i, 32] = y11 - 2.0 * s2 * v2
            ws[i, 33], ws[i, 34] = y12 - s2 * v3 - v2 * s3, y13 - s2 * v4 - v2 * s4
            ws[i, 35] = y14 - s2 * v5 - v2 * s5
            ws[i, 36] = y15 - 2.0 * s3 * v3
            ws[i, 37], ws[i, 38] = y16 - s3 * v4 - v3 * s4, y17 - s3 * v5 - v3 * s5
            ws[i, 39] = y18 - 2.0 * s4 * v4
            ws[i, 40] = y19 - s4 * v5 - v4 * s5
            ws[i, 41] = y20 - 2.0 * s5 * v5
            continue
        # general (multi-DoF joint or a root): G = U Dinv, W = Y G, Z = G^T W + Dinv,
        # Upsilon = Y - S W^T - W S^T + S Z S^T
        n = nvj[i]
        if p >= 0:
            _unpack(ws[p], UP0, sc[0])
        else:
            for x in range(6):
                for y in range(6):
                    sc[0, x, y] = 0.0
        u_dinv_world(ws[i], Dinv[i], n, sc[4])
        for x in range(6):
            for c in range(n):
                t = 0.0
                for y in range(6):
                    t += sc[0, x, y] * sc[4, y, c]
                sc[5, x, c] = t
        for k in range(n):
            for c in range(n):
                t = Dinv[i, k, c]
                for x in range(6):
                    t += sc[4, x, k] * sc[5, x, c]
                sc[1, k, c] = t
        for x in range(6):
            for y in range(x, 6):
                t = sc[0, x, y]
                for k in range(n):
                    sxk = ws[i, SW0 + 6 * k + x]
                    t -= sxk * sc[5, y, k] + sc[5, x, k] * ws[i, SW0 + 6 * k + y]
                    zs = 0.0
                    for c in range(n):
                        zs += sc[1, k, c] * ws[i, SW0 + 6 * c + y]
                    t += sxk * zs
                ws[i, UP0 + PK[x, y]] = t
    # 3. Lambda on the compressed tree. F_a = psi(k, node body) X~_a^T carried up to the
    #    compressed ancestors (X~_a = X_a X(R^T, p): world -> node frame); a compressed edge
    #    whose psi product serves more nodes than it has bodies is formed once, else the
    #    rank-n factors psi are applied to each F_a directly (cheaper on short edges).
    for v in range(nvert):
        k = vbody[v]
        Uv = buf[oU + 36 * v : oU + 36 * v + 36]
        for x in range(6):
            for y in range(6):
                Uv[6 * x + y] = ws[k, UP0 + PK[x, y]]
        if use_edge[v]:
            Ev = buf[oE + 36 * v : oE + 36 * v + 36]
            for x in range(6):
                for y in range(6):
                    Ev[6 * x + y] = 1.0 if x == y else 0.0
            j = k
            while True:
                _apply_psi_world(j, nvj, ws, Dinv, Ev, h)
                j = parent[j]
                if vid[j] >= 0:
                    break
    for a in range(nc):
        k = node_body[a]
        v = vid[k]
        d = cdepth[v]
        origin_from_root(p_world, k, mi[16, k], pr)
        o = oF + 36 * (a * (maxd + 1) + d)
        Fa = buf[o : o + 36]
        for y in range(6):
            # column y of X~_a^T: the world-axes force of the body-axes force X_a[y, :]
            force_to_world(R_world[k], pr, node_X[a, y], h)
            for x in range(6):
                Fa[6 * x + y] = h[x]
        while cparent[v] >= 0:  # F_a(d - 1) = psi(parent vertex, v) F_a(d)
            o -= 36
            Fu = buf[o : o + 36]
            if use_edge[v]:
                _matmul36(buf[oE + 36 * v : oE + 36 * v + 36], Fa, Fu)
            else:
                for x in range(36):
                    Fu[x] = Fa[x]
                j = vbody[v]
                while True:
                    _apply_psi_world(j, nvj, ws, Dinv, Fu, h)
                    j = parent[j]
                    if vid[j] >= 0:
                        break
            Fa = Fu
            v = cparent[v]
    # blocks Lambda(a, b) = F_a(k)^T Upsilon(k) F_b(k) = H_a(k)^T F_b(k), k the compressed
    # common ancestor; H = Upsilon F is kept per (node, depth), and the side that has it (or
    # whose own vertex k is, hence likely to be reused) supplies it.
    have = np.zeros((nc, maxd + 1), dtype=np.bool_)
    for a in range(nc):
        for b in range(a, nc):
            va = vid[node_body[a]]
            vb = vid[node_body[b]]
            da, db = cdepth[va], cdepth[vb]
            va = common_vertex(va, vb, cparent, cdepth)
            if va < 0:
                zero_blocks(Lam, a, b)
                continue
            d = cdepth[va]
            e, f = a, b  # Lambda(a, b) = H_e^T F_f, or its transpose for (e, f) = (b, a)
            if not have[a, d] and (have[b, d] or db == d) and da != d:
                e, f = b, a
            o = 36 * (e * (maxd + 1) + d)
            He = buf[oH + o : oH + o + 36]
            if not have[e, d]:
                _matmul36(buf[oU + 36 * va : oU + 36 * va + 36], buf[oF + o : oF + o + 36], He)
                have[e, d] = True
            # Lambda(e, f) = H_e^T F_f; the block and its transpose are written (through views,
            # whose loop indices need no negative-index checks)
            o = oF + 36 * (f * (maxd + 1) + d)
            Ff = buf[o : o + 36]
            Lef = Lam[6 * e : 6 * e + 6, 6 * f : 6 * f + 6]
            Lfe = Lam[6 * f : 6 * f + 6, 6 * e : 6 * e + 6]
            for x in range(6):
                z0, z1, z2 = He[x], He[6 + x], He[12 + x]
                z3, z4, z5 = He[18 + x], He[24 + x], He[30 + x]
                for y in range(6):
                    if a == b and y < x:
                        continue  # a diagonal block is symmetric
                    t = (z0 * Ff[y] + z1 * Ff[6 + y]) + (z2 * Ff[12 + y] + z3 * Ff[18 + y]) + (
                        z4 * Ff[24 + y] + z5 * Ff[30 + y]
                    )  # fmt: skip
                    Lef[x, y] = t
                    Lfe[y, x] = t


@dataclass(frozen=True)
class WorldUpsilonWorkspace:
    """What :func:`lambda_world_kernel` keeps between calls on one Data
    (``data.upsilon_world_ws``): the model it was built for and the kernel's leading
    arguments, which do not change between calls (model-derived tables mi, mf; Data's
    arrays; the workspace ws)."""

    model: object
    args: tuple


def _world_workspace(model, data) -> tuple:
    """The leading arguments of lambda_world_kernel for (model, data), built on first use."""
    cache = data.upsilon_world_ws
    if cache is not None and cache.model is model and cache.args[7] is data.U:
        return cache.args
    nb = model.nb
    mi = np.zeros((17, max(nb + 1, 5)), dtype=np.int64)
    mi[15, 0] = -1  # no compressed tree memorised yet
    mi[15, 3], mi[15, 4] = nb, model.nq
    mi[16, :nb] = tree_roots(model.parent)
    mi[0, :nb] = model.parent
    mi[1, :nb] = model.jtype
    mi[2, :nb] = model.qi
    mi[3, :nb] = model.vi
    mi[4, :nb] = model.nvj
    cstart, clist = children_csr(model.parent)
    mi[5, : nb + 1] = cstart
    mi[6, :nb] = clist[:nb]
    mf = np.concatenate(
        [
            model.tree_E.ravel(), model.tree_r.ravel(), model.axis.ravel(),
            inertial_parameters(model).ravel(),
        ]
    )  # fmt: skip
    ws = np.zeros((nb, WS_COLS))
    d = data
    args = (mi, mf, d.S, d.E, d.r, d.R_world, d.p_world, d.U, d.Dinv, d.pivots, ws)
    data.upsilon_world_ws = WorldUpsilonWorkspace(model, args)
    return args


_NO_Q = np.zeros(0)


def upsilon_from_poses(model, data, node_body, node_X, *, q=None) -> np.ndarray:
    """Lambda for the nodes, computing the articulated factorisation itself (module docstring).

    Reads the poses held in ``data`` (:func:`~mbsim.simcore.kinematics.forward_kinematics`)
    or, if ``q`` is given, computes them from ``q`` in the same call (E, r, R_world, p_world
    and free joints' S are filled; body velocities are left alone). Afterwards ``data.U``,
    ``data.Dinv`` and ``data.pivots`` hold the articulated factorisation of this q, as after
    :func:`~mbsim.simcore.dynamics.articulated_factor`, so the impulse response can follow;
    ``data.IA`` and ``data.ups`` (body-frame) are *not* filled.
    """
    node_body, node_X = as_nodes(node_body, node_X)
    q = _NO_Q if q is None else as_q(q)
    nc = node_body.shape[0]
    Lam = np.empty((6 * nc, 6 * nc))
    lambda_world_kernel(*_world_workspace(model, data), q, node_body, node_X, Lam)
    return Lam
