"""Contact islands: Lambda, W and the contact LCP built per island of bodies (issue 15).

Lambda's block between two nodes on different kinematic trees is exactly zero (000 Eq. 69:
Omega(i, j) = 0 without a common ancestor; ``compressed_tree.zero_blocks``), so the
relative compliance W = Q_u Lambda Q_u^T (000 Eq. 49) and the contact LCP's
M = D^T W D (Eq. 53) are exactly zero between two contacts unless a chain of contacts joins
their trees. The contacts fall into *islands*: the connected components of the graph whose
vertices are the trees and whose edges are the contacts (the static world, body -1, joins
nothing). :func:`contact_islands` finds them by union-find over the trees before anything is
assembled, and :func:`island_compliance` builds Lambda and W of each island alone: an
island of m contacts on n nodes costs (6 n)^2 entries of Lambda and (3 m)^2 of W instead of
the whole pile's. A pile of 20 free boxes settled in 4 stacks (80 contacts, 144 nodes) has 4
islands of 20 contacts: Lambda 4 x 216^2 instead of 864^2 entries (three quarters of them
zeros), W 4 x 60^2 instead of 240^2, and the LCP 4 x 120^2 instead of 480^2.

Bit for bit. Every entry the island's Lambda holds is the whole Lambda's (each block
Lambda(a, b) = F_a^T Upsilon(k) F_b depends on the nodes a and b only, and the tree
compressed to the nodes of a tree depends on that tree's nodes alone:
``compressed_tree.compress``); each W entry sums the same Lambda entries in the same order
(``contact._relative_compliance_kernel``); each M and q entry of an island is the whole
LCP's (``contact._contact_lcp_kernel``, block by block). The island's LCP lays out its rows
as the whole one does ([beta of its contacts; sigma of its contacts], contacts ascending),
so :func:`global_rows` maps them to the whole LCP's rows monotonically: a block of an
island's M (``islands._component_labels``) is the whole M's principal submatrix on the
block's global rows, entry for entry, and ||M||_inf is the largest island's (the
row sums skip only exact zeros). What is not bit for bit: the acceptance test of the
assembled answer of a split LCP, w = M z + q on the whole (lcp/problem.py), sums each row
over its block only (:func:`verify_blocks`), where a dense pass sums the zeros too in the
order its vectorised loop picks: the residual differs by rounding, and so might an
acceptance within rounding of the tolerance (the Python chain's ``islands.solve_blocks``
takes the same test, so both paths agree bit for bit).

Units: Lambda in (m/s) per (N s), W the same, M dimensionless in the friction rows.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.contact import _relative_compliance_kernel
from mbsim.simcore.delassus.upsilon_body import lambda_linear_into, lambda_work
from mbsim.simcore.lcp.problem import _verify_kernel, accept_kernel
from mbsim.simcore.native_call import native
from mbsim.simcore.spatial import c_view

#: Lambda's linear-linear blocks through the kernel's address (native_call.py: compiled once)
lambda_linear_into_call = native(lambda_linear_into)


@njit(cache=True, inline="always")
def _find(up, a):
    """The root of ``a`` in the union-find forest ``up`` (path halving)."""
    while up[a] != a:
        up[a] = up[up[a]]
        a = up[a]
    return a


@njit(cache=True)
def contact_islands(parent, body_a, body_b, island):
    """island[i] = the island of contact i (module docstring), islands numbered 0, 1, ... in
    order of their first contact; returns their number (:func:`contact_islands_into` with
    a work array of its own)."""
    nb = parent.shape[0]
    return contact_islands_into(parent, body_a, body_b, island, np.empty(3 * nb, np.int64))


@njit(cache=True)
def contact_islands_into(parent, body_a, body_b, island, work):
    """:func:`contact_islands` with its work arrays in ``work`` (int64, at least 3 nb: the
    compiled contact step's buffer). Contacts on the same tree, or on trees joined by a
    chain of contacts, share an island; a contact between the static world and a tree no
    other contact touches is an island alone. Bodies are numbered parents first
    (``parent[i] < i``), so a tree's root is found by one pass."""
    nb = parent.shape[0]
    nu = body_a.shape[0]
    root = work[:nb]
    for i in range(nb):
        p = parent[i]
        root[i] = i if p < 0 else root[p]
    up = work[nb : 2 * nb]
    for i in range(nb):
        up[i] = i
    for i in range(nu):
        a, b = body_a[i], body_b[i]
        if a >= 0 and b >= 0:
            ra = _find(up, root[a])
            rb = _find(up, root[b])
            if ra != rb:
                up[max(ra, rb)] = min(ra, rb)
    first = work[2 * nb : 3 * nb]  # a tree set's island
    for i in range(nb):
        first[i] = -1
    count = 0
    for i in range(nu):
        a = body_a[i] if body_a[i] >= 0 else body_b[i]
        if a < 0:  # no moving side: nothing couples it
            island[i] = count
            count += 1
            continue
        t = _find(up, root[a])
        if first[t] < 0:
            first[t] = count
            count += 1
        island[i] = first[t]
    return count


@njit(cache=True)
def island_compliance(
    parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, ia, ib, corder, cstarts
):  # fmt: skip
    """(w, wstart): W = Q_u Lambda Q_u^T of each island (000 Eq. 49) from its own Lambda
    (000 Eq. 69, ``upsilon_body.lambda_linear_into``: the linear-linear blocks, after
    Upsilon in ``ups``), island I's (3 m, 3 m) W in w[wstart[I]:wstart[I + 1]] row-major, m
    its contacts corder[cstarts[I]:cstarts[I + 1]] (ascending). The island's nodes are the
    nodes ia, ib of its contacts in their global order (contact.contact_nodes). The same
    entries as the whole W's blocks, bit for bit (module docstring).
    :func:`island_compliance_into` with arrays of its own."""
    count = cstarts.shape[0] - 1
    wstart = np.empty(count + 1, dtype=np.int64)
    w = np.empty(compliance_starts(cstarts, wstart))
    nn = node_body.shape[0]
    island_compliance_into(
        parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, ia, ib, corder, cstarts, wstart,
        w, np.empty(0), np.empty(2 * (nn + ia.shape[0]), np.int64),
    )  # fmt: skip
    return w, wstart


@njit(cache=True, inline="always")
def compliance_work(nb, k, whole):
    """The floats of :func:`island_compliance_into`'s work for an island of k nodes (nb
    bodies; ``whole``: the only island, whose Lambda needs no node copies)."""
    return 36 * k * (k if whole else k + 1) + lambda_work(nb, k)


@njit(cache=True)
def compliance_starts(cstarts, wstart):
    """wstart[I] = where island I's W starts in :func:`island_compliance`'s ``w`` (count + 1
    entries); returns the size of ``w``."""
    count = cstarts.shape[0] - 1
    wstart[0] = 0
    for g in range(count):
        m = cstarts[g + 1] - cstarts[g]
        wstart[g + 1] = wstart[g] + 9 * m * m
    return wstart[count]


@njit(cache=True)
def island_compliance_into(
    parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, ia, ib, corder, cstarts, wstart, w,
    fwork, iwork,
):  # fmt: skip
    """:func:`island_compliance` into ``wstart`` (:func:`compliance_starts`' own) and ``w``
    (zeroed here), with its work arrays in ``fwork`` (float64: Lambda, the island's node
    transforms, then ``upsilon_body.lambda_linear_into``'s work: :func:`compliance_work`;
    what it does not hold is allocated) and ``iwork`` (int64, at least 2 (nn + nu), then
    7 nb for Lambda's): the compiled contact step's buffers."""
    nn = node_body.shape[0]
    nu = ia.shape[0]
    o_lw = min(2 * (nn + nu), iwork.shape[0])  # Lambda's int work after this function's
    count = cstarts.shape[0] - 1
    for i in range(w.shape[0]):
        w[i] = 0.0
    if count == 1:
        # one island: its contacts are all of them in order (corder 0 .. nu - 1) and its
        # nodes all nodes in order, so the local numbering below is the identity; Lambda
        # and W from the step's own arrays, without the copies (the same entries)
        m = cstarts[1]
        if fwork.shape[0] >= 36 * nn * nn:
            lam = c_view(fwork, 0, (6 * nn, 6 * nn))
        else:
            lam = np.empty((6 * nn, 6 * nn))
        lambda_linear_into_call(
            parent, nvj, S, E, r, U, Dinv, ups, node_body, node_X, lam, iwork[o_lw:],
            fwork[min(36 * nn * nn, fwork.shape[0]) :],
        )  # fmt: skip
        _relative_compliance_kernel(lam, ia, ib, c_view(w, 0, (3 * m, 3 * m)))
        return
    local = iwork[:nn]
    for j in range(nn):
        local[j] = -1
    for g in range(count):
        c0, c1 = cstarts[g], cstarts[g + 1]
        m = c1 - c0
        for a in range(c0, c1):
            c = corder[a]
            if ia[c] >= 0:
                local[ia[c]] = 0
            if ib[c] >= 0:
                local[ib[c]] = 0
        k = 0
        for j in range(nn):
            if local[j] == 0:
                local[j] = k
                k += 1
        nbody = iwork[nn : nn + k]
        if fwork.shape[0] >= 36 * k * (k + 1):
            nX = c_view(fwork, 0, (k, 6, 6))
            lam = c_view(fwork, 36 * k, (6 * k, 6 * k))
        else:
            nX = np.empty((k, 6, 6))
            lam = np.empty((6 * k, 6 * k))
        for j in range(nn):
            if local[j] >= 0:
                nbody[local[j]] = node_body[j]
                for x in range(6):  # no array assignment: numba would compile its
                    for y in range(6):  # shape-error formatter (~3 s of a first run)
                        nX[local[j], x, y] = node_X[j, x, y]
        la = iwork[2 * nn : 2 * nn + m]
        lb = iwork[2 * nn + nu : 2 * nn + nu + m]
        for a in range(m):
            c = corder[c0 + a]
            la[a] = local[ia[c]] if ia[c] >= 0 else -1
            lb[a] = local[ib[c]] if ib[c] >= 0 else -1
        lambda_linear_into_call(
            parent, nvj, S, E, r, U, Dinv, ups, nbody, nX, lam, iwork[o_lw:],
            fwork[min(36 * k * (k + 1), fwork.shape[0]) :],
        )  # fmt: skip
        _relative_compliance_kernel(lam, la, lb, c_view(w, wstart[g], (3 * m, 3 * m)))
        for a in range(m):
            c = corder[c0 + a]
            if ia[c] >= 0:
                local[ia[c]] = -1
            if ib[c] >= 0:
                local[ib[c]] = -1


@njit(cache=True, inline="always")
def global_rows(contacts, nu, k, rows):
    """rows[l] = the whole contact LCP's row of row l of an island's LCP (``contacts`` its
    contacts, ascending; nu contacts in all, k = nf + 1 beta rows each): beta row b of the
    island's a-th contact is k contacts[a] + b, its sigma row nu k + contacts[a]."""
    m = contacts.shape[0]
    for a in range(m):
        for b in range(k):
            rows[k * a + b] = k * contacts[a] + b
        rows[m * k + a] = nu * k + contacts[a]


@njit(cache=True)
def verify_blocks(n, tol_rel, Ms, qs, zs, ws):
    """``limit_step.evaluate_candidate`` of the whole LCP (n rows) whose M is block diagonal
    in some row order, from its blocks (M_b, q_b) and the assembled z's block rows z_b
    (lists, one entry a block; ws[b] gets w_b = M_b z_b + q_b): each row of w = M z + q is
    its block's row (M is exactly zero off the blocks), the residuals and norms the blocks'
    largest, the tolerance and the verifiability test those of n rows (lcp/problem.py).
    Returns (ok, worst residual, tol)."""
    res = 0.0
    sv = 0.0
    mnorm = 0.0
    qn = 0.0
    zn = 0.0
    mv = 0.0
    for b in range(len(Ms)):
        rb, sb, _eq, mb, qb, zb, vb = _verify_kernel(Ms[b], qs[b], zs[b], 0, ws[b])
        res = max(res, rb)
        sv = max(sv, sb)
        mnorm = max(mnorm, mb)
        qn = max(qn, qb)
        zn = max(zn, zb)
        if not vb <= mv:  # also propagates nan, as _verify_kernel does
            mv = vb
    return accept_kernel(tol_rel, n, res, sv, mnorm, qn, zn, mv)


__all__ = [
    "compliance_starts", "compliance_work", "contact_islands", "contact_islands_into",
    "global_rows", "island_compliance", "island_compliance_into", "verify_blocks",
]  # fmt: skip
