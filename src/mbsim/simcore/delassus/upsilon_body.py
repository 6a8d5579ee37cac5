"""Lambda by Jain's Upsilon recursion in body coordinates, after ABA (000 Appendix, Eqs. 64-69).

``Lambda = B^* Omega B`` with ``Omega = psi^* H^* D^-1 H psi`` never formed, O(N) + O(nc^2).
One base-to-tips sweep builds the block-diagonal kernel (Eq. 68)

    Upsilon(k) = psi^*(p(k), k) Upsilon(p(k)) psi(p(k), k) + H^*(k) D^-1(k) H(k),

and the off-diagonal blocks follow Eq. 69: for bodies i, j with nearest common ancestor k,
``Omega(i, j) = psi^*(k, i) Upsilon(k) psi(k, j)`` where psi(k, i) is the product of the
per-body propagators along the path (Omega = 0 across different trees). In our body-frame
Plücker convention psi(p(k), k) = Xup_k^T (1 - U_k Dinv_k S_k^T) (dynamics.py), H^* = S.

The path products are taken on the compressed tree (:mod:`.compressed_tree`): every node
carries its 6x6 factor ``F_a(v) = psi(v, k_a) X_a^T`` up the compressed tree (O(nc) steps
each); a compressed edge's product psi(top, bottom) is formed once when two or more factors
cross it, and a factor that crosses an edge alone takes its psi's one by one instead (as
upsilon_world.py does on short edges: no 6x6 product to form, and only the factor's columns
that are needed: :func:`lambda_linear_into`); then
``Lambda(a, b) = F_a(k)^T Upsilon(k) F_b(k)`` at the compressed common ancestor k.

This is the route the OS stepper takes: it reuses the articulated factorisation (U, Dinv) that
ABA (or :func:`~mbsim.simcore.dynamics.articulated_factor`) left in Data, and fills
``data.ups`` on the way. Nodes are given by their body index and the 6x6 motion transform X_a
from the body frame to the node frame (kinematics.node_transforms). Lambda is (6 nc, 6 nc),
units of (m/s or rad/s) per (N s or N m s), symmetric positive semi-definite.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.delassus.compressed_tree import common_vertex, compress, zero_blocks
from mbsim.simcore.delassus.nodes import as_nodes
from mbsim.simcore.spatial import borrowed, c_view, congruence_sym, copy6x6, xform_force_T


@njit(cache=True, forceinline=True)
def _matmul6(A, B, out):
    """out = A B for 6x6 matrices (out must not alias A or B)."""
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += A[a, k] * B[k, b]
            out[a, b] = s


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
    # work rows in scratch[0] (no allocation): w, a 1-DoF body's Y U, in its row 0; sd, a
    # root's S_a Dinv (at most 6 x 6 terms), in all of it; the general branch's T, which
    # also takes scratch[0], is another body's (each is used within its body's iteration)
    w = scratch[0, 0]
    sd = scratch[0].reshape(36)
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
        elif p < 0:
            # a root (a floating base): Y = 0, so T^T Y T is exactly +0 (T finite) and
            # Upsilon = S Dinv S^T, summed from 0.0 in the general branch's order
            for a in range(6):
                for k in range(n):
                    for m in range(n):
                        sd[k * n + m] = S[i, a, k] * Dinv[i, k, m]
                for b in range(6):
                    s = 0.0
                    for k in range(n):
                        for m in range(n):
                            s += sd[k * n + m] * S[i, b, m]
                    ups[i, a, b] = s
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
            _matmul6(Y, T, YT)
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(6):
                        s += T[k, a] * YT[k, b]
                    for k in range(n):
                        for m in range(n):
                            s += S[i, a, k] * Dinv[i, k, m] * S[i, b, m]
                    ups[i, a, b] = s


@njit(cache=True, forceinline=True)
def _apply_psi(i, nvj, S, E, r, U, Dinv, F, out, t, lo):
    """out = psi_i F = Xup_i^T (F - U_i Dinv_i S_i^T F), column by column (6x6 F), its
    columns lo .. 5; out may be F (each column is read before it is written)."""
    n = nvj[i]
    for c in range(lo, 6):
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


@njit(cache=True)
def lambda_kernel(parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, Lam):
    """Assemble Lambda from Upsilon on the compressed tree (see module docstring)."""
    no_i, no_f = np.empty(0, np.int64), np.empty(0)  # no work: its own arrays
    _lambda(parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, Lam, 0, no_i, no_f)


@njit(cache=True)
def lambda_linear_into(parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, Lam, iwk, fwk):
    """Only the linear-linear 3x3 blocks of Lambda (rows and columns 6 a + 3 .. 6 a + 5 of
    every node a), the rest of ``Lam`` left as it was: all that the relative compliance
    W = Q_u Lambda Q_u^T of point contacts reads (contact.relative_compliance, 000 Eq. 49).
    Each entry it writes is the same arithmetic as :func:`lambda_kernel`'s, bit for bit;
    the carried factors and the blocks take 3 of their 6 columns (the compiled contact step,
    contact_fused.py). Its work arrays are ``iwk`` (int64, 7 nb) and ``fwk`` (float64,
    :func:`lambda_work` floats) when they hold them, else arrays of its own: the compiled
    contact step's buffers (contact_islands.island_compliance_into)."""
    _lambda(parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, Lam, 3, iwk, fwk)


@njit(cache=True, inline="always")
def lambda_work(nb, nc):
    """The floats :func:`lambda_linear_into`'s work takes at most for nc nodes on a tree of nb
    bodies (at most nb vertices of the compressed tree, and depth)."""
    return 36 * nb + 84 + 73 * nc * max(nb, 1)


@njit(cache=True, inline="always")
def _lambda(parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, Lam, lo, iwk, fwk):
    """:func:`lambda_kernel` for the columns lo .. 5 of every node's factor F_a (lo = 0:
    all of Lambda; lo = 3: its linear-linear blocks); its work arrays views of ``iwk`` and
    ``fwk`` when they are long enough, else of arrays of its own."""
    nb = parent.shape[0]
    nc = node_body.shape[0]
    # 1. nodes per subtree and branch points -> compressed-tree vertices. The work arrays
    # (iw, buf) are used through borrowed views (spatial.borrowed: no owner, so the views
    # made of them below and in the loops count no references, each an atomic update
    # otherwise); the arrays themselves are read at the end, which keeps them alive
    if iwk.shape[0] >= 7 * max(nb, 1):
        iw_owned = c_view(iwk, 0, (7, max(nb, 1)))
    else:
        iw_owned = np.empty((7, max(nb, 1)), dtype=np.int64)
    iw = borrowed(iw_owned)
    nvert = compress(parent, node_body, iw)
    vid, vbody, cparent, cdepth = iw[3], iw[4], iw[5], iw[6]
    # the work arrays below as views of one allocation each (ints: iw's rows 1-2, which
    # compress leaves free; floats: ``buf``), filled as their own arrays were
    uses = iw[1]
    for v in range(nvert):
        uses[v] = 0
    maxd = 0
    for a in range(nc):
        if cdepth[vid[node_body[a]]] > maxd:
            maxd = cdepth[vid[node_body[a]]]
    nd = maxd + 1
    o_id = 36 * nvert
    o_t = o_id + 72
    o_f = o_t + 12
    o_g = o_f + 36 * nc * nd
    o_d = o_g + 36 * nc * nd
    if fwk.shape[0] >= o_d + nc * nd:
        buf_owned = fwk[: o_d + nc * nd]
    else:
        buf_owned = np.empty(o_d + nc * nd)
    buf = borrowed(buf_owned)
    edge = c_view(buf, 0, (nvert, 6, 6))
    ident = c_view(buf, o_id, (6, 6))
    tmp = c_view(buf, o_id + 36, (6, 6))
    t = buf[o_t:o_f]
    F = c_view(buf, o_f, (nc, nd, 6, 6))  # the per-node factors F_a by compressed depth
    Gs = c_view(buf, o_g, (nc, nd, 6, 6))
    done = buf[o_d:]
    # 2. edge products psi(top, bottom) where more than one node's factor crosses the edge;
    # a factor that crosses an edge alone takes its psi's one by one (step 3)
    for a in range(nc):
        v = vid[node_body[a]]
        while cparent[v] >= 0:
            uses[v] += 1
            v = cparent[v]
    for a in range(6):
        for b in range(6):
            ident[a, b] = 0.0
    for a in range(6):
        ident[a, a] = 1.0
    for v in range(nvert):
        if cparent[v] < 0 or uses[v] < 2:
            continue
        j = vbody[v]
        _apply_psi(j, nvj, S, E, r, U, Dinv, ident, edge[v], t, 0)
        j = parent[j]
        while vid[j] < 0:
            _apply_psi(j, nvj, S, E, r, U, Dinv, edge[v], tmp, t, 0)
            copy6x6(tmp, edge[v])
            j = parent[j]
    # the factors F_a at their own vertices
    for a in range(nc):
        for x in range(6):
            for y in range(6):
                F[a, cdepth[vid[node_body[a]]], x, y] = node_X[a, y, x]
    # 3. carry each F_a up the compressed tree: F_a(parent) = psi(top, bottom) F_a, by the
    # edge product or psi by psi
    for a in range(nc):
        v = vid[node_body[a]]
        d = cdepth[v]
        while cparent[v] >= 0:
            if uses[v] > 1:
                _matmul6_cols(edge[v], F[a, d], F[a, d - 1], lo)
            else:
                j = vbody[v]
                _apply_psi(j, nvj, S, E, r, U, Dinv, F[a, d], F[a, d - 1], t, lo)
                j = parent[j]
                while vid[j] < 0:
                    _apply_psi(j, nvj, S, E, r, U, Dinv, F[a, d - 1], F[a, d - 1], t, lo)
                    j = parent[j]
            v = cparent[v]
            d -= 1
    for a in range(done.shape[0]):
        done[a] = 0.0
    _blocks(node_body, vid, vbody, cparent, cdepth, F, Gs, done, ups, Lam, lo)
    return iw_owned.shape[0] + buf_owned.shape[0]  # read last: alive until here


@njit(cache=True, forceinline=True)
def _matmul6_cols(A, B, out, lo):
    """Columns lo .. 5 of out = A B for 6x6 matrices (out must not alias A or B): each entry
    as :func:`_matmul6` sums it."""
    for a in range(6):
        for b in range(lo, 6):
            s = 0.0
            for k in range(6):
                s += A[a, k] * B[k, b]
            out[a, b] = s


@njit(cache=True, forceinline=True)
def _blocks(node_body, vid, vbody, cparent, cdepth, F, Gs, done, ups, Lam, lo):
    """Given every F_a at its node's compressed ancestors, fill
    Lambda(a, b) = F_a(k)^T Upsilon(k) F_b(k) at the compressed common ancestor k (zero across
    trees). ``ups`` is indexed by body. Only the entries (x, y >= lo) of each block are
    filled, from the factors' columns lo .. 5 (:func:`lambda_linear_into`)."""
    nc = node_body.shape[0]
    nd = F.shape[1]
    # G = Upsilon(k) F_b(k) depends on b and k's depth only (k is b's compressed ancestor at
    # that depth): formed once per (b, depth), not once per pair (the same products); Gs
    # (F's shape) holds them, done (nc nd, zeros) marks those formed
    for a in range(nc):
        for b in range(a, nc):
            va = common_vertex(vid[node_body[a]], vid[node_body[b]], cparent, cdepth)
            if va < 0:
                zero_blocks(Lam, a, b, lo)
                continue
            d = cdepth[va]
            G = Gs[b, d]
            if done[b * nd + d] == 0.0:
                _matmul6_cols(ups[vbody[va]], F[b, d], G, lo)
                done[b * nd + d] = 1.0
            for x in range(lo, 6):
                for y in range(lo, 6):
                    s = 0.0
                    for m in range(6):
                        s += F[a, d, m, x] * G[m, y]
                    Lam[6 * a + x, 6 * b + y] = s
                    Lam[6 * b + y, 6 * a + x] = s


def upsilon(model, data) -> None:
    """Fill ``data.ups`` with Upsilon(k) for every body (000 Eq. 68)."""
    upsilon_kernel(
        model.parent, model.nvj, data.S, data.E, data.r, data.U, data.Dinv, data.ups,
        data.scratch66,
    )  # fmt: skip


def upsilon_after_aba(model, data, node_body, node_X) -> np.ndarray:
    """Lambda for the nodes from the articulated factorisation already in ``data``.

    Call it after :func:`~mbsim.simcore.dynamics.aba` or
    :func:`~mbsim.simcore.dynamics.articulated_factor` at the current q: it reads ``data.S``,
    ``E``, ``r``, ``U`` and ``Dinv``, fills ``data.ups`` (:func:`upsilon`, Eq. 68) and
    assembles Lambda (Eq. 69, module docstring). Nothing else in ``data`` changes.
    """
    node_body, node_X = as_nodes(node_body, node_X)
    upsilon(model, data)
    nc = node_body.shape[0]
    Lam = np.empty((6 * nc, 6 * nc))
    lambda_kernel(
        model.parent, model.nvj, data.S, data.E, data.r, data.U, data.Dinv, data.ups,
        node_body, node_X, Lam,
    )  # fmt: skip
    return Lam
