"""Rigid-body dynamics of a tree (forest): RNEA, CRBA, ABA and the O(N) impulse response.

Equation of motion in minimal coordinates: ``M(q) qdd + C(q, v) = tau + J^T f`` with ``C`` the
Coriolis, centrifugal and gravity forces. In the spatial operator algebra of 004 (Eqs. 0.25-0.31)

* ``M = H phi M phi^* H^*`` (Newton-Euler factorisation; CRBA below builds it column by column),
* ``M^-1 = [I - H psi K]^* D^-1 [I - H psi K]`` (articulated-body factorisation, 004 Eq. 0.30),

where, per body k, P(k) is the articulated inertia (``IA``), ``D = H P H^*`` (``S^T IA S``),
``G = P H^* D^-1`` (``U Dinv``), ``tau-bar = 1 - G H`` and ``psi(parent, k) = phi tau-bar``
(``Xup^T (1 - U Dinv S^T)`` in our body-frame Plücker convention). ABA and the impulse
response are the two sweeps of that factorisation: tips-to-base accumulation of ``IA`` and
``pA``, then base-to-tips accelerations. Units: SI throughout (N, N m, kg, kg m^2, m/s^2).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.kinematics import forward_kinematics, forward_kinematics_kernel
from mbsim.simcore.spatial import (
    congruence_T_scalars,
    congruence_T_sym,
    copy6x6,
    cross_force,
    mat6_vec,
    xform_force_T,
    xform_force_T_scalars,
    xform_motion,
    xform_motion_scalars,
)


@njit(cache=True, inline="always")
def spd_inverse(A, n, out, L, Li):
    """out[:n, :n] = A[:n, :n]^-1 for a small SPD block (n <= 6) by Cholesky.

    L and Li are 6x6 scratch. Returns the smallest Cholesky pivot d_k = L_kk^2 (<= 0 means
    not positive definite; out is then filled with zeros)."""
    dmin = np.inf
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if s < dmin:
            dmin = s
        if s <= 0.0:
            out[:n, :n] = 0.0
            return s
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    # inverse of L (lower triangular), then out = L^-T L^-1
    for j in range(n):
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            t = 0.0
            for k in range(j, i):
                t -= L[i, k] * Li[k, j]
            Li[i, j] = t / L[i, i]
    for i in range(n):
        for j in range(i, n):
            t = 0.0
            for k in range(j, n):
                t += Li[k, i] * Li[k, j]
            out[i, j] = t
            out[j, i] = t
    return dmin


@njit(cache=True, inline="always")
def axis_block(S, i):
    """Where body i's one motion-subspace column S_i = [a; 0] (revolute: 0) or [0; a]
    (prismatic: 3) holds its axis a; -1 for any other column. Only for nvj[i] == 1.

    The 1-DoF branches of the ABA kernels below sum only the axis block's three products:
    the other three are exact zeros, and leaving a +-0 term out of a sum changes no bit of it
    (but the sign of an exact zero), so they agree with the 6-term loops of the general path
    (Featherstone's RBDA and Pinocchio specialise revolute joints the same way)."""
    if S[i, 3, 0] == 0.0 and S[i, 4, 0] == 0.0 and S[i, 5, 0] == 0.0:
        return 0
    if S[i, 0, 0] == 0.0 and S[i, 1, 0] == 0.0 and S[i, 2, 0] == 0.0:
        return 3
    return -1


@njit(cache=True)
def rnea_kernel(parent, vi, nvj, S, inertia, gravity, E, r, vel, cbias, qdd, acc, force, tau):
    """Recursive Newton-Euler: tau = M qdd + C (gravity included; 004 Eq. 0.5, 0.6).

    Base acceleration is -g so gravity enters as an inertial effect (Featherstone Table 5.1).
    """
    nb = parent.shape[0]
    a0 = np.zeros(6)
    for k in range(3):
        a0[3 + k] = -gravity[k]
    tmp = np.empty(6)
    Iv = np.empty(6)
    for i in range(nb):
        p = parent[i]
        if p >= 0:
            xform_motion(E[i], r[i], acc[p], tmp)
        else:
            xform_motion(E[i], r[i], a0, tmp)
        for a in range(6):
            s = tmp[a] + cbias[i, a]
            for k in range(nvj[i]):
                s += S[i, a, k] * qdd[vi[i] + k]
            acc[i, a] = s
        mat6_vec(inertia[i], acc[i], force[i])
        mat6_vec(inertia[i], vel[i], Iv)
        cross_force(vel[i], Iv, tmp)
        for a in range(6):
            force[i, a] += tmp[a]
    for i in range(nb - 1, -1, -1):
        for k in range(nvj[i]):
            s = 0.0
            for a in range(6):
                s += S[i, a, k] * force[i, a]
            tau[vi[i] + k] = s
        p = parent[i]
        if p >= 0:
            xform_force_T(E[i], r[i], force[i], tmp)
            for a in range(6):
                force[p, a] += tmp[a]


@njit(cache=True)
def crba_kernel(parent, vi, nvj, S, inertia, E, r, Ic, M, scratch):
    """Composite-rigid-body algorithm: M = H phi M phi^* H^* (004 Eq. 0.25), O(N d).

    ``scratch`` is (4, 6, 6)."""
    nb = parent.shape[0]
    M[:, :] = 0.0
    for i in range(nb):
        copy6x6(inertia[i], Ic[i])
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            congruence_T_sym(E[i], r[i], Ic[i], Ic[p], True)
    F = scratch[2]
    col = np.empty(6)
    out = np.empty(6)
    for i in range(nb):
        ni = nvj[i]
        for a in range(6):
            for c in range(ni):
                s = 0.0
                for k in range(6):
                    s += Ic[i, a, k] * S[i, k, c]
                F[a, c] = s
        j = i
        while j >= 0:
            nj = nvj[j]
            for rr in range(nj):
                for c in range(ni):
                    s = 0.0
                    for k in range(6):
                        s += S[j, k, rr] * F[k, c]
                    M[vi[j] + rr, vi[i] + c] = s
                    M[vi[i] + c, vi[j] + rr] = s
            pj = parent[j]
            if pj >= 0:
                # carry the composite force to the parent frame: F <- Xup_j^T F
                for c in range(ni):
                    for a in range(6):
                        col[a] = F[a, c]
                    xform_force_T(E[j], r[j], col, out)
                    for a in range(6):
                        F[a, c] = out[a]
            j = pj


@njit(cache=True, inline="always")
def _pick6(k, x0, x1, x2, x3, x4, x5):
    """x_k of six scalars (k < 6): a work vector's entry without a work array."""
    if k == 0:
        return x0
    if k == 1:
        return x1
    if k == 2:
        return x2
    if k == 3:
        return x3
    if k == 4:
        return x4
    return x5


@njit(cache=True, inline="always")
def _put6(k, s, x0, x1, x2, x3, x4, x5):
    """The six scalars with x_k replaced by s (k < 6)."""
    if k == 0:
        return s, x1, x2, x3, x4, x5
    if k == 1:
        return x0, s, x2, x3, x4, x5
    if k == 2:
        return x0, x1, s, x3, x4, x5
    if k == 3:
        return x0, x1, x2, s, x4, x5
    if k == 4:
        return x0, x1, x2, x3, s, x5
    return x0, x1, x2, x3, x4, s


@njit(cache=True, error_model="numpy")
def articulated_kernel(parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, pivots, scratch, armature):
    """Tips-to-base articulated inertias (004 Appendix: P(k), D, G, tau-bar).

    IA_i = I_i + sum over children c of Xup_c^T Ia_c Xup_c, where Ia_c = IA_c - U_c Dinv_c U_c^T,
    U = IA S, D = S^T IA S + diag(armature_i). Depends on q only. ``pivots`` receives the
    smallest Cholesky pivot of every D_i (a D_i <= 0 gets Dinv_i = 0 and is reported there).
    ``scratch`` is (4,6,6).

    ``armature`` (nv,) is a joint-space diagonal added to M: the recursion then factorises
    M + diag(armature) exactly (a joint-space inertia enters only the joint's own D_i, as a
    rotor inertia does). The stepper puts dt * damping there: implicit joint damping (see
    :func:`aba`). Zero leaves M itself, bit for bit.

    Written with scalar indices like :func:`aba_accel_kernel` (``spatial.copy6x6``,
    ``congruence_T_sym``, ``xform_force_T``, :func:`axis_block` and :func:`spd_inverse`
    spelled out with the same operations in the same order; the multi-DoF work matrices in
    ``scratch``), one return: no array view and no work array, so numba's reference-count
    pruning removes every incref and decref. ``error_model="numpy"``: no ZeroDivisionError
    paths, whose exits keep the argument reference counts (no division here can have a zero
    divisor: ``1 / d`` is guarded by ``d > 0`` and the Cholesky diagonal is ``sqrt(s)`` with
    ``s > 0``), so the values are those of the default model.
    """
    nb = parent.shape[0]
    for i in range(nb):
        for a in range(6):
            for b in range(6):
                IA[i, a, b] = inertia[i, a, b]
    for i in range(nb - 1, -1, -1):
        n = nvj[i]
        if n == 1:
            # revolute/prismatic: S is one column, D a scalar, Ia = IA - g U U^T, so
            # Xup^T Ia Xup = Xup^T IA Xup - g (Xup^T U)(Xup^T U)^T: no 6x6 temporary.
            lo = -1  # axis_block
            if S[i, 3, 0] == 0.0 and S[i, 4, 0] == 0.0 and S[i, 5, 0] == 0.0:
                lo = 0
            elif S[i, 0, 0] == 0.0 and S[i, 1, 0] == 0.0 and S[i, 2, 0] == 0.0:
                lo = 3
            d = 0.0
            if lo >= 0:  # U = IA S from the axis block only (axis_block)
                k0, k1, k2 = S[i, lo, 0], S[i, lo + 1, 0], S[i, lo + 2, 0]
                for a in range(6):
                    U[i, a, 0] = IA[i, a, lo] * k0 + IA[i, a, lo + 1] * k1 + IA[i, a, lo + 2] * k2
                d = U[i, lo, 0] * k0 + U[i, lo + 1, 0] * k1 + U[i, lo + 2, 0] * k2
            else:
                for a in range(6):
                    s = 0.0
                    for k in range(6):
                        s += IA[i, a, k] * S[i, k, 0]
                    U[i, a, 0] = s
                    d += S[i, a, 0] * s
            d += armature[vi[i]]
            pivots[vi[i]] = d
            g = 1.0 / d if d > 0.0 else 0.0
            Dinv[i, 0, 0] = g
            if parent[i] < 0:
                continue
            j = i  # the congruence below reads IA[i]
            src = IA
        else:
            # general (multi-DoF) body: D, Ia and G in scratch[2], scratch[3] and scratch[0]
            for a in range(6):
                for c in range(n):
                    s = 0.0
                    for k in range(6):
                        s += IA[i, a, k] * S[i, k, c]
                    U[i, a, c] = s
            for rr in range(n):
                for c in range(n):
                    s = 0.0
                    for k in range(6):
                        s += S[i, k, rr] * U[i, k, c]
                    scratch[2, rr, c] = s
                scratch[2, rr, rr] += armature[vi[i] + rr]
            # Dinv_i = D^-1 (spd_inverse with L = scratch[0], Li = scratch[1], written out)
            dmin = np.inf
            fail = False
            for j in range(n):
                s = scratch[2, j, j]
                for k in range(j):
                    s -= scratch[0, j, k] * scratch[0, j, k]
                if s < dmin:
                    dmin = s
                if s <= 0.0:
                    for a in range(n):
                        for b in range(n):
                            Dinv[i, a, b] = 0.0
                    dmin = s
                    fail = True
                    break
                scratch[0, j, j] = np.sqrt(s)
                for ii in range(j + 1, n):
                    t = scratch[2, ii, j]
                    for k in range(j):
                        t -= scratch[0, ii, k] * scratch[0, j, k]
                    scratch[0, ii, j] = t / scratch[0, j, j]
            if not fail:
                for j in range(n):
                    scratch[1, j, j] = 1.0 / scratch[0, j, j]
                    for ii in range(j + 1, n):
                        t = 0.0
                        for k in range(j, ii):
                            t -= scratch[0, ii, k] * scratch[1, k, j]
                        scratch[1, ii, j] = t / scratch[0, ii, ii]
                for ii in range(n):
                    for j in range(ii, n):
                        t = 0.0
                        for k in range(j, n):
                            t += scratch[1, k, ii] * scratch[1, k, j]
                        Dinv[i, ii, j] = t
                        Dinv[i, j, ii] = t
            for rr in range(n):
                pivots[vi[i] + rr] = dmin
            if parent[i] < 0:
                continue
            for a in range(6):
                for c in range(n):
                    s = 0.0
                    for k in range(n):
                        s += U[i, a, k] * Dinv[i, k, c]
                    scratch[0, a, c] = s  # G = U Dinv
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(n):
                        s += scratch[0, a, k] * U[i, b, k]
                    scratch[3, a, b] = IA[i, a, b] - s
            j = 3  # the congruence below reads the work matrix Ia = scratch[3]
            src = scratch
        p = parent[i]
        # IA_p += Xup^T A Xup, A = IA_i (1 DoF) or Ia (spatial.congruence_T_sym, accumulate)
        (
            o00,
            o01,
            o02,
            o10,
            o11,
            o12,
            o20,
            o21,
            o22,
            B00,
            B01,
            B02,
            B10,
            B11,
            B12,
            B20,
            B21,
            B22,
            d00,
            d01,
            d02,
            d10,
            d11,
            d12,
            d20,
            d21,
            d22,
        ) = congruence_T_scalars(
            src[j, 0, 0],
            src[j, 0, 1],
            src[j, 0, 2],
            src[j, 0, 3],
            src[j, 0, 4],
            src[j, 0, 5],
            src[j, 1, 0],
            src[j, 1, 1],
            src[j, 1, 2],
            src[j, 1, 3],
            src[j, 1, 4],
            src[j, 1, 5],
            src[j, 2, 0],
            src[j, 2, 1],
            src[j, 2, 2],
            src[j, 2, 3],
            src[j, 2, 4],
            src[j, 2, 5],
            src[j, 3, 3],
            src[j, 3, 4],
            src[j, 3, 5],
            src[j, 4, 3],
            src[j, 4, 4],
            src[j, 4, 5],
            src[j, 5, 3],
            src[j, 5, 4],
            src[j, 5, 5],
            E[i, 0, 0],
            E[i, 0, 1],
            E[i, 0, 2],
            E[i, 1, 0],
            E[i, 1, 1],
            E[i, 1, 2],
            E[i, 2, 0],
            E[i, 2, 1],
            E[i, 2, 2],
            r[i, 0],
            r[i, 1],
            r[i, 2],
        )
        IA[p, 0, 0] = IA[p, 0, 0] + o00
        IA[p, 0, 1] = IA[p, 0, 1] + o01
        IA[p, 0, 2] = IA[p, 0, 2] + o02
        IA[p, 1, 0] = IA[p, 1, 0] + o10
        IA[p, 1, 1] = IA[p, 1, 1] + o11
        IA[p, 1, 2] = IA[p, 1, 2] + o12
        IA[p, 2, 0] = IA[p, 2, 0] + o20
        IA[p, 2, 1] = IA[p, 2, 1] + o21
        IA[p, 2, 2] = IA[p, 2, 2] + o22
        IA[p, 0, 3] = IA[p, 0, 3] + B00
        IA[p, 0, 4] = IA[p, 0, 4] + B01
        IA[p, 0, 5] = IA[p, 0, 5] + B02
        IA[p, 1, 3] = IA[p, 1, 3] + B10
        IA[p, 1, 4] = IA[p, 1, 4] + B11
        IA[p, 1, 5] = IA[p, 1, 5] + B12
        IA[p, 2, 3] = IA[p, 2, 3] + B20
        IA[p, 2, 4] = IA[p, 2, 4] + B21
        IA[p, 2, 5] = IA[p, 2, 5] + B22
        IA[p, 3, 0] = IA[p, 3, 0] + B00
        IA[p, 4, 0] = IA[p, 4, 0] + B01
        IA[p, 5, 0] = IA[p, 5, 0] + B02
        IA[p, 3, 1] = IA[p, 3, 1] + B10
        IA[p, 4, 1] = IA[p, 4, 1] + B11
        IA[p, 5, 1] = IA[p, 5, 1] + B12
        IA[p, 3, 2] = IA[p, 3, 2] + B20
        IA[p, 4, 2] = IA[p, 4, 2] + B21
        IA[p, 5, 2] = IA[p, 5, 2] + B22
        IA[p, 3, 3] = IA[p, 3, 3] + d00
        IA[p, 3, 4] = IA[p, 3, 4] + d01
        IA[p, 3, 5] = IA[p, 3, 5] + d02
        IA[p, 4, 3] = IA[p, 4, 3] + d10
        IA[p, 4, 4] = IA[p, 4, 4] + d11
        IA[p, 4, 5] = IA[p, 4, 5] + d12
        IA[p, 5, 3] = IA[p, 5, 3] + d20
        IA[p, 5, 4] = IA[p, 5, 4] + d21
        IA[p, 5, 5] = IA[p, 5, 5] + d22
        if n == 1:  # Xup^T Ia Xup = Xup^T IA Xup - g (Xup^T U)(Xup^T U)^T
            g = Dinv[i, 0, 0]
            x0, x1, x2, x3, x4, x5 = xform_force_T_scalars(  # Xup^T U
                E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2],
                E[i, 2, 0], E[i, 2, 1], E[i, 2, 2], r[i, 0], r[i, 1], r[i, 2],
                U[i, 0, 0], U[i, 1, 0], U[i, 2, 0], U[i, 3, 0], U[i, 4, 0], U[i, 5, 0],
            )  # fmt: skip
            for a in range(6):
                ga = g * _pick6(a, x0, x1, x2, x3, x4, x5)
                IA[p, a, 0] -= ga * x0
                IA[p, a, 1] -= ga * x1
                IA[p, a, 2] -= ga * x2
                IA[p, a, 3] -= ga * x3
                IA[p, a, 4] -= ga * x4
                IA[p, a, 5] -= ga * x5
    # read last (no effect): the arrays then all live to this one return
    return parent.shape[0] + inertia.shape[0] + pivots.shape[0] + armature.shape[0] > 0


@njit(cache=True)
def aba_bias_kernel(parent, vi, nvj, S, inertia, E, r, vel, cbias, IA, U, Dinv, tau, pA, u):
    """Tips-to-base bias forces: pA_i = V_i x* I_i V_i (+ children), u_i = tau_i - S^T pA_i.

    Children contribute Xup^T (pA + Ia c + U Dinv u) (Featherstone Table 7.1), computed as
    Xup^T (pA + IA c + U Dinv (u - U^T c)) so Ia is never formed.

    Written with scalar indices like :func:`aba_accel_kernel` (``spatial.mat6_vec``,
    ``cross_force`` and ``xform_force_T`` spelled out, the same operations in the same order;
    work vectors in scalars), one return: no array view and no work array, so numba's
    reference-count pruning removes every incref and decref."""
    nb = parent.shape[0]
    for i in range(nb):
        # Iv = inertia_i vel_i (mat6_vec), pA_i = vel_i x* Iv (cross_force)
        f0 = f1 = f2 = f3 = f4 = f5 = 0.0
        for j in range(6):
            x = vel[i, j]
            f0 += inertia[i, 0, j] * x
            f1 += inertia[i, 1, j] * x
            f2 += inertia[i, 2, j] * x
            f3 += inertia[i, 3, j] * x
            f4 += inertia[i, 4, j] * x
            f5 += inertia[i, 5, j] * x
        w0, w1, w2 = vel[i, 0], vel[i, 1], vel[i, 2]
        u0, u1, u2 = vel[i, 3], vel[i, 4], vel[i, 5]
        pA[i, 0] = w1 * f2 - w2 * f1 + u1 * f5 - u2 * f4
        pA[i, 1] = w2 * f0 - w0 * f2 + u2 * f3 - u0 * f5
        pA[i, 2] = w0 * f1 - w1 * f0 + u0 * f4 - u1 * f3
        pA[i, 3] = w1 * f5 - w2 * f4
        pA[i, 4] = w2 * f3 - w0 * f5
        pA[i, 5] = w0 * f4 - w1 * f3
    for i in range(nb - 1, -1, -1):
        n = nvj[i]
        lo = -1
        if n == 1:  # axis_block
            if S[i, 3, 0] == 0.0 and S[i, 4, 0] == 0.0 and S[i, 5, 0] == 0.0:
                lo = 0
            elif S[i, 0, 0] == 0.0 and S[i, 1, 0] == 0.0 and S[i, 2, 0] == 0.0:
                lo = 3
        if lo < 0:
            for k in range(n):
                s = tau[vi[i] + k]
                for a in range(6):
                    s -= S[i, a, k] * pA[i, a]
                u[i, k] = s
        else:  # 1-DoF: u = tau - a . pA[axis block], a scalar D^-1 (axis_block)
            u1 = tau[vi[i]]
            u1 -= S[i, lo, 0] * pA[i, lo]
            u1 -= S[i, lo + 1, 0] * pA[i, lo + 1]
            u1 -= S[i, lo + 2, 0] * pA[i, lo + 2]
            u[i, 0] = u1
        p = parent[i]
        if p < 0:
            continue
        # pa = IA_i c_i (mat6_vec)
        f0 = f1 = f2 = f3 = f4 = f5 = 0.0
        for j in range(6):
            x = cbias[i, j]
            f0 += IA[i, 0, j] * x
            f1 += IA[i, 1, j] * x
            f2 += IA[i, 2, j] * x
            f3 += IA[i, 3, j] * x
            f4 += IA[i, 4, j] * x
            f5 += IA[i, 5, j] * x
        if lo >= 0:
            w = 0.0
            for a in range(6):
                w += U[i, a, 0] * cbias[i, a]
            g = Dinv[i, 0, 0] * (u[i, 0] - w)
            f0 += pA[i, 0] + U[i, 0, 0] * g
            f1 += pA[i, 1] + U[i, 1, 0] * g
            f2 += pA[i, 2] + U[i, 2, 0] * g
            f3 += pA[i, 3] + U[i, 3, 0] * g
            f4 += pA[i, 4] + U[i, 4, 0] * g
            f5 += pA[i, 5] + U[i, 5, 0] * g
        else:
            t0 = t1 = t2 = t3 = t4 = t5 = 0.0  # u - U^T c
            for k in range(n):
                w = 0.0
                for a in range(6):
                    w += U[i, a, k] * cbias[i, a]
                t0, t1, t2, t3, t4, t5 = _put6(k, u[i, k] - w, t0, t1, t2, t3, t4, t5)
            g0 = g1 = g2 = g3 = g4 = g5 = 0.0  # Dinv (u - U^T c)
            for k in range(n):
                g = 0.0
                for m in range(n):
                    g += Dinv[i, k, m] * _pick6(m, t0, t1, t2, t3, t4, t5)
                g0, g1, g2, g3, g4, g5 = _put6(k, g, g0, g1, g2, g3, g4, g5)
            for a in range(6):
                s = 0.0
                for k in range(n):
                    s += U[i, a, k] * _pick6(k, g0, g1, g2, g3, g4, g5)
                s = pA[i, a] + s
                f0, f1, f2, f3, f4, f5 = _put6(
                    a, _pick6(a, f0, f1, f2, f3, f4, f5) + s, f0, f1, f2, f3, f4, f5
                )
        # pA_p += Xup^T pa (xform_force_T)
        x0, x1, x2, x3, x4, x5 = xform_force_T_scalars(
            E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2],
            E[i, 2, 0], E[i, 2, 1], E[i, 2, 2], r[i, 0], r[i, 1], r[i, 2],
            f0, f1, f2, f3, f4, f5,
        )  # fmt: skip
        pA[p, 0] += x0
        pA[p, 1] += x1
        pA[p, 2] += x2
        pA[p, 3] += x3
        pA[p, 4] += x4
        pA[p, 5] += x5
    # read last (no effect): the arrays then all live to this one return
    return parent.shape[0] + vi.shape[0] + tau.shape[0] + u.shape[0] > 0


@njit(cache=True)
def aba_accel_kernel(parent, vi, nvj, S, E, r, cbias, U, Dinv, u, a0, acc, qdd):
    """Base-to-tips accelerations: a_i = Xup a_p + c_i; qdd_i = Dinv (u_i - U^T a_i);
    a_i += S qdd_i. ``a0`` is the world's spatial acceleration (-g for gravity).

    Written with scalar indices (``spatial.xform_motion`` and :func:`axis_block` spelled
    out, the same operations), one return and every array argument read at the end: no
    array views, so numba's reference-count pruning removes the increfs and decrefs of the
    arguments and of the work array (a view per body and call cost ~12 ns each)."""
    nb = parent.shape[0]
    for i in range(nb):
        p = parent[i]
        if p >= 0:
            w0, w1, w2 = acc[p, 0], acc[p, 1], acc[p, 2]
            m3, m4, m5 = acc[p, 3], acc[p, 4], acc[p, 5]
        else:
            w0, w1, w2, m3, m4, m5 = a0[0], a0[1], a0[2], a0[3], a0[4], a0[5]
        t0 = m3 - (r[i, 1] * w2 - r[i, 2] * w1)
        t1 = m4 - (r[i, 2] * w0 - r[i, 0] * w2)
        t2 = m5 - (r[i, 0] * w1 - r[i, 1] * w0)
        for a in range(3):
            acc[i, a] = (E[i, a, 0] * w0 + E[i, a, 1] * w1 + E[i, a, 2] * w2) + cbias[i, a]
            acc[i, a + 3] = (E[i, a, 0] * t0 + E[i, a, 1] * t1 + E[i, a, 2] * t2) + cbias[i, a + 3]
        n = nvj[i]
        lo = -1
        if n == 1:
            if S[i, 3, 0] == 0.0 and S[i, 4, 0] == 0.0 and S[i, 5, 0] == 0.0:
                lo = 0
            elif S[i, 0, 0] == 0.0 and S[i, 1, 0] == 0.0 and S[i, 2, 0] == 0.0:
                lo = 3
        if lo >= 0:  # 1-DoF: qdd = D^-1 (u - U . a), a += S qdd on the axis block only
            s = u[i, 0]
            for a in range(6):
                s -= U[i, a, 0] * acc[i, a]
            qk = Dinv[i, 0, 0] * s
            qdd[vi[i]] = qk
            acc[i, lo] += S[i, lo, 0] * qk
            acc[i, lo + 1] += S[i, lo + 1, 0] * qk
            acc[i, lo + 2] += S[i, lo + 2, 0] * qk
        else:
            w0 = w1 = w2 = w3 = w4 = w5 = 0.0  # w = u - U^T a (n <= 6), no work array
            for k in range(n):
                s = u[i, k]
                for a in range(6):
                    s -= U[i, a, k] * acc[i, a]
                if k == 0:
                    w0 = s
                elif k == 1:
                    w1 = s
                elif k == 2:
                    w2 = s
                elif k == 3:
                    w3 = s
                elif k == 4:
                    w4 = s
                else:
                    w5 = s
            for k in range(n):
                s = 0.0
                for m in range(n):
                    if m == 0:
                        wm = w0
                    elif m == 1:
                        wm = w1
                    elif m == 2:
                        wm = w2
                    elif m == 3:
                        wm = w3
                    elif m == 4:
                        wm = w4
                    else:
                        wm = w5
                    s += Dinv[i, k, m] * wm
                qdd[vi[i] + k] = s
            for a in range(6):
                s = 0.0
                for k in range(n):
                    s += S[i, a, k] * qdd[vi[i] + k]
                acc[i, a] += s
    # read last (no effect): the arrays then all live to this one return
    return parent.shape[0] + vi.shape[0] + nvj.shape[0] + a0.shape[0] + qdd.shape[0] > 0


@njit(cache=True)
def aba_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, q, v, tau,
    E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature,
):  # fmt: skip
    """Forward dynamics in one call: kinematics, articulated inertias, bias, accelerations
    ((M + diag(armature)) qdd = tau - C)."""
    forward_kinematics_kernel(
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world, p_world, vel,
        cbias,
    )  # fmt: skip
    articulated_kernel(parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, pivots, scratch, armature)
    aba_bias_kernel(parent, vi, nvj, S, inertia, E, r, vel, cbias, IA, U, Dinv, tau, pA, u)
    a0 = np.zeros(6)
    for k in range(3):
        a0[3 + k] = -gravity[k]
    aba_accel_kernel(parent, vi, nvj, S, E, r, cbias, U, Dinv, u, a0, acc, qdd)


@njit(cache=True)
def joint_response_kernel(parent, vi, nvj, S, E, r, U, Dinv, k, s, u, acc, col):
    """col = (M + diag(armature))^-1 (s e_k), the joint-space response to the force s on DoF
    k, on the factorisation of :func:`articulated_kernel` (U, Dinv): the two sweeps
    :func:`aba_bias_kernel` and :func:`aba_accel_kernel` make with zero velocity, bias and
    gravity and the force s e_k, in one call, without temporaries (``u`` and ``acc`` (nb, 6)
    work). The tips-to-base sweep walks only the path from DoF k's body to the root: every
    other body's bias force and u are exact zeros there, so leaving them out (and the
    products with the zero velocity and bias) changes no value but the sign of an exact zero
    (a zero term in a sum, :func:`axis_block`); the base-to-tips sweep is aba_accel_kernel's
    operations with the zero bias added, as there. For trees of 1-DoF bodies whose axis lies
    in one block (revolute and prismatic joints): returns False, col untouched, when a body
    is not one, and the caller takes the two sweeps."""
    nb = parent.shape[0]
    # one return, no helper call (axis_block, S passed, would incref S) and no array dying
    # before it: numba's reference-count pruning then removes the argument increfs and decrefs
    b = -1
    for i in range(nb):
        rot = S[i, 3, 0] == 0.0 and S[i, 4, 0] == 0.0 and S[i, 5, 0] == 0.0
        pri = S[i, 0, 0] == 0.0 and S[i, 1, 0] == 0.0 and S[i, 2, 0] == 0.0
        if nvj[i] != 1 or not (rot or pri):
            b = -2
            break
        if vi[i] == k:
            b = i
    if b >= 0:
        for i in range(nb):
            u[i, 0] = 0.0
        # tips to base on the path: f = pA_i (from the path child), u_i = tau_i - S^T f
        f0 = f1 = f2 = f3 = f4 = f5 = 0.0
        i = b
        tau = s
        while True:
            lo = 0 if S[i, 3, 0] == 0.0 and S[i, 4, 0] == 0.0 and S[i, 5, 0] == 0.0 else 3
            if lo == 0:
                fa, fb, fc = f0, f1, f2
            else:
                fa, fb, fc = f3, f4, f5
            u1 = tau
            u1 -= S[i, lo, 0] * fa
            u1 -= S[i, lo + 1, 0] * fb
            u1 -= S[i, lo + 2, 0] * fc
            u[i, 0] = u1
            p = parent[i]
            if p < 0:
                break
            g = Dinv[i, 0, 0] * u1
            p0 = f0 + U[i, 0, 0] * g
            p1 = f1 + U[i, 1, 0] * g
            p2 = f2 + U[i, 2, 0] * g
            p3 = f3 + U[i, 3, 0] * g
            p4 = f4 + U[i, 4, 0] * g
            p5 = f5 + U[i, 5, 0] * g
            # xform_force_T(E[i], r[i], pa)
            n0 = E[i, 0, 0] * p0 + E[i, 1, 0] * p1 + E[i, 2, 0] * p2
            n1 = E[i, 0, 1] * p0 + E[i, 1, 1] * p1 + E[i, 2, 1] * p2
            n2 = E[i, 0, 2] * p0 + E[i, 1, 2] * p1 + E[i, 2, 2] * p2
            g0 = E[i, 0, 0] * p3 + E[i, 1, 0] * p4 + E[i, 2, 0] * p5
            g1 = E[i, 0, 1] * p3 + E[i, 1, 1] * p4 + E[i, 2, 1] * p5
            g2 = E[i, 0, 2] * p3 + E[i, 1, 2] * p4 + E[i, 2, 2] * p5
            f0 = n0 + r[i, 1] * g2 - r[i, 2] * g1
            f1 = n1 + r[i, 2] * g0 - r[i, 0] * g2
            f2 = n2 + r[i, 0] * g1 - r[i, 1] * g0
            f3 = g0
            f4 = g1
            f5 = g2
            i = p
            tau = 0.0
        # base to tips: aba_accel_kernel with a0 = 0 and zero bias
        for i in range(nb):
            p = parent[i]
            if p >= 0:
                w0, w1, w2 = acc[p, 0], acc[p, 1], acc[p, 2]
                m3, m4, m5 = acc[p, 3], acc[p, 4], acc[p, 5]
            else:
                w0 = w1 = w2 = m3 = m4 = m5 = 0.0
            # xform_motion(E[i], r[i], m)
            t0 = m3 - (r[i, 1] * w2 - r[i, 2] * w1)
            t1 = m4 - (r[i, 2] * w0 - r[i, 0] * w2)
            t2 = m5 - (r[i, 0] * w1 - r[i, 1] * w0)
            for a in range(3):
                acc[i, a] = (E[i, a, 0] * w0 + E[i, a, 1] * w1 + E[i, a, 2] * w2) + 0.0
                acc[i, a + 3] = (E[i, a, 0] * t0 + E[i, a, 1] * t1 + E[i, a, 2] * t2) + 0.0
            lo = 0 if S[i, 3, 0] == 0.0 and S[i, 4, 0] == 0.0 and S[i, 5, 0] == 0.0 else 3
            sm = u[i, 0]
            for a in range(6):
                sm -= U[i, a, 0] * acc[i, a]
            qk = Dinv[i, 0, 0] * sm
            col[vi[i]] = qk
            acc[i, lo] += S[i, lo, 0] * qk
            acc[i, lo + 1] += S[i, lo + 1, 0] * qk
            acc[i, lo + 2] += S[i, lo + 2, 0] * qk
    # nvj read here again (always true): every array argument then lives to this one return
    return (b >= 0) & (nvj.shape[0] == nb)


def articulated_factor(model, data) -> None:
    """Articulated inertias and D^-1 for the current kinematics in ``data`` (q only), of
    M + diag(data.armature)."""
    articulated_kernel(
        model.parent, model.vi, model.nvj, data.S, model.inertia, data.E, data.r, data.IA,
        data.U, data.Dinv, data.pivots, data.scratch66, data.armature,
    )  # fmt: skip


def articulated_pivots(model, data, q) -> np.ndarray:
    """Per-DoF smallest Cholesky pivot of D = S^T IA S at ``q`` (used to detect singular M)."""
    forward_kinematics(model, data, q)
    articulated_factor(model, data)
    return data.pivots.copy()


def rnea(model, data, q, v, qdd) -> np.ndarray:
    """Inverse dynamics: joint forces tau = M(q) qdd + C(q, v) (N m or N per DoF)."""
    forward_kinematics(model, data, q, v)
    rnea_kernel(
        model.parent, model.vi, model.nvj, data.S, model.inertia, model.gravity, data.E, data.r,
        data.vel, data.cbias, np.ascontiguousarray(qdd, dtype=np.float64), data.acc,
        data.force, data.tau,
    )  # fmt: skip
    return data.tau.copy()


def mass_matrix(model, data) -> np.ndarray:
    """data.M = M(q) + diag(data.armature) for the kinematics in ``data``: the matrix every
    dense (CRBA + Cholesky) path factorises, so it agrees with ABA's (see :func:`aba`)."""
    crba_kernel(
        model.parent, model.vi, model.nvj, data.S, model.inertia, data.E, data.r, data.Ic,
        data.M, data.scratch66,
    )  # fmt: skip
    if np.any(data.armature):
        data.M[np.diag_indices(model.nv)] += data.armature
    return data.M


def crba(model, data, q) -> np.ndarray:
    """Joint-space mass matrix M(q) (nv x nv, symmetric positive definite)."""
    forward_kinematics(model, data, q)
    crba_kernel(
        model.parent, model.vi, model.nvj, data.S, model.inertia, data.E, data.r, data.Ic,
        data.M, data.scratch66,
    )  # fmt: skip
    return data.M.copy()


def aba(model, data, q, v, tau) -> np.ndarray:
    """Forward dynamics qdd = M^-1 (tau - C) in O(N) (004 Eq. 0.31, Appendix recursions).

    Leaves the kinematics and the articulated factorisation of q in ``data`` (so the impulse
    response and the compliance can reuse them) and returns data.qdd (overwritten by the next
    call; copy it to keep it).

    Implicit joint damping: with ``data.armature = dt * d`` (d the joint damping, N m s/rad
    or N s/m) the factorisation is that of M + dt diag(d), so a semi-implicit Euler step
    v+ = v + dt qdd with tau = tau_a - D v is backward Euler in the damping term:
    (M + dt D)(v+ - v) = dt (tau_a - D v - C) <=> M (v+ - v) = dt (tau_a - D v+ - C), i.e.
    the damping force is taken at v+ (MuJoCo's implicit damping). Every consumer of the
    factorisation (impulse response, Upsilon compliance) then uses M + dt D too, so the
    contact impulses act on the same operator. Stable for any d and dt: a 1-DoF link decays
    as v_k = v_0 / (1 + dt d / m)^k."""
    aba_kernel(
        model.parent, model.jtype, model.qi, model.vi, model.nvj, data.S, model.tree_E,
        model.tree_r, model.axis, model.inertia, model.gravity, q, v, tau, data.E, data.r,
        data.R_world, data.p_world, data.vel, data.cbias, data.IA, data.U, data.Dinv,
        data.pivots, data.pA, data.u, data.acc, data.scratch66, data.qdd, data.armature,
    )  # fmt: skip
    return data.qdd


@njit(cache=True)
def impulse_response_kernel(
    parent, vi, nvj, S, E, r, U, Dinv, node_body, node_X, node_f, pA, u, acc, dv
):  # fmt: skip
    """dv = M^-1 J^T f in O(N + nc) (000 Sec. 6 step 2; 004 Eq. 0.31 with T = J^T f).

    Node forces f_a (world-aligned node frames) become body forces X_a^T f_a; then the two
    articulated sweeps run with zero velocity, zero gravity and zero joint force, reusing the
    factorisation (IA, U, Dinv) of the current configuration.

    Written with scalar indices like :func:`aba_accel_kernel` (``spatial.mat6T_vec``
    spelled out, ``xform_force_T`` and ``xform_motion`` on scalars, the same operations in the
    same order; the work vectors in scalars or in the entries of ``dv`` and ``acc`` that are
    written again later), one return: no array view and no work array, so numba's
    reference-count pruning removes every incref and decref.
    """
    nb = parent.shape[0]
    for i in range(nb):
        for c in range(6):
            pA[i, c] = 0.0
    for a in range(node_body.shape[0]):
        k = node_body[a]
        for c in range(6):  # (X_a^T f_a)_c (mat6T_vec)
            s = 0.0
            for j in range(6):
                s += node_X[a, j, c] * node_f[a, j]
            pA[k, c] -= s  # an applied force enters the bias force with a minus sign
    for i in range(nb - 1, -1, -1):
        n = nvj[i]
        for k in range(n):
            s = 0.0
            for c in range(6):
                s -= S[i, c, k] * pA[i, c]
            u[i, k] = s
        p = parent[i]
        if p < 0:
            continue
        o = vi[i]
        for k in range(n):  # Dinv u, in dv (written again below)
            g = 0.0
            for m in range(n):
                g += Dinv[i, k, m] * u[i, m]
            dv[o + k] = g
        for c in range(6):  # pA + U Dinv u, in acc[i] (written again below)
            s = pA[i, c]
            for k in range(n):
                s += U[i, c, k] * dv[o + k]
            acc[i, c] = s
        f0, f1, f2 = acc[i, 0], acc[i, 1], acc[i, 2]
        f3, f4, f5 = acc[i, 3], acc[i, 4], acc[i, 5]
        x0, x1, x2, x3, x4, x5 = xform_force_T_scalars(
            E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2],
            E[i, 2, 0], E[i, 2, 1], E[i, 2, 2], r[i, 0], r[i, 1], r[i, 2],
            f0, f1, f2, f3, f4, f5,
        )  # fmt: skip
        acc[i, 0], acc[i, 1], acc[i, 2] = x0, x1, x2
        acc[i, 3], acc[i, 4], acc[i, 5] = x3, x4, x5
        pA[p, 0] += x0
        pA[p, 1] += x1
        pA[p, 2] += x2
        pA[p, 3] += x3
        pA[p, 4] += x4
        pA[p, 5] += x5
    for i in range(nb):
        p = parent[i]
        if p >= 0:
            m0, m1, m2, m3, m4, m5 = xform_motion_scalars(
                E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2],
                E[i, 2, 0], E[i, 2, 1], E[i, 2, 2], r[i, 0], r[i, 1], r[i, 2],
                acc[p, 0], acc[p, 1], acc[p, 2], acc[p, 3], acc[p, 4], acc[p, 5],
            )  # fmt: skip
        else:
            m0 = m1 = m2 = m3 = m4 = m5 = 0.0
        n = nvj[i]
        o = vi[i]
        for k in range(n):  # u - U^T a, in acc[i] (written again below)
            s = u[i, k]
            s -= U[i, 0, k] * m0
            s -= U[i, 1, k] * m1
            s -= U[i, 2, k] * m2
            s -= U[i, 3, k] * m3
            s -= U[i, 4, k] * m4
            s -= U[i, 5, k] * m5
            acc[i, k] = s
        for k in range(n):
            s = 0.0
            for m in range(n):
                s += Dinv[i, k, m] * acc[i, m]
            dv[o + k] = s
        for k in range(n):  # a = Xup a_p + S dv
            x = dv[o + k]
            m0 += S[i, 0, k] * x
            m1 += S[i, 1, k] * x
            m2 += S[i, 2, k] * x
            m3 += S[i, 3, k] * x
            m4 += S[i, 4, k] * x
            m5 += S[i, 5, k] * x
        acc[i, 0], acc[i, 1], acc[i, 2] = m0, m1, m2
        acc[i, 3], acc[i, 4], acc[i, 5] = m3, m4, m5
    # read last (no effect): the arrays then all live to this one return
    return nb + vi.shape[0] + node_body.shape[0] + pA.shape[0] + u.shape[0] + dv.shape[0] > 0


def impulse_response(model, data, node_body, node_X, node_f, out=None) -> np.ndarray:
    """M^-1 J^T f for node forces (or impulses) ``node_f`` (nc, 6), without forming M or J.

    Requires :func:`articulated_factor` (or :func:`aba`) at the current configuration.
    """
    dv = np.zeros(model.nv) if out is None else out
    impulse_response_kernel(
        model.parent, model.vi, model.nvj, data.S, data.E, data.r, data.U, data.Dinv,
        np.ascontiguousarray(node_body, dtype=np.int64),
        np.ascontiguousarray(node_X, dtype=np.float64),
        np.ascontiguousarray(node_f, dtype=np.float64), data.pA, data.u, data.acc, dv,
    )  # fmt: skip
    return dv


@njit(cache=True)
def energy_kernel(inertia, mass, com, gravity, R_world, p_world, vel, out):
    """out = [kinetic, potential, total] in J: T = 1/2 sum V_i^T I_i V_i (body velocities) and
    U = -sum m_i g . c_i with c_i the world position of body i's centre of mass."""
    ke = 0.0
    pe = 0.0
    for i in range(inertia.shape[0]):
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += inertia[i, a, b] * vel[i, b]
            ke += 0.5 * vel[i, a] * s
        for k in range(3):
            c = p_world[i, k]
            for j in range(3):
                c += R_world[i, k, j] * com[i, j]
            pe -= mass[i] * gravity[k] * c
    out[0] = ke
    out[1] = pe
    out[2] = ke + pe


def energy(model, data, vel=None) -> np.ndarray:
    """[kinetic, potential, total] (J) at the kinematics held in ``data`` (body velocities
    ``vel``, default data.vel)."""
    out = np.empty(3)
    energy_kernel(
        model.inertia, model.mass, model.com, model.gravity, data.R_world, data.p_world,
        data.vel if vel is None else vel, out,
    )  # fmt: skip
    return out
