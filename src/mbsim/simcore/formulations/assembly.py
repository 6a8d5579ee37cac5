"""The two LCP assemblers every formulation shares (the block layout of 000 Eqs. 27, 36, 53).

Rows come in one order everywhere: the equality rows first (hinges of the non-minimal
formulations, then the bilateral rows; their unknowns are free), then the joint rows (joint
limits, box-constrained joint friction; simcore/joint_rows.py; complementary), then the
contact rows (beta (nu (nf+1)) and sigma (nu), complementary). This module is the one place
that orders the blocks (see formulations.base.Formulation).

* :func:`delassus_lcp` -- the row-space formulations (OS Eq. 53, RMC Eq. 41, NMC/OS Sec. 8):
  the unknowns are impulses only and the matrix is the Delassus matrix K of the rows.
* :func:`velocity_lcp` -- the velocity-space formulations (MC Eq. 36, NMC Eq. 27): the
  velocities are free unknowns beside the equality impulses, with a mass matrix block.
"""

from __future__ import annotations

import numpy as np


def delassus_lcp(
    problem, K: np.ndarray, phi: np.ndarray, target: np.ndarray, gap: bool, dt: float = 0.0
):  # fmt: skip
    """(M, q) of Eq. 53 with ``n_eq = len(target)`` equality rows in front of the
    complementary rows [joint (n_j, simcore/joint_rows.py); contact (3 nu)].

    K ((n_eq + n_j + 3 nu) square): the Delassus matrix of the rows [equality; joint;
    contact], the contact rows being the relative linear velocities Q_u (A minus B) of 000
    Eq. 46; phi: the rows' velocities after the free motion (m/s, rad/s); target: the
    equality rows' right-hand side U-bar; dt: the step (the joint friction bound F dt).
    Without joint rows

        M = [[K_ee, K_eu D, 0], [D^T K_ue, D^T K_uu D, E-hat], [0, E-bar, 0]],
        q = [phi_e - target; D^T phi_u (+ the gap allowance when ``gap``); budget]

    with the equality impulses free (the first n_eq unknowns); with no equality rows it is
    the standard LCP of contact.contact_lcp. With joint rows the complementary unknowns z
    map to row impulses by T (ContactProblem.complementary_map) and the complementary block
    is T^T K_cc T + E, q_c = T^T (phi_c + allowance) + e (ContactProblem.complementary_block).
    The lower-left block is the transpose of the upper-right one, so M is symmetric up to
    its complementarity part.
    """
    n_eq = len(target)
    nu = problem.nu
    nj = problem.n_joint_rows
    if nj:
        T = problem.complementary_map()
        E, e = problem.complementary_block(dt)
        Mc = T.T @ K[n_eq:, n_eq:] @ T + E
        qc = T.T @ (phi[n_eq:] + problem.complementary_shift(gap)) + e
        KeT = K[:n_eq, n_eq:] @ T
    else:
        Mc, qc = problem.contact_rows(K[n_eq:, n_eq:], phi[n_eq:].reshape(nu, 3), gap)
        if not n_eq:
            return Mc, qc
        KeT = np.zeros((n_eq, Mc.shape[0]))
        KeT[:, : nu * problem.k] = K[:n_eq, n_eq:] @ problem.Dblock()
    M = np.zeros((n_eq + Mc.shape[0], n_eq + Mc.shape[0]))
    M[:n_eq, :n_eq] = K[:n_eq, :n_eq]
    M[:n_eq, n_eq:] = KeT
    M[n_eq:, :n_eq] = KeT.T
    M[n_eq:, n_eq:] = Mc
    q = np.concatenate([phi[:n_eq] - target, qc])
    return M, q


def velocity_lcp(
    problem, mass: np.ndarray, momentum: np.ndarray, G_eq: np.ndarray, target: np.ndarray,
    G_u: np.ndarray, gap: bool, contact_shift: np.ndarray | None = None, dt: float = 0.0,
):  # fmt: skip
    """(M, q, n_free) of the mixed LCP with the velocities x as free unknowns (Eqs. 27, 36):

        [[A, -G_e^T, -G_c^T T, 0], [G_e, 0, 0], [T^T G_c, 0, E]]
        [x+; p_e; z] + [-momentum; -target; T^T (shift + allowance) + e]

    (without joint rows T = D and E = [[0, E-hat], [E-bar, 0]] on z = [beta; sigma], as in
    Eqs. 27 and 36). mass A (n_x square): the joint-space M (MC) or the block-diagonal body
    inertia (NMC); momentum: A x_free (the free motion's momentum, N s); G_eq (n_eq, n_x):
    the equality rows and ``target`` their right-hand side; G_u ((n_j + 3 nu), n_x): the
    complementary rows [joint; contact], the contact rows Q_u J (MC) or Q_u on the body
    velocities (NMC); contact_shift ((n_j + 3 nu,)): a known part of those rows' velocity not
    in G_u x+ (NMC's -dt G_u c-hat), None for none; dt: the step (joint friction bound F dt).
    T, E, e: ContactProblem.complementary_map and complementary_block. n_free = n_x + n_eq.
    """
    n_x = mass.shape[0]
    n_free = n_x + G_eq.shape[0]
    T = problem.complementary_map()
    E, e = problem.complementary_block(dt)
    GT = G_u.T @ T  # G_c^T T (n_x, nz)
    nz = T.shape[1]
    M = np.zeros((n_free + nz, n_free + nz))
    M[:n_x, :n_x] = mass
    M[:n_x, n_x:n_free] = -G_eq.T
    M[n_x:n_free, :n_x] = G_eq
    M[:n_x, n_free:] = -GT
    M[n_free:, :n_x] = GT.T
    M[n_free:, n_free:] = E
    q = np.zeros(n_free + nz)
    q[:n_x] = -momentum
    q[n_x:n_free] = -target
    shift = problem.complementary_shift(gap)
    if contact_shift is not None:
        shift = shift + contact_shift
    q[n_free:] = T.T @ shift + e
    return M, q, n_free
