"""CLI flags (``--dt``, ``--base``, ...) and dotted-key overrides (``--set``, sweeps), applied to
the raw TOML data before validation so that every value goes through the same checks and errors
name the key. Relative paths given here are relative to the current directory."""

from __future__ import annotations

import copy
import numbers
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mbsim.io.scenario.keys import _Ctx, _fmt_path, split_key
from mbsim.io.scenario.types import _RESERVED_NAMES, ScenarioError

#: CLI flag -> dotted scenario key. Flags are applied before ``overrides``.
FLAG_KEYS: dict[str, str] = {
    "duration": "simulation.duration",
    "dt": "simulation.dt",
    "formulation": "simulation.formulation",
    "solver": "simulation.solver",
    "gravity": "simulation.gravity",
    "integrator": "simulation.integrator",
    "dynamics": "simulation.dynamics",
    "delassus": "simulation.delassus",
    "floor": "contact.floor",
    "margin": "contact.margin",
    "mu": "contact.mu",
    "restitution": "contact.restitution",
    "friction_directions": "contact.friction_directions",
    "self_collision": "contact.self_collision",
    "ignore_initial_overlaps": "contact.ignore_initial_overlaps",
    "srdf": "contact.srdf",
    "output": "output.path",
    "record_every": "output.record_every",
    "record_contacts": "output.record_contacts",
    "body_poses": "output.body_poses",
    "dump_lcp": "output.dump_lcp",
}
#: Flags that address the robot (allowed only when the scenario has exactly one robot).
ROBOT_FLAGS = ("base", "q0", "v0", "torque", "place_on_floor")
#: ``environments``: extra environment URDFs (list); ``name``: robot name for scenario_from_urdf.
_OTHER_FLAGS = ("environments", "name")


def parse_value(text: str) -> object:
    """A command-line value as TOML would read it (``0.5``, ``true``, ``[0, 0, -9.8]``,
    ``"x"``); anything that is not a TOML value is kept as the plain string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _plain(ctx: _Ctx, key: tuple, value: object) -> object:
    """A Python/numpy value as TOML-shaped data (lists, dicts, str, bool, int, float)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(ctx, (*key, str(k)), v) for k, v in value.items()}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(ctx, key, v) for v in value]
    raise ctx.error(key, f"cannot be set to a {type(value).__name__}", value)


def _apply_flags(ctx: _Ctx, raw: dict, flags: Mapping[str, object]) -> dict:
    """Translate CLI flags into overrides (robot flags need exactly one robot)."""
    overrides: dict[str, object] = {}
    for flag, value in flags.items():
        if value is None:
            continue
        if flag in FLAG_KEYS:
            overrides[FLAG_KEYS[flag]] = value
        elif flag in ROBOT_FLAGS:
            robots = raw.get("robot")
            names = list(robots) if isinstance(robots, dict) else []
            if len(names) != 1:
                raise ScenarioError(
                    f"{ctx.label}: the --{flag.replace('_', '-')} option needs exactly one robot "
                    f"but the scenario has {len(names)} ({', '.join(names) or 'none'}); "
                    f"use an override such as robot.NAME.{flag} instead."
                )
            if flag in ("q0", "v0", "torque"):
                for joint, x in dict(value).items():  # type: ignore[call-overload]
                    overrides[f"robot.{names[0]}.{flag}.{_fmt_path((joint,))}"] = x
            elif flag == "place_on_floor":
                overrides[f"robot.{names[0]}.base_pose.on_floor"] = value
            else:
                overrides[f"robot.{names[0]}.{flag}"] = value
        elif flag == "environments":
            current = raw.get("environment")
            envs = copy.deepcopy(current) if isinstance(current, dict) else {}
            for item in value:  # type: ignore[attr-defined]
                item = os.fspath(item)
                stem = Path(item[len("sample:") :] if item.startswith("sample:") else item).stem
                name = re.sub(r"[^A-Za-z0-9_-]", "_", stem) or "environment"
                base, k = name, 2
                while name in envs or name in (raw.get("robot") or {}) or name in _RESERVED_NAMES:
                    name, k = f"{base}_{k}", k + 1
                envs[name] = {}
                overrides[f"environment.{name}.urdf"] = item
            raw = {**raw, "environment": envs}
        else:
            known = sorted((*FLAG_KEYS, *ROBOT_FLAGS, *_OTHER_FLAGS))
            raise ScenarioError(f"{ctx.label}: unknown flag {flag!r} (known: {', '.join(known)}).")
    return _apply_overrides(ctx, raw, overrides)


def _parse_dotted(ctx: _Ctx, key: str) -> tuple:
    parts = split_key(key)
    if not parts:
        raise ScenarioError(f"{ctx.label}: override key {key!r} is not a dotted key.")
    # Integer segments index arrays (closure.0.distance, contact.pairs.1.mu).
    return tuple(int(p) if re.fullmatch(r"[0-9]+", p) else p for p in parts)


def _apply_overrides(ctx: _Ctx, raw: dict, overrides: Mapping[str, object]) -> dict:
    """Set each dotted key in a deep copy of ``raw``; errors name the override key."""
    if not overrides:
        return raw
    raw = copy.deepcopy(raw)
    for key, value in overrides.items():
        path = _parse_dotted(ctx, str(key))
        path = _coordinate_path(raw, path)
        spath = tuple(str(p) for p in path)
        ctx.overridden.add(spath)
        ctx.override_values[spath] = value
        shown = _fmt_path(spath)

        def bad(why: str, shown: str = shown) -> ScenarioError:
            where = f"{ctx.label}:" if ctx.everything_overridden else f"{ctx.label}: override"
            return ScenarioError(f"{where} {shown}: {why}.")

        if path[0] in ("robot", "environment") and len(path) >= 3:
            group = raw.get(path[0])
            if isinstance(group, dict) and path[1] not in group and path[2] != "urdf":
                raise bad(f"there is no {path[0]} {path[1]!r} (have: {', '.join(group) or 'none'})")
        node: Any = raw
        for i, part in enumerate(path):
            is_last = i == len(path) - 1
            if isinstance(node, list):
                if not isinstance(part, int) or part >= len(node):
                    raise bad(f"{_fmt_path(spath[:i])} has {len(node)} items, so no item {part}")
                if is_last:
                    node[part] = _plain(ctx, spath, value)
                else:
                    node = node[part]
            elif isinstance(node, dict):
                if is_last:
                    node[str(part)] = _plain(ctx, spath, value)
                else:
                    node = node.setdefault(str(part), {})
            else:
                raise bad(f"{_fmt_path(spath[:i])} is a value, not a table, so it has no sub-keys")
    return raw


#: Robot tables keyed by coordinate name, where a name may hold dots (``root_joint.z``).
_BY_COORDINATE = ("q0", "v0", "torque")


def _coordinate_path(raw: dict, path: tuple) -> tuple:
    """``robot.NAME.q0.root_joint.z`` addresses the coordinate ``root_joint.z``, however the
    file spells it (quoted ``"root_joint.z"``, nested ``root_joint = { z = .. }`` or a
    ``[robot.NAME.q0]`` table): the path becomes ``(robot, NAME, q0, "root_joint.z")`` and
    that table is rewritten with one flat key per coordinate, so the override replaces the
    written value instead of adding a second spelling of it."""
    if len(path) < 4 or path[0] != "robot" or path[2] not in _BY_COORDINATE:
        return path
    robots = raw.get("robot")
    robot = robots.get(path[1]) if isinstance(robots, dict) else None
    table = robot.get(path[2]) if isinstance(robot, dict) else None
    if isinstance(table, dict):
        flat = _flat_names(table)
        if flat is not None:  # else the file itself repeats a name: validation reports it
            robot[path[2]] = flat
    return (*path[:3], ".".join(str(p) for p in path[3:]))


def _flat_names(table: dict, prefix: str = "") -> dict | None:
    """``{root_joint = {z = 1}}`` -> ``{"root_joint.z": 1}``; None if a name comes twice."""
    out: dict = {}
    for k, v in table.items():
        name = f"{prefix}.{k}" if prefix else str(k)
        items = _flat_names(v, name) if isinstance(v, dict) else {name: v}
        if items is None or any(n in out for n in items):
            return None
        out.update(items)
    return out
