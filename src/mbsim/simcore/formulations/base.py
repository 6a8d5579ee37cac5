"""The formulation contract: the contact problem of one step, the Solution, the protocol.

A formulation turns a start velocity into the post-contact velocity of one step (or of an
impulsive phase with dt = 0). All five are the same physics (000 Secs. 3-6); they differ in
the unknowns of the LCP and in how its matrix is built, which is what Tables 1 and 2 compare.
See :class:`Formulation` for the contract and its extension point for new row types.

The LCP sizes of Table 1 (n bodies, N DoFs, n_bilateral loop-closure rows, nu contacts, nf
friction directions): NMC 6n + (6n - N + n_bilateral) + nu (nf + 2); MC N + n_bilateral +
nu (nf + 2); RMC nu (nf + 2); OS n_bilateral + nu (nf + 2); NMC/OS (6n - N + n_bilateral) +
nu (nf + 2). Joint limits and joint friction (simcore/joint_rows.py) add n_limits + 3
n_friction complementary unknowns to every one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mbsim.simcore.contact import contact_lcp, contact_nodes, friction_matrix, node_impulses
from mbsim.simcore.kinematics import body_velocities_kernel, relative_velocities


def lcp_dimension(
    formulation: str, n: int, N: int, n_bilateral: int, nu: int, nf: int,
    n_limits: int = 0, n_friction: int = 0,
) -> int:  # fmt: skip
    """LCP size of ``formulation`` by the formulas of 000 Table 1 (see module docstring),
    plus the joint block of every formulation: one unknown per active joint limit and three
    (beta+, beta-, sigma) per joint with Coulomb friction (simcore/joint_rows.py)."""
    contacts = nu * (nf + 2) + n_limits + 3 * n_friction
    hinges = 6 * n - N
    sizes = {
        "nmc": 6 * n + hinges + n_bilateral + contacts,
        "mc": N + n_bilateral + contacts,
        "rmc": contacts,
        "os": n_bilateral + contacts,
        "nmc-os": hinges + n_bilateral + contacts,
    }
    if formulation not in sizes:
        raise ValueError(f"unknown formulation {formulation!r}; expected one of {sorted(sizes)}")
    return sizes[formulation]


@dataclass
class Solution:
    """What :meth:`Formulation.solve` returns: the result and the LCP it solved.

    v: the post-contact joint velocity v+ (nv,), rad/s or m/s. F: linear contact impulses on
    body A (nu, 3), N s, world axes (B gets -F). result: the solver's LcpResult. M, q: the
    (mixed) LCP of the solve, its first ``n_free`` unknowns free (equality rows: velocities,
    hinge or bilateral impulses), the rest complementary; what ``dump_lcp`` writes.
    """

    v: np.ndarray
    F: np.ndarray
    result: object
    M: np.ndarray
    q: np.ndarray
    n_free: int = 0


class Formulation(Protocol):
    """One of the LCP formulations of 000 (registry ``formulations.FORMULATIONS``).

    ``prepare(problem)`` builds what depends on q and the row set only (Lambda, M, Jacobians,
    block-diagonal inertias); ``solve(problem, v, dt, gap, accel=None)`` then solves from
    start velocity ``v`` any number of times at that configuration: the impulsive phases of
    an impact (dt = 0, ``gap`` False) and the step's LCP (dt > 0, ``gap`` True, the gap
    allowance on the normal rows and the stabilised bilateral targets). ``accel``: the free
    acceleration M^-1 (tau - C) at (q, v) when the caller already has it (the stepper's ABA
    at the step's start velocity), None to compute it. ``always_solves``: the LCP is needed
    every step even without contacts (the non-minimal formulations' hinge rows).

    Rows. Every formulation sees the same rows, in this order: equality rows (bilateral:
    ``problem.Qb`` on the stacked world-aligned node velocities plus ``problem.Gm`` on v,
    target ``problem.bilateral_target``), then the joint rows (``problem.Gj`` on v: joint
    limits and joint friction, simcore/joint_rows.py), then the contact rows
    (``problem.Q_u`` on the node velocities, friction matrices D, complementarity block).
    Two shared assemblers write the LCPs (formulations/assembly.py):
    :func:`~mbsim.simcore.formulations.assembly.delassus_lcp` for the row-space formulations
    (OS, RMC, NMC/OS: a Delassus matrix K of the rows and their free velocities) and
    :func:`~mbsim.simcore.formulations.assembly.velocity_lcp` for the velocity-space ones
    (MC, NMC: a mass matrix and the row map G).

    Joint-space rows (joint position limits and box-constrained joint friction, the path a
    further joint-space row type takes too). A row acting on v only, G_j v (G_j (n_j, nv)),
    enters every formulation the way mimic rows (``problem.Gm``) do:

    1. ContactProblem.build attaches the step's JointRows (``joint=``), as
       ``_attach_bilateral`` attaches Q_b, G_m and U-bar.
    2. OS (``OS.prepare``): the rows are [Q_b; 0; Q_u] on the nodes and [G_m; G_j; 0] on v;
       :func:`~mbsim.simcore.formulations.minimal.joint_row_delassus` adds their terms to K
       through W = M^-1 G^T (``problem.dynamics.solve_joint``, O(N) per row with ABA) and
       the coupling R V_nodes(W) (``problem.node_velocities``); ``OS.solve`` applies the
       impulses by the O(N) impulse response of the node rows plus W p.
    3. MC and RMC: G_j itself, beside G_b = Q_b J + G_m (``dense_rows``); RMC keeps a
       unilateral row with its contact rows, W = [G_j; G_u] Y [G_j; G_u]^T.
    4. NMC and NMC/OS: G_j J_q on the body velocities, J_q the qdot map (``NMC._qdot_map``),
       as ``NMC._bilateral_rows`` does for G_m (their right-hand side gains dt G_j S^T c).
    5. The LCP block: an equality row joins the equality block; a unilateral row (a limit,
       G_j v+ >= target with impulse >= 0) or a box-constrained pair (friction,
       |p| <= f_max) adds complementary unknowns placed between the equality block and the
       contact block, in the two assemblers of formulations/assembly.py, the one place that
       orders the blocks (through ``complementary_map``, ``complementary_block`` and
       ``complementary_shift``).
    """

    name: str
    always_solves: bool

    def prepare(self, problem: ContactProblem) -> None: ...

    def solve(
        self, problem: ContactProblem, v: np.ndarray, dt: float, gap: bool,
        accel: np.ndarray | None = None,
    ) -> Solution: ...  # fmt: skip


def free_velocity(problem, v, dt, accel=None) -> np.ndarray:
    """v + dt M^-1 (T - C(q, v)) by the problem's dynamics path (ABA leaves the articulated
    factorisation of q in data); ``accel`` the free acceleration at (q, v) when known."""
    if dt == 0.0:
        return v.copy()
    if accel is not None:
        return v + dt * accel
    return v + dt * problem.dynamics.accel(problem.data, problem.q, v, problem.tau)


def relative_velocity(problem, v) -> np.ndarray:
    """Relative linear velocity of each contact's points (A minus B), world axes (nu, 3)."""
    c = problem.contacts
    return relative_velocities(
        problem.model, problem.data, v, c.body_a, c.local_a, c.body_b, c.local_b
    )


def normal_velocity(problem, v) -> np.ndarray:
    """n . v_u for each contact (m/s, (nu,)): the approach (< 0) or separation speed."""
    return np.einsum("ij,ij->i", relative_velocity(problem, v), problem.contacts.normal)


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
    _Q_u: np.ndarray | None = None
    #: the forward-dynamics path (simcore/forward.py)
    dynamics: object = None
    #: joint-space rows (limits, joint friction; simcore/joint_rows.py), None for none
    joint: object = None
    #: the joint rows' total impulses of an impact (stepper.impact_phase), N m s or N s
    joint_impulse_total: np.ndarray | None = None
    #: (nu,) N s or None: friction impulse the sigma rows allow beyond mu beta_n, mu times
    #: a normal impulse applied outside the LCP (the restitution impulse of an impact,
    #: stepper.impact_phase), so Coulomb's cone bounds the whole impulse:
    #: mu (beta_n + budget/mu) - sum beta_j >= 0 (E-bar row + budget)
    friction_budget: np.ndarray | None = None

    @classmethod
    def build(
        cls, model, data, q, contacts, tau, nf, mu, gap_velocity, solver, tol_rel, X_fn,
        bilateral=None, dt=0.0, dynamics=None, joint=None, friction_reference=None,
    ):  # fmt: skip
        """The problem of one step. ``bilateral``: a :class:`~mbsim.simcore.bilateral.
        Bilateral` (loop closures, mimic joints) or None; its nodes follow the contact nodes,
        its rows are reduced to an independent subset (bilateral.independent_rows) and their
        stabilised targets use the step ``dt``. ``joint``: the step's
        :class:`~mbsim.simcore.joint_rows.JointRows` (limits, joint friction) or None.
        ``friction_reference`` (nu, 3) or None: the direction of each friction polyhedron's
        first edge (contact.friction_matrix)."""
        c = contacts
        node_body, node_point, ia, ib = contact_nodes(c.body_a, c.body_b, c.local_a, c.local_b)
        extra = {}
        if bilateral:
            rows = bilateral.rows(data, q)
            n_contact_nodes = len(node_body)
            node_body = np.concatenate([node_body, rows.node_body]).astype(np.int64)
            node_point = np.concatenate([node_point, rows.node_point])
            extra = dict(rows=rows, offset=n_contact_nodes)
        node_X = X_fn(data, node_body, node_point)
        if dynamics is None:
            from mbsim.simcore.forward import AbaDynamics

            dynamics = AbaDynamics(model)
        problem = cls(
            model, data, q, c, tau, node_body, node_point, node_X, ia, ib,
            friction_matrix(c.normal, nf, friction_reference), mu, gap_velocity, solver,
            tol_rel, dynamics=dynamics,
        )  # fmt: skip
        if extra:
            problem._attach_bilateral(bilateral, extra["rows"], extra["offset"], dt)
        problem.joint = joint if joint else None
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
        # the target of every row first: a group's speed cap sees all its rows
        self.ub = bilateral.target(rows.error, dt)[keep]
        self.bilateral_error = float(np.max(np.abs(rows.error), initial=0.0))
        self.n_redundant = rows.n - len(keep)

    @property
    def n_bilateral(self) -> int:
        """Number of (independent) bilateral rows."""
        return 0 if self.Qb is None else self.Qb.shape[0]

    def bilateral_target(self, gap: bool) -> np.ndarray:
        """U-bar of the bilateral rows: the stabilised target in a time step (``gap``), zero
        in an impulsive phase."""
        nbl = self.n_bilateral
        return self.ub if gap and nbl else np.zeros(nbl)

    @property
    def Q_u(self) -> np.ndarray:
        """Q_u (3 nu, 6 nnodes): relative linear velocity of each contact (A minus B) from
        the stacked world-aligned node velocities (Eq. 46). The one place Q_u is written as a
        matrix: G_u = Q_u J follows it; the node impulses Q_u^T F (contact.node_impulses) and
        W = Q_u Lambda Q_u^T (contact.relative_compliance) apply the same map by the node
        indices ia/ib without forming it (tests/test_contact_rows.py checks both)."""
        if self._Q_u is None:
            Q = np.zeros((3 * self.nu, 6 * len(self.node_body)))
            axis = np.arange(3)
            for node, sign in ((self.ia, 1.0), (self.ib, -1.0)):
                i = np.flatnonzero(node >= 0)[:, None]
                # each contact side has its own node, so no entry is written twice
                Q[3 * i + axis, 6 * node[i] + 3 + axis] = sign
            self._Q_u = Q
        return self._Q_u

    def node_velocities(self, v: np.ndarray) -> np.ndarray:
        """World-aligned spatial velocities [omega; v] (nnodes, 6) of every node (contact and
        bilateral) at joint velocity v: V_nodes(v) of the rows phi(v) = R V_nodes(v) + G v."""
        m, d = self.model, self.data
        vel = np.zeros((m.nb, 6))
        body_velocities_kernel(m.parent, m.vi, m.nvj, d.S, d.E, d.r, v, vel)
        return np.einsum("aij,aj->ai", self.node_X, vel[self.node_body])

    @property
    def nu(self) -> int:
        return len(self.mu)

    @property
    def k(self) -> int:
        return self.D.shape[2]

    @property
    def n_joint_rows(self) -> int:
        """Joint-space velocity rows (limits, friction pairs; simcore/joint_rows.py)."""
        return 0 if self.joint is None else self.joint.n_rows

    @property
    def n_joint_unknowns(self) -> int:
        """Complementary unknowns of the joint block, in front of the contact unknowns."""
        return 0 if self.joint is None else self.joint.n_unknowns

    @property
    def Gj(self) -> np.ndarray:
        """The joint rows G_j (n_joint_rows, nv)."""
        return np.zeros((0, self.model.nv)) if self.joint is None else self.joint.G

    def impulses(self, z: np.ndarray) -> np.ndarray:
        """Linear contact impulses F = D beta (nu, 3) from the LCP's complementary unknowns
        (the joint block first, then [beta; sigma])."""
        j0 = self.n_joint_unknowns
        beta = z[j0 : j0 + self.nu * self.k].reshape(self.nu, self.k)
        return np.einsum("ijk,ik->ij", self.D, beta)

    def joint_impulses(self, z: np.ndarray) -> np.ndarray:
        """The joint rows' impulses p_j (n_joint_rows,) from the complementary unknowns."""
        return z[: self.n_joint_rows].copy()

    def complementary_map(self) -> np.ndarray:
        """T ((n_joint_rows + 3 nu), complementary unknowns): the impulses of the rows
        [joint; contact] from the unknowns [joint block; beta; sigma] (block-diagonal: the
        joint block's row_map, then D per contact)."""
        nj, nju = self.n_joint_rows, self.n_joint_unknowns
        nz = self.nu * (self.k + 1)
        T = np.zeros((nj + 3 * self.nu, nju + nz))
        if nj:
            T[:nj, :nju] = self.joint.row_map()
        T[nj:, nju : nju + self.nu * self.k] = self.Dblock()
        return T

    def complementary_block(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """(E, e): the complementarity part of all complementary unknowns (joint block, then
        the contacts' [[0, E-hat], [E-bar, 0]]) and its constant (the joint friction bounds F dt;
        the sigma rows' friction budget, sigma_rows)."""
        nju = self.n_joint_unknowns
        nz = self.nu * (self.k + 1)
        E = np.zeros((nju + nz, nju + nz))
        e = np.zeros(nju + nz)
        if nju:
            E[:nju, :nju], e[:nju] = self.joint.block(dt)
        E[nju:, nju:] = self.complementarity_block()
        e[nju + self.nu * self.k :] = self.sigma_rows()
        return E, e

    def complementary_shift(self, gap: bool) -> np.ndarray:
        """The allowance on the rows [joint; contact] (joint limits' g_v, the contacts' gap
        velocity along the normal) when ``gap``, zero otherwise; (n_joint_rows + 3 nu,)."""
        out = np.zeros(self.n_joint_rows + 3 * self.nu)
        if self.joint is not None:
            out[: self.n_joint_rows] = self.joint.row_shift(gap)
        if gap:
            out[self.n_joint_rows :] = (self.gap_velocity[:, None] * self.contacts.normal).ravel()
        return out

    def node_impulses(self, F: np.ndarray) -> np.ndarray:
        """Node impulses Q_u^T F as (n_nodes, 6) [moment; force] for contact impulses F on A
        (-F on B)."""
        return node_impulses(F, self.ia, self.ib, len(self.node_body))

    def contact_rows(self, W: np.ndarray, vu: np.ndarray, gap: bool):
        """(M, q) of the contact rows for relative velocities ``vu`` (nu, 3), with the gap
        allowance on the normal rows when ``gap``."""
        if gap:
            vu = vu + self.gap_velocity[:, None] * self.contacts.normal
        M, q = contact_lcp(W, self.D, self.mu, vu)
        q[self.nu * self.k :] = self.sigma_rows()
        return M, q

    def sigma_rows(self) -> np.ndarray:
        """q of the sigma (E-bar) rows, (nu,): zero, or the friction budget."""
        if self.friction_budget is None:
            return np.zeros(self.nu)
        return np.asarray(self.friction_budget, dtype=float)

    def Gu(self, J_nodes: np.ndarray) -> np.ndarray:
        """Relative contact velocity map G_u = Q_u J (3 nu, ncols) from node Jacobians
        (6 n_nodes, ncols) (Eq. 48)."""
        return self.Q_u @ J_nodes

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
