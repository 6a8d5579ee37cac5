"""The reserved names of mbsim's one link vocabulary, shared by the scenario, the Simulator,
the collision scene and the results file.

Every link is referred to as ``tree/link``: ``tree`` is the robot's or environment's name in
the scenario (the model's ``tree_names``), ``link`` the URDF link name (merged links keep
theirs). The built-in ground half-space (``contact.floor = true``) is the link ``floor`` of the
tree ``builtin``; ``world`` is the fixed world frame (closures only).
"""

from __future__ import annotations

#: Tree name of the built-in floor; reserved, no robot or environment may use it.
BUILTIN_TREE = "builtin"
#: The built-in floor's one link.
FLOOR_LINK = "floor"
#: ``builtin/floor``: the built-in ground half-space z <= 0.
FLOOR = f"{BUILTIN_TREE}/{FLOOR_LINK}"
#: The fixed world frame (a closure end); reserved as a tree name too.
WORLD = "world"
#: How a link's non-convex meshes collide (scenario ``contact.mesh_contact``, the scene's
#: ``mesh_contact``): "triangles" keeps the triangle mesh (exact triangle-pair contacts),
#: "convex-hull" replaces it by its convex hull (MuJoCo's rule for every mesh, PyBullet's for
#: a mesh without the concave flag). A mesh that is its own hull is convex either way, and
#: an open mesh (no inside: collision/geometry.py) collides as its hull in either mode.
MESH_CONTACT_MODES = ("triangles", "convex-hull")


def link_ref(tree: str, link: str) -> str:
    """``("panda", "panda_link3")`` -> ``"panda/panda_link3"``."""
    return f"{tree}/{link}"


def split_link_ref(ref: str) -> tuple[str, str]:
    """``"tree/link"`` -> ``("tree", "link")``; ``"world"`` -> ``("world", "world")``;
    a bare ``"link"`` -> ``("", "link")``."""
    if ref == WORLD:
        return WORLD, WORLD
    tree, sep, link = ref.partition("/")
    return (tree, link) if sep else ("", ref)
