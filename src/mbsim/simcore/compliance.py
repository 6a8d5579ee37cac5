"""Operational space compliance Lambda = J M^-1 J^T for a set of constraint nodes.

Two algorithms giving the same matrix:

* :func:`compliance_upsilon` -- the O(N) + O(nc^2) algorithm of 000 Appendix (Eqs. 64-69):
  ``Lambda = B^* Omega B`` with ``Omega = psi^* H^* D^-1 H psi`` never formed. One base-to-tips
  sweep builds the block-diagonal kernel (Eq. 68)

      Upsilon(k) = psi^*(p(k), k) Upsilon(p(k)) psi(p(k), k) + H^*(k) D^-1(k) H(k),

  and the off-diagonal blocks follow Eq. 69: for bodies i, j with nearest common ancestor k,
  ``Omega(i, j) = psi^*(k, i) Upsilon(k) psi(k, j)`` where psi(k, i) is the product of the
  per-body propagators along the path (Omega = 0 across different trees). In our body-frame
  Plücker convention psi(p(k), k) = Xup_k^T (1 - U_k Dinv_k S_k^T) (dynamics.py), H^* = S.

  To stay O(N) + O(nc^2) rather than O(N nc), the path products are taken on the tree
  *compressed* to the node bodies and their branch points: each compressed edge's product
  psi(top, bottom) is formed once (every body is walked at most once), then every node carries
  its 6x6 factor ``F_a(v) = psi(v, k_a) X_a^T`` up the compressed tree (O(nc) steps each), and
  ``Lambda(a, b) = F_a(k)^T Upsilon(k) F_b(k)`` at the compressed common ancestor k.

  Two implementations: with ``refresh=False`` the body-frame kernels above (upsilon_kernel,
  lambda_kernel) reuse the factorisation ABA left in Data; with ``refresh=True`` (the default)
  :func:`lambda_world_kernel` does everything in one compiled call -- optionally the forward
  kinematics from q, the articulated sweep, the Upsilon sweep and the assembly -- with the
  spatial quantities in world-aligned coordinates about each tree's root body. There
  Xup = 1, so psi = 1 - U D^-1 S^T and neither sweep needs a 6x6 congruence; each body's
  inertia and S are rotated into those coordinates once (about a third of the multiply-adds
  of the body-frame sweeps). Taking them about the tree's root body rather than the world
  origin keeps a robot far from the origin as accurate as one at it.

* :func:`compliance_dense` -- the O(N^3) reference: CRBA, Cholesky and the explicit Jacobian.

Nodes are given by their body index and the 6x6 motion transform X_a from the body frame to the
node frame (see kinematics.node_transforms). Lambda is (6 nc, 6 nc), units of (m/s or rad/s)
per (N s or N m s), symmetric positive semi-definite.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from numba import njit

from mbsim.simcore.dynamics import mass_matrix, spd_inverse
from mbsim.simcore.kinematics import forward_kinematics, forward_poses_kernel, node_jacobian
from mbsim.simcore.model import REVOLUTE
from mbsim.simcore.spatial import congruence_sym, copy6x6, xform_force_T


@njit(cache=True)
def upsilon_kernel(parent, nvj, S, E, r, U, Dinv, ups, scratch):
    """Base-to-tips scatter of Upsilon(k) (000 Eq. 68); needs the articulated factorisation.

    With psi = Xup^T tau-bar and tau-bar = 1 - U Dinv S^T,
    Upsilon(k) = tau-bar^T Y tau-bar + S Dinv S^T where Y = Xup Upsilon(p) Xup^T.
    For a 1-DoF joint (w = Y U, D^-1 = g) this is
    Y - g (S w^T + w S^T) + g^2 (U.w) S S^T + g S S^T, about 300 multiply-adds per body.
    ``scratch`` is (4, 6, 6).
    """
    nb = parent.shape[0]
    Y = scratch[2]
    W = scratch[3]
    w = np.empty(6)
    for i in range(nb):
        n = nvj[i]
        p = parent[i]
        if p >= 0:
            congruence_sym(E[i], r[i], ups[p], Y)
        else:
            for a in range(6):
                for b in range(6):
                    Y[a, b] = 0.0
        if n == 1:
            g = Dinv[i, 0, 0]
            uw = 0.0
            for a in range(6):
                s = 0.0
                for k in range(6):
                    s += Y[a, k] * U[i, k, 0]
                w[a] = s
                uw += U[i, a, 0] * s
            c = g * g * uw + g
            for a in range(6):
                sa = S[i, a, 0]
                for b in range(6):
                    sb = S[i, b, 0]
                    ups[i, a, b] = Y[a, b] - g * (sa * w[b] + w[a] * sb) + c * sa * sb
        else:
            # general: T = 1 - U Dinv S^T (force space); Upsilon = T^T Y T + S Dinv S^T
            for a in range(6):
                for c in range(n):
                    s = 0.0
                    for k in range(n):
                        s += U[i, a, k] * Dinv[i, k, c]
                    W[a, c] = s  # G = U Dinv
            T = scratch[0]
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(n):
                        s += W[a, k] * S[i, b, k]
                    T[a, b] = (1.0 if a == b else 0.0) - s
            YT = scratch[1]
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(6):
                        s += Y[a, k] * T[k, b]
                    YT[a, b] = s
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(6):
                        s += T[k, a] * YT[k, b]
                    for k in range(n):
                        for m in range(n):
                            s += S[i, a, k] * Dinv[i, k, m] * S[i, b, m]
                    ups[i, a, b] = s


@njit(cache=True, inline="always")
def _matmul6(A, B, out):
    """out = A B for 6x6 matrices (out must not alias A or B)."""
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += A[a, k] * B[k, b]
            out[a, b] = s


@njit(cache=True, inline="always")
def _apply_psi(i, nvj, S, E, r, U, Dinv, F, out, t):
    """out = psi_i F = Xup_i^T (F - U_i Dinv_i S_i^T F), column by column (6x6 F)."""
    n = nvj[i]
    for c in range(6):
        for a in range(6):
            t[a] = F[a, c]
        for k in range(n):
            sf = 0.0
            for m in range(n):
                dm = 0.0
                for a in range(6):
                    dm += S[i, a, m] * F[a, c]
                sf += Dinv[i, k, m] * dm
            for a in range(6):
                t[a] -= U[i, a, k] * sf
        xform_force_T(E[i], r[i], t, t[6:])
        for a in range(6):
            out[a, c] = t[6 + a]


@njit(cache=True, inline="always")
def _compress(parent, node_body, iw):
    """The tree compressed to the node bodies and their branch points (module docstring).

    ``iw`` is (7, nb) int64 scratch; its rows become: 0 ``cnt`` (nodes in body i's subtree;
    > 0 means i is on a root-to-node path), 3 ``vid`` (body -> vertex, -1 if none), and, for
    the first ``nvert`` entries, 4 ``vbody``, 5 ``cparent`` (-1 at a root), 6 ``cdepth``
    (vertices in preorder). Returns nvert."""
    nb = parent.shape[0]
    cnt, own, branches, vid = iw[0], iw[1], iw[2], iw[3]
    vbody, cparent, cdepth = iw[4], iw[5], iw[6]
    for i in range(nb):
        cnt[i] = 0
        own[i] = 0
        branches[i] = 0
    for a in range(node_body.shape[0]):
        cnt[node_body[a]] += 1
        own[node_body[a]] = 1
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0 and cnt[i] > 0:
            cnt[p] += cnt[i]
            branches[p] += 1
    nvert = 0
    for i in range(nb):
        vid[i] = -1
        if own[i] or branches[i] >= 2:
            vid[i] = nvert
            vbody[nvert] = i
            nvert += 1
    for v in range(nvert):
        cparent[v] = -1
        cdepth[v] = 0
        j = parent[vbody[v]]
        while j >= 0 and vid[j] < 0:
            j = parent[j]
        if j >= 0:
            cparent[v] = vid[j]
            cdepth[v] = cdepth[vid[j]] + 1  # preorder: the parent vertex is done already
    return nvert


@njit(cache=True)
def lambda_kernel(parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, Lam):
    """Assemble Lambda from Upsilon on the compressed tree (see module docstring)."""
    nb = parent.shape[0]
    nc = node_body.shape[0]
    # 1. nodes per subtree and branch points -> compressed-tree vertices
    iw = np.empty((7, max(nb, 1)), dtype=np.int64)
    nvert = _compress(parent, node_body, iw)
    vid, vbody, cparent, cdepth = iw[3], iw[4], iw[5], iw[6]
    # 2. edge products psi(top, bottom) where needed
    edge = np.empty((nvert, 6, 6))
    ident = np.zeros((6, 6))
    for a in range(6):
        ident[a, a] = 1.0
    tmp = np.empty((6, 6))
    t = np.empty(12)
    for v in range(nvert):
        if cparent[v] < 0:
            continue
        j = vbody[v]
        _apply_psi(j, nvj, S, E, r, U, Dinv, ident, edge[v], t)
        j = parent[j]
        while vid[j] < 0:
            _apply_psi(j, nvj, S, E, r, U, Dinv, edge[v], tmp, t)
            copy6x6(tmp, edge[v])
            j = parent[j]
    # 3.-4. F_a at every compressed ancestor, then the blocks
    F = _node_factors(node_body, vid, cdepth)
    for a in range(nc):
        for x in range(6):
            for y in range(6):
                F[a, cdepth[vid[node_body[a]]], x, y] = node_X[a, y, x]
    _carry_and_blocks(node_body, vid, vbody, cparent, cdepth, edge, F, ups, Lam)


@njit(cache=True, inline="always")
def _node_factors(node_body, vid, cdepth):
    """(nc, maxdepth + 1, 6, 6) storage for the per-node factors F_a by compressed depth."""
    maxd = 0
    for a in range(node_body.shape[0]):
        if cdepth[vid[node_body[a]]] > maxd:
            maxd = cdepth[vid[node_body[a]]]
    return np.empty((node_body.shape[0], maxd + 1, 6, 6))


@njit(cache=True, inline="always")
def _carry_and_blocks(node_body, vid, vbody, cparent, cdepth, edge, F, ups, Lam):
    """Given F_a at each node's own vertex, carry it up the compressed tree
    (F_a(parent) = edge F_a) and fill Lambda(a, b) = F_a(k)^T Upsilon(k) F_b(k) at the
    compressed common ancestor k (zero across trees). ``ups`` is indexed by body."""
    nc = node_body.shape[0]
    for a in range(nc):
        v = vid[node_body[a]]
        d = cdepth[v]
        while cparent[v] >= 0:
            _matmul6(edge[v], F[a, d], F[a, d - 1])
            v = cparent[v]
            d -= 1
    G = np.empty((6, 6))
    for a in range(nc):
        for b in range(a, nc):
            va = vid[node_body[a]]
            vb = vid[node_body[b]]
            while cdepth[va] > cdepth[vb]:
                va = cparent[va]
            while cdepth[vb] > cdepth[va]:
                vb = cparent[vb]
            while va != vb and va >= 0:
                va = cparent[va]
                vb = cparent[vb]
            if va < 0:
                for x in range(6):
                    for y in range(6):
                        Lam[6 * a + x, 6 * b + y] = 0.0
                        Lam[6 * b + y, 6 * a + x] = 0.0
                continue
            d = cdepth[va]
            _matmul6(ups[vbody[va]], F[b, d], G)
            for x in range(6):
                for y in range(6):
                    s = 0.0
                    for m in range(6):
                        s += F[a, d, m, x] * G[m, y]
                    Lam[6 * a + x, 6 * b + y] = s
                    Lam[6 * b + y, 6 * a + x] = s


#: Packed storage of a symmetric 6x6 matrix: the upper triangle by rows, entry (a, b) at
#: _PK[a, b] (21 numbers). The world-frame kernel keeps articulated inertias and Upsilon so.
_PK = np.array(
    [
        [0, 1, 2, 3, 4, 5],
        [1, 6, 7, 8, 9, 10],
        [2, 7, 11, 12, 13, 14],
        [3, 8, 12, 15, 16, 17],
        [4, 9, 13, 16, 18, 19],
        [5, 10, 14, 17, 19, 20],
    ],
    dtype=np.int64,
)

# Row layout of the world-frame workspace ``ws`` (nb, _WS_COLS), per body i:
_IA0 = 0  # Ia_i = IA_i - U D^-1 U^T, packed (what body i hands to its parent)
_UP0 = 21  # Upsilon(i), packed
_SW0 = 42  # S_i in world coordinates, column k at _SW0 + 6 k
_UW0 = 78  # U_i = IA_i S_i in world coordinates, column k at _UW0 + 6 k
_WS_COLS = 114


@njit(cache=True, inline="always")
def _apply_psi_world(j, nvj, ws, Dinv, M, h):
    """M <- psi_j M = (1 - U_j Dinv_j S_j^T) M in place for a row-major 6x6 block M (a
    36-vector view; world frame, so no transform). ``h`` is 6-vector scratch."""
    n = nvj[j]
    if n == 1:
        g = Dinv[j, 0, 0]
        s0, s1, s2 = ws[j, _SW0], ws[j, _SW0 + 1], ws[j, _SW0 + 2]
        s3, s4, s5 = ws[j, _SW0 + 3], ws[j, _SW0 + 4], ws[j, _SW0 + 5]
        u0, u1, u2 = ws[j, _UW0], ws[j, _UW0 + 1], ws[j, _UW0 + 2]
        u3, u4, u5 = ws[j, _UW0 + 3], ws[j, _UW0 + 4], ws[j, _UW0 + 5]
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
                t += ws[j, _SW0 + 6 * k + x] * M[6 * x + c]
            h[k] = t
        for x in range(6):
            t = 0.0
            for k in range(n):
                gk = 0.0
                for m in range(n):
                    gk += Dinv[j, k, m] * h[m]
                t += ws[j, _UW0 + 6 * k + x] * gk
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
            out[a, b] = w[off + _PK[a, b]]


@njit(cache=True, fastmath={"contract"}, error_model="numpy")
def lambda_world_kernel(
    mi, mf, S, E, r, R_world, p_world, U, Dinv, pivots, ws, q, node_body, node_X, Lam
):  # fmt: skip
    """Lambda from q (if ``q`` is not empty) or from the poses in (R_world, p_world), in one
    call: the algorithm of articulated_kernel + upsilon_kernel + lambda_kernel with every
    spatial quantity in world-aligned coordinates about the origin of the body's tree root
    (the world frame Featherstone and Pinocchio use for ABA, moved to the tree).

    A body's inertia and motion subspace are moved to those coordinates once; after that the
    propagator is psi = 1 - U D^-1 S^T with no parent-to-child transform, so neither sweep
    needs a 6x6 congruence. Per 1-DoF body (g = D^-1): the inertia from the 10 inertial
    parameters (~65 multiply-adds), U = IA S and Ia = IA - g U U^T (~70, symmetric, packed),
    U back to body axes (~25), and Upsilon = Y - S v^T - v S^T with w = Y U, v = g w -
    (g^2 U.w + g) S / 2 (~90). The 1-DoF code is written out on scalars (packed triangles,
    kept in registers); multi-DoF joints take the general loops. Nodes are then handled as in
    lambda_kernel, except that on a short compressed edge the rank-n factors of psi are
    applied to each node's factor directly instead of forming the 6x6 edge product.

    ``mi`` (int64, (17, max(nb + 1, 5))) rows: parent, jtype, qi, vi, nvj, children start
    (CSR), children list, then the compressed tree of the last node list (rows 7-13, see
    _compress; row 8 becomes the per-vertex "form the edge product" flag) with that list in
    row 14 and [nc or -1, nvert, max depth, nb, nq] in row 15, and the tree root of every body
    in row 16.
    ``mf`` (float64, flat): tree_E (9 nb), tree_r (3 nb), axis (3 nb) and per body
    [m, c (3), Jc (xx xy xz yy yz zz)] (centre of mass and rotational inertia about it, body
    axes).
    Side effects: with q, E, r, R_world, p_world and free joints' S (forward_poses_kernel);
    always U (body axes, as articulated_kernel), Dinv and pivots; ``ws`` (nb, _WS_COLS).
    """
    nb = mi[15, 3]
    parent, jtype, qi, vi, nvj, cstart, clist = mi[0], mi[1], mi[2], mi[3], mi[4], mi[5], mi[6]
    if q.shape[0] > 0:
        if q.shape[0] != mi[15, 4]:
            raise ValueError("compliance_upsilon: q does not match the model's nq")
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
        nvert = _compress(parent[:nb], node_body, iw)
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
    # 1. tips to base: world inertia, U = IA S, D = S^T U; Ia = IA - U D^-1 U^T to the parent
    prm = mf[15 * nb : 25 * nb].reshape((nb, 10))
    for i in range(nb - 1, -1, -1):
        n = nvj[i]
        p = parent[i]
        r00, r01, r02 = R_world[i, 0, 0], R_world[i, 0, 1], R_world[i, 0, 2]
        r10, r11, r12 = R_world[i, 1, 0], R_world[i, 1, 1], R_world[i, 1, 2]
        r20, r21, r22 = R_world[i, 2, 0], R_world[i, 2, 1], R_world[i, 2, 2]
        o = mi[16, i]  # coordinates are about the origin of the tree's root body
        p0, p1, p2 = (
            p_world[i, 0] - p_world[o, 0],
            p_world[i, 1] - p_world[o, 1],
            p_world[i, 2] - p_world[o, 2],
        )
        m, cb0, cb1, cb2 = prm[i, 0], prm[i, 1], prm[i, 2], prm[i, 3]
        j00, j01, j02 = prm[i, 4], prm[i, 5], prm[i, 6]
        j11, j12, j22 = prm[i, 7], prm[i, 8], prm[i, 9]
        # inertia about the tree root's origin: c = p + R c_body, h = m c,
        # J = R Jc R^T + m (|c|^2 1 - c c^T) with Jc about the centre of mass
        c0 = p0 + (r00 * cb0 + r01 * cb1 + r02 * cb2)
        c1 = p1 + (r10 * cb0 + r11 * cb1 + r12 * cb2)
        c2 = p2 + (r20 * cb0 + r21 * cb1 + r22 * cb2)
        h0, h1, h2 = m * c0, m * c1, m * c2
        mcc = h0 * c0 + h1 * c1 + h2 * c2
        t00 = r00 * j00 + r01 * j01 + r02 * j02  # T = R Jc
        t01 = r00 * j01 + r01 * j11 + r02 * j12
        t02 = r00 * j02 + r01 * j12 + r02 * j22
        t10 = r10 * j00 + r11 * j01 + r12 * j02
        t11 = r10 * j01 + r11 * j11 + r12 * j12
        t12 = r10 * j02 + r11 * j12 + r12 * j22
        t20 = r20 * j00 + r21 * j01 + r22 * j02
        t21 = r20 * j01 + r21 * j11 + r22 * j12
        t22 = r20 * j02 + r21 * j12 + r22 * j22
        w00 = (t00 * r00 + t01 * r01 + t02 * r02) + (mcc - h0 * c0)
        w11 = (t10 * r10 + t11 * r11 + t12 * r12) + (mcc - h1 * c1)
        w22 = (t20 * r20 + t21 * r21 + t22 * r22) + (mcc - h2 * c2)
        w01 = (t00 * r10 + t01 * r11 + t02 * r12) - h0 * c1
        w02 = (t00 * r20 + t01 * r21 + t02 * r22) - h0 * c2
        w12 = (t10 * r20 + t11 * r21 + t12 * r22) - h1 * c2
        # IA_i = [[J_w, h^], [h^T, m 1]] + sum over children of their Ia, packed
        a0, a1, a2, a3, a4, a5 = w00, w01, w02, 0.0, -h2, h1
        a6, a7, a8, a9, a10 = w11, w12, h2, 0.0, -h0
        a11, a12, a13, a14 = w22, -h1, h0, 0.0
        a15, a16, a17, a18, a19, a20 = m, 0.0, 0.0, m, 0.0, m
        for cc in range(cstart[i], cstart[i + 1]):
            c = clist[cc]
            a0, a1, a2, a3 = a0 + ws[c, 0], a1 + ws[c, 1], a2 + ws[c, 2], a3 + ws[c, 3]
            a4, a5, a6, a7 = a4 + ws[c, 4], a5 + ws[c, 5], a6 + ws[c, 6], a7 + ws[c, 7]
            a8, a9, a10 = a8 + ws[c, 8], a9 + ws[c, 9], a10 + ws[c, 10]
            a11, a12, a13, a14 = a11 + ws[c, 11], a12 + ws[c, 12], a13 + ws[c, 13], a14 + ws[c, 14]
            a15, a16, a17 = a15 + ws[c, 15], a16 + ws[c, 16], a17 + ws[c, 17]
            a18, a19, a20 = a18 + ws[c, 18], a19 + ws[c, 19], a20 + ws[c, 20]
        if n == 1:
            x0, x1, x2 = S[i, 0, 0], S[i, 1, 0], S[i, 2, 0]
            s0 = r00 * x0 + r01 * x1 + r02 * x2
            s1 = r10 * x0 + r11 * x1 + r12 * x2
            s2 = r20 * x0 + r21 * x1 + r22 * x2
            s3, s4, s5 = p1 * s2 - p2 * s1, p2 * s0 - p0 * s2, p0 * s1 - p1 * s0
            if jtype[i] != REVOLUTE:  # S = [k; 0] for revolute joints, else add R S_linear
                y0, y1, y2 = S[i, 3, 0], S[i, 4, 0], S[i, 5, 0]
                s3 += r00 * y0 + r01 * y1 + r02 * y2
                s4 += r10 * y0 + r11 * y1 + r12 * y2
                s5 += r20 * y0 + r21 * y1 + r22 * y2
            u0 = (a0 * s0 + a1 * s1 + a2 * s2) + (a3 * s3 + a4 * s4 + a5 * s5)
            u1 = (a1 * s0 + a6 * s1 + a7 * s2) + (a8 * s3 + a9 * s4 + a10 * s5)
            u2 = (a2 * s0 + a7 * s1 + a11 * s2) + (a12 * s3 + a13 * s4 + a14 * s5)
            u3 = (a3 * s0 + a8 * s1 + a12 * s2) + (a15 * s3 + a16 * s4 + a17 * s5)
            u4 = (a4 * s0 + a9 * s1 + a13 * s2) + (a16 * s3 + a18 * s4 + a19 * s5)
            u5 = (a5 * s0 + a10 * s1 + a14 * s2) + (a17 * s3 + a19 * s4 + a20 * s5)
            d = (s0 * u0 + s1 * u1 + s2 * u2) + (s3 * u3 + s4 * u4 + s5 * u5)
            g = 1.0 / d if d > 0.0 else 0.0
            pivots[vi[i]] = d
            Dinv[i, 0, 0] = g
            ws[i, _SW0], ws[i, _SW0 + 1], ws[i, _SW0 + 2] = s0, s1, s2
            ws[i, _SW0 + 3], ws[i, _SW0 + 4], ws[i, _SW0 + 5] = s3, s4, s5
            ws[i, _UW0], ws[i, _UW0 + 1], ws[i, _UW0 + 2] = u0, u1, u2
            ws[i, _UW0 + 3], ws[i, _UW0 + 4], ws[i, _UW0 + 5] = u3, u4, u5
            # U in body axes (as articulated_kernel leaves it): f = R^T f_w, n = R^T (n_w - p x f_w)
            n0 = u0 - (p1 * u5 - p2 * u4)
            n1 = u1 - (p2 * u3 - p0 * u5)
            n2 = u2 - (p0 * u4 - p1 * u3)
            U[i, 0, 0] = r00 * n0 + r10 * n1 + r20 * n2
            U[i, 1, 0] = r01 * n0 + r11 * n1 + r21 * n2
            U[i, 2, 0] = r02 * n0 + r12 * n1 + r22 * n2
            U[i, 3, 0] = r00 * u3 + r10 * u4 + r20 * u5
            U[i, 4, 0] = r01 * u3 + r11 * u4 + r21 * u5
            U[i, 5, 0] = r02 * u3 + r12 * u4 + r22 * u5
            if p >= 0:
                g0, g1, g2, g3, g4, g5 = g * u0, g * u1, g * u2, g * u3, g * u4, g * u5
                ws[i, 0], ws[i, 1], ws[i, 2] = a0 - g0 * u0, a1 - g0 * u1, a2 - g0 * u2
                ws[i, 3], ws[i, 4], ws[i, 5] = a3 - g0 * u3, a4 - g0 * u4, a5 - g0 * u5
                ws[i, 6], ws[i, 7], ws[i, 8] = a6 - g1 * u1, a7 - g1 * u2, a8 - g1 * u3
                ws[i, 9], ws[i, 10], ws[i, 11] = a9 - g1 * u4, a10 - g1 * u5, a11 - g2 * u2
                ws[i, 12], ws[i, 13], ws[i, 14] = a12 - g2 * u3, a13 - g2 * u4, a14 - g2 * u5
                ws[i, 15], ws[i, 16], ws[i, 17] = a15 - g3 * u3, a16 - g3 * u4, a17 - g3 * u5
                ws[i, 18], ws[i, 19], ws[i, 20] = a18 - g4 * u4, a19 - g4 * u5, a20 - g5 * u5
            continue
        # general joint: the same steps on full matrices
        # fmt: off
        av = (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,
              a18, a19, a20)
        # fmt: on
        for x in range(6):
            for y in range(6):
                sc[0, x, y] = av[_PK[x, y]]
        for k in range(n):
            x0, x1, x2 = S[i, 0, k], S[i, 1, k], S[i, 2, k]
            y0, y1, y2 = S[i, 3, k], S[i, 4, k], S[i, 5, k]
            s0 = r00 * x0 + r01 * x1 + r02 * x2
            s1 = r10 * x0 + r11 * x1 + r12 * x2
            s2 = r20 * x0 + r21 * x1 + r22 * x2
            o = _SW0 + 6 * k
            ws[i, o], ws[i, o + 1], ws[i, o + 2] = s0, s1, s2
            ws[i, o + 3] = r00 * y0 + r01 * y1 + r02 * y2 + (p1 * s2 - p2 * s1)
            ws[i, o + 4] = r10 * y0 + r11 * y1 + r12 * y2 + (p2 * s0 - p0 * s2)
            ws[i, o + 5] = r20 * y0 + r21 * y1 + r22 * y2 + (p0 * s1 - p1 * s0)
            for x in range(6):
                t = 0.0
                for y in range(6):
                    t += sc[0, x, y] * ws[i, o + y]
                ws[i, _UW0 + 6 * k + x] = t
        for k in range(n):
            for c in range(n):
                t = 0.0
                for x in range(6):
                    t += ws[i, _SW0 + 6 * k + x] * ws[i, _UW0 + 6 * c + x]
                sc[1, k, c] = t
        dmin = spd_inverse(sc[1], n, Dinv[i], sc[2], sc[3])
        for k in range(n):
            pivots[vi[i] + k] = dmin
            o = _UW0 + 6 * k
            n0 = ws[i, o] - (p1 * ws[i, o + 5] - p2 * ws[i, o + 4])
            n1 = ws[i, o + 1] - (p2 * ws[i, o + 3] - p0 * ws[i, o + 5])
            n2 = ws[i, o + 2] - (p0 * ws[i, o + 4] - p1 * ws[i, o + 3])
            for x in range(3):
                U[i, x, k] = R_world[i, 0, x] * n0 + R_world[i, 1, x] * n1 + R_world[i, 2, x] * n2
                U[i, 3 + x, k] = (
                    R_world[i, 0, x] * ws[i, o + 3] + R_world[i, 1, x] * ws[i, o + 4]
                    + R_world[i, 2, x] * ws[i, o + 5]
                )  # fmt: skip
        if p >= 0:
            for x in range(6):
                for c in range(n):
                    t = 0.0
                    for k in range(n):
                        t += ws[i, _UW0 + 6 * k + x] * Dinv[i, k, c]
                    sc[4, x, c] = t  # G = U Dinv
            for x in range(6):
                for y in range(x, 6):
                    t = sc[0, x, y]
                    for k in range(n):
                        t -= sc[4, x, k] * ws[i, _UW0 + 6 * k + y]
                    ws[i, _PK[x, y]] = t
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
            s0, s1, s2 = ws[i, _SW0], ws[i, _SW0 + 1], ws[i, _SW0 + 2]
            s3, s4, s5 = ws[i, _SW0 + 3], ws[i, _SW0 + 4], ws[i, _SW0 + 5]
            u0, u1, u2 = ws[i, _UW0], ws[i, _UW0 + 1], ws[i, _UW0 + 2]
            u3, u4, u5 = ws[i, _UW0 + 3], ws[i, _UW0 + 4], ws[i, _UW0 + 5]
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
            _unpack(ws[p], _UP0, sc[0])
        else:
            for x in range(6):
                for y in range(6):
                    sc[0, x, y] = 0.0
        for x in range(6):
            for c in range(n):
                t = 0.0
                for k in range(n):
                    t += ws[i, _UW0 + 6 * k + x] * Dinv[i, k, c]
                sc[4, x, c] = t
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
                    sxk = ws[i, _SW0 + 6 * k + x]
                    t -= sxk * sc[5, y, k] + sc[5, x, k] * ws[i, _SW0 + 6 * k + y]
                    zs = 0.0
                    for c in range(n):
                        zs += sc[1, k, c] * ws[i, _SW0 + 6 * c + y]
                    t += sxk * zs
                ws[i, _UP0 + _PK[x, y]] = t
    # 3. Lambda on the compressed tree. F_a = psi(k, node body) X~_a^T carried up to the
    #    compressed ancestors (X~_a = X_a X(R^T, p): world -> node frame); a compressed edge
    #    whose psi product serves more nodes than it has bodies is formed once, else the
    #    rank-n factors psi are applied to each F_a directly (cheaper on short edges).
    for v in range(nvert):
        k = vbody[v]
        Uv = buf[oU + 36 * v : oU + 36 * v + 36]
        for x in range(6):
            for y in range(6):
                Uv[6 * x + y] = ws[k, _UP0 + _PK[x, y]]
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
        o = mi[16, k]
        p0 = p_world[k, 0] - p_world[o, 0]
        p1 = p_world[k, 1] - p_world[o, 1]
        p2 = p_world[k, 2] - p_world[o, 2]
        r00, r01, r02 = R_world[k, 0, 0], R_world[k, 0, 1], R_world[k, 0, 2]
        r10, r11, r12 = R_world[k, 1, 0], R_world[k, 1, 1], R_world[k, 1, 2]
        r20, r21, r22 = R_world[k, 2, 0], R_world[k, 2, 1], R_world[k, 2, 2]
        o = oF + 36 * (a * (maxd + 1) + d)
        Fa = buf[o : o + 36]
        for y in range(6):
            # column y of X~_a^T: the world-axes force of the body-axes force X_a[y, :]
            n0, n1, n2 = node_X[a, y, 0], node_X[a, y, 1], node_X[a, y, 2]
            f0, f1, f2 = node_X[a, y, 3], node_X[a, y, 4], node_X[a, y, 5]
            g0 = r00 * f0 + r01 * f1 + r02 * f2
            g1 = r10 * f0 + r11 * f1 + r12 * f2
            g2 = r20 * f0 + r21 * f1 + r22 * f2
            Fa[y] = (r00 * n0 + r01 * n1 + r02 * n2) + (p1 * g2 - p2 * g1)
            Fa[6 + y] = (r10 * n0 + r11 * n1 + r12 * n2) + (p2 * g0 - p0 * g2)
            Fa[12 + y] = (r20 * n0 + r21 * n1 + r22 * n2) + (p0 * g1 - p1 * g0)
            Fa[18 + y] = g0
            Fa[24 + y] = g1
            Fa[30 + y] = g2
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
            while cdepth[va] > cdepth[vb]:
                va = cparent[va]
            while cdepth[vb] > cdepth[va]:
                vb = cparent[vb]
            while va != vb and va >= 0:
                va = cparent[va]
                vb = cparent[vb]
            if va < 0:
                for x in range(6):
                    for y in range(6):
                        Lam[6 * a + x, 6 * b + y] = 0.0
                        Lam[6 * b + y, 6 * a + x] = 0.0
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


def _world_workspace(model, data):
    """The arguments of lambda_world_kernel that do not change between calls: model-derived
    tables (mi, mf), Data's arrays and the workspace ws; built once per (model, data) and kept
    on ``data`` as (model, args)."""
    cache = data.__dict__.get("_lambda_world")
    if cache is not None and cache[0] is model and cache[1][7] is data.U:
        return cache[1]
    nb = model.nb
    mi = np.zeros((17, max(nb + 1, 5)), dtype=np.int64)
    mi[15, 0] = -1  # no compressed tree memorised yet
    mi[15, 3], mi[15, 4] = nb, model.nq
    for i in range(nb):  # the root body of each body's tree
        mi[16, i] = i if model.parent[i] < 0 else mi[16, model.parent[i]]
    mi[0, :nb] = model.parent
    mi[1, :nb] = model.jtype
    mi[2, :nb] = model.qi
    mi[3, :nb] = model.vi
    mi[4, :nb] = model.nvj
    children = [[] for _ in range(nb)]
    for i in range(nb):
        if model.parent[i] >= 0:
            children[model.parent[i]].append(i)
    start = 0
    for i in range(nb):
        mi[5, i] = start
        mi[6, start : start + len(children[i])] = children[i]
        start += len(children[i])
    mi[5, nb] = start
    # inertial parameters from the spatial inertia about the body origin: mass m, centre of
    # mass c = h / m (h = m c from the upper-right block m c^), rotational inertia about the
    # centre of mass Jc = J_origin - m (|c|^2 1 - c c^T)
    params = np.zeros((nb, 10))
    for i in range(nb):
        I = model.inertia[i]
        m = I[3, 3]
        c = np.array([I[2, 4], I[0, 5], I[1, 3]]) / m if m > 0.0 else np.zeros(3)
        Jc = I[:3, :3] - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        params[i] = [m, *c, Jc[0, 0], Jc[0, 1], Jc[0, 2], Jc[1, 1], Jc[1, 2], Jc[2, 2]]
    mf = np.concatenate(
        [model.tree_E.ravel(), model.tree_r.ravel(), model.axis.ravel(), params.ravel()]
    )
    ws = np.zeros((nb, _WS_COLS))
    d = data
    args = (mi, mf, d.S, d.E, d.r, d.R_world, d.p_world, d.U, d.Dinv, d.pivots, ws)
    data._lambda_world = (model, args)
    return args


_NO_Q = np.zeros(0)
_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)


def compliance_upsilon(
    model, data, node_body, node_X, refresh: bool = True, *, q=None
) -> np.ndarray:
    """Lambda for the nodes by the Upsilon recursion, O(N) + O(nc^2) (000 Eqs. 64-69).

    With ``refresh`` (the default) the articulated factorisation and Upsilon are computed here,
    in one compiled call (:func:`lambda_world_kernel`, world-frame sweeps), from the kinematics
    held in ``data`` or, if ``q`` is given, from ``q`` (the pose part of forward_kinematics is
    then done in the same call: E, r, R_world, p_world and free joints' S are filled; body
    velocities are left alone). Afterwards ``data.U``, ``data.Dinv`` and ``data.pivots`` hold
    the articulated factorisation of this q, as after
    :func:`~mbsim.simcore.dynamics.articulated_factor`, so the impulse response can follow;
    ``data.IA`` and ``data.ups`` (body-frame) are *not* filled on this path.

    ``refresh=False`` uses ``data.ups`` as it is: call it after ABA (or articulated_factor)
    and :func:`upsilon` at the current q.
    """
    if type(node_body) is not np.ndarray or node_body.dtype is not _I64:
        node_body = np.ascontiguousarray(node_body, dtype=np.int64)
    if type(node_X) is not np.ndarray or node_X.dtype is not _F64:
        node_X = np.ascontiguousarray(node_X, dtype=np.float64)
    nc = node_body.shape[0]
    Lam = np.empty((6 * nc, 6 * nc))
    if not refresh:
        if q is not None:
            raise ValueError("compliance_upsilon: q needs refresh=True")
        lambda_kernel(
            model.parent, model.nvj, data.S, data.E, data.r, data.U, data.Dinv, data.ups,
            node_body, node_X, Lam,
        )  # fmt: skip
        return Lam
    if q is None:
        q = _NO_Q
    elif type(q) is not np.ndarray or q.dtype is not _F64:
        q = np.ascontiguousarray(q, dtype=np.float64)
    lambda_world_kernel(*_world_workspace(model, data), q, node_body, node_X, Lam)
    return Lam


def upsilon(model, data) -> None:
    """Fill ``data.ups`` with Upsilon(k) for every body (000 Eq. 68)."""
    upsilon_kernel(
        model.parent, model.nvj, data.S, data.E, data.r, data.U, data.Dinv, data.ups,
        data.scratch66,
    )  # fmt: skip


def compliance_dense(model, data, q, node_body, node_X) -> np.ndarray:
    """Reference Lambda = J M^-1 J^T by CRBA, Cholesky and the explicit node Jacobian, O(N^3)."""
    forward_kinematics(model, data, q)
    mass_matrix(model, data)  # M + dt D with implicit damping (dynamics.aba)
    J = node_jacobian(model, data, node_body, node_X)
    if model.nv == 0:
        return np.zeros((J.shape[0], J.shape[0]))
    c = scipy.linalg.cho_factor(data.M)
    return J @ scipy.linalg.cho_solve(c, J.T)
