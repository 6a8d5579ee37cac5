"""CollisionScene: every contact of a Model's shapes at given body poses, as flat arrays.

Usage::

    scene = CollisionScene.from_model(model, floor=True, srdf="panda.srdf")
    forward_kinematics(model, data, q)
    contacts = scene.detect(data.R_world, data.p_world)

One :meth:`CollisionScene.detect` call (step 2 of the time step in docs/architecture.md):

1. shape poses from body poses (numba);
2. broadphase candidate pairs (proxy AABBs overlapping: all pairs in numba up to
   ``broadphase.AABB_MAX_SHAPES`` shapes, FCL dynamic AABB trees above;
   :mod:`mbsim.collision.broadphase`);
3. filters and exact kernels for every candidate pair and for each ground half-space
   (:mod:`mbsim.collision.narrowphase`), FCL for the rest (:mod:`mbsim.collision.fcl_narrow`);
4. manifolds reduced to at most ``manifold_cap`` points per shape pair
   (:mod:`mbsim.collision.manifold`), and with ``manifold="body-pair"`` again per body pair
   and contact plane (:func:`mbsim.collision.manifold.body_pair_keep`).

Shapes are indexed as ``model.geometries``; the ground half-spaces (the built-in floor, PyBullet
``<plane>``s welded to the world: :func:`ground_halfspaces`), when there are any, follow as
shape indices ``len(model.geometries) + k`` on body -1 (``scene.ground_indices``; the first is
``scene.ground_index``). ``scene.links[shape]`` names each shape's link ``tree/link``
(:mod:`mbsim.names`); the built-in floor is ``builtin/floor``.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numba import njit

from mbsim.collision.broadphase import (
    AABB_MAX_SHAPES,
    TAGS_WORK,
    AabbBroadphase,
    BruteForceBroadphase,
    FclBroadphase,
)
from mbsim.collision.fcl_narrow import FclNarrowphase
from mbsim.collision.filters import GROUND_TREE, LinkNames, allowed_pairs
from mbsim.collision.geometry import build_records
from mbsim.collision.manifold import (
    BODY_PAIR,
    CONTACT_MANIFOLDS,
    K_CYL_RIM,
    SHAPE_PAIR,
    body_pair_keep,
    reduce_manifold,
)
from mbsim.collision.mesh_tree import new_state
from mbsim.collision.narrowphase import finish, narrowphase, pair_kernel_set, shape_poses
from mbsim.collision.shapes import CAPSULE, CYLINDER, KIND_NAMES, SPHERE
from mbsim.collision.table import BODY, KIND, RAD, build_table
from mbsim.errors import GeometryError
from mbsim.names import FLOOR_LINK, MESH_CONTACT_MODES

#: Default contact margin, m: pairs closer than this (gap < margin) are reported.
DEFAULT_MARGIN = 1e-3
#: Default number of contact points kept per pair.
DEFAULT_CAP = 4
#: Largest operation count (vertex x face + edge x edge) for the exact convex kernel; above
#: it a convex pair goes to FCL (GJK/EPA + face refinement). 20000 keeps a pair under ~50 us.
DEFAULT_WORK_LIMIT = 20000
#: Broadphase choices (CollisionScene ``broadphase``).
BROADPHASES = ("auto", "aabb", "fcl", "bruteforce")
#: Default broadphase slack, m: FCL's proxies are grown by this and re-sent to FCL only when a
#: shape may have moved farther since the last time (see broadphase.dirty_proxies).
DEFAULT_SLACK = 0.01


def smooth_radii(geom_a, geom_b, feature_key, shape_kind, shape_radius):
    """(radius_a, radius_b), m, (nc,) each: the distance along the normal from each contact
    point to a material core point of its shape, 0 for a material point. A sphere's or a
    capsule's point is its core's closest point offset by the radius r; a cylinder rim's
    deepest point against the plane (manifold.K_CYL_RIM slot 0) lies r from the rim circle's
    centre (along the normal for a cylinder on its side; on the ground plane or a polytope
    face, fcl_narrow._cylinder_on_face). Such a point is found anew each
    step; the material point under it moves on a curve whose J-dot v term is the surface
    rolling, not a drift of the gap (simcore.contact.curvature_drift, issue 14: a rolling
    sphere sank by ~2.5 dt^2 w^2 r). shape_kind, shape_radius: (n_shapes,), the ground
    plane's entries -1 and 0."""
    nc = geom_a.shape[0]
    radius_a, radius_b = np.empty(nc), np.empty(nc)
    _smooth_radii_kernel(geom_a, geom_b, feature_key, shape_kind, shape_radius, radius_a, radius_b)
    return radius_a, radius_b


@njit(cache=True)
def _smooth_radii_kernel(geom_a, geom_b, feature_key, shape_kind, shape_radius, out_a, out_b):
    """smooth_radii per contact (a dozen numpy passes over nc entries were ~10 us a step)."""
    for i in range(geom_a.shape[0]):
        key = feature_key[i]
        rim = ((key >> 56) & 0x7F) == K_CYL_RIM and ((key >> 20) & 0xFFFFF) == 0
        # the cylinder is A against the ground plane, either side against a polytope face
        out_a[i] = _core_radius(shape_kind[geom_a[i]], shape_radius[geom_a[i]], rim)
        out_b[i] = _core_radius(shape_kind[geom_b[i]], shape_radius[geom_b[i]], rim)


@njit(cache=True, forceinline=True)
def _core_radius(kind, radius, rim):
    """A contact point's distance to its shape's material core point (smooth_radii)."""
    if kind == SPHERE or kind == CAPSULE or (rim and kind == CYLINDER):
        return radius
    return 0.0


@dataclass(slots=True)
class Contacts:
    """Contacts of one step, as arrays of length nc (SI units, world frame unless stated).

    body_a, body_b: body indices (-1 = the static world); geom_a, geom_b: shape indices
    (``scene.links[geom]`` is the link's ``tree/link``). point_a, point_b (nc, 3): the contact
    point on each shape; local_a, local_b: the same in the body frames (world frame for body -1).
    normal (nc, 3): unit, from B to A. gap (nc,): (point_a - point_b) . normal, m, negative =
    penetration. pair_id: geom_a * n_shapes + geom_b (stable). feature_key: which features of
    the pair made the point (stable while they stay in contact); (pair_id, feature_key)
    identifies a contact across steps. radius_a, radius_b (nc,): m, 0 when the point is a
    material point of its shape (a vertex, an edge or face point); r when it is the closest
    point of a smooth surface at distance r along the normal from a material core point (a
    sphere's centre, a capsule's segment, a cylinder rim's centre; see
    :func:`smooth_radii`): such a point is found anew each step, and the gap's second-order
    prediction follows the core (simcore.contact.curvature_drift).
    """

    body_a: np.ndarray
    body_b: np.ndarray
    geom_a: np.ndarray
    geom_b: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    local_a: np.ndarray
    local_b: np.ndarray
    normal: np.ndarray
    gap: np.ndarray
    pair_id: np.ndarray
    feature_key: np.ndarray
    radius_a: np.ndarray
    radius_b: np.ndarray

    def __len__(self) -> int:
        return int(self.gap.shape[0])


def _empty_contacts() -> Contacts:
    """A Contacts with no contact (read-only zero-length arrays, shared by every step that
    finds none)."""
    i, f = np.zeros(0, dtype=np.int64), np.zeros(0)
    v = np.zeros((0, 3))
    for a in (i, f, v):
        a.flags.writeable = False
    return Contacts(i, i, i, i, v, v, v, v, v, f, i, i, f, f)


def _subset(contacts: Contacts, keep: np.ndarray) -> Contacts:
    """The contacts where ``keep`` is True (``contacts`` itself when all are)."""
    if keep.all():
        return contacts
    fields = (getattr(contacts, f)[keep] for f in Contacts.__slots__)
    return Contacts(*(np.ascontiguousarray(a) for a in fields))


class CollisionScene:
    """The collision world of a Model (module docstring). Build with :meth:`from_model`."""

    def __init__(
        self,
        model,
        *,
        floor: bool = False,
        margin: float = DEFAULT_MARGIN,
        pair_margins: Iterable[tuple[str, str, float]] = (),
        self_collision: bool = True,
        disabled_pairs: Iterable[tuple[str, str]] = (),
        srdf: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
        groups: Mapping[str, Iterable[str]] | None = None,
        convex: bool | Collection[str] = False,
        mesh_contact: str = "triangles",
        mesh_contact_links: Iterable[tuple[str, str]] = (),
        manifold_cap: int = DEFAULT_CAP,
        manifold: str = SHAPE_PAIR,
        package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
        allow_outside_paths: bool = False,
        broadphase: str = "auto",
        broadphase_slack: float = DEFAULT_SLACK,
        work_limit: int = DEFAULT_WORK_LIMIT,
    ) -> None:
        if not (np.isfinite(margin) and margin >= 0.0):
            raise GeometryError(f"collision margin {margin!r} m must be finite and >= 0.")
        if int(manifold_cap) != manifold_cap or manifold_cap < 1:
            raise GeometryError(f"manifold_cap {manifold_cap!r} must be a positive integer.")
        if manifold not in CONTACT_MANIFOLDS:
            raise GeometryError(
                f"manifold {manifold!r} must be one of {', '.join(CONTACT_MANIFOLDS)}."
            )
        if broadphase not in BROADPHASES:
            raise GeometryError(
                f"broadphase {broadphase!r} must be one of {', '.join(BROADPHASES)}."
            )
        self.model = model
        self.margin = float(margin)
        pair_margins = list(pair_margins)
        for a, b, m in pair_margins:
            if not (np.isfinite(m) and m >= 0.0):
                raise GeometryError(f"collision margin {m!r} m of pair {a} - {b} must be >= 0.")
        # detection runs at the largest margin; detect() then drops contacts beyond their
        # pair's own margin (see _margin_table)
        self.reach = max([self.margin, *(float(m) for _, _, m in pair_margins)])
        self.cap = int(manifold_cap)
        self.manifold = manifold
        self.work_limit = int(work_limit)
        self.notes: list[str] = []
        hull_links = _HullLinks(model, convex, mesh_contact, mesh_contact_links)
        self.records = build_records(
            model,
            convex=hull_links,
            package_dirs=package_dirs,
            allow_outside_paths=allow_outside_paths,
        )
        self.table = build_table(self.records)
        opened = [r for r in self.records if r.open_edges]
        if opened:
            self.notes.append(open_mesh_note(model, opened))
        n = self.table.n
        self.floor = bool(floor)
        ground_keys, self.ground = ground_halfspaces(model, self.floor, self.notes)
        m = len(ground_keys)
        # the half-spaces are shapes n .. n + m - 1; with none, index n stays reserved (named
        # builtin/floor, checked against nothing) so that pair ids keep one layout
        self.n_shapes = n + max(m, 1)
        #: shape index of every ground half-space (the first one: ``ground_index``, -1: none)
        self.ground_indices = list(range(n, n + m))
        self.ground_index = n if m else -1
        keys = [(r.tree, r.link) for r in self.records] + (
            ground_keys or [(GROUND_TREE, FLOOR_LINK)]
        )
        #: link names of every shape, to look shapes up by ``tree/link`` (or bare ``link``)
        self.names = LinkNames(model, keys)
        #: ``tree/link`` of every shape (the last ones the ground half-spaces, the built-in
        #: floor ``builtin/floor``)
        self.links = [LinkNames.qualified(model, t, link) for t, link in keys]
        n_ground = self.n_shapes - n
        body = np.array([r.body for r in self.records] + [-1] * n_ground, dtype=np.int64)
        #: kind of every shape (shapes.py codes), -1 for a ground half-space
        self._shape_kind = np.append(self.table.si[:n, KIND], [-1] * n_ground).astype(np.int64)
        #: radius of every shape (m; spheres, capsules, cylinders), 0 for a ground half-space
        self._shape_radius = np.append(self.table.sf[:n, RAD], [0.0] * n_ground)
        tree = np.array([t for t, _ in keys], dtype=np.int64)
        self.allowed = allowed_pairs(
            model,
            body,
            tree,
            self.names,
            self_collision=self_collision,
            disabled_pairs=disabled_pairs,
            srdf=srdf,
            groups=groups,
            notes=self.notes,
        )
        self._margin_table = self._pair_margin_table(pair_margins)
        if not m:
            self.allowed[n, :] = False
            self.allowed[:, n] = False
        if broadphase == "auto":
            broadphase = "aabb" if n <= AABB_MAX_SHAPES else "fcl"
        if broadphase == "fcl" and not TAGS_WORK:
            self.notes.append(
                "python-fcl does not report broadphase pairs as expected; using the "
                "all-pairs bounding-sphere broadphase"
            )
            broadphase = "bruteforce"
        self.broadphase_kind = broadphase
        if not (np.isfinite(broadphase_slack) and broadphase_slack >= 0.0):
            raise GeometryError(f"broadphase_slack {broadphase_slack!r} m must be finite and >= 0.")
        if broadphase == "fcl":
            self._broad = FclBroadphase(self.records, self.reach, broadphase_slack)
        elif broadphase == "aabb":
            self._broad = AabbBroadphase(self.records, self.reach, self.allowed)
        else:
            self._broad = BruteForceBroadphase(body[:n], self.allowed[:n, :n])
        self._fcl = FclNarrowphase(self.records, self.table, self.reach, self.cap)
        t = self.table
        self._fpack, self._ipack, self._offs = t.pack()
        self._params = np.array([self.reach, self.cap, self.work_limit], dtype=float)
        #: certificates of large mesh - mesh pairs proved apart, kept between steps (shared
        #: with the compiled loop's detection: mesh_tree.mesh_pair_apart)
        self._tree_state = new_state()
        #: (polytopes, meshes, cylinders, fcl): the optional kernels the narrowphase compiles
        self._kernels = pair_kernel_set(t.si[:, KIND], t.si[:, BODY])
        self._Rw = np.zeros((n, 3, 3))
        self._pw = np.zeros((n, 3))
        self._bc = np.zeros((n, 3))
        shape_poses(
            t.si, t.sf, t.local_R, t.local_p, np.zeros((0, 3, 3)), np.zeros((0, 3)), self._Rw,
            self._pw, self._bc, True,
        )  # fmt: skip
        biggest = int(t.si[:, 3].max()) if n else 0
        k = max(biggest, 4 * t.max_poly + 8) + 4 * max(16, 4 * self.cap) + 64
        self._buf = np.zeros((k, 10))
        self._keys = np.zeros(k, dtype=np.int64)
        self._grow(256)
        self._empty = _empty_contacts()

    @classmethod
    def from_model(cls, model, **options) -> CollisionScene:
        """Build the scene of ``model``. Options (all keywords):

        floor (False): add the ground plane z <= 0 (a half-space, static; PyBullet
        ``<plane>``s welded to the world are further half-spaces, :func:`ground_halfspaces`).
        margin (1e-3 m): report pairs with gap < margin.
        pair_margins: (link, link, margin) triples overriding ``margin`` for those links'
        shapes (later triples win). Detection runs at the largest margin and drops each
        contact whose gap is not below its pair's margin; a pair with a smaller margin than
        the largest may then keep fewer than ``manifold_cap`` points (reduction happened
        before the drop).
        self_collision (True): check shapes of the same robot against each other.
        disabled_pairs: link-name pairs (``tree/link``) never checked; srdf: SRDF file(s) whose
        ``<disable_collisions>`` are never checked; groups: {name: links}, links of one group
        never checked against each other (see :mod:`mbsim.collision.filters`).
        convex (False): True, or link names, to replace meshes by their convex hulls.
        mesh_contact ("triangles"): how every link's non-convex meshes collide, one of
        MESH_CONTACT_MODES; mesh_contact_links: (link, mode) pairs overriding it per link
        (``tree/link`` or a bare link name). A link hulled by ``convex`` stays hulled.
        manifold_cap (4): most contact points kept per pair.
        manifold ("shape-pair"): "body-pair" reduces the contacts again per body pair and
        contact plane to at most ``manifold_cap`` (manifold.body_pair_keep), after the
        per-pair margins.
        package_dirs: {package: folder} for ``package://`` meshes; allow_outside_paths (False):
        let mesh paths reach outside the URDF's folder and the package folders.
        broadphase ("auto"): "aabb" (every pair of proxy AABBs tested in numba) up to
        ``AABB_MAX_SHAPES`` shapes, "fcl" (FCL's dynamic AABB trees; the same pairs) above;
        or either by name, or "bruteforce" (all allowed pairs, the kernels' bounding spheres).
        broadphase_slack (0.01 m): FCL proxies are re-sent only after moving this far.
        work_limit (20000): largest convex pair the exact kernel takes (else FCL).
        """
        return cls(model, **options)

    def _pair_margin_table(self, pair_margins) -> np.ndarray | None:
        """(n_shapes, n_shapes) margin of every shape pair, None when all use ``margin``."""
        if not pair_margins:
            return None
        table = np.full((self.n_shapes, self.n_shapes), self.margin)
        for a, b, m in pair_margins:
            ia = self.shapes_of(a, "pair_margins")
            ib = self.shapes_of(b, "pair_margins")
            table[np.ix_(ia, ib)] = m
            table[np.ix_(ib, ia)] = m
        return table

    def _grow(self, rows: int) -> None:
        self._out_i = np.zeros((rows, 3), dtype=np.int64)
        self._out_f = np.zeros((rows, 10))
        self._fcl_pairs = np.zeros((rows, 3), dtype=np.int64)

    def shape_poses(self, R_world: np.ndarray, p_world: np.ndarray):
        """World rotation (n, 3, 3) and position (n, 3) of every shape (views, reused)."""
        t = self.table
        shape_poses(
            t.si, t.sf, t.local_R, t.local_p, R_world, p_world, self._Rw, self._pw, self._bc,
            False,
        )  # fmt: skip
        return self._Rw, self._pw

    def detect(self, R_world: np.ndarray, p_world: np.ndarray) -> Contacts:
        """All contacts for body poses ``R_world`` (nb, 3, 3), ``p_world`` (nb, 3) (as
        filled by :func:`mbsim.simcore.kinematics.forward_kinematics`)."""
        Rw, pw = self.shape_poses(R_world, p_world)
        pairs = self._broad.candidates(Rw, pw)
        while True:
            nc, nfcl = narrowphase(
                pairs, self.allowed, self._fpack, self._ipack, self._offs, Rw, pw, self._bc,
                self.ground, self._params, self._buf, self._keys, self._out_i, self._out_f,
                self._fcl_pairs, self._tree_state, *self._kernels,
            )  # fmt: skip
            if nc <= self._out_i.shape[0] and nfcl <= self._fcl_pairs.shape[0]:
                break
            self._grow(2 * max(nc, nfcl, self._out_i.shape[0]))
        if nfcl:
            nc = self._fcl_contacts(nfcl, nc, Rw, pw)
        if nc == 0:  # the common free step: one shared empty result, no array work
            return self._empty
        ints, vecs, gap = finish(
            self._out_i, self._out_f, nc, self._ipack, self._offs, self.n_shapes, R_world, p_world
        )
        ra, rb = smooth_radii(ints[2], ints[3], ints[5], self._shape_kind, self._shape_radius)
        contacts = Contacts(
            ints[0], ints[1], ints[2], ints[3], vecs[0], vecs[1], vecs[2], vecs[3], vecs[4], gap,
            ints[4], ints[5], ra, rb,
        )  # fmt: skip
        if self._margin_table is not None:
            keep = contacts.gap < self._margin_table[contacts.geom_a, contacts.geom_b]
            contacts = _subset(contacts, keep)
        if self.manifold == BODY_PAIR and len(contacts) > self.cap:
            keep = np.zeros(len(contacts), dtype=np.bool_)
            c = contacts
            body_pair_keep(
                c.body_a, c.body_b, c.geom_a, c.geom_b, c.point_a, c.point_b, c.normal, c.gap,
                self.cap, keep,
            )  # fmt: skip
            contacts = _subset(contacts, keep)
        return contacts

    def _fcl_contacts(self, nfcl: int, nc: int, Rw, pw) -> int:
        """Run FCL on the pairs the kernels handed over; appends rows, returns the count."""
        chosen = np.empty(self.cap, dtype=np.int64)
        pairs = {(int(a), int(b), bool(c)) for a, b, c in self._fcl_pairs[:nfcl]}
        for ga, gb, collide_only in sorted(pairs):
            count = self._fcl.pair(ga, gb, Rw, pw, self._buf, self._keys, collide_only)
            m = reduce_manifold(self._buf, self._keys, count, self.cap, chosen)
            if nc + m > self._out_i.shape[0]:
                self._out_i = np.concatenate(
                    [self._out_i[:nc], np.zeros((nc + 2 * m, 3), np.int64)]
                )
                self._out_f = np.concatenate([self._out_f[:nc], np.zeros((nc + 2 * m, 10))])
            for c in chosen[:m]:
                self._out_i[nc] = (ga, gb, self._keys[c])
                self._out_f[nc] = self._buf[c]
                nc += 1
        return nc

    def shapes_of(self, name: str, what: str = "link") -> list[int]:
        """Shape indices of link ``name`` (``tree/link``, ``builtin/floor``, or a bare link
        name = that link in every tree); GeometryError naming ``what`` if there is none."""
        return self.names.shape_indices(name, what)

    def describe(self, contacts: Contacts, i: int) -> str:
        """One line naming contact i's links, shape kinds and gap (for messages)."""
        a, b = int(contacts.geom_a[i]), int(contacts.geom_b[i])
        return (
            f"{self.links[a]} ({self._kind(a)}) - {self.links[b]} ({self._kind(b)}): "
            f"gap {contacts.gap[i]:.6g} m"
        )

    def _kind(self, g: int) -> str:
        return "half-space" if g >= self.table.n else KIND_NAMES[self.records[g].kind]


def open_mesh_note(model, records) -> str:
    """One sentence for the meshes that collide as their hulls because they are open
    (:mod:`mbsim.collision.geometry`, ``ShapeRecord.open_edges``)."""
    links = list(dict.fromkeys(LinkNames.qualified(model, r.tree, r.link) for r in records))
    shown = ", ".join(links[:8]) + (f" and {len(links) - 8} more" if len(links) > 8 else "")
    edges = sum(r.open_edges for r in records)
    return (
        f"{len(links)} link(s) have collision meshes that are not closed surfaces ({edges} edges "
        f"with holes, flipped or extra triangles): {shown}; they collide as their "
        "convex hulls, as in PyBullet and MuJoCo (triangle contacts need a closed surface to "
        "tell inside from outside)"
    )


class _HullLinks:
    """Which links' meshes become convex hulls (``wants_hull``, asked by
    :func:`mbsim.collision.geometry.build_records`): ``convex`` (True or link names) or a
    ``mesh_contact`` mode of "convex-hull" (the ``tree/link`` entry, else the bare link's,
    else the default). Unknown modes and link names raise GeometryError."""

    def __init__(self, model, convex, default: str, per_link) -> None:
        modes = [("mesh_contact", default)] + [
            (f"mesh_contact_links {link!r}", mode) for link, mode in per_link
        ]
        for what, mode in modes:
            if mode not in MESH_CONTACT_MODES:
                raise GeometryError(
                    f"{what}: mode {mode!r} must be one of {', '.join(MESH_CONTACT_MODES)}."
                )
        self.convex = convex
        self.default = default
        self.per_link = {str(link): mode for link, mode in per_link}
        known = set()
        for g in model.geometries:
            tree = model.tree_names[g.tree] if g.tree < len(model.tree_names) else ""
            known.update((g.link, f"{tree}/{g.link}"))
        for link in self.per_link:
            if link not in known:
                raise GeometryError(
                    f"mesh_contact_links names link {link!r}, which has no collision shape."
                )

    def wants_hull(self, link: str, qualified: str) -> bool:
        c = self.convex
        if c is True or (not isinstance(c, bool) and (link in c or qualified in c)):
            return True
        mode = self.per_link.get(qualified, self.per_link.get(link, self.default))
        return mode == "convex-hull"


#: Two half-spaces are the same when their unit normals and offsets agree this closely (unit
#: normal, m): the built-in floor and a ``<plane>`` at z = 0 are one ground.
SAME_PLANE_TOL = 1e-9


def ground_halfspaces(
    model, floor: bool, notes: list[str]
) -> tuple[list[tuple[int, str]], np.ndarray]:
    """The scene's ground half-spaces n . x <= d: ``([(tree, link) each is named by],
    (m, 4) array of rows [nx, ny, nz, d])``, m >= 0.

    They are the built-in floor (z <= 0, ``builtin/floor``) when ``floor``, and every PyBullet
    ``<plane>`` of a link welded to the world (``model.planes``, body -1): its unit normal n
    (link frame) turned into the world, d = n . p for the plane's origin p. Half-spaces that
    agree within SAME_PLANE_TOL are one (named by the first: the floor and a ``<plane>`` at
    z = 0 are one ground, so a resting shape gets one set of contacts, not two identical
    ones). Different ones each give every shape its contacts (a box on a raised plane above
    the floor, a sphere in a wedge of two). A ``<plane>`` on a moving link is ignored with a
    note (a moving half-space is not a shape mbsim has, nor a body PyBullet simulates)."""
    found: list[tuple[tuple[int, str], np.ndarray, float]] = []
    if floor:
        found.append(((GROUND_TREE, FLOOR_LINK), np.array([0.0, 0.0, 1.0]), 0.0))
    for g in model.planes:
        ref = LinkNames.qualified(model, g.tree, g.link)
        if g.body >= 0:
            notes.append(
                f"link '{ref}' has a <plane> collision on a moving link; it is ignored (a "
                "<plane> is a half-space fixed in the world: put it on an environment or a "
                "fixed base)"
            )
            continue
        normal = g.pose[:3, :3] @ np.asarray(g.shape.params, dtype=float)
        normal /= np.linalg.norm(normal)
        d = float(normal @ g.pose[:3, 3])
        same = any(
            np.abs(n - normal).max() <= SAME_PLANE_TOL and abs(d0 - d) <= SAME_PLANE_TOL
            for _, n, d0 in found
        )
        if not same:
            found.append(((g.tree, g.link), normal, d))
    keys = [key for key, _, _ in found]
    rows = np.array([[*n, d] for _, n, d in found], dtype=float).reshape(-1, 4)
    return keys, rows
