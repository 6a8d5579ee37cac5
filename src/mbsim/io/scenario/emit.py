"""Scenario -> TOML text (:meth:`Scenario.to_toml`), written with tomli-w: floats in Python's
shortest round-trip repr, so loading the text gives an equal Scenario and ``mbsim run --from``
repeats a run bit for bit."""

from __future__ import annotations

from typing import Any

import tomli_w

from mbsim.io.scenario.types import Pose, Scenario


def scenario_dict(s: Scenario) -> dict:
    """The scenario as plain TOML-shaped data (every default written out)."""

    def pose(p: Pose) -> dict:
        out = {"xyz": list(p.xyz), "rpy": list(p.rpy)}
        if p.on_floor:
            out["on_floor"] = True
        return out

    sim = s.simulation
    raw: dict[str, Any] = {
        "simulation": {
            "duration": sim.duration,
            "dt": sim.dt,
            "formulation": sim.formulation,
            "solver": sim.solver,
            "gravity": list(sim.gravity),
            "integrator": sim.integrator,
            "dynamics": sim.dynamics,
            "delassus": sim.delassus,
        },
        "robot": {
            r.name: {
                "urdf": str(r.urdf),
                "base": r.base,
                "base_pose": pose(r.base_pose),
                "q0": dict(r.q0),
                "v0": dict(r.v0),
                "torque": dict(r.torque),
                "pd": {j: {"target": g.target, "kp": g.kp, "kd": g.kd} for j, g in r.pd.items()},
                "srdf": str(r.srdf) if r.srdf is not None else "",
            }
            for r in s.robots
        },
    }
    if s.environments:
        raw["environment"] = {
            e.name: {"urdf": str(e.urdf), "base_pose": pose(e.base_pose)} for e in s.environments
        }
    c = s.contact
    pairs = []
    for p in c.pairs:
        item: dict[str, Any] = {"a": p.a, "b": p.b}
        for k in ("mu", "restitution", "margin"):
            if getattr(p, k) is not None:
                item[k] = getattr(p, k)
        pairs.append(item)
    raw["contact"] = {
        "floor": c.floor,
        "margin": c.margin,
        "mu": c.mu,
        "restitution": c.restitution,
        "friction_directions": c.friction_directions,
        "self_collision": c.self_collision,
        "ignore_initial_overlaps": c.ignore_initial_overlaps,
        "disabled_pairs": [list(p) for p in c.disabled_pairs],
        "srdf": str(c.srdf) if c.srdf is not None else "",
        "pairs": pairs,
    }
    if c.gap_floor is not None:
        raw["contact"]["gap_floor"] = c.gap_floor
    if c.energy_consistent_impacts:
        raw["contact"]["energy_consistent_impacts"] = True
    if s.closures:
        raw["closure"] = []
        for cl in s.closures:
            item = {
                "type": cl.type,
                "a": cl.a,
                "b": cl.b,
                "point_a": list(cl.point_a),
                "point_b": list(cl.point_b),
            }
            if cl.distance is not None:
                item["distance"] = cl.distance
            raw["closure"].append(item)
    o = s.output
    raw["output"] = {
        "path": str(o.path),
        "record_every": o.record_every,
        "record_contacts": o.record_contacts,
        "body_poses": o.body_poses,
        "dump_lcp": o.dump_lcp,
    }
    return raw


def scenario_toml(s: Scenario) -> str:
    """The fully resolved scenario as TOML text, with a header naming its source. Non-finite
    floats cannot occur (validation refuses them), so every value round-trips exactly."""
    header = ["# mbsim scenario, fully resolved: every default filled in, every path absolute."]
    if s.source is not None:
        header.append(f"# resolved from {s.source}")
    return "\n".join(header) + "\n\n" + tomli_w.dumps(scenario_dict(s))
