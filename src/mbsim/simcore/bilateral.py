"""Bilateral constraints: loop closures (ball, weld, distance) and URDF mimic joints.

These are the rows G_b v+ = U-bar of 000 Eqs. 30-33 (equality rows of the mixed LCPs, Eqs. 27,
36, 45, 53). Every row is a linear functional of the joint velocity v,

    phi_r(v) = Q_r V_nodes(v) + G_r v,

where V_nodes are the world-aligned spatial velocities [omega; v] of the closure nodes (points
fixed in a body; 000 Eq. 44, Q_b V_c) and G_r a joint-space row (mimic joints only):

* ball (3 rows, m/s):      v_a - v_b                      error e = p_a - p_b (m)
* weld (6 rows):           omega_a - omega_b (rad/s) and the ball rows;
                           rotation error e_R = log(R_a R0 R_b^T) (rad), R0 = R_a^T R_b at the
                           start (the weld holds the initial relative orientation)
* distance (1 row, m/s):   n . (v_a - v_b), n = (p_a - p_b)/|p_a - p_b|,  e = |p_a - p_b| - d
* mimic (1 row):           v_f - m v_l                    e = q_f - m q_l - offset (URDF
                           ``<mimic multiplier="m" offset=...>``, follower f, leader l)

The world side of a closure contributes nothing (its node velocity is zero).

Position drift (Baumgarte-style, as for contacts in stepper.py): the target of a row in a
time step is U-bar_r = -k e_r / dt with k = ``stabilization`` (0.2 by default: the error decays
by a factor 0.8 per step, about 20 steps to 1%, without the overshoot of k = 1); in the
impulsive phases of an impact (dt = 0) the target is 0. The largest |e| is reported per step.

The correction speed is capped, as the penetration and joint-stop recovery are
(``max_recovery_speed``, v_max, 0.5 by default): the target of each group of rows (a ball's
3 rows; a weld's 3 rotation rows and its 3 translation rows; a distance or mimic row) is

    U-bar_g = -(k e_g / dt) min(1, v_max dt / (k |e_g|)),

so |U-bar_g| <= v_max (m/s for points, rad/s for rotations and revolute mimics). Without it a
closure started 1 m apart asks for k / dt = 200 m/s at dt = 1e-3 s, which no multibody run
survives. A large error therefore closes at v_max (|e_g| falls by v_max dt per step), then
decays by (1 - k) per step once k |e_g| / dt < v_max.

A closure is an assembly condition, not a spring: it must start assembled to within
``MAX_START_ERROR`` (0.05 m for points, 0.05 rad for a weld's rotation; the same 5 cm as the
penetration bound of contacts). :meth:`Bilateral.start_errors` measures it and the simulator
refuses a scenario whose closure starts further apart (an unreachable closure point, a typo
in a point, a q0 of another assembly branch): pulling a mechanism together from far apart
drives it through stretched, singular configurations where the rows ask for unbounded joint
speeds. Mimic rows are joint-space rows, always reachable: they are not checked.

Redundant rows (a planar four-bar closed by a ball joint: the out-of-plane row is implied by
the others) make the equality block singular. :func:`independent_rows` keeps a maximal
independent subset by column-pivoted QR of G_b^T with the relative tolerance
``REDUNDANCY_TOL``; the number of rows dropped is reported, never hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from mbsim.errors import MbsimError
from mbsim.simcore.kinematics import forward_kinematics

#: A row of G_b whose pivoted-QR diagonal is below this fraction of the largest is dependent
#: on the rows kept (double precision leaves ~1e-13 of noise on exactly redundant rows, and
#: genuinely independent rows of a robot are far above 1e-9).
REDUNDANCY_TOL = 1e-9
#: Fraction of a position error removed per step (see module docstring).
DEFAULT_STABILIZATION = 0.2
#: Fastest correction of a closure's error, m/s or rad/s (scenario contact.max_recovery_speed).
DEFAULT_MAX_RECOVERY_SPEED = 0.5
CLOSURE_ROWS = {"ball": 3, "weld": 6, "distance": 1}
#: Largest error (m or rad, the norm of a row group) a closure may start with (docstring).
MAX_START_ERROR = 0.05
#: Row groups of each closure type whose correction speed is capped as one vector.
CLOSURE_GROUPS = {"ball": (3,), "weld": (3, 3), "distance": (1,)}


class ConstraintError(MbsimError):
    """A loop closure or mimic joint that cannot be built (unknown link, zero distance...)."""


@dataclass(frozen=True)
class ClosureSpec:
    """A closure between body ``a`` and body ``b`` (body indices, -1 = world/static).

    ``point_a``/``point_b``: the attachment points in the body frames (world frame for -1),
    m. ``distance`` (m) for kind ``distance``. ``name`` labels messages."""

    kind: str
    body_a: int
    body_b: int
    point_a: np.ndarray
    point_b: np.ndarray
    distance: float | None = None
    name: str = "closure"


@dataclass
class BilateralRows:
    """The bilateral rows at one configuration (all rows, before redundancy removal).

    node_body/node_point: closure nodes (body index, point in the body frame); Q (nrows,
    6 nnodes): rows on the stacked world-aligned node velocities; G (nrows, nv): joint-space
    rows; error (nrows,): position errors (m or rad)."""

    node_body: np.ndarray
    node_point: np.ndarray
    Q: np.ndarray
    G: np.ndarray
    error: np.ndarray

    @property
    def n(self) -> int:
        return len(self.error)


def rotation_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle, rad) of a rotation matrix, accurate near 0 and pi."""
    c = np.clip(0.5 * (np.trace(R) - 1.0), -1.0, 1.0)
    angle = float(np.arccos(c))
    w = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if angle < 1e-6:
        return w  # sin(angle) ~ angle: w is already the rotation vector to O(angle^3)
    if np.pi - angle > 1e-6:
        return w * (angle / np.sin(angle))
    # near pi: axis from the symmetric part, sign from w
    B = 0.5 * (R + np.eye(3))
    k = int(np.argmax(np.diag(B)))
    axis = B[:, k] / np.sqrt(max(B[k, k], 1e-300))
    if axis @ w < 0.0:
        axis = -axis
    return axis * angle


class Bilateral:
    """The loop closures and mimic joints of a model, evaluated per step.

    ``closures``: ClosureSpecs; mimics come from ``model.mimics``. ``q0``: the initial
    configuration (weld closures hold the relative orientation they have there).
    ``max_recovery_speed``: the cap of the correction speed of each row group (m/s or rad/s,
    module docstring).
    """

    def __init__(
        self,
        model,
        closures=(),
        q0=None,
        stabilization=DEFAULT_STABILIZATION,
        max_recovery_speed=DEFAULT_MAX_RECOVERY_SPEED,
    ):
        self.model = model
        self.closures = tuple(closures)
        self.stabilization = float(stabilization)
        self.max_recovery_speed = float(max_recovery_speed)
        if not self.max_recovery_speed > 0.0:
            raise ConstraintError(
                f"max_recovery_speed {max_recovery_speed!r} must be > 0 (m/s or rad/s)"
            )
        self._mimic = []
        v_of_q = {int(model.qi[i]): int(model.vi[i]) for i in range(model.nb) if model.nqj[i] == 1}
        for mm in model.mimics:
            if mm.q_index not in v_of_q or mm.master_q_index not in v_of_q:
                raise ConstraintError(
                    f"mimic joint '{mm.joint}' and its leader '{mm.master}' must both be "
                    "1-DoF joints"
                )
            self._mimic.append(
                (mm.q_index, mm.master_q_index, v_of_q[mm.q_index], v_of_q[mm.master_q_index],
                 float(mm.multiplier), float(mm.offset))
            )  # fmt: skip
        for c in self.closures:
            if c.kind not in CLOSURE_ROWS:
                raise ConstraintError(f"{c.name}: unknown closure type {c.kind!r}")
            if c.body_a < 0 and c.body_b < 0:
                raise ConstraintError(f"{c.name}: both sides are fixed to the world")
        self.n_rows = sum(CLOSURE_ROWS[c.kind] for c in self.closures) + len(self._mimic)
        #: the rows whose correction speed is capped together (module docstring): group
        #: number of every row
        sizes = [n for c in self.closures for n in CLOSURE_GROUPS[c.kind]]
        sizes += [1] * len(self._mimic)
        self.row_group = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        self._R0 = {}
        if any(c.kind == "weld" for c in self.closures):
            from mbsim.simcore.data import Data

            data = Data(model)
            forward_kinematics(model, data, model.neutral_q() if q0 is None else q0)
            for i, c in enumerate(self.closures):
                if c.kind == "weld":
                    Ra, _ = self._frame(data, c.body_a, c.point_a)
                    Rb, _ = self._frame(data, c.body_b, c.point_b)
                    self._R0[i] = Ra.T @ Rb

    def __bool__(self) -> bool:
        return self.n_rows > 0

    @staticmethod
    def _frame(data, body, point):
        """(R, p): orientation of the body (identity for the world) and world point (m)."""
        if body < 0:
            return np.eye(3), np.asarray(point, dtype=float)
        R = data.R_world[body]
        return R, data.p_world[body] + R @ point

    def rows(self, data, q) -> BilateralRows:
        """All rows and their errors at configuration ``q`` (kinematics of q in ``data``)."""
        m = self.model
        nodes_b, nodes_p, blocks, errors = [], [], [], []
        for i, c in enumerate(self.closures):
            Ra, pa = self._frame(data, c.body_a, c.point_a)
            Rb, pb = self._frame(data, c.body_b, c.point_b)
            if c.kind == "ball":
                sel = np.hstack([np.zeros((3, 3)), np.eye(3)])
                err = pa - pb
            elif c.kind == "weld":
                sel = np.eye(6)
                err = np.concatenate([rotation_log(Ra @ self._R0[i] @ Rb.T), pa - pb])
            else:
                d = pa - pb
                length = float(np.linalg.norm(d))
                if length < 1e-9:
                    raise ConstraintError(
                        f"{c.name}: the two points of a distance closure coincide, so its "
                        "direction is undefined"
                    )
                sel = np.concatenate([np.zeros(3), d / length])[None, :]
                err = np.array([length - c.distance])
            cols = []
            for body, point, sign in ((c.body_a, c.point_a, 1.0), (c.body_b, c.point_b, -1.0)):
                if body >= 0:
                    cols.append((len(nodes_b), sign))
                    nodes_b.append(body)
                    nodes_p.append(np.asarray(point, dtype=float))
            blocks.append((sel, cols))
            errors.append(np.atleast_1d(err))
        nn = len(nodes_b)
        nr = self.n_rows
        Q = np.zeros((nr, 6 * nn))
        G = np.zeros((nr, m.nv))
        r = 0
        for sel, cols in blocks:
            for node, sign in cols:
                Q[r : r + sel.shape[0], 6 * node : 6 * node + 6] = sign * sel
            r += sel.shape[0]
        for qf, ql, vf, vl, mult, off in self._mimic:
            G[r, vf] += 1.0
            G[r, vl] -= mult
            errors.append(np.array([q[qf] - mult * q[ql] - off]))
            r += 1
        return BilateralRows(
            np.asarray(nodes_b, dtype=np.int64),
            np.asarray(nodes_p, dtype=float).reshape(nn, 3),
            Q,
            G,
            np.concatenate(errors) if errors else np.zeros(0),
        )

    def start_errors(self, q) -> list[tuple[ClosureSpec, float, str]]:
        """(closure, error, unit) of every closure whose largest row-group error norm at
        configuration ``q`` exceeds ``MAX_START_ERROR`` (m, or rad for a weld's rotation)."""
        from mbsim.simcore.data import Data

        data = Data(self.model)
        forward_kinematics(self.model, data, q)
        error = self.rows(data, q).error
        norms = np.sqrt(np.bincount(self.row_group, weights=error * error))
        out, g = [], 0
        for c in self.closures:
            n = len(CLOSURE_GROUPS[c.kind])
            # a weld's groups: rotation (rad) then translation (m)
            units = ("rad", "m") if c.kind == "weld" else ("m",)
            bad = [
                (float(norms[g + k]), units[k]) for k in range(n) if norms[g + k] > MAX_START_ERROR
            ]
            if bad:
                out.append((c, *bad[0]))
            g += n
        return out

    def target(self, error: np.ndarray, dt: float) -> np.ndarray:
        """U-bar of all rows (``error``: every row's, as from :meth:`rows`): -k e / dt in a
        time step, each row group's vector scaled down to the norm ``max_recovery_speed``
        when it is faster (module docstring); 0 in an impulsive phase (dt = 0)."""
        error = np.asarray(error, dtype=float)
        if dt == 0.0:
            return np.zeros_like(error)
        target = -self.stabilization * error / dt
        group = self.row_group if len(error) == len(self.row_group) else np.arange(len(error))
        speed = np.sqrt(
            np.bincount(group, weights=target * target, minlength=group.max(initial=-1) + 1)
        )
        cap = self.max_recovery_speed
        scale = np.where(speed > cap, cap / np.where(speed > 0.0, speed, 1.0), 1.0)
        return target * scale[group]


def independent_rows(Gb: np.ndarray, tol: float = REDUNDANCY_TOL) -> np.ndarray:
    """Indices (sorted) of a maximal independent subset of the rows of Gb (nrows, nv), by
    column-pivoted QR of Gb^T: a pivot below ``tol`` times the largest is dependent."""
    if Gb.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, R, piv = scipy.linalg.qr(Gb.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    if diag.size == 0 or diag[0] == 0.0:
        return np.zeros(0, dtype=np.int64)
    rank = int(np.count_nonzero(diag > tol * diag[0]))
    return np.sort(piv[:rank])


def closures_from_scenario(model, closures) -> list[ClosureSpec]:
    """ClosureSpecs from scenario closures (``tree/link`` or ``world`` references, points in
    the link frames) resolved to bodies and body-frame points."""
    specs = []
    for i, cl in enumerate(closures):
        ends = []
        for ref, point in ((cl.a, cl.point_a), (cl.b, cl.point_b)):
            p = np.asarray(point, dtype=float)
            if ref == "world":
                ends.append((-1, p))
                continue
            tree_name, link = ref.split("/", 1)
            tree = model.tree_names.index(tree_name)
            body, T = model.link_frames[(tree, link)]
            ends.append((int(body), T[:3, :3] @ p + T[:3, 3]))
        specs.append(
            ClosureSpec(
                cl.type,
                ends[0][0],
                ends[1][0],
                ends[0][1],
                ends[1][1],
                cl.distance,
                name=f"closure {i} ({cl.type} {cl.a} - {cl.b})",
            )  # fmt: skip
        )
    return specs


__all__ = [
    "MAX_START_ERROR",
    "Bilateral",
    "BilateralRows",
    "ClosureSpec",
    "ConstraintError",
    "closures_from_scenario",
    "independent_rows",
]
