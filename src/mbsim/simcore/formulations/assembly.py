"""The two LCP assemblers every formulation shares (the block layout of 000 Eqs. 27, 36, 53).

Rows come in one order everywhere: the equality rows first (hinges of the non-minimal
formulations, then the bilateral rows; their unknowns are free), then the contact rows
(beta (nu (nf+1)) and sigma (nu), complementary). This module is the one place that orders
the blocks: a new block of complementary rows (joint limits, box-constrained joint friction;
see formulations.base.Formulation) goes between the two.

* :func:`delassus_lcp` -- the row-space formulations (OS Eq. 53, RMC Eq. 41, NMC/OS Sec. 8):
  the unknowns are impulses only and the matrix is the Delassus matrix K of the rows.
* :func:`velocity_lcp` -- the velocity-space formulations (MC Eq. 36, NMC Eq. 27): the
  velocities are free unknowns beside the equality impulses, with a mass matrix block.
"""

from __future__ import annotations

import numpy as np


def delassus_lcp(problem, K: np.ndarray, phi: np.ndarray, target: np.ndarray, gap: bool):
    """(M, q) of Eq. 53 with ``n_eq = len(target)`` equality rows in front of the contacts.

    K ((n_eq + 3 nu) square): the Delassus matrix of the rows [equality; contact], the contact
    rows being the relative linear velocities Q_u (A minus B) of 000 Eq. 46; phi
    (n_eq + 3 nu,): the rows' velocities after the free motion (m/s, rad/s); target: the
    equality rows' right-hand side U-bar. Returns

        M = [[K_ee, K_eu D, 0], [D^T K_ue, D^T K_uu D, E-hat], [0, E-bar, 0]],
        q = [phi_e - target; D^T phi_u (+ the gap allowance when ``gap``); budget]

    with the equality impulses free (the first n_eq unknowns); with no equality rows it is
    the standard LCP of contact.contact_lcp (budget: problem.sigma_rows(), zero but in an
    impact's restitution phase). The lower-left block is the transpose of the
    upper-right one, so M is symmetric up to its complementarity part.
    """
    n_eq = len(target)
    nu = problem.nu
    Mc, qc = problem.contact_rows(K[n_eq:, n_eq:], phi[n_eq:].reshape(nu, 3), gap)
    if not n_eq:
        return Mc, qc
    Db = problem.Dblock()
    nk = Db.shape[1]
    KeuD = K[:n_eq, n_eq:] @ Db
    M = np.zeros((n_eq + Mc.shape[0], n_eq + Mc.shape[0]))
    M[:n_eq, :n_eq] = K[:n_eq, :n_eq]
    M[:n_eq, n_eq : n_eq + nk] = KeuD
    M[n_eq : n_eq + nk, :n_eq] = KeuD.T
    M[n_eq:, n_eq:] = Mc
    q = np.concatenate([phi[:n_eq] - target, qc])
    return M, q


def velocity_lcp(
    problem, mass: np.ndarray, momentum: np.ndarray, G_eq: np.ndarray, target: np.ndarray,
    G_u: np.ndarray, gap: bool, contact_shift: np.ndarray | None = None,
):  # fmt: skip
    """(M, q, n_free) of the mixed LCP with the velocities x as free unknowns (Eqs. 27, 36):

        [[A, -G_e^T, -G_u^T D, 0], [G_e, 0, 0, 0], [D^T G_u, 0, 0, E-hat], [0, 0, E-bar, 0]]
        [x+; p_e; beta; sigma] + [-momentum; -target; D^T shift (+ gap allowance); budget]

    mass A (n_x square): the joint-space M (MC) or the block-diagonal body inertia (NMC);
    momentum: A x_free (the free motion's momentum, N s); G_eq (n_eq, n_x): the equality rows
    and ``target`` their right-hand side; G_u (3 nu, n_x): the contact rows Q_u J (MC) or Q_u
    on the body velocities (NMC); contact_shift (3 nu,): a known part of the contact
    velocity not in G_u x+ (NMC's -dt G_u c-hat), None for none. n_free = n_x + n_eq.
    budget: problem.sigma_rows(), the friction of a normal impulse applied outside the LCP
    (zero but in an impact's restitution phase).
    """
    n_x = mass.shape[0]
    n_free = n_x + G_eq.shape[0]
    Db = problem.Dblock()
    GD = G_u.T @ Db  # G_u^T D (n_x, nu (nf+1))
    nk = GD.shape[1]
    nz = problem.nu * (problem.k + 1)
    M = np.zeros((n_free + nz, n_free + nz))
    M[:n_x, :n_x] = mass
    M[:n_x, n_x:n_free] = -G_eq.T
    M[n_x:n_free, :n_x] = G_eq
    M[:n_x, n_free : n_free + nk] = -GD
    M[n_free : n_free + nk, :n_x] = GD.T
    M[n_free:, n_free:] = problem.complementarity_block()
    q = np.zeros(n_free + nz)
    q[:n_x] = -momentum
    q[n_x:n_free] = -target
    q[n_free : n_free + nk] = problem.gap_rows(gap)
    q[n_free + nk :] = problem.sigma_rows()
    if contact_shift is not None:
        q[n_free : n_free + nk] = Db.T @ contact_shift + q[n_free : n_free + nk]
    return M, q, n_free
