"""``mbsim info``: what a URDF becomes once mbsim has loaded it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import typer

from mbsim.cli import mesh_paths
from mbsim.collision.scene import CollisionScene
from mbsim.errors import MbsimError
from mbsim.io.scenario.parse import default_robot_name
from mbsim.io.srdf import read_srdf
from mbsim.io.urdf import load_urdf
from mbsim.simcore.formulations import lcp_dimension
from mbsim.simcore.joint_rows import JointLimits
from mbsim.simcore.model import Model, build_model
from mbsim.simcore.options import FORMULATIONS
from mbsim.start_pose import (
    body_frames,
    dense_mesh_notes,
    floor_notes,
    initial_overlaps,
    limit_notes,
    srdf_for,
)


def info(
    urdf: Path = typer.Argument(..., help="URDF file of the robot."),
    floating: bool = typer.Option(
        False, "--floating", help="Attach the root link by a 6-DoF free joint (not welded)."
    ),
    floor: bool = typer.Option(False, "--floor", help="Include the built-in ground plane."),
    self_collision: bool = typer.Option(
        True, "--self-collision/--no-self-collision", help="Check the robot's own links."
    ),
    contacts: int = typer.Option(4, "--contacts", help="Contacts assumed for the LCP sizes."),
    friction_directions: int = typer.Option(4, help="Friction polyhedron edges (nf)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
    package_dir: list[str] = mesh_paths.PACKAGE_DIR,
    allow_outside_paths: bool = mesh_paths.ALLOW_OUTSIDE_PATHS,
) -> None:
    """Print the body tree, DoFs, masses, collision shapes, checked pairs and LCP sizes."""
    packages = mesh_paths.parse_package_dirs(package_dir or [])
    spec = load_urdf(
        urdf,
        base="floating" if floating else "fixed",
        name=default_robot_name(urdf),  # the tree name of `mbsim run`'s tree/link names
        package_dirs=packages,
        allow_outside_paths=allow_outside_paths,
    )
    model = build_model([spec])
    summary = summarize(model)
    scene = CollisionScene.from_model(
        model,
        floor=floor,
        self_collision=self_collision,
        package_dirs=packages,
        allow_outside_paths=allow_outside_paths,
    )
    summary["checked_pairs"] = scene_pairs(scene)
    summary["warnings"] += scene.notes
    frames = body_frames(model, model.neutral_q())
    overlaps = initial_overlaps(scene, *frames) if scene.allowed.any() else []
    summary["initial_overlaps"] = [{"a": a, "b": b, "depth_m": d} for a, b, d in overlaps]
    if overlaps:
        summary["warnings"].append(
            f"{len(overlaps)} link pair(s) overlap at q = 0: "
            + ", ".join(f"{a} - {b} ({d * 1000:.3g} mm)" for a, b, d in overlaps[:8])
            + (f" and {len(overlaps) - 8} more" if len(overlaps) > 8 else "")
            + "; mbsim run ignores them (contact.ignore_initial_overlaps, on by default); "
            "give an SRDF with --srdf to disable the robot's own pairs, or --no-self-collision"
        )
    summary["warnings"] += floor_notes(floor, model, scene, *frames)
    summary["warnings"] += dense_mesh_notes(scene)
    # joints whose q = 0 is outside their limits (go2's and hyq's knees), as run says
    summary["warnings"] += limit_notes(
        model, {0: Path(urdf).resolve()}, JointLimits.from_model(model), model.neutral_q()
    )
    srdf = srdf_for(Path(urdf).resolve())
    if srdf is not None and self_collision:
        summary["warnings"].append(_srdf_note(model, srdf))
    summary["lcp_dimensions"] = {
        "contacts": contacts,
        "friction_directions": friction_directions,
        **{
            f: lcp_dimension(f, model.nb, model.nv, 0, contacts, friction_directions)
            for f in FORMULATIONS
        },
    }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(render(model, summary))


def _srdf_note(model: Model, srdf: Path) -> str:
    """What ``mbsim run`` does with the SRDF beside the URDF: uses its pairs, or not when it
    cannot be read or names a link the robot lacks (start_pose.srdf_beside)."""
    links = {link for _, link in model.link_frames}
    try:
        found = read_srdf(srdf)
    except MbsimError as exc:
        return f"mbsim run does not use the SRDF beside the URDF: {exc}"
    lines = found.lines or (None,) * len(found.disabled)
    for pair, line in zip(found.disabled, lines, strict=True):
        for key, ref in zip(("link1", "link2"), pair, strict=True):
            if ref not in links:
                at = f"{srdf}, line {line}" if line else str(srdf)
                return (
                    f"mbsim run does not use the SRDF beside the URDF: {at}: "
                    f"<disable_collisions> {key}={ref!r} is not a link of this robot"
                )
    return (
        f"mbsim run uses the SRDF beside the URDF, {srdf}: its <disable_collisions> pairs "
        "are not checked (not applied in the pairs above)"
    )


def checked_pairs(
    model: Model, floor: bool, self_collision: bool, package_dirs: dict[str, str] | None = None
) -> list[list[str]]:
    """Link pairs the collision scene will test (after adjacency, static and user filters)."""
    scene = CollisionScene.from_model(
        model, floor=floor, self_collision=self_collision, package_dirs=package_dirs
    )
    return scene_pairs(scene)


def scene_pairs(scene: CollisionScene) -> list[list[str]]:
    """Link pairs ``scene`` tests, sorted."""
    links = scene.links
    pairs = set()
    n = len(links)
    for i in range(n):
        for j in range(i + 1, n):
            if scene.allowed[i, j]:
                pairs.add(tuple(sorted((links[i], links[j]))))
    return [list(p) for p in sorted(pairs)]


def summarize(model: Model) -> dict:
    """A plain-data summary of a model (what ``info`` prints)."""
    shapes = Counter(g.shape.kind for g in model.geometries)
    per_body = Counter(g.body for g in model.geometries)
    spans = {lim.body: list(lim.spans) for lim in model.spherical_limits}
    return {
        "trees": list(model.tree_names),
        "sources": list(model.tree_sources),
        "bodies": [
            {
                "name": model.body_names[i],
                "parent": model.body_names[model.parent[i]] if model.parent[i] >= 0 else "world",
                "joint": model.joint_names[i],
                "joint_type": model.joint_types[i],
                "mass_kg": float(model.mass[i]),
                "collision_shapes": per_body.get(i, 0),
                **_joint_limits(model, i, spans),
            }
            for i in range(model.nb)
        ],
        "nq": model.nq,
        "nv": model.nv,
        "total_mass_kg": model.total_mass(),
        "static_collision_shapes": per_body.get(-1, 0),
        "collision_shapes_by_kind": dict(shapes),
        "mimic_joints": [m.joint for m in model.mimics],
        # PyBullet <plane> half-spaces: the collision scene's ground when welded to the world
        "planes": [
            {"link": g.link, "static": g.body < 0, "normal": [float(x) for x in g.shape.params]}
            for g in model.planes
        ],
        "warnings": list(model.lint),
    }


def _finite(x) -> float | None:
    return float(x) if np.isfinite(x) else None


def _joint_limits(model: Model, i: int, spans: dict) -> dict:
    """The URDF limits of body i's joint, as mbsim reads them: a 1-DoF joint's position range
    (rad or m), effort (N m or N) and velocity limit (rad/s or m/s), None where absent or
    infinite; a spherical joint's swing/twist spans (rad) when it has a limit."""
    if model.nvj[i] != 1:
        return {"spherical_spans": spans[i]} if i in spans else {}
    k = int(model.vi[i])
    effort, vel = float(model.effort[k]), float(model.velocity_limit[k])
    return {
        "lower": _finite(model.lower[k]),
        "upper": _finite(model.upper[k]),
        "effort": effort if np.isfinite(effort) and effort > 0 else None,
        "velocity_limit": vel if np.isfinite(vel) and vel > 0 else None,
    }


def _limits_text(b: dict) -> str:
    """', limits [lo, hi] rad, effort E N m, velocity V rad/s' (what the joint has)."""
    lin = b["joint_type"] == "prismatic"
    unit, force = ("m", "N") if lin else ("rad", "N m")
    out = ""
    if b.get("lower") is not None or b.get("upper") is not None:
        lo, hi = (f"{x:.6g}" if x is not None else "-inf" for x in (b["lower"], b["upper"]))
        out += f", limits [{lo}, {hi}] {unit}"
    if b.get("effort") is not None:
        out += f", effort {b['effort']:.6g} {force}"
    if b.get("velocity_limit") is not None:
        out += f", velocity {b['velocity_limit']:.6g} {unit}/s"
    if b.get("spherical_spans"):
        sx, sy, tw = b["spherical_spans"]
        out += f", spans swing x {sx:.6g}, swing y {sy:.6g}, twist {tw:.6g} rad"
    return out


#: Deepest indentation of the printed body tree (levels); deeper bodies show their depth.
MAX_INDENT = 32


def render(model: Model, s: dict) -> str:
    """Human-readable text: an indented tree, then totals and warnings."""
    children: dict[int, list[int]] = {}
    for i in range(model.nb):
        children.setdefault(int(model.parent[i]), []).append(i)
    lines = [f"robot {', '.join(s['trees'])} ({', '.join(s['sources'])})", "world"]

    # depth-first with an explicit stack: chains thousands of links deep must not overflow
    # the recursion limit; indentation stops growing at MAX_INDENT levels (depth is shown).
    stack = [(c, 1) for c in reversed(children.get(-1, []))]
    while stack:
        c, depth = stack.pop()
        b = s["bodies"][c]
        indent = "  " * min(depth, MAX_INDENT) + (f"[depth {depth}] " if depth > MAX_INDENT else "")
        lines.append(
            f"{indent}└─ {b['name']}  [{b['joint_type']} '{b['joint']}', "
            f"{b['mass_kg']:.6g} kg, {b['collision_shapes']} collision shapes{_limits_text(b)}]"
        )
        stack.extend((k, depth + 1) for k in reversed(children.get(c, [])))
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(s["collision_shapes_by_kind"].items()))
    lines += [
        f"bodies: {model.nb}   DoFs: nq = {s['nq']}, nv = {s['nv']}",
        f"total mass: {s['total_mass_kg']:.6g} kg",
        f"collision shapes: {sum(s['collision_shapes_by_kind'].values())}"
        + (f" ({kinds})" if kinds else "")
        + f", {s['static_collision_shapes']} of them static (welded to the world)",
    ]
    if s["mimic_joints"]:
        lines.append(f"mimic joints (bilateral constraints): {', '.join(s['mimic_joints'])}")
    for plane in s["planes"]:
        where = "a ground half-space" if plane["static"] else "ignored: on a moving link"
        lines.append(f"<plane> on link '{plane['link']}' ({where})")
    pairs = s.get("checked_pairs")
    if pairs is not None:
        shown = ", ".join(f"{a}-{b}" for a, b in pairs[:12])
        more = f" and {len(pairs) - 12} more" if len(pairs) > 12 else ""
        lines.append(
            f"collision pairs checked: {len(pairs)}" + (f" ({shown}{more})" if pairs else "")
        )
    dims = s.get("lcp_dimensions")
    if dims is not None:
        lines.append(
            f"LCP size with {dims['contacts']} contacts, nf = {dims['friction_directions']}: "
            + ", ".join(f"{f.upper()} {dims[f]}" for f in FORMULATIONS)
        )
    if s["warnings"]:
        lines.append(f"warnings ({len(s['warnings'])}):")
        lines += [f"  - {w}" for w in s["warnings"]]
    else:
        lines.append("warnings: none")
    return "\n".join(lines)


__all__ = ["info", "summarize", "render"]
