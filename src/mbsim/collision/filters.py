"""Which pairs of collision shapes are checked: a boolean matrix built once per scene.

A pair (i, j) of shapes is checked unless any of these holds:

* both are static (welded to the world: infinite mass, they cannot push each other);
* they sit on the same body, or on bodies joined by a joint (parent/child, "adjacent"); static
  geometry of a tree counts as the parent of that tree's bodies whose joint leaves the world;
* ``self_collision`` is off and both belong to the same robot (tree);
* their links are named together in ``disabled_pairs`` or in an SRDF ``<disable_collisions>``;
* their links are members of one collision group (``groups``: shapes within a group ignore
  each other, shapes of different groups or of no group collide).

Links are named ``tree/link`` (``panda/panda_link3``, :mod:`mbsim.names`); the built-in ground
plane is ``builtin/floor``. For direct library use a bare ``link`` is also accepted and matches
that link in every tree (the Simulator always passes ``tree/link``, so an entry for one copy of
a robot never touches another copy). A name matching no link is an error for
``disabled_pairs`` and ``groups``; SRDF files (written for some URDF variant) may name links a
model lacks, which are reported in the notes and otherwise ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import numpy as np

from mbsim.errors import GeometryError
from mbsim.io.srdf import read_srdf
from mbsim.names import BUILTIN_TREE, link_ref

#: Tree index of the built-in ground plane (a half-space; body -1, not part of the model).
GROUND_TREE = -1


class LinkNames:
    """Map link names (``tree/link``, or a bare ``link`` meaning every tree's) to the indices
    of their collision shapes. ``links``: per shape its (tree index, URDF link name); tree
    ``GROUND_TREE`` is the built-in floor."""

    def __init__(self, model, links: list[tuple[int, str]]) -> None:
        self.shapes: dict[tuple[int, str], list[int]] = {}
        for index, key in enumerate(links):
            self.shapes.setdefault(key, []).append(index)
        known = {(t, n) for (t, n) in model.link_frames}
        known |= set(self.shapes)
        self.by_name: dict[str, set[tuple[int, str]]] = {}
        for tree, link in known:
            self.by_name.setdefault(link, set()).add((tree, link))
            self.by_name.setdefault(self.qualified(model, tree, link), set()).add((tree, link))

    @staticmethod
    def qualified(model, tree: int, link: str) -> str:
        """``tree/link`` of a (tree index, link) key."""
        if tree == GROUND_TREE:
            return link_ref(BUILTIN_TREE, link)
        return link_ref(model.tree_names[tree], link)

    def links(self, name: str, tree: int | None = None) -> set[tuple[int, str]]:
        found = self.by_name.get(name, set())
        return {k for k in found if tree is None or k[0] == tree}

    def indices(self, links: set[tuple[int, str]]) -> list[int]:
        return [i for key in links for i in self.shapes.get(key, [])]

    def shape_indices(self, name: str, what: str) -> list[int]:
        """Indices of the shapes of link ``name``; GeometryError naming ``what`` if no link of
        the model has that name."""
        return self.indices(names_or_error(self, name, what))


def allowed_pairs(
    model,
    body: np.ndarray,
    tree: np.ndarray,
    names: LinkNames,
    *,
    self_collision: bool = True,
    disabled_pairs: Iterable[tuple[str, str]] = (),
    srdf: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    groups: Mapping[str, Iterable[str]] | None = None,
    notes: list[str] | None = None,
) -> np.ndarray:
    """Symmetric (n, n) bool matrix: True where shapes i and j are checked (module docstring).

    body, tree: per shape its body (-1 static) and tree (GROUND_TREE for the ground plane);
    names: the shapes' :class:`LinkNames`. notes collects SRDF links the model lacks.
    """
    body = np.asarray(body, dtype=np.int64)
    tree = np.asarray(tree, dtype=np.int64)
    # one extra entry so that body -1 (static) indexes something: its parent/tree are unused
    parent = np.append(np.asarray(model.parent, dtype=np.int64), -2)
    tree_of = np.append(np.asarray(model.tree_of, dtype=np.int64), -2)
    bi, bj = body[:, None], body[None, :]
    ok = ~((bi < 0) & (bj < 0))
    ok &= bi != bj
    par = np.where(body >= 0, parent[body], -2)
    ok &= ~((bi >= 0) & (bj >= 0) & ((par[:, None] == bj) | (par[None, :] == bi)))
    # static geometry of tree t is the parent of the bodies of t attached to the world
    root_of = np.where((body >= 0) & (par == -1), tree_of[body], -2)
    static_tree = np.where(body < 0, tree, -3)
    ok &= ~((root_of[:, None] == static_tree[None, :]) | (static_tree[:, None] == root_of[None, :]))
    if not self_collision:
        same_tree = (tree[:, None] == tree[None, :]) & (tree[:, None] >= 0)
        ok &= ~same_tree
    for a, b in disabled_pairs:
        _disable(
            ok,
            names,
            names_or_error(names, a, "disabled_pairs"),
            names_or_error(names, b, "disabled_pairs"),
        )
    for path in _paths(srdf):
        for la, lb in _srdf_pairs(path, names, model, notes):
            _disable(ok, names, la, lb)
    for group, members in (groups or {}).items():
        if isinstance(members, str):
            members = [members]
        found: set[tuple[int, str]] = set()
        for m in members:
            found |= names_or_error(names, m, f"collision group '{group}'")
        idx = names.indices(found)
        ok[np.ix_(idx, idx)] = False
    np.fill_diagonal(ok, False)
    return ok


def names_or_error(names: LinkNames, name: str, what: str) -> set[tuple[int, str]]:
    found = names.links(str(name))
    if not found:
        raise GeometryError(f"{what}: link '{name}' is not a link of the model.")
    return found


def _disable(ok, names: LinkNames, la: set, lb: set) -> None:
    ia, ib = names.indices(la), names.indices(lb)
    if ia and ib:
        ok[np.ix_(ia, ib)] = False
        ok[np.ix_(ib, ia)] = False


def _paths(srdf) -> list[str]:
    if srdf is None:
        return []
    if isinstance(srdf, (str, os.PathLike)):
        return [os.fspath(srdf)]
    return [os.fspath(p) for p in srdf]


def _srdf_pairs(path: str, names: LinkNames, model, notes: list[str] | None):
    """Link-set pairs of an SRDF's ``<disable_collisions>`` (robot name picks the tree)."""
    srdf = read_srdf(path)  # SrdfError is a GeometryError
    tree = model.tree_names.index(srdf.robot) if srdf.robot in model.tree_names else None
    missing: set[str] = set()
    for a, b in srdf.disabled:
        la, lb = names.links(a, tree), names.links(b, tree)
        missing |= {x for x, s in ((a, la), (b, lb)) if not s}
        yield la, lb
    if missing and notes is not None:
        notes.append(f"{path}: links not in the model, ignored: {', '.join(sorted(missing))}")
