"""The box-box SAT's bounds (polytope.sat with boxes=True) change nothing: on random box
pairs near contact (stacked with small yaws, exactly aligned ties, random rotations;
touching, 1e-12 m apart, within 2 mm, farther) convex_pair_in gives the same count, rows and
keys, bit for bit, with and without them."""

import numpy as np
from scipy.spatial.transform import Rotation

from mbsim.collision import polytope as P
from mbsim.collision.shapes import box_polytope
from mbsim.collision.table import HX


def _world(poly, R, p):
    n = poly.normals @ R.T
    return poly.vertices @ R.T + p, n, poly.offsets + n @ p, poly.edge_dirs @ R.T


def _faces(poly, base):
    fp, fv = [], []
    for f in poly.faces:
        fp.append((base + len(fv), len(f)))
        fv.extend(int(k) for k in f)
    return np.array(fp, np.int64), fv


def _pair(rng, trial):
    hA, hB = rng.uniform(0.02, 0.3, 3), rng.uniform(0.02, 0.3, 3)
    mode = trial % 4
    if mode == 0:
        RA = Rotation.from_euler("z", rng.uniform(-0.3, 0.3)).as_matrix()
        RB = Rotation.from_euler("z", rng.uniform(-0.3, 0.3)).as_matrix()
    elif mode == 1:
        RA, RB = np.eye(3), np.eye(3)
    else:
        RA = Rotation.random(random_state=int(rng.integers(1 << 30))).as_matrix()
        RB = Rotation.random(random_state=int(rng.integers(1 << 30))).as_matrix()
    pB = rng.uniform(-5, 5, 3) * (trial % 3)
    pA = pB.copy()
    pA[:2] += rng.uniform(-0.2, 0.2, 2)
    gap = rng.choice([0.0, rng.uniform(-2e-3, 2e-3), 1e-12, -1e-12])
    pA[2] = pB[2] + np.abs(RA[2]) @ hA + np.abs(RB[2]) @ hB + gap
    if mode == 3:
        pA = pB + rng.normal(size=3) * (np.linalg.norm(hA) + np.linalg.norm(hB)) * 0.6
    return hA, hB, RA, RB, pA, pB


def test_box_bounds_change_nothing():
    rng = np.random.default_rng(5)
    with_contacts = 0
    for trial in range(2000):
        hA, hB, RA, RB, pA, pB = _pair(rng, trial)
        A, B = box_polytope(hA), box_polytope(hB)
        vA, nA, dA, edA = _world(A, RA, pA)
        vB, nB, dB, edB = _world(B, RB, pB)
        fpA, fvA = _faces(A, 0)
        fpB, fvB = _faces(B, len(fvA))
        FV = np.array(fvA + fvB, np.int64)
        eA, eB = np.asarray(A.edges, np.int64), np.asarray(B.edges, np.int64)
        sf = np.zeros((2, 15))
        sf[0, HX : HX + 3], sf[1, HX : HX + 3] = hA, hB
        Rw, pw = np.stack([RA, RB]), np.stack([pA, pB])
        out = []
        for boxes in (False, True):
            W = np.empty((P.pair_work_rows(8, 8), 3))
            P.box_rows(0, 0, sf, Rw, pw, W)
            P.box_rows(1, 1, sf, Rw, pw, W)
            buf, keys = np.zeros((64, 10)), np.zeros(64, np.int64)
            c = P.convex_pair_in(
                vA, nA, dA, fpA, eA, edA, 0.0, vB, nB, dB, fpB, eB, edB, 0.0, FV, 1e-3, buf,
                keys, W, np.bool_(boxes),
            )  # fmt: skip
            out.append((c, buf[:c].copy(), keys[:c].copy()))
        assert out[0][0] == out[1][0], trial
        assert np.array_equal(out[0][1], out[1][1]), trial
        assert np.array_equal(out[0][2], out[1][2]), trial
        with_contacts += out[0][0] > 0
    assert with_contacts > 500
