"""``mbsim info``: what a URDF becomes once mbsim has loaded it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import typer

from mbsim.io.urdf import load_urdf
from mbsim.simcore.model import Model, build_model


def info(
    urdf: Path = typer.Argument(..., help="URDF file of the robot."),
    floating: bool = typer.Option(
        False, "--floating", help="Attach the root link by a 6-DoF free joint (not welded)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
) -> None:
    """Print the body tree, DoFs, masses, collision shapes and loader warnings."""
    spec = load_urdf(urdf, base="floating" if floating else "fixed")
    model = build_model([spec])
    summary = summarize(model)
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(render(model, summary))


def summarize(model: Model) -> dict:
    """A plain-data summary of a model (what ``info`` prints)."""
    shapes = Counter(g.shape.kind for g in model.geometries)
    per_body = Counter(g.body for g in model.geometries)
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
            }
            for i in range(model.nb)
        ],
        "nq": model.nq,
        "nv": model.nv,
        "total_mass_kg": model.total_mass(),
        "static_collision_shapes": per_body.get(-1, 0),
        "collision_shapes_by_kind": dict(shapes),
        "mimic_joints": [m.joint for m in model.mimics],
        "warnings": list(model.lint),
    }


def render(model: Model, s: dict) -> str:
    """Human-readable text: an indented tree, then totals and warnings."""
    children: dict[int, list[int]] = {}
    for i in range(model.nb):
        children.setdefault(int(model.parent[i]), []).append(i)
    lines = [f"robot {', '.join(s['trees'])} ({', '.join(s['sources'])})", "world"]

    def walk(body: int, depth: int) -> None:
        for c in children.get(body, []):
            b = s["bodies"][c]
            lines.append(
                f"{'  ' * depth}└─ {b['name']}  [{b['joint_type']} '{b['joint']}', "
                f"{b['mass_kg']:.6g} kg, {b['collision_shapes']} collision shapes]"
            )
            walk(c, depth + 1)

    walk(-1, 1)
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
    if s["warnings"]:
        lines.append(f"warnings ({len(s['warnings'])}):")
        lines += [f"  - {w}" for w in s["warnings"]]
    else:
        lines.append("warnings: none")
    return "\n".join(lines)


__all__ = ["info", "summarize", "render"]
