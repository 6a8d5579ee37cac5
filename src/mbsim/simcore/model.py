"""The Model: an immutable, flat-array description of a forest of articulated bodies.

A :class:`Model` is built once from one or more :class:`~mbsim.simcore.spec.RobotSpec` trees by
:func:`build_model` and never changes during a run. Every per-step quantity lives in
:class:`~mbsim.simcore.data.Data`. The split follows Pinocchio and MuJoCo: numba kernels take
the model's arrays and a data workspace and allocate nothing.

Building a model:

* Fixed joints are merged into the parent body: the child's inertia is added to the parent's
  (composite inertia about the parent frame, parallel-axis theorem) and its collision shapes
  stay on the parent at their offset. A subtree welded to the world becomes static geometry.
* A root link called ``world`` without mass is the world frame (URDF convention). Any other
  root is welded to the world at ``base_pose`` or floats on a 6-DoF free joint, as the spec
  says; asked to float, a root whose welded links (itself and those reached by fixed joints)
  have no mass stays the world frame instead, with a lint note (a free joint there would
  move no inertia). Planar joints become prismatic, prismatic, revolute (``_planar_carriers``).
* Bodies are numbered in depth-first preorder, trees one after another, so a parent always
  precedes its children and each subtree is contiguous.
* Joint coordinates: revolute/continuous and prismatic joints have nq = nv = 1 (rad or m). A
  free joint has q = [x y z qw qx qy qz] (position of the child frame in the parent frame, m,
  and a unit quaternion) and v = [vx vy vz wx wy wz]: the time derivative of that position
  (parent frame, m/s) and the child's angular velocity in the child frame (rad/s) -- MuJoCo's
  free-joint convention, nq = nv + 1. A world-frame linear velocity keeps free flight and
  rolling exact under semi-implicit Euler (a body-frame one rotates with the body between
  steps); the price is a q-dependent motion subspace S, held in Data. A spherical (ball)
  joint has q = [qw qx qy qz] (the child frame's rotation in the joint frame) and
  v = [wx wy wz] (the child's angular velocity relative to its parent, child frame, rad/s),
  the rotational part of a free joint and Pinocchio's JointModelSpherical; its damping,
  friction, effort and velocity limit apply to each of the three components.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from mbsim.errors import ModelError
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import articulated_pivots
from mbsim.simcore.joints import (
    FREE,
    JOINT_CODE,
    JOINT_SIZES,
    PRISMATIC,
    QUATERNION_OFFSET,
    REVOLUTE,
    SPHERICAL,
)
from mbsim.simcore.spatial import spatial_inertia
from mbsim.simcore.spec import GeometrySpec, JointSpec, RobotSpec
from mbsim.simcore.spherical_limits import SphericalLimit

#: A body whose mass matrix pivot falls below this (relative to the largest pivot) makes the
#: mass matrix numerically singular; float64 leaves ~1e-16, so 1e-12 keeps a margin of 1e4.
SINGULAR_PIVOT_RTOL = 1e-12
#: Mass (kg) and moment of inertia about each axis through the body frame's origin (kg m^2)
#: given to every body of a massless moving subtree (:meth:`_Builder.fill_massless_subtrees`):
#: a 10 g finger phalanx with a 3 cm radius of gyration (0.01 kg (0.03 m)^2 ~ 1e-5 kg m^2),
#: small beside any robot that carries such fingers, and 1e7 times above the singular-pivot
#: test for a robot whose largest pivot is below 1e3 kg m^2. A 1 g, 1e-6 kg m^2 body was tried
#: first: romeo.urdf's 1 s drop then failed (a compression LCP at step 142 with a solution too
#: large for Lemke to verify); 1 g or 10 g with 1e-5 or 1e-4 kg m^2 all complete it.
MASSLESS_SUBTREE_MASS = 1e-2
MASSLESS_SUBTREE_INERTIA = 1e-5


@dataclass(frozen=True)
class BodyGeometry:
    """A collision shape placed on a body: ``body`` index (-1 = static world), ``pose`` the
    4x4 pose of the shape in that body's frame (world frame for static), ``link`` the URDF
    link it came from, ``tree`` its tree index."""

    body: int
    tree: int
    link: str
    pose: np.ndarray
    shape: GeometrySpec


@dataclass(frozen=True)
class Mimic:
    """Recorded mimic relation (enforced by the stepper): v-index ``dof`` follows
    ``multiplier * q[master] + offset``; both are indices into q of 1-DoF joints."""

    joint: str
    master: str
    q_index: int
    master_q_index: int
    multiplier: float
    offset: float


@dataclass(frozen=True)
class Model:
    """Flat arrays of a forest of rigid bodies connected by joints (see module docstring).

    Per body ``i`` (``nb`` moving bodies): ``parent[i]`` (-1 for the world), ``jtype[i]``
    (joints.py codes), ``qi[i]``/``vi[i]`` first index into q and v, ``nqj``/``nvj``
    counts, ``S[i, :, :nvj]`` motion subspace in the body frame, ``tree_E``/``tree_r`` the
    Plücker transform from the parent body frame to the joint frame at zero (spatial.py
    convention), ``axis`` the unit joint axis (joint frame), ``inertia`` the 6x6 spatial inertia
    in the body frame, ``mass`` (kg), ``com`` (m), ``tree_of`` the tree index. ``gravity`` in
    m/s^2, world frame.
    """

    nb: int
    nq: int
    nv: int
    parent: np.ndarray
    jtype: np.ndarray
    qi: np.ndarray
    vi: np.ndarray
    nqj: np.ndarray
    nvj: np.ndarray
    S: np.ndarray
    tree_E: np.ndarray
    tree_r: np.ndarray
    axis: np.ndarray
    inertia: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    tree_of: np.ndarray
    gravity: np.ndarray
    body_names: tuple[str, ...]
    joint_names: tuple[str, ...]
    joint_types: tuple[str, ...]
    tree_names: tuple[str, ...]
    tree_sources: tuple[str, ...]
    q_names: tuple[str, ...]
    v_names: tuple[str, ...]
    damping: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    effort: np.ndarray
    velocity_limit: np.ndarray
    geometries: tuple[BodyGeometry, ...]
    link_frames: dict
    mimics: tuple[Mimic, ...]
    lint: tuple[str, ...] = field(default_factory=tuple)
    #: Coulomb joint friction (URDF ``<dynamics friction>``, N m or N) per v index, 0 = none
    friction: np.ndarray | None = None
    #: PyBullet ``<plane>`` half-spaces (``shape.kind == "plane"``), placed as geometries are
    #: (body -1 and a world pose when welded to the world); the collision scene's ground
    planes: tuple[BodyGeometry, ...] = ()
    #: swing/twist limits of spherical joints (simcore/spherical_limits.py)
    spherical_limits: tuple[SphericalLimit, ...] = ()

    def quaternion_slices(self) -> list[tuple[int, slice]]:
        """(body, slice of q) of every unit quaternion in q (free and spherical joints)."""
        out = []
        for i in range(self.nb):
            o = QUATERNION_OFFSET.get(int(self.jtype[i]))
            if o is not None:
                a = int(self.qi[i]) + o
                out.append((i, slice(a, a + 4)))
        return out

    def neutral_q(self) -> np.ndarray:
        """The zero configuration (identity quaternion on free and spherical joints)."""
        q = np.zeros(self.nq)
        for _, quat in self.quaternion_slices():
            q[quat.start] = 1.0
        return q

    def random_q(self, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
        """A random configuration: joint values uniform in [-scale, scale] (rad or m), random
        positions and uniformly random unit quaternions on free and spherical joints."""
        q = rng.uniform(-scale, scale, self.nq)
        for _, quat in self.quaternion_slices():
            u = rng.normal(size=4)
            q[quat] = u / np.linalg.norm(u)
        return q

    def body_index(self, name: str, tree: int | None = None) -> int:
        """Index of the moving body called ``name`` (in ``tree`` if given); KeyError if none."""
        for i, n in enumerate(self.body_names):
            if n == name and (tree is None or self.tree_of[i] == tree):
                return i
        raise KeyError(name)

    def total_mass(self) -> float:
        """Sum of the moving bodies' masses (kg)."""
        return float(self.mass.sum())


def _transform_inertia(mass, com, inertia_com, T):
    """Mass properties of a link expressed in another frame: ``T`` maps link coordinates to
    the target frame (4x4). Returns (mass, com', Ic') with Ic' = R Ic R^T."""
    R, p = T[:3, :3], T[:3, 3]
    return mass, R @ com + p, R @ inertia_com @ R.T


def _combine(a, b):
    """Composite of two (mass, com, Ic) in one frame: total mass, joint com and the inertia
    about the joint com by the parallel-axis theorem I = sum Ic_k + m_k (|d|^2 1 - d d^T)."""
    ma, ca, Ia = a
    mb, cb, Ib = b
    m = ma + mb
    if m <= 0.0:
        return 0.0, np.zeros(3), Ia + Ib
    c = (ma * ca + mb * cb) / m

    def shift(mk, ck):
        d = ck - c
        return mk * (d @ d * np.eye(3) - np.outer(d, d))

    return m, c, Ia + shift(ma, ca) + Ib + shift(mb, cb)


class _Builder:
    """Accumulates bodies tree by tree; see :func:`build_model`."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.geometries: list[BodyGeometry] = []
        self.planes: list[BodyGeometry] = []
        self.link_frames: dict = {}
        self.lint: list[str] = []
        self.mimic_specs: list[tuple[int, str, object]] = []
        self.tree_names: list[str] = []
        self.tree_sources: list[str] = []

    def add_tree(self, spec: RobotSpec) -> None:
        tree = len(self.tree_names)
        self.tree_names.append(spec.name)
        self.tree_sources.append(spec.source)
        self.lint.extend(spec.lint)
        children: dict[str, list] = {}
        for joint in spec.joints:
            children.setdefault(joint.parent, []).append(joint)
        root_link = spec.link(spec.root)
        root_massless = root_link.inertial is None or root_link.inertial.mass == 0.0
        if spec.root == "world" and root_massless and spec.base != "floating":
            # The URDF's own world link is the world frame; base_pose still places it. Asked to
            # float, the world link is instead an ordinary (massless) root on a free joint.
            self._attach(spec, tree, spec.root, -1, spec.base_pose, children)
            return
        if spec.base == "floating" and not _welded_mass(spec, children):
            # Nothing with mass is welded to the root: a free joint there would move no
            # inertia. Like PyBullet (a massless base is static), the root is the world.
            moving = [j.name for j in spec.joints if j.parent == spec.root]
            self.lint.append(
                f"{spec.source}: root link '{spec.root}' and the links welded to it have no "
                "mass, so it is kept fixed as the world frame instead of floating"
                + (f"; the robot moves on its own joints ({_names(moving)})" if moving else "")
            )
            self._attach(spec, tree, spec.root, -1, spec.base_pose, children)
            return
        if spec.base == "floating":
            body = self._new_body(
                spec, tree, spec.root, "root_joint", "floating", -1, spec.base_pose
            )
            self._attach(spec, tree, spec.root, body, np.eye(4), children, primary=True)
        else:
            self._attach(spec, tree, spec.root, -1, spec.base_pose, children)

    def _new_body(self, spec, tree, link_name, joint_name, jtype, parent, origin, joint=None):
        body = {
            "name": link_name,
            "tree": tree,
            "parent": parent,
            "joint": joint_name,
            "jtype": jtype,
            "origin": np.array(origin, dtype=float),
            "axis": np.array([1.0, 0.0, 0.0]) if joint is None else np.array(joint.axis, float),
            "mass": (0.0, np.zeros(3), np.zeros((3, 3))),
            "spec": joint,
            "source": spec.source,
            # links merged into this body with no <inertial> at all (not declared massless)
            "undeclared": [],
        }
        self.bodies.append(body)
        return len(self.bodies) - 1

    def _attach(self, spec, tree, link_name, body, T_body_link, children, primary=False):
        """Place ``link_name`` on ``body`` at ``T_body_link``, then its subtree, depth first.

        ``primary`` is true for the link that defines the body's frame (not merged into it).
        An explicit stack rather than recursion, so chains of any length build (a 5,000-link
        chain would overflow Python's recursion limit). Children are visited in document
        order, which keeps the depth-first preorder body numbering.
        """
        links = {link.name: link for link in spec.links}
        # items: (link name, body, pose on body, primary) or (joint, parent body, origin)
        stack: list[tuple] = [(link_name, body, np.array(T_body_link, dtype=float), primary)]
        while stack:
            item = stack.pop()
            if isinstance(item[0], JointSpec):
                # a moving joint: its body is numbered just before its subtree is visited
                joint, parent, origin = item
                if joint.type == "planar":
                    parent, origin, joint = self._planar_carriers(spec, tree, joint, parent, origin)
                child = self._new_body(
                    spec, tree, joint.child, joint.name, joint.type, parent, origin, joint
                )
                if joint.mimic is not None:
                    self.mimic_specs.append((child, joint.name, joint.mimic))
                stack.append((joint.child, child, np.eye(4), True))
                continue
            name, body, T_body_link, primary = item
            self.link_frames[(tree, name)] = (body, T_body_link)
            self._merge_link(spec, tree, links[name], body, T_body_link, primary)
            for joint in reversed(children.get(name, [])):
                origin = T_body_link @ joint.origin
                if joint.type == "fixed":
                    stack.append((joint.child, body, origin, False))
                else:
                    stack.append((joint, body, origin))

    def _planar_carriers(self, spec, tree, joint, parent, origin):
        """A URDF planar joint (motion in the plane normal to its axis n, in the joint frame)
        as prismatic ``NAME.x`` along t1, prismatic ``NAME.y`` along t2 = n x t1 (two massless
        carrier bodies of those names) and revolute ``NAME.theta`` about n carrying the child
        link. t1 is the joint frame's x (or y, if n is within ~25 degrees of x) made normal
        to n. Returns the (parent, origin, joint) for the revolute body."""
        n = np.asarray(joint.axis, dtype=float)
        n = n / np.linalg.norm(n)
        seed = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        t1 = seed - (seed @ n) * n
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(n, t1)
        free = dict(lower=float("nan"), upper=float("nan"), mimic=None)
        for suffix, axis in (("x", t1), ("y", t2)):
            carrier = replace(
                joint, name=f"{joint.name}.{suffix}", type="prismatic", axis=axis, **free
            )
            parent = self._new_body(
                spec, tree, carrier.name, carrier.name, "prismatic", parent, origin, carrier
            )
            origin = np.eye(4)
        self.lint.append(
            f"{spec.source}: planar joint '{joint.name}' is modelled as prismatic joints "
            f"'{joint.name}.x', '{joint.name}.y' and revolute '{joint.name}.theta' about "
            f"its axis {tuple(round(float(v), 6) for v in n)}"
        )
        spin = replace(joint, name=f"{joint.name}.theta", type="revolute", axis=n, **free)
        return parent, origin, spin

    def _merge_link(self, spec, tree, link, body, T_body_link, primary):
        for shape in link.collisions:
            pose = T_body_link @ shape.origin
            self.geometries.append(BodyGeometry(body, tree, link.name, pose, shape))
        for plane in link.planes:
            pose = T_body_link @ plane.origin
            self.planes.append(BodyGeometry(body, tree, link.name, pose, plane))
        if body < 0:
            return  # welded to the world: its mass never moves
        if link.inertial is None:
            where = (
                "treated as massless"
                if primary
                else (f"merged massless into body '{self.bodies[body]['name']}'")
            )
            self.lint.append(f"{spec.source}: link '{link.name}' has no <inertial>; {where}")
            self.bodies[body]["undeclared"].append(link.name)
            return
        inert = link.inertial
        moved = _transform_inertia(inert.mass, np.asarray(inert.com), inert.inertia, T_body_link)
        self.bodies[body]["mass"] = _combine(self.bodies[body]["mass"], moved)

    def fill_massless_subtrees(self) -> None:
        """Give each body of a massless moving subtree a minimal inertia, with a lint note.

        A revolute or prismatic joint whose whole subtree (its body, the bodies below it and
        the links welded to them) has zero mass and zero inertia moves no inertia, so its
        mass-matrix pivot is zero (romeo's fingers, driven by mimic joints, are written
        ``<mass value="0"/>``). Pinocchio keeps such joints (its mass matrix is then
        singular); PyBullet keeps them too and zeroes the inverse of the vanishing pivot
        (btMultiBody), so they never accelerate. To keep the joints (nv equal to
        Pinocchio's) and a regular mass matrix, each body of such a subtree gets
        :data:`MASSLESS_SUBTREE_MASS` at its frame origin and a rotational inertia of
        :data:`MASSLESS_SUBTREE_INERTIA` times the identity about it. Only links that
        declare themselves massless (an ``<inertial>`` with zero mass and inertia) qualify:
        a subtree with a link that has no ``<inertial>`` at all is more likely an omission
        and stays an error (see :func:`_check_mass_matrix`).
        """
        n = len(self.bodies)
        massless = [_is_massless(bd["mass"]) and not bd["undeclared"] for bd in self.bodies]
        # Bodies are in depth-first preorder (a parent precedes its children), so one reverse
        # pass folds every child into its parent.
        for i in range(n - 1, -1, -1):
            parent = self.bodies[i]["parent"]
            if parent >= 0 and not massless[i]:
                massless[parent] = False
        tops: dict[str, list[str]] = {}
        for i, bd in enumerate(self.bodies):
            if not massless[i] or bd["jtype"] not in (
                "revolute",
                "continuous",
                "prismatic",
                "spherical",
            ):
                continue
            bd["mass"] = (MASSLESS_SUBTREE_MASS, np.zeros(3), MASSLESS_SUBTREE_INERTIA * np.eye(3))
            parent = bd["parent"]
            if parent < 0 or not massless[parent]:
                tops.setdefault(bd["source"], []).append(bd["name"])
        for source, names in tops.items():
            self.lint.append(
                f"{source}: links {_names(names)} and the links below them have no mass, so "
                f"each gets {MASSLESS_SUBTREE_MASS:g} kg and {MASSLESS_SUBTREE_INERTIA:g} kg m^2 "
                "(a massless moving link would make the mass matrix singular)"
            )


def _is_massless(mass: tuple) -> bool:
    """True when a (mass, com, Ic) triple has zero mass and an all-zero inertia."""
    return mass[0] == 0.0 and not np.any(mass[2])


def _welded_mass(spec: RobotSpec, children: dict[str, list]) -> float:
    """Total mass (kg) of the root link and the links welded to it by fixed joints."""
    links = {link.name: link for link in spec.links}
    total, stack = 0.0, [spec.root]
    while stack:
        link = links[stack.pop()]
        total += link.inertial.mass if link.inertial is not None else 0.0
        stack.extend(j.child for j in children.get(link.name, []) if j.type == "fixed")
    return total


def _clip(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters (messages stay one readable line)."""
    return text if len(text) <= limit else f"{text[: limit - 30]}... ({len(text)} characters)"


def _names(names: list[str], limit: int = 5) -> str:
    """``'a', 'b' and 3 more``: a bounded list for messages."""
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def build_model(specs: list[RobotSpec], gravity=(0.0, 0.0, -9.81)) -> Model:
    """Build a :class:`Model` from a forest of robot specs (one tree per spec).

    Bodies of a moving subtree whose links are all declared massless get a minimal inertia
    (:meth:`_Builder.fill_massless_subtrees`, with a lint note). Raises :class:`ModelError`
    when the result has a singular mass matrix (e.g. a link with no ``<inertial>`` at the end
    of a moving joint), naming the file, the joint and the body.
    """
    if isinstance(specs, RobotSpec):
        specs = [specs]
    b = _Builder()
    for spec in specs:
        b.add_tree(spec)
    b.fill_massless_subtrees()
    model = _flatten(b, np.asarray(gravity, dtype=float))
    _check_mass_matrix(model, b)
    return model


def _flatten(b: _Builder, gravity: np.ndarray) -> Model:
    nb = len(b.bodies)
    parent = np.array([bd["parent"] for bd in b.bodies], dtype=np.int64)
    jtype = np.array([JOINT_CODE[bd["jtype"]] for bd in b.bodies], dtype=np.int64)
    nqj = np.array([JOINT_SIZES[t][0] for t in jtype], dtype=np.int64)
    nvj = np.array([JOINT_SIZES[t][1] for t in jtype], dtype=np.int64)
    qi = np.concatenate([[0], np.cumsum(nqj)[:-1]]).astype(np.int64) if nb else nqj.copy()
    vi = np.concatenate([[0], np.cumsum(nvj)[:-1]]).astype(np.int64) if nb else nvj.copy()
    S = np.zeros((nb, 6, 6))
    tree_E = np.zeros((nb, 3, 3))
    tree_r = np.zeros((nb, 3))
    axis = np.zeros((nb, 3))
    inertia = np.zeros((nb, 6, 6))
    mass = np.zeros(nb)
    com = np.zeros((nb, 3))
    q_names: list[str] = []
    v_names: list[str] = []
    nv = int(nvj.sum())
    damping = np.zeros(nv)
    lower = np.full(nv, -np.inf)
    upper = np.full(nv, np.inf)
    effort = np.full(nv, np.inf)
    vlim = np.full(nv, np.inf)
    friction = np.zeros(nv)
    spherical_limits = []
    for i, bd in enumerate(b.bodies):
        R, p = bd["origin"][:3, :3], bd["origin"][:3, 3]
        tree_E[i] = R.T
        tree_r[i] = p
        a = bd["axis"] / np.linalg.norm(bd["axis"])
        axis[i] = a
        name = bd["joint"]
        if jtype[i] == REVOLUTE:
            S[i, :3, 0] = a
            q_names.append(name)
            v_names.append(name)
        elif jtype[i] == PRISMATIC:
            S[i, 3:, 0] = a
            q_names.append(name)
            v_names.append(name)
        elif jtype[i] == SPHERICAL:
            S[i, :3, :3] = np.eye(3)  # v = w (child frame) -> spatial [w; 0]
            q_names += [f"{name}.{c}" for c in ("qw", "qx", "qy", "qz")]
            v_names += [f"{name}.{c}" for c in ("wx", "wy", "wz")]
        else:
            S[i, 3:, :3] = np.eye(3)  # v = [p-dot; w] -> spatial [w; R^T p-dot] (R = 1 here)
            S[i, :3, 3:] = np.eye(3)
            q_names += [f"{name}.{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
            v_names += [f"{name}.{c}" for c in ("vx", "vy", "vz", "wx", "wy", "wz")]
        js = bd["spec"]
        if js is not None and jtype[i] != FREE:
            # one entry per v component: a spherical joint's three get the same values (as
            # PyBullet damps each of its three DoF); position limits bound 1-DoF joints only
            # (a spherical joint's <limit> is a swing/twist limit: spherical_limits below)
            k = slice(vi[i], vi[i] + nvj[i])
            damping[k] = 0.0 if np.isnan(js.damping) else js.damping
            if js.type not in ("continuous", "spherical"):
                lower[k] = -np.inf if np.isnan(js.lower) else js.lower
                upper[k] = np.inf if np.isnan(js.upper) else js.upper
            effort[k] = np.inf if np.isnan(js.effort) else js.effort
            vlim[k] = np.inf if np.isnan(js.velocity) else js.velocity
            friction[k] = 0.0 if np.isnan(js.friction) else js.friction
            if jtype[i] == SPHERICAL and js.spherical_limit is not None:
                spherical_limits.append(
                    SphericalLimit(name, i, int(qi[i]), int(vi[i]), tuple(js.spherical_limit))
                )
        m, c, Ic = bd["mass"]
        mass[i] = m
        com[i] = c
        inertia[i] = spatial_inertia(m, c, Ic)
    joint_index = {bd["joint"]: i for i, bd in enumerate(b.bodies)}
    mimics = []
    for child, jname, ms in b.mimic_specs:
        if ms.master not in joint_index:
            raise ModelError(
                f"{b.bodies[child]['source']}: joint '{jname}' mimics '{ms.master}', "
                "which is not a moving joint of the same model"
            )
        master = joint_index[ms.master]
        mimics.append(
            Mimic(jname, ms.master, int(qi[child]), int(qi[master]), ms.multiplier, ms.offset)
        )
    return Model(
        nb=nb,
        nq=int(nqj.sum()),
        nv=nv,
        parent=parent,
        jtype=jtype,
        qi=qi,
        vi=vi,
        nqj=nqj,
        nvj=nvj,
        S=S,
        tree_E=tree_E,
        tree_r=tree_r,
        axis=axis,
        inertia=inertia,
        mass=mass,
        com=com,
        tree_of=np.array([bd["tree"] for bd in b.bodies], dtype=np.int64),
        gravity=gravity,
        body_names=tuple(bd["name"] for bd in b.bodies),
        joint_names=tuple(bd["joint"] for bd in b.bodies),
        joint_types=tuple(bd["jtype"] for bd in b.bodies),
        tree_names=tuple(b.tree_names),
        tree_sources=tuple(b.tree_sources),
        q_names=tuple(q_names),
        v_names=tuple(v_names),
        damping=damping,
        lower=lower,
        upper=upper,
        effort=effort,
        velocity_limit=vlim,
        geometries=tuple(b.geometries),
        planes=tuple(b.planes),
        spherical_limits=tuple(spherical_limits),
        link_frames=b.link_frames,
        mimics=tuple(mimics),
        lint=tuple(b.lint),
        friction=friction,
    )


def _check_mass_matrix(model: Model, b: _Builder) -> None:
    """Reject models whose joint-space mass matrix is singular.

    A joint is degenerate when the articulated inertia it moves is zero along its motion
    (e.g. a massless link at the end of a revolute joint). We test the pivots of the
    articulated-body factorisation D_i = S_i^T IA_i S_i at a random configuration (and the
    neutral one), relative to the largest pivot, against :data:`SINGULAR_PIVOT_RTOL`.
    """
    if model.nb == 0:
        return
    data = Data(model)
    rng = np.random.default_rng(0)
    worst = np.full(model.nv, np.inf)
    scale = 0.0
    for q in (model.neutral_q(), model.random_q(rng)):
        piv = articulated_pivots(model, data, q)
        worst = np.minimum(worst, piv)
        scale = max(scale, float(np.max(piv)))
    bad = np.flatnonzero(~(worst > SINGULAR_PIVOT_RTOL * max(scale, 1e-300)))
    if bad.size:
        k = int(bad[0])
        body = int(np.searchsorted(model.vi, k, side="right") - 1)
        bd = b.bodies[body]
        where = f"{bd['source']}: joint '{_clip(bd['joint'])}'"
        if not worst[k] > 0.0 or scale <= 0.0:
            fix = (
                "use a fixed base"
                if bd["jtype"] == "floating" and bd["parent"] < 0
                else "give the link an <inertial> or make the joint fixed"
            )
            message = (
                f"{where} moves no inertia along its axis (link '{_clip(bd['name'])}' and the "
                "links below it have no mass or inertia in that direction), so the mass matrix "
                f"is singular; {fix}"
            )
        else:
            # Not zero, but dwarfed by another joint's: the model mixes absurd scales.
            big = int(np.argmax(worst if np.all(np.isfinite(worst)) else np.nan_to_num(worst)))
            big_body = int(np.searchsorted(model.vi, big, side="right") - 1)
            message = (
                f"{where} moves an inertia of {worst[k]:.3g} (kg or kg m^2) along its axis, "
                f"less than {SINGULAR_PIVOT_RTOL:g} times the {scale:.3g} moved by joint "
                f"'{_clip(b.bodies[big_body]['joint'])}', so the mass matrix is numerically "
                "singular; check the masses and inertias of the links below both joints"
            )
        raise ModelError(_clip(message, 600) + ".")
