"""The tree compressed to the constraint-node bodies and their branch points (000 Eq. 69).

Both Upsilon algorithms (body frame: :mod:`.upsilon_body`, world frame: :mod:`.upsilon_world`)
compose the propagators psi(k, i) of 000 Eq. 69 only along the edges of this tree: its
vertices are the bodies that carry a node and the bodies where two node-carrying subtrees
meet, its edges the paths between them. Every body is walked at most once (O(N)) and each
node's factor climbs O(nc) vertices, which keeps Lambda O(N) + O(nc^2) rather than O(N nc).
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def compress(parent, node_body, iw):
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


@njit(cache=True, inline="always")
def common_vertex(va, vb, cparent, cdepth):
    """The nearest common ancestor of compressed vertices va and vb (either may be it), or -1
    when they lie in different trees (then Lambda's block between them is zero)."""
    while cdepth[va] > cdepth[vb]:
        va = cparent[va]
    while cdepth[vb] > cdepth[va]:
        vb = cparent[vb]
    while va != vb and va >= 0:
        va = cparent[va]
        vb = cparent[vb]
    return va


@njit(cache=True, inline="always")
def zero_blocks(Lam, a, b, lo=0):
    """Lambda(a, b) = Lambda(b, a)^T = 0 (6x6 blocks of nodes a and b in different trees): the
    entries x, y >= lo of each (lo = 3: the linear-linear 3x3 blocks only, all that
    ``upsilon_body.lambda_linear_into`` fills)."""
    for x in range(lo, 6):
        for y in range(lo, 6):
            Lam[6 * a + x, 6 * b + y] = 0.0
            Lam[6 * b + y, 6 * a + x] = 0.0
