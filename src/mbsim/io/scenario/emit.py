"""Scenario -> TOML text (:meth:`Scenario.to_toml`), written with tomli-w: floats in Python's
shortest round-trip repr, so loading the text gives an equal Scenario and ``mbsim run --from``
repeats a run bit for bit."""

from __future__ import annotations

from typing import Any

import tomli_w

from mbsim.io.scenario.types import _SIGNAL_KEY, JointControl, Pose, Scenario, Signal


def _signal(s: Signal, key: str) -> Any:
    """A signal as the scenario writes it: a number, a waypoint table or a CSV reference."""
    if s.constant:
        return s.value
    out: dict[str, Any] = {"interpolation": s.interpolation, "ends": s.ends}
    if s.csv is not None:
        return {"csv": str(s.csv), "column": s.column, **out}
    return {"t": list(s.t), key: list(s.y), **out}


def _control(c: JointControl) -> dict:
    out: dict[str, Any] = {"mode": c.mode, "gravity_compensation": c.gravity_compensation}
    if c.mode == "torque":
        out["torque"] = _signal(c.torque, "tau")
        return out
    out["target"] = _signal(c.target, _SIGNAL_KEY[c.mode])
    if c.mode == "position":
        out["kp"] = c.kp
    out["kd"] = c.kd
    if c.feedforward is not None:
        out["feedforward"] = _signal(c.feedforward, "tau")
    return out


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
            "joint_limits": sim.joint_limits,
            "limit_restitution": sim.limit_restitution,
            "lcp_max_seconds": sim.lcp_max_seconds,
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
                "joint_limits": {
                    j: {"enabled": o.enabled}
                    | ({} if o.restitution is None else {"restitution": o.restitution})
                    for j, o in r.joint_limits.items()
                },
                "control": {j: _control(c) for j, c in r.control.items()},
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
        "max_recovery_speed": c.max_recovery_speed,
    }
    if c.gap_floor is not None:
        raw["contact"]["gap_floor"] = c.gap_floor
    if c.mesh_contact != "triangles":
        raw["contact"]["mesh_contact"] = c.mesh_contact
    if c.mesh_contact_links:
        raw["contact"]["mesh_contact_links"] = dict(c.mesh_contact_links)
    if c.energy_consistent_impacts:
        raw["contact"]["energy_consistent_impacts"] = True
    if c.impact_friction != "total":
        raw["contact"]["impact_friction"] = c.impact_friction
    if c.friction_axes != "slip":
        raw["contact"]["friction_axes"] = c.friction_axes
    if c.curvature_point != "core":
        raw["contact"]["curvature_point"] = c.curvature_point
    if c.manifold != "shape-pair":
        raw["contact"]["manifold"] = c.manifold
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
