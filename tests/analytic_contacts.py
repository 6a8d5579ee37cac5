"""Hand-written contact detectors for stepper tests, independent of mbsim.collision.

Each has ``detect(R_world, p_world) -> ContactSet | None`` with the arrays the stepper reads:
body_a, body_b (-1 = static world), local_a, local_b (points in each body's frame; world frame
for the world), normal (unit, from B to A, world), gap (m, negative = penetration).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ContactSet:
    body_a: np.ndarray
    body_b: np.ndarray
    local_a: np.ndarray
    local_b: np.ndarray
    normal: np.ndarray
    gap: np.ndarray


def _pack(rows):
    if not rows:
        return None
    a, b, la, lb, n, g = zip(*rows, strict=True)
    return ContactSet(
        np.array(a, dtype=np.int64),
        np.array(b, dtype=np.int64),
        np.array(la, dtype=float),
        np.array(lb, dtype=float),
        np.array(n, dtype=float),
        np.array(g, dtype=float),
    )


class SpheresOnPlane:
    """Spheres (body index -> radius) against the static plane n . x = offset."""

    def __init__(self, radii: dict[int, float], normal=(0.0, 0.0, 1.0), offset=0.0, margin=1e-3):
        self.radii = radii
        self.n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
        self.offset = offset
        self.margin = margin

    def detect(self, R, p):
        rows = []
        for b, r in self.radii.items():
            gap = self.n @ p[b] - self.offset - r
            if gap <= self.margin:
                low = p[b] - r * self.n
                rows.append((b, -1, R[b].T @ (low - p[b]), low - gap * self.n, self.n, gap))
        return _pack(rows)


class BoxOnPlane:
    """A box (half extents) on body 0 against the static plane n . x = 0: one contact per
    corner within the margin (the support polygon of a face-down box is its 4 corners)."""

    def __init__(self, half, normal, margin=1e-3):
        h = np.asarray(half, dtype=float)
        self.corners = np.array(
            [[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
        )
        self.corners = self.corners * h
        self.n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
        self.margin = margin

    def detect(self, R, p):
        rows = []
        for c in self.corners:
            w = p[0] + R[0] @ c
            gap = self.n @ w
            if gap <= self.margin:
                rows.append((0, -1, c, w - gap * self.n, self.n, gap))
        return _pack(rows)


class TwoSpheres:
    """Spheres on bodies 0 and 1 (radii r0, r1) against each other; normal from 1 to 0."""

    def __init__(self, r0, r1, margin=1e-3):
        self.r0, self.r1, self.margin = r0, r1, margin

    def detect(self, R, p):
        d = p[0] - p[1]
        dist = np.linalg.norm(d)
        n = d / dist
        gap = dist - self.r0 - self.r1
        if gap > self.margin:
            return None
        pa = p[0] - self.r0 * n
        pb = p[1] + self.r1 * n
        return _pack([(0, 1, R[0].T @ (pa - p[0]), R[1].T @ (pb - p[1]), n, gap)])


class SpheresOnPlanes:
    """Spheres fixed on bodies (body, centre in the body frame, radius) against static planes
    (unit normal n, offset o: the plane n . x = o, free side n . x > o) and against each other
    (pairs of sphere indices)."""

    def __init__(self, spheres, planes, pairs=(), margin=1e-3):
        self.spheres = [(int(b), np.asarray(c, dtype=float), float(r)) for b, c, r in spheres]
        self.planes = [
            (np.asarray(n, dtype=float) / np.linalg.norm(n), float(o)) for n, o in planes
        ]
        self.pairs = list(pairs)
        self.margin = margin

    def detect(self, R, p):
        rows = []
        centres = [p[b] + R[b] @ c for b, c, _ in self.spheres]
        for (b, _, r), x in zip(self.spheres, centres, strict=True):
            for n, o in self.planes:
                gap = n @ x - o - r
                if gap <= self.margin:
                    pa = x - r * n
                    rows.append((b, -1, R[b].T @ (pa - p[b]), pa - gap * n, n, gap))
        for i, j in self.pairs:
            (bi, _, ri), (bj, _, rj) = self.spheres[i], self.spheres[j]
            d = centres[i] - centres[j]
            dist = np.linalg.norm(d)
            n = d / dist
            gap = dist - ri - rj
            if gap <= self.margin:
                pa = centres[i] - ri * n
                pb = centres[j] + rj * n
                rows.append((bi, bj, R[bi].T @ (pa - p[bi]), R[bj].T @ (pb - p[bj]), n, gap))
        return _pack(rows)
