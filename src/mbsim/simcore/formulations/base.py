"""What every formulation shares: the contact problem of one step and the LCP dimensions.

A formulation turns a start velocity into the post-contact velocity of one step (or of an
impulsive phase with dt = 0): ``solve(problem, v_start, dt, gap) -> (v_plus, F, lcp_result)``
with F (nu, 3) the linear contact impulses on body A (N s, world axes; B gets -F). All five
are the same physics (000 Secs. 3-6); they differ in the unknowns of the LCP and in how its
matrix is built, which is what Tables 1 and 2 compare.

The LCP sizes of Table 1 (n bodies, N DoFs, nb loop-closure rows, nu contacts, nf friction
directions): NMC 6n + (6n - N + nb) + nu (nf + 2); MC N + nb + nu (nf + 2); RMC nu (nf + 2);
OS nb + nu (nf + 2); NMC/OS (6n - N + nb) + nu (nf + 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbsim.simcore.contact import contact_lcp, friction_matrix


def lcp_dimension(formulation: str, n: int, N: int, nb: int, nu: int, nf: int) -> int:
    """LCP size of ``formulation`` by the formulas of 000 Table 1 (see module docstring)."""
    contacts = nu * (nf + 2)
    hinges = 6 * n - N
    sizes = {
        "nmc": 6 * n + hinges + nb + contacts,
        "mc": N + nb + contacts,
        "rmc": contacts,
        "os": nb + contacts,
        "nmc-os": hinges + nb + contacts,
    }
    if formulation not in sizes:
        raise ValueError(f"unknown formulation {formulation!r}; expected one of {sorted(sizes)}")
    return sizes[formulation]


@dataclass
class ContactProblem:
    """The contacts of one step at configuration q (kinematics and the articulated
    factorisation of q are in ``data``; ``tau`` the joint forces of the step, N m or N).

    nodes: one per moving side of each contact (``node_body``, ``node_point`` in the body
    frame, ``node_X`` world-aligned node transforms); ``ia``/``ib`` map contact i to its A and
    B node (-1 = static world). D (nu, 3, nf+1): friction matrices; mu (nu,); gap (nu,) m;
    ``gap_velocity`` (nu,): the normal velocity allowance of the gap term (m/s, see stepper).
    """

    model: object
    data: object
    q: np.ndarray
    contacts: object
    tau: np.ndarray
    node_body: np.ndarray
    node_point: np.ndarray
    node_X: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    D: np.ndarray
    mu: np.ndarray
    gap_velocity: np.ndarray
    solver: str = "lemke"
    tol_rel: float = 1e-9
    Qb: np.ndarray | None = None
    Gm: np.ndarray | None = None
    ub: np.ndarray | None = None
    bilateral_error: float = 0.0
    n_redundant: int = 0
    bilateral: object = None
    #: the forward-dynamics path (simcore/forward.py); the stepper sets it
    dynamics: object = None
    #: (v, qdd) already solved at (q, v) by the stepper, reused by the free motion
    free_accel: tuple | None = None

    @classmethod
    def build(
        cls, model, data, q, contacts, tau, nf, mu, gap_velocity, solver, tol_rel, X_fn,
        bilateral=None, dt=0.0, dynamics=None,
    ):  # fmt: skip
        """The problem of one step. ``bilateral``: a :class:`~mbsim.simcore.bilateral.
        Bilateral` (loop closures, mimic joints) or None; its nodes follow the contact nodes,
        its rows are reduced to an independent subset (bilateral.independent_rows) and their
        stabilised targets use the step ``dt``."""
        c = contacts
        moving_a = c.body_a >= 0
        moving_b = c.body_b >= 0
        node_body = np.concatenate([c.body_a[moving_a], c.body_b[moving_b]])
        node_point = np.concatenate([c.local_a[moving_a], c.local_b[moving_b]])
        nu = len(c.gap)
        ia = np.full(nu, -1)
        ib = np.full(nu, -1)
        na = int(np.count_nonzero(moving_a))
        ia[moving_a] = np.arange(na)
        ib[moving_b] = na + np.arange(len(node_body) - na)
        extra = {}
        if bilateral:
            rows = bilateral.rows(data, q)
            n_contact_nodes = len(node_body)
            node_body = np.concatenate([node_body, rows.node_body]).astype(np.int64)
            node_point = np.concatenate([node_point, rows.node_point])
            extra = dict(rows=rows, offset=n_contact_nodes)
        node_X = X_fn(data, node_body, node_point)
        problem = cls(
            model, data, q, c, tau, node_body, node_point, node_X, ia, ib,
            friction_matrix(c.normal, nf), mu, gap_velocity, solver, tol_rel,
        )  # fmt: skip
        if dynamics is None:
            from mbsim.simcore.forward import AbaDynamics

            dynamics = AbaDynamics(model)
        problem.dynamics = dynamics
        if extra:
            problem._attach_bilateral(bilateral, extra["rows"], extra["offset"], dt)
        return problem

    def _attach_bilateral(self, bilateral, rows, offset, dt) -> None:
        """Place the bilateral rows on the full node list and keep an independent subset."""
        from mbsim.simcore.bilateral import independent_rows
        from mbsim.simcore.kinematics import node_jacobian

        nn = len(self.node_body)
        Q = np.zeros((rows.n, 6 * nn))
        Q[:, 6 * offset :] = rows.Q
        Jc = node_jacobian(self.model, self.data, rows.node_body, self.node_X[offset:])
        keep = independent_rows(rows.Q @ Jc + rows.G)
        self.bilateral = bilateral
        self.Qb = Q[keep]
        self.Gm = rows.G[keep]
        self.ub = bilateral.target(rows.error[keep], dt)
        self.bilateral_error = float(np.max(np.abs(rows.error), initial=0.0))
        self.n_redundant = rows.n - len(keep)

    @property
    def nb(self) -> int:
        """Number of (independent) bilateral rows."""
        return 0 if self.Qb is None else self.Qb.shape[0]

    def bilateral_target(self, gap: bool) -> np.ndarray:
        """U-bar of the bilateral rows: the stabilised target in a time step (``gap``), zero
        in an impulsive phase."""
        return self.ub if gap and self.nb else np.zeros(self.nb)

    def contact_row_matrix(self) -> np.ndarray:
        """Q_u (3 nu, 6 nnodes): relative linear velocity of each contact (A minus B) from
        the stacked world-aligned node velocities (Eq. 46)."""
        nn = len(self.node_body)
        Q = np.zeros((3 * self.nu, 6 * nn))
        eye = np.eye(3)
        for i in range(self.nu):
            if self.ia[i] >= 0:
                Q[3 * i : 3 * i + 3, 6 * self.ia[i] + 3 : 6 * self.ia[i] + 6] += eye
            if self.ib[i] >= 0:
                Q[3 * i : 3 * i + 3, 6 * self.ib[i] + 3 : 6 * self.ib[i] + 6] -= eye
        return Q

    @property
    def nu(self) -> int:
        return len(self.mu)

    @property
    def k(self) -> int:
        return self.D.shape[2]

    def impulses(self, z: np.ndarray) -> np.ndarray:
        """Linear contact impulses F = D beta (nu, 3) from the LCP's contact unknowns."""
        beta = z[: self.nu * self.k].reshape(self.nu, self.k)
        return np.einsum("ijk,ik->ij", self.D, beta)

    def node_impulses(self, F: np.ndarray) -> np.ndarray:
        """Node impulses (n_nodes, 6) [moment; force] for contact impulses F on A (-F on B)."""
        f = np.zeros((len(self.node_body), 6))
        f[self.ia[self.ia >= 0], 3:] = F[self.ia >= 0]
        f[self.ib[self.ib >= 0], 3:] -= F[self.ib >= 0]
        return f

    def contact_rows(self, W: np.ndarray, vu: np.ndarray, gap: bool):
        """(M, q) of the contact rows for relative velocities ``vu`` (nu, 3), with the gap
        allowance on the normal rows when ``gap``."""
        if gap:
            vu = vu + self.gap_velocity[:, None] * self.contacts.normal
        return contact_lcp(W, self.D, self.mu, vu)

    def gap_rows(self, gap: bool) -> np.ndarray:
        """The gap allowance projected on D (the q shift of the beta rows), (nu (nf+1),)."""
        if not gap:
            return np.zeros(self.nu * self.k)
        shift = self.gap_velocity[:, None] * self.contacts.normal
        return np.einsum("ijk,ij->ik", self.D, shift).ravel()

    def Gu(self, J_nodes: np.ndarray) -> np.ndarray:
        """Relative contact velocity map (3 nu, ncols) from node Jacobians (6 n_nodes, ncols):
        rows of A's node minus rows of B's node, linear parts (Eq. 48, Gu = Q_u J)."""
        G = np.zeros((3 * self.nu, J_nodes.shape[1]))
        for i in range(self.nu):
            if self.ia[i] >= 0:
                G[3 * i : 3 * i + 3] += J_nodes[6 * self.ia[i] + 3 : 6 * self.ia[i] + 6]
            if self.ib[i] >= 0:
                G[3 * i : 3 * i + 3] -= J_nodes[6 * self.ib[i] + 3 : 6 * self.ib[i] + 6]
        return G

    def Dblock(self) -> np.ndarray:
        """Block-diagonal D (3 nu, nu (nf+1))."""
        out = np.zeros((3 * self.nu, self.nu * self.k))
        for i in range(self.nu):
            out[3 * i : 3 * i + 3, self.k * i : self.k * (i + 1)] = self.D[i]
        return out

    def complementarity_block(self) -> np.ndarray:
        """The [[0, E-hat], [E-bar, 0]] part of the contact rows (nu (nf+2) square)."""
        nu, k = self.nu, self.k
        M = np.zeros((nu * (k + 1), nu * (k + 1)))
        for i in range(nu):
            M[k * i + 1 : k * i + k, nu * k + i] = 1.0
            M[nu * k + i, k * i] = self.mu[i]
            M[nu * k + i, k * i + 1 : k * i + k] = -1.0
        return M
