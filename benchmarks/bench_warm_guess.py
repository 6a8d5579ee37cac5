"""CPU time of the warm guess (``lcp.warm.guess_normed``) on a scene's recorded LCPs.

Records every guess of a run of ``--scene`` (bench_peers' a1-stand / laikago-stand, 1.5 s;
panda-table and the other Panda scenes, 1.5 s; box-pile, 0.1 s) on the Python contact path
(``ContactFuser.eligible`` False, so ``chain._warm_attempt`` calls ``warm.guess_kernel``):
its (M, q, remembered set, delta, ...). Then times ``guess_normed`` on them in a compiled
loop (``--reps`` passes over all of them, best of 5; ``mraw`` = ||M||_inf as the compiled
step passes it for an unsplit LCP), per LCP size, and prints how many rounds the guesses
took. ``--save out.npz`` keeps the LCPs and the outputs (codes, z, final sets);
``--load in.npz`` times the LCPs of an earlier --save instead of recording (so two trees
run the same LCPs in one sitting) and checks that the outputs are the same bits
(np.array_equal) as the saved ones. Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_warm_guess.py \\
        --scene a1-stand --save /tmp/a1.npz
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_warm_guess.py \\
        --load /tmp/a1.npz
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_peers  # noqa: E402
from mbsim.simcore.lcp.problem import _inf_norm  # noqa: E402
from mbsim.simcore.lcp.warm import guess_normed  # noqa: E402


def record(scene: str) -> list[tuple]:
    """Every guess_kernel call of a run of ``scene`` on the Python contact path."""
    from mbsim.simcore.contact_fused import ContactFuser
    from mbsim.simcore.lcp import warm
    from mbsim.simulator import Simulator

    path = str(Path(tempfile.mkdtemp(prefix="mbsim-warm-guess-")) / "run.h5")
    if scene == "box-pile":
        sc = bench_peers.scene_scenario(scene, 0.1, path)
    elif scene in bench_peers.STAND_SCENES:
        sc = bench_peers.scene_scenario(scene, 1.5, path)
    else:
        sc = bench_peers.panda_scenario(scene, 1.5, path)
    rec = []
    kernel, eligible = warm.guess_kernel, ContactFuser.eligible

    def spy(M, q, S, delta, least_norm, tol_rel, rcond, rounds, fixes, z, out_S):
        rec.append((M.copy(), q.copy(), S.copy(), delta, least_norm, tol_rel, rcond, rounds, fixes))
        return kernel(M, q, S, delta, least_norm, tol_rel, rcond, rounds, fixes, z, out_S)

    warm.guess_kernel = spy
    ContactFuser.eligible = staticmethod(lambda stepper: False)
    try:
        Simulator(dataclasses.replace(sc, source=None)).run(out=path)
    finally:
        warm.guess_kernel, ContactFuser.eligible = kernel, eligible
    return rec


def pack(rec: list[tuple]) -> dict[str, np.ndarray]:
    """The LCPs by size n: M{n}, q{n}, S{n} (padded with -1), delta{n}, params{n}."""
    out = {}
    for n in sorted({r[1].shape[0] for r in rec}):
        g = [r for r in rec if r[1].shape[0] == n]
        S = np.full((len(g), n), -1, dtype=np.int64)
        for k, r in enumerate(g):
            S[k, : r[2].shape[0]] = r[2]
        out[f"M{n}"] = np.stack([r[0] for r in g])
        out[f"q{n}"] = np.stack([r[1] for r in g])
        out[f"S{n}"] = S
        out[f"delta{n}"] = np.array([r[3] for r in g])
        out[f"least_norm{n}"] = np.array([r[4] for r in g])
        out[f"params{n}"] = np.array([[g[0][5], g[0][6], g[0][7], g[0][8]]])
    return out


@njit
def _loop(Ms, qs, Ss, deltas, least_norm, tol_rel, rcond, rounds, fixes, mraws, zs, outs, codes,
          reps):  # fmt: skip
    for _ in range(reps):
        for k in range(Ms.shape[0]):
            ns = 0
            while ns < Ss.shape[1] and Ss[k, ns] >= 0:
                ns += 1
            c, m, used = guess_normed(
                Ms[k], qs[k], Ss[k, :ns].copy(), deltas[k], least_norm[k], tol_rel, rcond, rounds,
                fixes, zs[k], outs[k], mraws[k],
            )  # fmt: skip
            codes[k, 0], codes[k, 1], codes[k, 2] = c, m, used


def run(data: dict[str, np.ndarray], reps: int) -> dict[str, np.ndarray]:
    results = {}
    total_s = 0.0
    total_k = 0
    for key in sorted(k for k in data if k.startswith("M")):
        n = int(key[1:])
        Ms, qs, Ss = data[f"M{n}"], data[f"q{n}"], data[f"S{n}"]
        tol_rel, rcond, rounds, fixes = data[f"params{n}"][0]
        K = Ms.shape[0]
        zs = np.zeros((K, n))
        outs = np.zeros((K, n), dtype=np.int64)
        codes = np.zeros((K, 3), dtype=np.int64)
        mraws = np.array([_inf_norm(M) for M in Ms])
        args = (Ms, qs, Ss, data[f"delta{n}"], data[f"least_norm{n}"], tol_rel, rcond,
                int(rounds), int(fixes), mraws, zs, outs, codes)  # fmt: skip
        _loop(*args, 1)
        best = np.inf
        for _ in range(5):
            t = time.thread_time()
            _loop(*args, reps)
            best = min(best, time.thread_time() - t)
        used, count = np.unique(codes[:, 2], return_counts=True)
        hist = dict(zip(used.tolist(), count.tolist(), strict=True))
        print(f"n = {n}: {K} LCPs, {best / reps / K * 1e9:.0f} ns per guess (best of 5); "
              f"rounds used {hist}")  # fmt: skip
        total_s += best / reps
        total_k += K
        for k in range(K):  # the final set: only its first codes[k, 1] entries are output
            outs[k, codes[k, 1] :] = -1
        results.update({f"codes{n}": codes, f"z{n}": zs, f"sets{n}": outs})
    print(f"all: {total_k} LCPs, {total_s / total_k * 1e9:.0f} ns per guess")
    return results


def compare(results: dict[str, np.ndarray], saved: dict[str, np.ndarray]) -> None:
    """How far the outputs moved from the saved ones: codes and final sets that differ, and
    over the guesses accepted by both max |dz| / max(||z||_inf) and max |dz|."""
    for key in sorted(k for k in results if k.startswith("codes")):
        n = key[5:]
        c, c0 = results[key], saved[key]
        z, z0 = results[f"z{n}"], saved[f"z{n}"]
        both = (c[:, 0] == 0) & (c0[:, 0] == 0)
        dz = np.abs(z[both] - z0[both]).max(axis=1) if both.any() else np.zeros(1)
        zn = np.abs(z0[both]).max(axis=1) if both.any() else np.ones(1)
        rel = dz / np.maximum(zn, 1e-300)
        print(f"n = {n}: codes differ {int((c[:, 0] != c0[:, 0]).sum())}, accepted "
              f"{int((c[:, 0] == 0).sum())} (saved {int((c0[:, 0] == 0).sum())}), final sets "
              f"differ {int((~np.all(results[f'sets{n}'] == saved[f'sets{n}'], axis=1)).sum())}, "
              f"max |dz| {dz.max():.3g}, max |dz|/||z|| {rel.max():.3g}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="a1-stand")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--save", default=None)
    ap.add_argument("--load", default=None)
    a = ap.parse_args()
    if a.load:
        saved = dict(np.load(a.load))
        data = {k: v for k, v in saved.items() if not k.startswith(("codes", "z", "sets"))}
    else:
        data = pack(record(a.scene))
    results = run(data, a.reps)
    if a.load:
        same = all(np.array_equal(results[k], saved[k]) for k in results)
        print("outputs (codes, z, sets) the same bits as the saved ones:", same)
        if not same:
            compare(results, saved)
    if a.save:
        np.savez(a.save, **data, **results)


if __name__ == "__main__":
    main()
