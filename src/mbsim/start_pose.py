"""Checks of the initial state before the first step: links that already overlap, robots that
start inside the floor or with joints outside their limits, and the SRDF beside a URDF.

* **Overlapping links.** Two links of one robot whose collision shapes already interpenetrate
  or touch at the initial state (gap below :data:`OVERLAP_TOL`) are a modelling artefact
  (coarse collision meshes around a joint, parts modelled flush), not a contact: the LCP would
  push overlapping links apart with the whole robot's energy, and links flush where no joint
  can part them (racecar_differential's chassis on its side gears, 2e-8 m deep) leave it a
  separation no motion can give, so no solution. Like PyBullet (self-collision off unless
  asked for) and MuJoCo (parent/child and welded pairs excluded), such pairs are not
  checked; ``Simulator`` does it unless ``contact.ignore_initial_overlaps = false``, and says
  which pairs.
* **Inside the floor.** The lowest collision point of each tree at the initial state, z_min
  (m), from the exact shapes: a sphere's centre minus r; the lowest vertex of a box, convex
  polytope or mesh; a capsule's lower end minus r; a cylinder's lowest rim point
  z_c - h |a_z| - r sqrt(1 - a_z^2) for its axis a. ``base_pose.on_floor`` shifts the tree's
  base pose by -z_min along world z so that point rests on z = 0.
* **Outside the joint limits.** A joint whose initial position is below its lower or above
  its upper (enforced) limit is named, with the file, the value and the limit, in one
  sentence per robot (:func:`limit_notes`); the start is kept, as PyBullet and MuJoCo keep it.
* **SRDF beside the URDF.** ``NAME.srdf`` next to a URDF whose ``<robot name="NAME">`` (or
  file stem) is NAME holds the robot's ``<disable_collisions>`` pairs (MoveIt's convention);
  the places looked at are :data:`SRDF_PLACES`, relative to the URDF's folder.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from mbsim.collision.shapes import CAPSULE, CYLINDER, SPHERE
from mbsim.simcore.data import Data
from mbsim.simcore.kinematics import forward_kinematics

#: Gap (m) below which two shapes of one robot count as overlapping at the initial state:
#: interpenetrating, or touching to within the float noise of a shared face either way.
OVERLAP_TOL = 1e-6
#: A tree whose lowest collision point is below z = -FLOOR_TOL (m) starts inside the floor
#: (the default contact margin: shallower than that the stepper's correction handles it).
FLOOR_TOL = 1e-3
#: Where an SRDF for robot NAME is looked for, relative to the URDF's folder: beside it, in a
#: folder NAME beside it (mbsim's bundled robots), in ``../srdf`` (ROS description packages).
SRDF_PLACES = ("{name}.srdf", "{name}/{name}.srdf", "../srdf/{name}.srdf")


def body_frames(model, q) -> tuple[np.ndarray, np.ndarray]:
    """World rotation (nb, 3, 3) and position (nb, 3) of every body at configuration ``q``."""
    data = Data(model)
    forward_kinematics(model, data, q)
    return data.R_world, data.p_world


def initial_overlaps(scene, R_world, p_world, tol: float = OVERLAP_TOL) -> list:
    """Link pairs of one tree whose shapes the scene checks and which interpenetrate or touch
    (gap below ``tol``, m) at these body poses: ``[(link_a, link_b, depth m)]`` (``tree/link``
    names, the deepest contact of each pair; depth = -gap, so a pair apart by less than tol
    has a depth in (-tol, 0]), deepest first."""
    contacts = scene.detect(R_world, p_world)
    deepest: dict[tuple[str, str], float] = {}
    n = len(scene.records)
    for i in range(len(contacts.gap)):
        a, b = int(contacts.geom_a[i]), int(contacts.geom_b[i])
        if a >= n or b >= n or scene.records[a].tree != scene.records[b].tree:
            continue
        depth = -float(contacts.gap[i])
        if depth < -tol:
            continue
        la, lb = sorted((scene.links[a], scene.links[b]))
        if la == lb:
            continue
        deepest[la, lb] = max(depth, deepest.get((la, lb), 0.0))
    return sorted(((a, b, d) for (a, b), d in deepest.items()), key=lambda x: -x[2])


def ignore_pairs(scene, pairs) -> None:
    """Stop checking the shapes of each ``(link_a, link_b, ...)`` pair against each other."""
    for a, b, *_ in pairs:
        ia, ib = scene.shapes_of(a), scene.shapes_of(b)
        scene.allowed[np.ix_(ia, ib)] = False
        scene.allowed[np.ix_(ib, ia)] = False


def overlap_note(pairs, ignored: bool) -> str:
    """One sentence for the pairs of :func:`initial_overlaps`."""
    shown = ", ".join(f"{a} - {b} ({d * 1000:.3g} mm)" for a, b, d in pairs[:8])
    more = f" and {len(pairs) - 8} more" if len(pairs) > 8 else ""
    if ignored:
        return (
            f"{len(pairs)} link pair(s) overlap at the initial state and are not checked for "
            f"collision: {shown}{more} (check them with --keep-initial-overlaps or "
            "contact.ignore_initial_overlaps = false)"
        )
    return (
        f"{len(pairs)} link pair(s) overlap at the initial state and are checked for collision "
        f"all the same: {shown}{more}; the contact solver will push them apart (ignore them "
        "with contact.ignore_initial_overlaps = true, give an SRDF with --srdf, or run with "
        "--no-self-collision)"
    )


def shape_lowest_z(rec, R: np.ndarray, p: np.ndarray) -> float:
    """Lowest world z (m) of collision shape ``rec`` at world pose (R, p) (module docstring)."""
    if rec.kind == SPHERE:
        return float(p[2] - rec.radius)
    if rec.kind == CYLINDER:
        az = float(R[2, 2])
        return float(p[2] - rec.halflen * abs(az) - rec.radius * math.sqrt(max(0.0, 1 - az * az)))
    z = (np.asarray(rec.hull) @ R[2, :]).min() + p[2]
    return float(z - rec.radius) if rec.kind == CAPSULE else float(z)


def lowest_points(scene, R_world, p_world) -> dict[int, float]:
    """{tree index: lowest world z (m) of its collision shapes} at these body poses."""
    Rw, pw = scene.shape_poses(R_world, p_world)
    low: dict[int, float] = {}
    for g, rec in enumerate(scene.records):
        z = shape_lowest_z(rec, Rw[g], pw[g])
        low[rec.tree] = min(z, low.get(rec.tree, math.inf))
    return low


def placed_on_floor(sc, scene, R_world, p_world):
    """The scenario with every ``base_pose.on_floor`` robot and environment lifted (or lowered)
    so its lowest collision point is at z = 0, or None when nothing moves. A moved pose is
    resolved (``on_floor`` false): placing it again would shift it by the rounding of its
    lowest point (~1e-16 m), so ``mbsim run --from`` would not repeat the run exactly."""
    low = lowest_points(scene, R_world, p_world)
    trees = [*sc.robots, *sc.environments]
    moved = {}
    for t, item in enumerate(trees):
        if item.base_pose.on_floor and t in low and low[t] != 0.0:
            x, y, z = item.base_pose.xyz
            pose = replace(item.base_pose, xyz=(x, y, z - low[t]), on_floor=False)
            moved[t] = replace(item, base_pose=pose)
    if not moved:
        return None
    nr = len(sc.robots)
    robots = tuple(moved.get(t, r) for t, r in enumerate(sc.robots))
    envs = tuple(moved.get(nr + t, e) for t, e in enumerate(sc.environments))
    return replace(sc, robots=robots, environments=envs)


#: triangles of one link's collision meshes above which :func:`dense_mesh_notes` names it:
#: pybullet_data's mini_cheetah (15,000-22,000 a link) spends 12 ms in each FCL pair, 85% of
#: its run (38 steps/s; 406 with ``contact.mesh_contact = "convex-hull"``)
DENSE_MESH_TRIANGLES = 5000


def _per_link(scene, count) -> dict[str, int]:
    """``count(record)`` summed over each link's collision shapes, by ``tree/link`` name (as
    contact.mesh_contact_links takes it); links whose shapes all count 0 are left out."""
    counts: dict[str, int] = {}
    for g, rec in enumerate(scene.records):
        n = count(rec)
        if n:
            counts[scene.links[g]] = counts.get(scene.links[g], 0) + n
    return counts


def _links_over(counts: dict[str, int], limit: int, unit: str) -> tuple[int, str] | None:
    """(how many, "link (count unit), ... and k more") of the links whose count exceeds
    ``limit``, largest first, six named; None if none does. ``unit`` formats the count."""
    over = sorted(((n, link) for link, n in counts.items() if n > limit), reverse=True)
    if not over:
        return None
    shown = ", ".join(f"{link} ({unit.format(n)})" for n, link in over[:6])
    more = f" and {len(over) - 6} more" if len(over) > 6 else ""
    return len(over), shown + more


def dense_mesh_notes(scene, limit: int = DENSE_MESH_TRIANGLES) -> list[str]:
    """One sentence naming the links whose collision meshes collide as triangles (closed
    meshes, ``contact.mesh_contact = "triangles"``) with more than ``limit`` triangles, and how
    to collide their convex hulls instead."""
    counts = _per_link(scene, lambda rec: len(rec.mesh[1]) if rec.mesh is not None else 0)
    named = _links_over(counts, limit, "{:,} triangles")
    if named is None:
        return []
    return [
        f"{named[0]} link(s) have dense collision meshes that collide triangle by triangle: "
        f"{named[1]}; each contact with them can take milliseconds a step. "
        '--set contact.mesh_contact=convex-hull (or contact.mesh_contact_links = { "LINK" = '
        '"convex-hull" }) collides their convex hulls instead, as PyBullet and MuJoCo do'
    ]


#: collision shapes of one moving link above which :func:`many_shape_notes` names it: each
#: shape keeps up to manifold_cap (4) points against the same plane, so ERD anymal_c's base
#: (11 primitives merged through fixed joints) lying on the floor had 22-36 contacts, a
#: 216-row degenerate LCP that the compiled step's first attempt failed on 379 of 1000 steps
#: (50 steps/s; 842 with ``contact.manifold = "body-pair"``, the same end state)
MANY_SHAPES = 6


def many_shape_notes(scene, limit: int = MANY_SHAPES) -> list[str]:
    """One sentence naming the moving links with more than ``limit`` collision shapes when
    contacts are reduced per shape pair (``contact.manifold = "shape-pair"``), and how to
    reduce them per body pair instead (docs/collision.md, "Per body pair")."""
    if getattr(scene, "manifold", "body-pair") != "shape-pair":
        return []
    counts = _per_link(scene, lambda rec: 1 if rec.body >= 0 else 0)
    named = _links_over(counts, limit, "{} shapes")
    if named is None:
        return []
    return [
        f"{named[0]} link(s) are made of many collision shapes: {named[1]}; lying on the "
        f"floor, each shape keeps up to {scene.cap} points, so one body can have dozens of "
        "contacts and slow, degenerate contact LCPs. --set contact.manifold=body-pair keeps "
        f"at most {scene.cap} a body pair and contact plane (17x faster on ERD anymal_c, the "
        "same end state)"
    ]


def no_floor_notes(sc) -> list[str]:
    """One sentence per robot placed on the floor (``base_pose.on_floor``) in a scenario with
    neither the built-in floor nor any environment: nothing is at z = 0 to rest on."""
    if sc.contact.floor or sc.environments:
        return []
    return [
        f"'{r.name}' is placed on the floor (base_pose.on_floor, --place-on-floor), but there "
        "is no floor: contact.floor is off (pass --floor) and no environment is loaded; it "
        "falls from there"
        for r in sc.robots
        if r.base_pose.on_floor
    ]


def floor_notes(floor: bool, model, scene, R_world, p_world) -> list[str]:
    """One sentence per robot or environment that starts inside the floor (deeper than
    :data:`FLOOR_TOL`; none when ``floor`` is off), with the base height that clears it, and
    one per moving robot without a collision shape (it falls through the floor)."""
    if not floor:
        return []
    low = lowest_points(scene, R_world, p_world)
    notes = []
    for t, name in enumerate(model.tree_names):
        moving = any(int(model.tree_of[i]) == t for i in range(model.nb))
        if moving and t not in low:
            notes.append(
                f"'{name}' has no collision shapes, so it falls through the floor and touches "
                "nothing (base_pose.on_floor, --place-on-floor, leaves its base where it is)"
            )
        if low.get(t, 0.0) < -FLOOR_TOL:
            root = next((i for i in range(model.nb) if model.tree_of[i] == t), None)
            # a tree welded to the world has no body: say how far to raise its base instead
            where = (
                f"raising its base by {-low[t]:.4g} m"
                if root is None
                else f"a base height of z = {float(p_world[root][2]) - low[t]:.4g} m"
            )
            notes.append(
                f"'{name}' starts {-low[t]:.3g} m inside the floor (its lowest collision point is "
                f"at z = {low[t]:.3g} m): {where} rests it on "
                "the floor; pass --place-on-floor (base_pose.on_floor = true) to start there"
            )
    return notes


def limit_notes(model, files, limits, q) -> list[str]:
    """One sentence per tree whose joints start outside their enforced position limits
    (``limits``: simcore.joint_rows.JointLimits; ``files``: {tree index: its URDF}), naming
    the file and each such joint with its value and the limit it is past (rad or m); for a
    spherical joint, each swing or twist angle past its span (simcore/spherical_limits.py). The run
    goes ahead: the limit rows push such a joint back at the recovery speed, softened where
    that contradicts a contact (simcore/stepper.py, "Softened recovery")."""
    from mbsim.simcore.joint_rows import q_of_v
    from mbsim.simcore.joints import PRISMATIC

    x = q_of_v(model, q)
    past: dict[int, list[str]] = {}
    for k in range(model.nv):
        lo, hi = limits.lower[k], limits.upper[k]
        if not np.isfinite(x[k]) or lo <= x[k] <= hi:
            continue
        body = int(np.searchsorted(model.vi, k, side="right") - 1)
        unit = "m" if model.jtype[body] == PRISMATIC else "rad"
        side, bound = ("below its lower", lo) if x[k] < lo else ("above its upper", hi)
        past.setdefault(int(model.tree_of[body]), []).append(
            f"'{model.v_names[k]}' = {x[k]:.4g} {unit}, {side} limit {bound:.4g} {unit}"
        )
    from mbsim.simcore.spherical_limits import ANGLES, swing_twist

    for lim in getattr(limits, "spherical", ()):
        angles = swing_twist(np.asarray(q[lim.qi : lim.qi + 4], dtype=float))[0]
        for name, a, span in zip(ANGLES, angles, lim.spans, strict=True):
            if abs(a) > span:
                past.setdefault(int(model.tree_of[lim.body]), []).append(
                    f"'{lim.joint}' {name} = {a:.4g} rad, outside its span +-{span:.4g} rad"
                )
    notes = []
    for tree, joints in past.items():
        where = f" ({files[tree]})" if tree in files else ""
        notes.append(
            f"'{model.tree_names[tree]}'{where} starts with {len(joints)} joint(s) outside "
            f"their limits: {'; '.join(joints)}; the limits push them back at up to "
            "contact.max_recovery_speed, softened where a contact stands in the way"
        )
    return notes


def target_notes(model, files, limits, targets) -> list[str]:
    """One sentence per tree whose position targets (``targets``: (tree, joint, v index,
    scenario Signal) of its ``position`` controls and ``pd`` entries) reach outside the
    joint's enforced position limits (``limits``: simcore.joint_rows.JointLimits), naming the
    file, each such joint and its farthest target sample past the limit (rad or m). Such a
    target is kept (PyBullet and MuJoCo keep it too): the stop holds the joint at the limit
    while the PD presses it there, up to the effort limit."""
    from mbsim.simcore.joints import PRISMATIC

    past: dict[int, list[str]] = {}
    for tree, joint, k, signal in targets:
        ys = np.asarray(signal.y if signal.t else (signal.value,), dtype=float)
        lo, hi = limits.lower[k], limits.upper[k]
        body = int(np.searchsorted(model.vi, k, side="right") - 1)
        unit = "m" if model.jtype[body] == PRISMATIC else "rad"
        for y, side, bound in (
            (ys.min(), "below its lower", lo),
            (ys.max(), "above its upper", hi),
        ):
            if (y < bound) if side.startswith("below") else (y > bound):
                past.setdefault(tree, []).append(
                    f"'{joint}' to {y:.4g} {unit}, {side} limit {bound:.4g} {unit}"
                )
    notes = []
    for tree, joints in past.items():
        where = f" ({files[tree]})" if tree in files else ""
        notes.append(
            f"'{model.tree_names[tree]}'{where} has position targets outside the joint limits: "
            f"{'; '.join(joints)}; the stop holds such a joint at its limit while the PD presses "
            "it there (up to the effort limit)"
        )
    return notes


def srdf_beside(sc) -> tuple[object, list[str]]:
    """The scenario with ``robot.srdf`` set for each robot that has none while ``NAME.srdf``
    lies beside its URDF (module docstring), and a note per file picked up. Nothing changes
    when ``contact.srdf`` is given or self-collision is off."""
    if sc.contact.srdf is not None or not sc.contact.self_collision:
        return sc, []
    robots, notes = [], []
    for r in sc.robots:
        found = None
        if r.srdf is None:
            found = srdf_for(r.urdf)
        if found is not None:
            notes.append(
                f"robot '{r.name}': using the SRDF beside its URDF, {found} (its "
                "<disable_collisions> pairs are not checked)"
            )
            r = replace(r, srdf=found)
        robots.append(r)
    return (replace(sc, robots=tuple(robots)) if notes else sc), notes


def srdf_for(urdf: Path) -> Path | None:
    """The first existing ``NAME.srdf`` of :data:`SRDF_PLACES` (NAME: robot name, file stem)."""
    for stem in dict.fromkeys(filter(None, (_robot_name(urdf), urdf.stem))):
        for place in SRDF_PLACES:
            candidate = urdf.parent / place.format(name=stem)
            if candidate.is_file():
                return candidate.resolve()
    return None


def _robot_name(urdf: Path) -> str | None:
    """The ``name`` attribute of a URDF's ``<robot>`` element (None if it cannot be read).
    Reads only the first element, with the hardened options of :mod:`mbsim.io.safe_xml`."""
    from lxml import etree

    options = {"resolve_entities": False, "no_network": True, "load_dtd": False}
    try:
        for _, element in etree.iterparse(str(urdf), events=("start",), **options):
            return element.get("name")
    except (OSError, etree.XMLSyntaxError):
        return None
    return None
