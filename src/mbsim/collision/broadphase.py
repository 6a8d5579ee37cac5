"""Broadphase: which shape pairs might be within the contact margin.

Two implementations give the same candidate pairs (tests/test_collision_broadphase.py): the
proxies' AABBs overlap. :class:`AabbBroadphase` tests every pair of proxy AABBs in one numba
call (O(n^2), ~3 ns a pair, no Python per pair); :class:`FclBroadphase` keeps them in FCL's
dynamic AABB trees (O(n log n) but ~1 us of python-fcl per candidate pair and per pushed
proxy). The scene uses the first up to :data:`AABB_MAX_SHAPES` shapes and FCL above
(collision/scene.py, ``broadphase="auto"``). Both return the pairs (i < j) sorted, so the
contacts, and the LCP rows built from them, come in the same order whichever runs.

Every shape gets a *proxy* in an FCL ``DynamicAABBTreeCollisionManager``: a sphere of radius
r + margin/2 for a sphere, otherwise a box covering the shape's own bounding box grown by
margin/2 on every side, placed with the shape. Two shapes closer than the margin have
overlapping proxies, hence overlapping AABBs, so FCL's AABB tree reports every pair the
narrowphase needs (and more). Moving shapes live in one manager, static ones in another that
is set up once; a step refits the moving tree (``update()``, no rebuild) and asks for the
moving-moving pairs and the moving-static pairs. Static-static pairs are never generated.

FCL workarounds (python-fcl 0.7.0.11, FCL 0.7):

* No Halfspace or Plane ever enters a manager or a query: a manager holding a Halfspace
  segfaults in ``setup()``/``collide()``, and so does every ``distance()`` with one. The
  ground plane is handled by the kernels.
* Every FCL object and geometry stays referenced by this object for its lifetime (FCL keeps
  raw pointers; a geometry freed by Python crashes a later query).
* The broadphase callback receives fresh wrapper objects that carry no identity. python-fcl
  builds each wrapper by calling ``getNodeType()`` on the Python geometry once; every proxy
  geometry gets an instance attribute ``getNodeType`` that appends its shape index to a log
  (:func:`_tag`), so after ``collide()`` the log holds the candidate pairs in order. This is
  checked once at import (:func:`tags_work`); if a python-fcl version breaks it the scene
  uses the all-pairs bounding-sphere broadphase instead.
"""

from __future__ import annotations

import array
import functools

import fcl
import numpy as np
from numba import njit

from mbsim.collision.shapes import SPHERE


class _ProxySphere(fcl.Sphere):
    """fcl.Sphere that accepts a per-instance ``getNodeType`` (the tag, see module doc)."""


class _ProxyBox(fcl.Box):
    """fcl.Box that accepts a per-instance ``getNodeType``."""


def _tag(geom, tag: int, log: array.array) -> None:
    """From now on python-fcl's callback wrappers record ``tag`` when they wrap ``geom``.

    The wrappers' constructor calls ``geom.getNodeType()`` and only uses the result for
    objects it owns (never for these wrappers), so a C-level ``log.append(tag)`` (which returns
    None) costs ~50 ns and no Python frame. Set after the geometry's own CollisionObject is
    built, which does need the real node type.
    """
    geom.getNodeType = functools.partial(log.append, tag)


def _never_done(o1, o2, cdata):
    return False


def tags_work() -> bool:
    """Does python-fcl report broadphase pairs through getNodeType as relied on here?"""
    log = array.array("q")
    ga, gb = _ProxySphere(1.0), _ProxyBox(1.0, 1.0, 1.0)
    a = fcl.CollisionObject(ga, fcl.Transform())
    b = fcl.CollisionObject(gb, fcl.Transform(np.array([1.0, 0, 0])))
    _tag(ga, 7, log)
    _tag(gb, 9, log)
    manager = fcl.DynamicAABBTreeCollisionManager()
    manager.registerObjects([a, b])
    manager.setup()
    manager.collide(None, _never_done)
    return sorted(log) == [7, 9]


TAGS_WORK = tags_work()


@njit(cache=True)
def dirty_proxies(index, offset, rho, Rw, pw, slack, pos, pushed_p, pushed_R, dirty):
    """Proxies that moved too far from the pose FCL holds: returns their count, indices in
    ``dirty``, and records the new pose as pushed.

    Proxy k's content (the shape grown by margin/2) lies within rho[k] of its centre
    c = R offset + p, so no point of it moved more than |c - c0| + rho ||R - R0||_F since the
    last push (R0, c0). While that bound is <= slack the content stays inside the proxy,
    which FCL holds grown by ``slack`` (a "fat AABB"), so it need not be pushed.
    """
    nd = 0
    for k in range(index.shape[0]):
        g = index[k]
        d2 = 0.0
        for a in range(3):
            c = pw[g, a] + (
                Rw[g, a, 0] * offset[k, 0] + Rw[g, a, 1] * offset[k, 1] + Rw[g, a, 2] * offset[k, 2]
            )
            pos[k, a] = c
            d2 += (c - pushed_p[k, a]) ** 2
        r2 = 0.0
        if rho[k] > 0.0:
            for a in range(3):
                for b in range(3):
                    r2 += (Rw[g, a, b] - pushed_R[k, a, b]) ** 2
        if not (np.sqrt(d2) + rho[k] * np.sqrt(r2) <= slack):  # nan (never pushed) is dirty
            dirty[nd] = k
            nd += 1
            pushed_p[k] = pos[k]
            pushed_R[k] = Rw[g]
    return nd


class FclBroadphase:
    """Candidate pairs from FCL's dynamic AABB trees (module docstring).

    slack (m): proxies are grown by margin/2 + slack and pushed to FCL only when their
    content may have moved more than slack since the last push (:func:`dirty_proxies`);
    slack = 0 pushes every moving proxy every step.
    """

    def __init__(self, records, margin: float, slack: float = 0.0) -> None:
        self._log = array.array("q")
        self._keep: list[object] = []  # every FCL object and geometry, kept alive
        grow = 0.5 * margin + slack
        dyn, sta = [], []
        for rec in records:
            if rec.kind == SPHERE:
                geom = _ProxySphere(rec.radius + grow)
                offset, rho = np.zeros(3), 0.0
            else:
                half = np.asarray(rec.aabb_half, float)
                geom = _ProxyBox(*(2.0 * (half + grow)))
                offset = np.asarray(rec.aabb_center, float)
                rho = float(np.linalg.norm(half)) + 0.5 * margin
            obj = fcl.CollisionObject(geom, fcl.Transform())
            _tag(geom, rec.index, self._log)
            self._keep += [geom, obj]
            (sta if rec.body < 0 else dyn).append((rec, obj, offset, rho))
        for rec, obj, offset, _ in sta:
            R = rec.pose[:3, :3]
            obj.setRotation(R)
            obj.setTranslation(R @ offset + rec.pose[:3, 3])
        self._dynamic = fcl.DynamicAABBTreeCollisionManager()
        self._dynamic.registerObjects([o for _, o, _, _ in dyn])
        self._dynamic.setup()
        self._static = None
        if sta:
            self._static = fcl.DynamicAABBTreeCollisionManager()
            self._static.registerObjects([o for _, o, _, _ in sta])
            self._static.setup()
        nd = len(dyn)
        self._index = np.array([r.index for r, _, _, _ in dyn], dtype=np.int64)
        self._offset = np.array([o for _, _, o, _ in dyn], dtype=float).reshape(-1, 3)
        self._rho = np.array([r for _, _, _, r in dyn], dtype=float)
        self.slack = float(slack)
        self._pos = np.zeros((nd, 3))
        self._pushed_p = np.full((nd, 3), np.nan)
        self._pushed_R = np.zeros((nd, 3, 3))
        self._dirty = np.zeros(nd, dtype=np.int64)
        rows = [self._pos[k] for k in range(nd)]
        # (object, position row, shape index or -1 when the rotation need not be pushed)
        self._push = [
            (obj, rows[k], rec.index if rho > 0 else -1) for k, (rec, obj, _, rho) in enumerate(dyn)
        ]
        self.pushes = 0  # proxies pushed so far (for benchmarks)

    def candidates(self, Rw: np.ndarray, pw: np.ndarray) -> np.ndarray:
        """(m, 2) int64 shape pairs whose proxies' AABBs overlap, for world poses Rw, pw."""
        if not self._push:
            return np.zeros((0, 2), dtype=np.int64)
        nd = dirty_proxies(
            self._index, self._offset, self._rho, Rw, pw, self.slack, self._pos,
            self._pushed_p, self._pushed_R, self._dirty,
        )  # fmt: skip
        if nd:
            push = self._push
            for k in self._dirty[:nd].tolist():
                obj, row, g = push[k]
                if g >= 0:
                    obj.setRotation(Rw[g])
                obj.setTranslation(row)
            self._dynamic.update()
            self.pushes += nd
        log = self._log
        del log[:]
        self._dynamic.collide(None, _never_done)
        if self._static is not None:
            self._dynamic.collide(self._static, None, _never_done)
        return sorted_pairs(np.array(log, dtype=np.int64).reshape(-1, 2))


@njit(cache=True)
def sorted_pairs(pairs):
    """``pairs`` (m, 2) as (min, max) rows in lexicographic order, repeats removed: the
    broadphases' one output order (module docstring)."""
    m = pairs.shape[0]
    key = np.empty(m, dtype=np.int64)
    big = 1
    for k in range(m):
        big = max(big, pairs[k, 0] + 1, pairs[k, 1] + 1)
    for k in range(m):
        a, b = pairs[k, 0], pairs[k, 1]
        key[k] = min(a, b) * big + max(a, b)
    key = np.unique(key)
    out = np.empty((key.shape[0], 2), dtype=np.int64)
    for k in range(key.shape[0]):
        out[k, 0] = key[k] // big
        out[k, 1] = key[k] % big
    return out


#: Largest scene (shapes, ground plane not counted) for which ``broadphase="auto"`` takes
#: :class:`AabbBroadphase`; above it FCL's trees. Measured (``python benchmarks/
#: bench_collision.py --broadphase-scaling``, moving boxes, docs/results.md): the numba test
#: costs 7-29 us a step for 16-128 shapes against FCL's 19-90 us, 91 against 127 us at 256,
#: and the two meet near 512 shapes (~340 us each), where the quadratic pair test catches up.
AABB_MAX_SHAPES = 256


@njit(cache=True)
def _near_identity(R) -> bool:
    """Eigen's ``isIdentity()`` at its default precision p = 1e-12, as FCL asks it: every
    off-diagonal |R_ab| <= p, every diagonal |R_aa - 1| <= p min(|R_aa|, 1)."""
    p = 1e-12
    for a in range(3):
        for b in range(3):
            x = R[a, b]
            if a == b:
                if abs(x - 1.0) > p * min(abs(x), 1.0):
                    return False
            elif abs(x) > p:
                return False
    return True


@njit(cache=True)
def proxy_aabbs(index, sphere, size, offset, Rw, pw, lo, hi):
    """AABBs of the proxies ``index`` (shape indices) at the shape poses Rw, pw, as FCL's
    ``CollisionObject::computeAABB`` makes them for :class:`FclBroadphase`'s proxies: centre
    c = R offset + p; a sphere proxy (never rotated there) c -+ its radius ``size[k, 0]``; a
    box proxy (full sides ``size[k]``) c -+ its half sides when R is the identity (to 1e-12)
    and otherwise c -+ the radius of its local AABB, |sides / 2|, on every axis."""
    _aabbs(index, sphere, size, offset, Rw, pw, lo, hi, index, False)


@njit(cache=True, inline="always")
def _aabbs(index, sphere, size, offset, Rw, pw, lo, hi, rows, by_row):
    """:func:`proxy_aabbs`, proxy k's AABB in row k of lo, hi, or (``by_row``) in row
    rows[k]."""
    for k in range(index.shape[0]):
        g = index[k]
        ident = sphere[k] or _near_identity(Rw[g])
        if not sphere[k] and not ident:
            hx, hy, hz = 0.5 * size[k, 0], 0.5 * size[k, 1], 0.5 * size[k, 2]
            rad = np.sqrt(hx * hx + hy * hy + hz * hz)
        for a in range(3):
            c = pw[g, a] + (
                Rw[g, a, 0] * offset[k, 0] + Rw[g, a, 1] * offset[k, 1] + Rw[g, a, 2] * offset[k, 2]
            )
            if sphere[k]:
                h = size[k, 0]
            elif ident:
                h = 0.5 * size[k, a]
            else:
                h = rad
            row = rows[k] if by_row else k
            lo[row, a] = c - h
            hi[row, a] = c + h


@njit(cache=True)
def overlapping_pairs(index, moving, lo, hi, out):
    """Pairs (index[i], index[j]), i < j, not both static, whose AABBs overlap (touching
    counts, as in FCL's AABB::overlap), in the order of ``index`` (ascending shape indices:
    the pairs come out sorted). Writes up to len(out) rows; returns the count."""
    n = index.shape[0]
    m = 0
    for i in range(n):
        for j in range(i + 1, n):
            if not (moving[i] or moving[j]):
                continue
            if (
                lo[i, 0] > hi[j, 0] or lo[j, 0] > hi[i, 0]
                or lo[i, 1] > hi[j, 1] or lo[j, 1] > hi[i, 1]
                or lo[i, 2] > hi[j, 2] or lo[j, 2] > hi[i, 2]
            ):  # fmt: skip
                continue
            if m < out.shape[0]:
                out[m, 0] = index[i]
                out[m, 1] = index[j]
            m += 1
    return m


class AabbBroadphase:
    """Candidate pairs by testing every pair of proxy AABBs in numba (module docstring).

    The proxies are FCL's (:class:`FclBroadphase` with slack 0): a sphere grown by margin/2,
    or the shape's own bounding box grown by margin/2 on every side, so both report the same
    pairs. Static proxies' AABBs are computed once.

    allowed: the scene's filter matrix (:mod:`~mbsim.collision.filters`) or None. A shape no
    other shape may touch (no allowed pair with a moving shape in it; every shape of a robot
    without self-collision on a floor: its contacts are the ground's, which the narrowphase
    checks without the broadphase) then gets no proxy: its pairs, which the narrowphase would
    skip as not allowed, are never reported (issue 15). The filter only ever loses pairs after
    construction (``start_pose``), so the pairs left out stay ones it skips."""

    def __init__(self, records, margin: float, allowed: np.ndarray | None = None) -> None:
        grow = 0.5 * margin
        recs = sorted(records, key=lambda r: r.index)
        if allowed is not None:
            recs = [r for r in recs if _has_partner(r, recs, allowed)]
        n = len(recs)
        self._index = np.array([r.index for r in recs], dtype=np.int64)
        self._moving = np.array([r.body >= 0 for r in recs], dtype=np.bool_)
        self._sphere = np.array([r.kind == SPHERE for r in recs], dtype=np.bool_)
        self._size = np.zeros((n, 3))
        self._offset = np.zeros((n, 3))
        for k, r in enumerate(recs):
            if r.kind == SPHERE:
                self._size[k] = r.radius + grow
            else:  # the full sides, as FclBroadphase gives fcl.Box
                self._size[k] = 2.0 * (np.asarray(r.aabb_half, float) + grow)
                self._offset[k] = np.asarray(r.aabb_center, float)
        self._lo = np.zeros((n, 3))
        self._hi = np.zeros((n, 3))
        static = np.flatnonzero(~self._moving)
        if len(static):  # static shapes' poses are their records' (FclBroadphase: the same)
            Rs = np.zeros((n, 3, 3))
            ps = np.zeros((n, 3))
            for k in static:
                Rs[k] = recs[k].pose[:3, :3]
                ps[k] = recs[k].pose[:3, 3]
            lo, hi = np.zeros((n, 3)), np.zeros((n, 3))
            proxy_aabbs(np.arange(n, dtype=np.int64), self._sphere, self._size, self._offset,
                        Rs, ps, lo, hi)  # fmt: skip
            self._lo[static], self._hi[static] = lo[static], hi[static]
        moving = np.flatnonzero(self._moving)
        self._mindex = self._index[moving]
        self._mrow = moving
        self._msphere = self._sphere[moving]
        self._msize = np.ascontiguousarray(self._size[moving])
        self._moffset = np.ascontiguousarray(self._offset[moving])
        self._out = np.zeros((max(16, 4 * n), 2), dtype=np.int64)

    def candidates(self, Rw: np.ndarray, pw: np.ndarray) -> np.ndarray:
        """(m, 2) int64 shape pairs (i < j, sorted) whose proxies' AABBs overlap (a new
        array: the kernel's answer is a view of the reused ``_out``)."""
        return aabb_candidates(
            self._index, self._moving, self._mrow, self._mindex, self._msphere, self._msize,
            self._moffset, Rw, pw, self._lo, self._hi, self._out,
        ).copy()  # fmt: skip


def _has_partner(rec, recs, allowed) -> bool:
    """Whether shape ``rec`` has an allowed pair with another of ``recs``, one of them moving
    (the pairs the broadphase may report)."""
    return any(
        o.index != rec.index and (rec.body >= 0 or o.body >= 0) and allowed[rec.index, o.index]
        for o in recs
    )


@njit(cache=True)
def aabb_candidates(index, moving, mrow, mindex, msphere, msize, moffset, Rw, pw, lo, hi, out):
    """One step of :class:`AabbBroadphase`: moving proxies' AABBs (written into their rows
    ``mrow`` of lo, hi), then the overlapping pairs: the first m rows of ``out`` (a view,
    valid until the next call; a new array when out holds fewer), no allocation a step."""
    _aabbs(mindex, msphere, msize, moffset, Rw, pw, lo, hi, mrow, True)
    m = overlapping_pairs(index, moving, lo, hi, out)
    if m > out.shape[0]:
        out = np.empty((m, 2), dtype=np.int64)
        overlapping_pairs(index, moving, lo, hi, out)
    return out[:m]


@njit(cache=True)
def all_pairs(si_body, n):
    """Every pair (i < j) of shapes that are not both static: the fallback broadphase (the
    kernels' bounding-sphere test then rejects far pairs at ~5 ns each)."""
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if si_body[i] >= 0 or si_body[j] >= 0:
                count += 1
    out = np.empty((count, 2), dtype=np.int64)
    k = 0
    for i in range(n):
        for j in range(i + 1, n):
            if si_body[i] >= 0 or si_body[j] >= 0:
                out[k, 0] = i
                out[k, 1] = j
                k += 1
    return out


class BruteForceBroadphase:
    """All allowed pairs, fixed at construction; the narrowphase kernel prunes them."""

    def __init__(self, body: np.ndarray, allowed: np.ndarray) -> None:
        pairs = all_pairs(np.asarray(body, dtype=np.int64), len(body))
        keep = allowed[pairs[:, 0], pairs[:, 1]] if len(pairs) else np.zeros(0, bool)
        self._pairs = np.ascontiguousarray(pairs[keep])

    def candidates(self, Rw: np.ndarray, pw: np.ndarray) -> np.ndarray:
        return self._pairs
