"""Checks that need the model: every joint and link name of a scenario against the URDFs it
loads, the initial state against the joint limits, and link references made canonical
(``tree/link``, :mod:`mbsim.names`) with the SRDF pairs added to ``contact.disabled_pairs``.
One function per section of the scenario."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from mbsim.errors import SrdfError
from mbsim.io.scenario.keys import _Ctx
from mbsim.io.scenario.types import Closure, Contact, Scenario
from mbsim.io.srdf import read_srdf
from mbsim.names import BUILTIN_TREE, FLOOR, FLOOR_LINK, WORLD, split_link_ref

#: A quaternion given in q0 must have unit norm to this tolerance (it is not renormalised,
#: because silently changing an initial condition would make the run differ from the file).
QUAT_NORM_TOL = 1e-6


def build_scenario_model(
    scenario: Scenario,
    *,
    package_dirs: Mapping[str, str] | None = None,
    allow_outside_paths: bool = False,
):
    """Load every URDF of the scenario, build the :class:`~mbsim.simcore.model.Model` (robots
    first, then environments, one tree each, named as in the scenario) and validate the
    scenario against it. package_dirs / allow_outside_paths: where mesh files may be read
    (:func:`mbsim.io.urdf.load_urdf`; command-line settings, never scenario keys, so that a
    scenario file cannot widen what it may read). Returns ``(model, specs, scenario)`` where
    ``scenario`` is the canonicalised one from :func:`validate_against_model`."""
    from mbsim.io.urdf import load_urdf
    from mbsim.simcore.model import build_model

    specs = [
        load_urdf(
            r.urdf,
            base=r.base,
            base_pose=r.base_pose.matrix(),
            package_dirs=package_dirs,
            allow_outside_paths=allow_outside_paths,
            name=r.name,
        )
        for r in scenario.robots
    ]
    specs += [
        load_urdf(
            e.urdf,
            base="fixed",
            base_pose=e.base_pose.matrix(),
            package_dirs=package_dirs,
            allow_outside_paths=allow_outside_paths,
            name=e.name,
        )
        for e in scenario.environments
    ]
    model = build_model(specs, gravity=scenario.simulation.gravity)
    return model, specs, validate_against_model(scenario, model)


def _ctx_for(scenario: Scenario) -> _Ctx:
    label = str(scenario.source) if scenario.source is not None else "command line"
    base = scenario.source.parent if scenario.source is not None else Path.cwd()
    ctx = _Ctx(label, scenario._text, base, everything_overridden=() in scenario._overridden)
    ctx.overridden = {p for p in scenario._overridden if p}
    ctx.override_values = dict(scenario._override_values)
    return ctx


def _names_list(names: Iterable[str], limit: int = 12) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "") or "none"


class _ModelNames:
    """The names a scenario may use, by tree: links, q and v coordinates (with their model
    indices), 1-DoF joints (by v index) and multi-DoF (free) joints."""

    def __init__(self, model) -> None:
        self.trees = list(model.tree_names)
        self.links: dict[int, set[str]] = {}
        for tree, link in model.link_frames:
            self.links.setdefault(int(tree), set()).add(link)
        self.q: dict[int, dict[str, int]] = {}
        self.v: dict[int, dict[str, int]] = {}
        self.one_dof: dict[int, dict[str, int]] = {}
        #: joints whose q holds a unit quaternion (free and spherical joints)
        self.quaternion_joints: dict[int, list[str]] = {}
        for i in range(model.nb):
            t = int(model.tree_of[i])
            for k in range(int(model.qi[i]), int(model.qi[i] + model.nqj[i])):
                self.q.setdefault(t, {})[model.q_names[k]] = k
            for k in range(int(model.vi[i]), int(model.vi[i] + model.nvj[i])):
                self.v.setdefault(t, {})[model.v_names[k]] = k
            if model.nvj[i] == 1:
                self.one_dof.setdefault(t, {})[model.joint_names[i]] = int(model.vi[i])
            else:
                self.quaternion_joints.setdefault(t, []).append(model.joint_names[i])
        #: names a joint_limits table may give: 1-DoF joints and spherical joints with a
        #: swing/twist limit (simcore/spherical_limits.py)
        self.limited = {t: dict(j) for t, j in self.one_dof.items()}
        for lim in model.spherical_limits:
            self.limited.setdefault(int(model.tree_of[lim.body]), {})[lim.joint] = lim.vi


class _Checker:
    """Validation state shared by the per-section checks: where errors point, the model's
    names, and whether the built-in floor exists."""

    def __init__(self, scenario: Scenario, model) -> None:
        self.ctx = _ctx_for(scenario)
        self.model = model
        self.names = _ModelNames(model)
        self.floor = scenario.contact.floor

    def tree_index(self, path: tuple, name: str) -> int:
        trees = self.names.trees
        if name not in trees:
            raise self.ctx.error(path, f"the model has no tree named {name!r} (trees: {trees})")
        return trees.index(name)

    def canonical(
        self, path: tuple, ref: str, within: str | None = None, where: str | None = None
    ) -> str:
        """``tree/link`` for a link reference (``within``: the tree of a bare name). An error
        names the scenario key ``path``, or ``where`` when the name comes from another file
        (an SRDF's line)."""
        trees, links_by_tree = self.names.trees, self.names.links

        def fail(why: str) -> Exception:
            return (
                self.ctx.error(path, why, ref) if where is None else SrdfError(f"{where}: {why}.")
            )

        if ref == WORLD:
            return ref
        tree, link = split_link_ref(ref)
        tree = tree or (within or "")
        if tree == BUILTIN_TREE:
            if link != FLOOR_LINK:
                raise fail(f"the built-in tree has only the link {FLOOR_LINK!r}")
            if not self.floor:
                raise fail("the built-in floor is off (contact.floor = false)")
            return FLOOR
        if tree:
            if tree not in trees:
                known = _names_list([*trees, *([BUILTIN_TREE] if self.floor else [])])
                raise fail(f"there is no robot or environment {tree!r} ({known})")
            links = links_by_tree.get(trees.index(tree), set())
            if link not in links:
                raise fail(f"{tree} has no link {link!r} (links: {_names_list(sorted(links))})")
            return f"{tree}/{link}"
        owners = [trees[t] for t, ls in sorted(links_by_tree.items()) if link in ls]
        if self.floor and link == FLOOR_LINK:
            owners.append(BUILTIN_TREE)
        if not owners:
            raise fail("no robot or environment has a link of this name")
        if len(owners) > 1:
            raise fail(f"is ambiguous: {', '.join(owners)} all have such a link; write TREE/{link}")
        return f"{owners[0]}/{link}"


def validate_against_model(scenario: Scenario, model) -> Scenario:
    """Check every joint and link name of ``scenario`` against ``model`` (built from the
    scenario's URDFs with tree names = robot/environment names) and the initial state against
    the joint limits. Returns the scenario with link references made canonical
    (``tree/link``, ``world``, ``builtin/floor``) and SRDF pairs added to
    ``contact.disabled_pairs``.
    """
    check = _Checker(scenario, model)
    srdf_pairs: list[tuple[str, str]] = []
    for r in scenario.robots:
        srdf_pairs += _check_robot(check, r)
    for e in scenario.environments:
        check.tree_index(("environment", e.name), e.name)
    contact = _check_contact(check, scenario.contact, srdf_pairs)
    closures = _check_closures(check, scenario.closures)
    return replace(scenario, contact=contact, closures=closures)


def _check_robot(check: _Checker, r) -> list[tuple[str, str]]:
    """A robot's coordinate and joint names, q0 within the limits, unit quaternions; returns
    the canonical pairs of its SRDF."""
    ctx, names, model = check.ctx, check.names, check.model
    rpath = ("robot", r.name)
    t = check.tree_index(rpath, r.name)
    qn, vn = names.q.get(t, {}), names.v.get(t, {})
    for key, known, what in (
        ("q0", qn, "q coordinate"),
        ("v0", vn, "v coordinate"),
        ("torque", vn, "v coordinate"),
        ("pd", names.one_dof.get(t, {}), "1-DoF joint"),
        ("joint_limits", names.limited.get(t, {}), "1-DoF or limited spherical joint"),
        ("control", names.one_dof.get(t, {}), "1-DoF joint"),
    ):
        for joint in getattr(r, key):
            if joint not in known:
                if joint in names.quaternion_joints.get(t, []):  # a real joint, of 3 or 6 DoF
                    dofs = ", ".join(n for n in vn if n.startswith(joint + "."))
                    why = (
                        "has no swing/twist <limit> to switch"
                        if key == "joint_limits"
                        else f"takes 1-DoF joints only (the torque table takes its DoF {dofs})"
                    )
                    raise ctx.error(
                        (*rpath, key, joint),
                        f"robot {r.name} ({r.urdf.name}): {joint!r} is a spherical or free "
                        f"joint, and {key} {why}",
                    )
                close = difflib.get_close_matches(joint, list(known), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ctx.error(
                    (*rpath, key, joint),
                    f"robot {r.name} ({r.urdf.name}) has no {what} of this name "
                    f"({hint}names: {_names_list(known)})",
                )
    for joint, x in r.q0.items():
        j = _dof_of_q(model, qn[joint])
        if j is not None:
            lo, hi = float(model.lower[j]), float(model.upper[j])
            if not lo <= x <= hi:
                raise ctx.error(
                    (*rpath, "q0", joint), f"is outside the joint limits [{lo:g}, {hi:g}]", x
                )
    for joint in names.quaternion_joints.get(t, []):
        quat_names = [f"{joint}.{c}" for c in ("qw", "qx", "qy", "qz")]
        if any(n in r.q0 for n in quat_names):
            quat = [r.q0.get(n, 1.0 if n.endswith("qw") else 0.0) for n in quat_names]
            norm = math.sqrt(sum(c * c for c in quat))
            if abs(norm - 1.0) > QUAT_NORM_TOL:
                raise ctx.error(
                    (*rpath, "q0", quat_names[0]),
                    f"the quaternion (qw, qx, qy, qz) = {tuple(quat)} of {joint} has norm "
                    f"{norm:.6g}; give all four components of a unit quaternion",
                )
    if r.srdf is None:
        return []
    return _srdf_pairs(check, (*rpath, "srdf"), r.srdf, r.name)


def _srdf_pairs(check: _Checker, path: tuple, srdf_file, within: str | None = None) -> list:
    """The canonical link pairs of an SRDF's ``<disable_collisions>`` (``within``: the tree of
    its bare link names); a link the model lacks is an error naming the SRDF file and line."""
    srdf = read_srdf(srdf_file)
    lines = srdf.lines or (None,) * len(srdf.disabled)
    pairs = []
    for (a, b), line in zip(srdf.disabled, lines, strict=True):
        at = f"{srdf_file}, line {line}" if line else str(srdf_file)
        pairs.append(
            tuple(
                check.canonical(
                    path, ref, within, where=f"{at}: <disable_collisions> {key}={ref!r}"
                )
                for key, ref in (("link1", a), ("link2", b))
            )
        )
    return pairs


def _check_contact(check: _Checker, c: Contact, srdf_pairs: list[tuple[str, str]]) -> Contact:
    """Canonical disabled pairs (the file's, then the robots' and contact.srdf's SRDF pairs,
    each unordered pair once) and per-pair overrides."""
    disabled = [
        (
            check.canonical(("contact", "disabled_pairs", i, 0), a),
            check.canonical(("contact", "disabled_pairs", i, 1), b),
        )
        for i, (a, b) in enumerate(c.disabled_pairs)
    ]
    if c.srdf is not None:
        srdf_pairs = srdf_pairs + _srdf_pairs(check, ("contact", "srdf"), c.srdf)
    seen: set[frozenset] = set()
    all_pairs = []
    for a, b in disabled + srdf_pairs:
        if frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            all_pairs.append((a, b))
    pairs = tuple(
        replace(
            p,
            a=check.canonical(("contact", "pairs", i, "a"), p.a),
            b=check.canonical(("contact", "pairs", i, "b"), p.b),
        )
        for i, p in enumerate(c.pairs)
    )
    mesh_links = tuple(
        (check.canonical(("contact", "mesh_contact_links", link), link), mode)
        for link, mode in c.mesh_contact_links
    )
    return replace(c, disabled_pairs=tuple(all_pairs), pairs=pairs, mesh_contact_links=mesh_links)


def _check_closures(check: _Checker, closures: tuple[Closure, ...]) -> tuple[Closure, ...]:
    """Canonical closure ends, which must be two different frames."""
    out = []
    for i, cl in enumerate(closures):
        a = check.canonical(("closure", i, "a"), cl.a)
        b = check.canonical(("closure", i, "b"), cl.b)
        if a == b:
            raise check.ctx.error(("closure", i, "b"), "is the same link as closure a", cl.b)
        out.append(replace(cl, a=a, b=b))
    return tuple(out)


def _dof_of_q(model, k: int) -> int | None:
    """v index of q index ``k`` if it belongs to a 1-DoF joint (None for free and spherical
    joints)."""
    for i in range(model.nb):
        if model.qi[i] <= k < model.qi[i] + model.nqj[i]:
            return int(model.vi[i]) if model.nqj[i] == 1 else None
    return None
