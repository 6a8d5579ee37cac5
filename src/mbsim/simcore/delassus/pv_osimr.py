"""PV-OSIMr: the Delassus matrix Lambda = J M^-1 J^T in O(n + m^2) (003, Algorithm 3).

Same nodes, same matrix and same units as the Upsilon algorithms of this package ((rad/s, m/s)
per (N m s, N s)). As in the paper, every spatial quantity of the algorithm is expressed in one
inertial frame (003 Sec. II: "expressed in and with respect to a fixed inertial frame"): world
axes, with the origin at the tree's root body. Any fixed frame gives the same Lambda; putting
the origin on the robot keeps the lever arms, and so the rounding, at the robot's size (about
the world origin the error grew to ~6e-9 relative for a robot 100 m away and ~2e-4 at 1 km).
Only the inputs (body-frame S, the node transforms X_a) and the factorisation left in Data are
body-frame. In this common frame a joint's propagator needs no change of frame, so neither
sweep has a 6x6 congruence per body. Paper notation:

* every constraint node is a fictitious *end-effector* link rigidly attached to its body
  (003 Sec. I-C); its constraint matrix K_i (m_i x 6) maps the body's spatial motion to the
  node's constraint-space motion: the node transform X_a (body -> world-aligned node frame,
  m_i = 6) or, for a connect-type (3D, point) constraint, its three linear rows (m_i = 3);
* H^A_i the articulated inertia, D_i = S_i^T H^A_i S_i (Eq. 7) and U_i = H^A_i S_i;
* the force propagator (Eq. 8) ``pi(i)P_i = 1 - U_i D_i^-1 S_i^T``: a force on link i seen at
  its parent after joint i took its share; its transpose is the motion propagator;
* the joint's inverse inertia (Eq. 10) ``pi(i)Omega_i = S_i D_i^-1 S_i^T``;
* ``jP_i`` and ``jOmega_i`` (Eqs. 9, 11): the same composed along the path from link i up to
  its ancestor j, i.e. the extended force propagator and the spatial inverse inertia of i
  when j is held fixed (units: 1, and (rad/s^2, m/s^2) per (N m, N)).

*Branching links* N (003 Sec. I-C) are the end-effectors and every link at which the
end-effector sets of its children split (here: a body with at least two children, counting
its own nodes, that support nodes); ``A(i)`` is the nearest branching ancestor of i (-1 for
the world, the paper's link 0) and ``D(i)`` the nearest branching link at or below i on the
way to the nodes. Algorithm 3, as implemented:

1. (lines 3-4) each end-effector starts with ``P = K_i^T`` (6 x m_i) and ``Omega = 0``
   (m_i x m_i): the constraint rows replace the 6x6 identity, so a 3D node carries a 6x3
   propagator and a 3x3 inverse inertia up to its first branching ancestor, and no path ever
   carries more than 6 columns (PV-OSIM stacks all m rows of a subtree): the "r" rule.
2. (lines 5-15) tips to base: the articulated inertias over all bodies (lines 8-11:
   H^A_pi(i) += H^A_i - U_i D_i^-1 U_i^T; world_frame.articulated_sweep_world, the sweep the
   world-frame Upsilon uses too), then, on bodies that support nodes, the propagators between
   branching links (Eqs. 16-17):

       pi(k)Omega_D(k) = kOmega_D(k) + kP_D(k)^T S_k D_k^-1 S_k^T kP_D(k),
       pi(k)P_D(k)     = pi(k)P_k kP_D(k),

   restarting from ``P = 1, Omega = 0`` at each branching link (line 7). O(n).
3. (lines 16-17) a base-to-tips sweep over N only gives the inverse inertia with the world
   fixed (Eq. 18): ``0Omega_i = A(i)Omega_i + A(i)P_i^T 0Omega_A(i) A(i)P_i``. At an
   end-effector that is the diagonal block Lambda_ii (line 28). O(m).
4. (lines 18-22) for each end-effector i, its constraint-space motion propagators to every
   branching ancestor (Eq. 19): ``A(j)K_i = jK_i A(j)P_j^T``, starting from
   ``A(i)K_i = A(i)P_i^T``. At most O(m^2) 6x6 products in all.
5. (lines 23-27, Eq. 13) off-diagonal blocks at the closest common (branching) ancestor c:
   ``Lambda_ij = cK_i 0Omega_c cK_j^T``. Each ``0Omega_c cK_j^T`` (6 x m_j) is formed once per
   (j, c) and reused for every i (an implementation choice: the paper writes the triple
   product per pair). Pairs are enumerated at their common ancestor directly (nodes sorted
   in preorder make every subtree a contiguous range), so no ancestor search: O(m^2).

Blocks between nodes of different trees are zero (their only common ancestor is the world).
``0Omega`` at a branching body, moved to body coordinates, equals Upsilon(k) of 000 Eq. 68;
the tests use that to check the intermediate quantities, not only Lambda.

Relation to the Upsilon recursion (:mod:`.upsilon_body`): ``jP_i`` is Jain's
psi(j, i), and both end in the same per-pair products. They differ in where the O(n) work
goes: Upsilon scatters Upsilon(k) base-to-tips over all n bodies and then composes psi along
the compressed tree, PV-OSIMr accumulates the inverse inertias tips-to-base inside the
articulated-inertia sweep (only on bodies that support nodes) and revisits only the O(m)
branching links, in 3 columns instead of 6 on paths that carry a single 3D constraint.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.delassus import world_frame as wf
from mbsim.simcore.delassus.nodes import as_nodes
from mbsim.simcore.spatial import plucker_np

# Rows of the integer workspace ``iw`` (see _Workspace): per body, per node, per vertex.
_B_NEE, _B_NACT, _B_VID, _B_NANC, _B_SLOT, _B_EFIRST, _B_FILL = range(7)
_E_ORDER, _E_VERT, _E_KOFF = range(7, 10)
_V_PAR, _V_DEPTH, _V_LO, _V_DIM, _V_ROW0, _V_NODE = range(10, 16)
_B_ROOT = 16
_IW_ROWS = 17
_N_TMP = 6  # 6x6 scratch matrices at the end of the float workspace

# fastmath "contract" lets LLVM fuse multiply-adds (one rounding instead of two: never less
# accurate); the 6x6 products below are written with a literal column count m (3 or 6) at
# every call site so that they unroll: numba's loops with a run-time bound are ~2x slower.
_OPTS = wf.OPTS


@njit(inline="always", **_OPTS)
def _mul6(A, B, out, m):
    """out[:, :m] = A B[:, :m] for a 6x6 A (out must not alias B)."""
    for k in range(6):
        a0, a1, a2, a3, a4, a5 = A[k, 0], A[k, 1], A[k, 2], A[k, 3], A[k, 4], A[k, 5]
        for c in range(m):
            out[k, c] = (
                a0 * B[0, c] + a1 * B[1, c] + a2 * B[2, c]
                + a3 * B[3, c] + a4 * B[4, c] + a5 * B[5, c]
            )  # fmt: skip


@njit(inline="always", **_OPTS)
def _congruence(P, W, base, out, T, m):
    """out[:m, :m] = base[:m, :m] + P[:, :m]^T W P[:, :m] for a symmetric 6x6 W, exactly
    symmetric (upper triangle computed, then mirrored). T is 6x6 scratch."""
    _mul6(W, P, T, m)
    for c in range(m):
        p0, p1, p2, p3, p4, p5 = P[0, c], P[1, c], P[2, c], P[3, c], P[4, c], P[5, c]
        for e in range(c, m):
            x = base[c, e] + (
                p0 * T[0, e] + p1 * T[1, e] + p2 * T[2, e]
                + p3 * T[3, e] + p4 * T[4, e] + p5 * T[5, e]
            )  # fmt: skip
            out[c, e] = x
            out[e, c] = x


@njit(inline="always", **_OPTS)
def _block(Fa, G, Lam, oa, ob, ma, mb):
    """Lam[oa:oa+ma, ob:ob+mb] = Fa[:, :ma]^T G[:, :mb], and the transposed block."""
    for x in range(ma):
        f0, f1, f2, f3, f4, f5 = Fa[0, x], Fa[1, x], Fa[2, x], Fa[3, x], Fa[4, x], Fa[5, x]
        for y in range(mb):
            v = (
                f0 * G[0, y] + f1 * G[1, y] + f2 * G[2, y]
                + f3 * G[3, y] + f4 * G[4, y] + f5 * G[5, y]
            )  # fmt: skip
            Lam[oa + x, ob + y] = v
            Lam[ob + y, oa + x] = v


@njit(inline="always", **_OPTS)
def _pass_1dof(sv, uv, g, P, O, yv, m, up):
    """Eqs. 16-17 through a 1-DoF joint, in place, world frame: with y = P^T s (m),
    Omega += g y y^T and, if the joint has a parent (``up``), P <- (1 - g u s^T) P."""
    s0, s1, s2, s3, s4, s5 = sv[0], sv[1], sv[2], sv[3], sv[4], sv[5]
    for c in range(m):
        yv[c] = (
            s0 * P[0, c] + s1 * P[1, c] + s2 * P[2, c]
            + s3 * P[3, c] + s4 * P[4, c] + s5 * P[5, c]
        )  # fmt: skip
    for c in range(m):
        gy = g * yv[c]
        for e in range(c, m):
            x = O[c, e] + gy * yv[e]
            O[c, e] = x
            O[e, c] = x
        yv[c] = gy
    if up:
        for a in range(6):
            ua = uv[a]
            for c in range(m):
                P[a, c] -= ua * yv[c]


@njit(inline="always", **_OPTS)
def _pass_ndof(w, Di, n, P, O, Y, Z, m, up):
    """Eqs. 16-17 through an n-DoF joint (free joint), world frame: Y = S^T P,
    Z = D^-1 Y, Omega += Y^T Z and, if ``up``, P <- P - U Z. ``w`` is the body's row of the
    world-frame workspace (S and U columns at SW0 and UW0, world_frame.py)."""
    for k in range(n):
        for c in range(m):
            acc = 0.0
            for a in range(6):
                acc += w[wf.SW0 + 6 * k + a] * P[a, c]
            Y[k, c] = acc
    for k in range(n):
        for c in range(m):
            acc = 0.0
            for j in range(n):
                acc += Di[k, j] * Y[j, c]
            Z[k, c] = acc
    for c in range(m):
        for e in range(c, m):
            acc = O[c, e]
            for k in range(n):
                acc += Y[k, c] * Z[k, e]
            O[c, e] = acc
            O[e, c] = acc
    if up:
        for a in range(6):
            for c in range(m):
                acc = P[a, c]
                for k in range(n):
                    acc -= w[wf.UW0 + 6 * k + a] * Z[k, c]
                P[a, c] = acc


@njit(**_OPTS)
def pv_osimr_kernel(
    parent, cstart, clist, vi, nvj, S, prm, R_world, p_world, U, Dinv, pivots, refresh,
    node_body, node_X, node_rows, iw, fw, ws, F, Lam,
):  # fmt: skip
    """Algorithm 3 of 003 into ``Lam`` (m x m, any content on entry); see the module doc.

    Returns 0 on success; -1 - a if node a's body is out of range (nothing computed); or the
    vertex-tree depth that ``F`` (nc, depth, 6, 6) must hold when it is too shallow (only the
    topology part of ``iw`` is touched then).

    Inputs: the body-frame S and the world poses (R_world, p_world) of the kinematics, the
    children lists (``cstart``, ``clist``) and inertial parameters (``prm``) of
    world_frame.py. ``refresh``: build the articulated inertias (world frame, in ``ws``), U
    (written back in body coordinates), Dinv and pivots first (lines 8-11,
    world_frame.articulated_sweep_world); otherwise U and Dinv must hold the factorisation of
    the current q. ``node_rows`` (2, >= nc): first constraint
    row of each node in X_a and its dimension m_a. Workspaces: ``iw`` (17, >= max(nb, 2 nc))
    integers, ``fw`` (3 V + 6, 6, 6) floats with V >= 2 nc vertices (P, Omega, 0Omega),
    ``ws`` (nb, world_frame.WS_COLS) the world-frame articulated quantities.
    """
    nb = parent.shape[0]
    nc = node_body.shape[0]
    for a in range(nc):
        if node_body[a] < 0 or node_body[a] >= nb:
            return -1 - a
    nee = iw[_B_NEE]
    nact = iw[_B_NACT]
    vid = iw[_B_VID]
    nanc = iw[_B_NANC]
    slot = iw[_B_SLOT]
    efirst = iw[_B_EFIRST]
    fill = iw[_B_FILL]
    troot = iw[_B_ROOT]
    order = iw[_E_ORDER]
    evert = iw[_E_VERT]
    koff = iw[_E_KOFF]
    vpar = iw[_V_PAR]
    vdepth = iw[_V_DEPTH]
    vlo = iw[_V_LO]
    vdim = iw[_V_DIM]
    vrow0 = iw[_V_ROW0]
    vnode = iw[_V_NODE]
    nV = (fw.shape[0] - _N_TMP) // 3
    Pv = fw[0:nV]  # pi(i)P_D(i) per vertex, then A(v)P_v (6 x m_v)
    Om = fw[nV : 2 * nV]  # pi(i)Omega_D(i) per vertex, then A(v)Omega_v (m_v x m_v)
    Om0 = fw[2 * nV : 3 * nV]  # 0Omega_v
    tmp = fw[3 * nV :]

    # ---- topology (q-independent): N, A(.), D(.), preorder ranges ------------------------
    for i in range(nb):
        nee[i] = 0
        fill[i] = 0
        troot[i] = i if parent[i] < 0 else troot[parent[i]]  # preorder: parent done first
    off = 0
    for a in range(nc):
        nee[node_body[a]] += 1
        koff[a] = off  # row of node a in Lambda (caller's order)
        off += node_rows[1, a]
    # counting sort of the nodes by body: body numbers are a preorder, so this is the
    # preorder of the end-effectors and every subtree's nodes form one contiguous range
    s = 0
    for i in range(nb):
        efirst[i] = s
        s += nee[i]
    for a in range(nc):
        b = node_body[a]
        order[efirst[b] + fill[b]] = a
        fill[b] += 1
    # nact = number of children (end-effectors included) that support a node; ES(i) is
    # non-empty iff nact > 0, and i is a branching link iff nact >= 2 (the children's
    # end-effector sets are then all strict subsets of i's)
    for i in range(nb):
        nact[i] = nee[i]
    for i in range(nb - 1, -1, -1):
        if nact[i] > 0 and parent[i] >= 0:
            nact[parent[i]] += 1
    # vertices of N (branching bodies, then their end-effectors) in preorder
    nvert = 0
    maxd = 0
    for i in range(nb):
        p = parent[i]
        up = -1
        if p >= 0:
            up = vid[p] if vid[p] >= 0 else nanc[p]
        nanc[i] = up  # nearest branching strict ancestor: A(i)
        below = up
        vid[i] = -1
        if nact[i] >= 2:
            v = nvert
            nvert += 1
            vid[i] = v
            vpar[v] = up
            vdepth[v] = 0 if up < 0 else vdepth[up] + 1
            vlo[v] = efirst[i]
            vdim[v] = 6
            vnode[v] = -1
            below = v
        for k in range(nee[i]):
            se = efirst[i] + k
            a = order[se]
            v = nvert
            nvert += 1
            evert[se] = v
            vpar[v] = below
            vdepth[v] = 0 if below < 0 else vdepth[below] + 1
            vlo[v] = se
            vdim[v] = node_rows[1, a]
            vrow0[v] = node_rows[0, a]
            vnode[v] = a
            if vdepth[v] > maxd:
                maxd = vdepth[v]
    if maxd > F.shape[1]:
        return maxd
    # Lam arrives uninitialised: blocks between trees are never visited below, so zero it
    # when the nodes span more than one tree (a single tree writes every entry)
    ntop = 0
    for v in range(nvert):
        if vpar[v] < 0:
            ntop += 1
    if ntop > 1:
        for k in range(Lam.shape[0]):
            for j in range(Lam.shape[1]):
                Lam[k, j] = 0.0
    # D(i): the vertex whose propagators body i updates (its own if branching, else that of
    # its only supporting child or end-effector)
    for i in range(nb - 1, -1, -1):
        if nact[i] == 0:
            slot[i] = -1
            continue
        if nact[i] >= 2:
            slot[i] = vid[i]
        elif nee[i] == 1:
            slot[i] = evert[efirst[i]]
        p = parent[i]
        if p >= 0 and nact[p] == 1 and nee[p] == 0:
            slot[p] = slot[i]

    # ---- lines 3-4: end-effectors start with P = K^T, Omega = 0 --------------------------
    vec = tmp[5]
    yv, t, t2, pr = vec[0], vec[1], vec[2], vec[3]
    for se in range(nc):
        v = evert[se]
        a = vnode[v]
        b = node_body[a]
        m = vdim[v]
        r0 = vrow0[v]
        for k in range(6):
            if k < m:
                # column k of K^T: constraint row r0 + k of X_a as a body force, then moved to
                # the inertial frame (world axes, origin at the tree's root body)
                for c in range(6):
                    t[c] = node_X[a, r0 + k, c]
                wf.origin_from_root(p_world, b, troot[b], pr)
                wf.force_to_world(R_world[b], pr, t, t2)
                for c in range(6):
                    Pv[v, c, k] = t2[c]
            else:  # columns past m stay zero, so fixed-width products below see no garbage
                for c in range(6):
                    Pv[v, c, k] = 0.0
            for c in range(6):
                Om[v, c, k] = 0.0

    # ---- lines 5-15: one tips-to-base sweep (articulated inertias + Eqs. 16-17) ----------
    # Everything is in the tree's inertial frame, as in the paper, so pi(i)P_i = 1 - U D^-1 S^T
    # (Eq. 8) and H^A_pi(i) += H^A_i - U D^-1 U^T (line 11) need no frame change per joint.
    # Lines 8-11 (articulated inertias, U, D^-1) are world_frame.articulated_sweep_world,
    # shared with the world-frame Upsilon: it runs over all bodies first, then Eqs. 16-17 over
    # the bodies that support nodes, in the same tips-to-base order.
    if refresh:
        wf.articulated_sweep_world(
            parent, cstart, clist, vi, nvj, S, R_world, p_world, troot, prm, U, Dinv, pivots,
            ws, tmp,
        )  # fmt: skip
    else:
        wf.subspaces_world(nvj, S, U, R_world, p_world, troot, ws)
    Y = tmp[2]
    Z = tmp[3]
    for i in range(nb - 1, -1, -1):
        v = slot[i]
        if v < 0:
            continue
        n = nvj[i]
        p = parent[i]
        w = ws[i]
        P = Pv[v]
        O = Om[v]
        if nact[i] >= 2:  # line 7: a branching link restarts from iP_i = 1, iOmega_i = 0
            for a in range(6):
                for b in range(6):
                    P[a, b] = 1.0 if a == b else 0.0
                    O[a, b] = 0.0
        if n == 1:
            sv = w[wf.SW0 : wf.SW0 + 6]
            uv = w[wf.UW0 : wf.UW0 + 6]
            if vdim[v] == 6:
                _pass_1dof(sv, uv, Dinv[i, 0, 0], P, O, yv, 6, p >= 0)
            else:
                _pass_1dof(sv, uv, Dinv[i, 0, 0], P, O, yv, 3, p >= 0)
        else:
            _pass_ndof(w, Dinv[i], n, P, O, Y, Z, vdim[v], p >= 0)

    # ---- lines 16-17 (Eq. 18): 0Omega over N, base to tips; line 28 at end-effectors ----
    T = tmp[0]
    for v in range(nvert):
        m = vdim[v]
        a = vpar[v]
        dst = Om0[v]
        if a < 0:
            for k in range(m):
                for j in range(m):
                    dst[k, j] = Om[v, k, j]
        elif m == 6:
            _congruence(Pv[v], Om0[a], Om[v], dst, T, 6)
        else:
            _congruence(Pv[v], Om0[a], Om[v], dst, T, 3)
        if vnode[v] >= 0:
            o = koff[vnode[v]]
            for k in range(m):
                for j in range(m):
                    Lam[o + k, o + j] = dst[k, j]

    # ---- lines 18-22 (Eq. 19): F[s, d] = cK_s^T for the ancestor c at vertex depth d -----
    for se in range(nc):
        v = evert[se]
        a = vpar[v]
        if a < 0:
            continue
        d = vdepth[a]
        Fs = F[se]
        for k in range(6):
            for c in range(6):
                Fs[d, k, c] = Pv[v, k, c]
        if vdim[v] == 6:
            while vpar[a] >= 0:
                _mul6(Pv[a], Fs[d], Fs[d - 1], 6)
                a = vpar[a]
                d -= 1
        else:
            while vpar[a] >= 0:
                _mul6(Pv[a], Fs[d], Fs[d - 1], 3)
                a = vpar[a]
                d -= 1

    # ---- lines 23-27 (Eq. 13): Lambda_ij = cK_i 0Omega_c cK_j^T at c = cca(i, j) ---------
    G = tmp[1]
    for sb in range(nc):
        eb = evert[sb]
        mb = vdim[eb]
        ob = koff[vnode[eb]]
        v = eb
        while vpar[v] >= 0:
            c = vpar[v]
            d = vdepth[c]
            lo = vlo[c]
            hi = vlo[v]  # nodes of c's earlier children: the pairs whose cca is c
            if hi > lo:
                _mul6(Om0[c], F[sb, d], G, 6)  # 0Omega_c cK_b^T, shared by every a
                for sa in range(lo, hi):
                    ea = evert[sa]
                    oa = koff[vnode[ea]]
                    if vdim[ea] == 6:
                        if mb == 6:
                            _block(F[sa, d], G, Lam, oa, ob, 6, 6)
                        else:
                            _block(F[sa, d], G, Lam, oa, ob, 6, 3)
                    elif mb == 6:
                        _block(F[sa, d], G, Lam, oa, ob, 3, 6)
                    else:
                        _block(F[sa, d], G, Lam, oa, ob, 3, 3)
            v = c
    return 0


class PvOsimrWorkspace:
    """Arrays the kernel reuses between calls on one Data (``data.pv_osimr_ws``; grown, never
    shrunk), and the model's children lists and inertial parameters (world_frame.py)."""

    def __init__(self, model) -> None:
        self.model = model
        self.nb = nb = model.nb
        self.cap = -1
        self.ws = np.zeros((nb, wf.WS_COLS))  # world-frame articulated quantities
        self.prm = wf.inertial_parameters(model)
        self.cstart, self.clist = wf.children_csr(model.parent)
        self.ensure(1)

    def ensure(self, nc: int, depth: int = 0) -> None:
        if nc > self.cap:
            cap = max(nc, 2 * self.cap, 4)
            self.cap = cap
            self.iw = np.zeros((_IW_ROWS, max(self.nb, 2 * cap)), dtype=np.int64)
            self.fw = np.zeros((3 * 2 * cap + _N_TMP, 6, 6))
            self.rows6 = np.array([[0] * cap, [6] * cap], dtype=np.int64)  # 6D: rows 0..5
            self.rows3 = np.array([[3] * cap, [3] * cap], dtype=np.int64)  # 3D: rows 3..5
            self.F = np.zeros((cap, max(depth, 4), 6, 6))
        elif depth > self.F.shape[1]:
            self.F = np.zeros((self.cap, max(depth, 2 * self.F.shape[1]), 6, 6))


def pv_osimr_from_poses(model, data, node_body, node_X, linear=False) -> np.ndarray:
    """Lambda = J M^-1 J^T for the nodes by PV-OSIMr, O(n + m^2) (003 Algorithm 3), computing
    the articulated factorisation inside the algorithm's own backward sweep (lines 8-11).

    ``data`` must hold the kinematics of the current q
    (:func:`~mbsim.simcore.kinematics.forward_kinematics`; only the poses R_world, p_world
    and S are read). Afterwards ``data.U``, ``data.Dinv`` and ``data.pivots`` are as
    :func:`~mbsim.simcore.dynamics.articulated_factor` leaves them, so the impulse response
    can follow (the articulated inertias themselves stay in the inertial frame in
    ``data.pv_osimr_ws``: ``data.IA`` is not written); ``data.ups`` is never touched.

    ``node_body[a]`` is the body of node a and ``node_X[a]`` (6x6) the motion transform from
    that body's frame to the node frame (kinematics.node_transforms). ``linear`` (bool, or one
    bool per node): True makes a node a 3D point (connect-type) constraint, K = the three
    linear rows of X_a. Lambda is (sum m_a)^2 with m_a = 6 or 3, nodes in the given order, rows
    [angular; linear] (6D) or [linear] (3D); for 6D nodes it is the Upsilon algorithms' matrix
    (to rounding). Units: (rad/s, m/s) per (N m s, N s).
    """
    return _pv_osimr(model, data, node_body, node_X, linear, True)


def pv_osimr_after_aba(model, data, node_body, node_X, linear=False) -> np.ndarray:
    """As :func:`pv_osimr_from_poses`, but U and Dinv are taken from ``data`` as they are:
    call it after :func:`~mbsim.simcore.dynamics.aba` (or articulated_factor) at this q.
    Only the kinematics and the factorisation are read; nothing in ``data`` but its
    workspace changes."""
    return _pv_osimr(model, data, node_body, node_X, linear, False)


def _pv_osimr(model, data, node_body, node_X, linear, refresh: bool) -> np.ndarray:
    node_body, node_X = as_nodes(node_body, node_X)
    nc = node_body.shape[0]
    if node_body.ndim != 1 or node_X.shape != (nc, 6, 6):
        raise ValueError(f"node_X must be ({nc}, 6, 6), got {node_X.shape}")
    ws = data.pv_osimr_ws
    if ws is None or ws.model is not model:
        ws = data.pv_osimr_ws = PvOsimrWorkspace(model)
    if nc > ws.cap:
        ws.ensure(nc)
    if linear is False:
        rows, m = ws.rows6, 6 * nc
    elif linear is True or isinstance(linear, np.bool_):
        rows = ws.rows3 if linear else ws.rows6
        m = (3 if linear else 6) * nc
    else:
        lin = np.asarray(linear, dtype=bool)
        if lin.shape != (nc,):
            raise ValueError(f"linear must be a bool or {nc} bools, got shape {lin.shape}")
        rows = np.array([np.where(lin, 3, 0), np.where(lin, 3, 6)], dtype=np.int64)
        m = int(rows[1].sum())
    Lam = np.empty((m, m))
    while True:
        status = pv_osimr_kernel(
            model.parent, ws.cstart, ws.clist, model.vi, model.nvj, data.S, ws.prm,
            data.R_world, data.p_world, data.U, data.Dinv, data.pivots, refresh,
            node_body, node_X, rows, ws.iw, ws.fw, ws.ws, ws.F, Lam,
        )  # fmt: skip
        if status == 0:
            return Lam
        if status < 0:
            a = -1 - status
            raise ValueError(f"node {a}: body {node_body[a]} is not in [0, {model.nb})")
        ws.ensure(nc, status)


def branching_inverse_inertias(model, data) -> dict[int, np.ndarray]:
    """``0Omega_k`` (6x6, moved to body k coordinates) of the branching bodies of the last
    PV-OSIMr call on ``data`` (003 Eq. 18), keyed by body index.

    For testing: these equal Upsilon(k) of 000 Eq. 68 (upsilon_body.upsilon) at the same q.
    """
    ws = data.pv_osimr_ws
    vid = ws.iw[_B_VID]
    nV = (ws.fw.shape[0] - _N_TMP) // 3
    out = {}
    for i in range(model.nb):
        if vid[i] >= 0:
            # a motion-like quantity: Omega_body = X Omega X^T, X = inertial frame -> body
            root = i
            while model.parent[root] >= 0:
                root = model.parent[root]
            X = plucker_np(data.R_world[i].T, data.p_world[i] - data.p_world[root])
            out[i] = X @ ws.fw[2 * nV + vid[i]] @ X.T
    return out
