"""TOML scenario files: what to simulate, resolved into frozen dataclasses.

A scenario names the robots and environments (URDF files), the initial state, the joint forces,
the contact parameters, loop closures, the time stepping and the output; docs/scenario-format.md
is the reference. Units are SI throughout: seconds, metres, radians, kilograms, newtons (joint
forces in N m for revolute joints, N for prismatic ones), m/s^2 for gravity.

Public API:

* :func:`load_scenario` (a file), :func:`load_scenario_text` (TOML text, e.g. the copy stored
  in a results file) and :func:`scenario_from_urdf` (the simple ``mbsim run robot.urdf`` case)
  return a :class:`Scenario` with every default filled in and every path absolute.
* Dotted-key ``overrides`` (``{"contact.mu": 0.2, "robot.pendulum.q0.joint_1": 0.5}``, from
  sweeps or ``--set``) and CLI ``flags`` (``{"dt": 1e-4, "base": "floating"}``, see
  :data:`FLAG_KEYS`) are applied to the raw TOML before validation, so every value goes through
  the same checks and errors name the key. Relative paths given in overrides or flags are
  relative to the current directory (as on any command line); paths in the file are relative to
  the file.
* :meth:`Scenario.to_toml` writes the resolved scenario back as TOML (a small emitter for this
  schema; ``tomllib`` only reads), so a run can be repeated exactly from its results file.
* Joint and link names can only be checked against the URDFs: :func:`validate_against_model`
  does it on the built :class:`~mbsim.simcore.model.Model`, :func:`build_scenario_model` loads
  the URDFs, builds the model and validates in one go.

Every problem raises :class:`ScenarioError`: one sentence naming the file (and line where it can
be found), the key, the value and why.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import numbers
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from mbsim.errors import MbsimError
from mbsim.io.srdf import read_srdf
from mbsim.names import BUILTIN_TREE, FLOOR, FLOOR_LINK, WORLD, split_link_ref
from mbsim.simcore.options import (
    BASES,
    CLOSURE_TYPES,
    DELASSUS,
    DUMP_MODES,
    DYNAMICS,
    FORMULATIONS,
    INTEGRATORS,
    LCP_SOLVERS,
)
from mbsim.simcore.spatial import rpy_matrix

__all__ = [
    "FLAG_KEYS",
    "ROBOT_FLAGS",
    "Closure",
    "Contact",
    "Environment",
    "Output",
    "PairOverride",
    "PdGain",
    "Pose",
    "Robot",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "build_scenario_model",
    "load_scenario",
    "load_scenario_text",
    "parse_value",
    "scenario_from_urdf",
    "split_link_ref",
    "validate_against_model",
]


class ScenarioError(MbsimError):
    """A scenario (file, override or flag) is malformed or names something that does not exist."""


# --------------------------------------------------------------------------- schema constants


_RESERVED_NAMES = (WORLD, BUILTIN_TREE)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
_KEY_TOKEN = r"(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
_KEY_TOKEN_RE = re.compile(_KEY_TOKEN)
_DOTTED_RE = re.compile(rf"\s*{_KEY_TOKEN}(?:\s*\.\s*{_KEY_TOKEN})*\s*")

#: A quaternion given in q0 must have unit norm to this tolerance (it is not renormalised,
#: because silently changing an initial condition would make the run differ from the file).
QUAT_NORM_TOL = 1e-6

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
    "output": "output.path",
    "record_every": "output.record_every",
    "record_contacts": "output.record_contacts",
    "body_poses": "output.body_poses",
    "dump_lcp": "output.dump_lcp",
}
#: Flags that address the robot (allowed only when the scenario has exactly one robot).
ROBOT_FLAGS = ("base", "q0", "v0", "torque")
#: ``environments``: extra environment URDFs (list); ``name``: robot name for scenario_from_urdf.
_OTHER_FLAGS = ("environments", "name")

_SIM_DEFAULTS: dict[str, Any] = {
    "duration": 1.0,
    "dt": 1e-3,
    "formulation": "os",
    "solver": "lemke",
    "gravity": [0.0, 0.0, -9.81],
    "integrator": "euler",
    "dynamics": "aba",
    "delassus": "upsilon",
}
_CONTACT_DEFAULTS: dict[str, Any] = {
    "floor": False,
    "margin": 1e-3,
    "mu": 0.5,
    "restitution": 0.0,
    "friction_directions": 4,
    "self_collision": True,
    "disabled_pairs": [],
    "srdf": "",
    "pairs": [],
    "gap_floor": None,  # absent: the stepper's rule (see docs/scenario-format.md)
    "energy_consistent_impacts": False,
}
_OUTPUT_DEFAULTS: dict[str, Any] = {
    "path": None,  # <scenario stem>.h5 in the current directory
    "record_every": 1,
    "record_contacts": False,
    "body_poses": True,
    "dump_lcp": "none",
}
_ROBOT_KEYS = ("urdf", "base", "base_pose", "q0", "v0", "torque", "pd", "srdf")
_ENV_KEYS = ("urdf", "base_pose")
_POSE_KEYS = ("xyz", "rpy")
_PD_KEYS = ("target", "kp", "kd")
_PAIR_KEYS = ("a", "b", "mu", "restitution", "margin")
_CLOSURE_KEYS = ("type", "a", "b", "point_a", "point_b", "distance")
_TOP_KEYS = ("simulation", "robot", "environment", "contact", "closure", "output")


# --------------------------------------------------------------------------- dataclasses


@dataclass(frozen=True)
class Pose:
    """A rigid placement: ``xyz`` translation (m) and ``rpy`` roll-pitch-yaw (rad), URDF
    convention R = Rz(yaw) Ry(pitch) Rx(roll)."""

    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def matrix(self) -> np.ndarray:
        """The 4x4 homogeneous transform."""
        T = np.eye(4)
        T[:3, :3] = rpy_matrix(self.rpy)
        T[:3, 3] = self.xyz
        return T


@dataclass(frozen=True)
class PdGain:
    """Joint PD control: force = kp (target - q) - kd v (N m or N); target in rad or m,
    kp in N m/rad or N/m, kd in N m s/rad or N s/m."""

    target: float
    kp: float
    kd: float


@dataclass(frozen=True)
class Robot:
    """One robot: a URDF tree attached by ``base`` at ``base_pose``.

    q0 / v0: initial values by coordinate name (``Model.q_names`` / ``v_names``; free joints
    as ``root_joint.x`` .. ``root_joint.qz`` and ``root_joint.vx`` .. ``root_joint.wz``);
    unnamed coordinates start at the neutral configuration and at rest. torque: constant joint
    forces by v name. pd: PD gains by 1-DoF joint name (added to ``torque``). srdf: optional
    SRDF whose ``<disable_collisions>`` pairs apply within this robot. Treat the dicts as
    read-only.
    """

    name: str
    urdf: Path
    base: str = "fixed"
    base_pose: Pose = field(default_factory=Pose)
    q0: dict[str, float] = field(default_factory=dict)
    v0: dict[str, float] = field(default_factory=dict)
    torque: dict[str, float] = field(default_factory=dict)
    pd: dict[str, PdGain] = field(default_factory=dict)
    srdf: Path | None = None


@dataclass(frozen=True)
class Environment:
    """A static URDF (everything welded to the world at ``base_pose``)."""

    name: str
    urdf: Path
    base_pose: Pose = field(default_factory=Pose)


@dataclass(frozen=True)
class PairOverride:
    """Contact parameters for one link pair; ``None`` keeps the global value."""

    a: str
    b: str
    mu: float | None = None
    restitution: float | None = None
    margin: float | None = None


@dataclass(frozen=True)
class Simulation:
    """Time stepping: ``duration`` and ``dt`` in s, ``gravity`` in m/s^2 (world frame)."""

    duration: float = 1.0
    dt: float = 1e-3
    formulation: str = "os"
    solver: str = "lemke"
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    integrator: str = "euler"
    dynamics: str = "aba"
    delassus: str = "upsilon"

    @property
    def n_steps(self) -> int:
        """Number of time steps (duration / dt, rounded to the nearest integer)."""
        return max(1, int(round(self.duration / self.dt)))


@dataclass(frozen=True)
class Contact:
    """Contact model: ``margin`` (m) is the distance below which a pair is a contact, ``mu``
    the Coulomb friction coefficient, ``restitution`` Newton's coefficient in [0, 1],
    ``friction_directions`` the number of edges of the friction polyhedron. Link references
    are ``tree/link`` (bare ``link`` before :func:`validate_against_model` canonicalises them).
    """

    floor: bool = False
    margin: float = 1e-3
    mu: float = 0.5
    restitution: float = 0.0
    friction_directions: int = 4
    self_collision: bool = True
    disabled_pairs: tuple[tuple[str, str], ...] = ()
    srdf: Path | None = None
    pairs: tuple[PairOverride, ...] = ()
    gap_floor: float | None = None
    energy_consistent_impacts: bool = False


@dataclass(frozen=True)
class Closure:
    """A loop closure between two link frames (``tree/link`` or ``world``): ``ball`` makes the
    points coincide, ``weld`` also holds their relative orientation at its initial value,
    ``distance`` keeps ``|p_a - p_b| = distance`` (m). Points in the link frames (m)."""

    type: str
    a: str
    b: str = WORLD
    point_a: tuple[float, float, float] = (0.0, 0.0, 0.0)
    point_b: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance: float | None = None


@dataclass(frozen=True)
class Output:
    """Results file: ``path`` (absolute), record every ``record_every``-th step."""

    path: Path
    record_every: int = 1
    record_contacts: bool = False
    body_poses: bool = True
    dump_lcp: str = "none"


@dataclass(frozen=True)
class Scenario:
    """A fully resolved scenario. ``source`` is the scenario file (None when built from flags).

    Robots and environments keep the order of the file; their names are the tree names of the
    model (``load_urdf(..., name=robot.name)``).
    """

    simulation: Simulation
    robots: tuple[Robot, ...]
    environments: tuple[Environment, ...]
    contact: Contact
    closures: tuple[Closure, ...]
    output: Output
    source: Path | None = None
    # Kept for error messages after loading (line lookup); not part of the scenario's value.
    _text: str = field(default="", repr=False, compare=False)
    _overridden: frozenset = field(default=frozenset(), repr=False, compare=False)

    def robot(self, name: str) -> Robot:
        """The robot called ``name`` (KeyError if none)."""
        for r in self.robots:
            if r.name == name:
                return r
        raise KeyError(name)

    def input_files(self) -> list[Path]:
        """Every file the run reads (scenario, URDFs, SRDFs), without duplicates, in order.
        Mesh files are not included: they are known only once the URDFs are loaded."""
        files: list[Path] = [self.source] if self.source is not None else []
        files += [r.urdf for r in self.robots] + [e.urdf for e in self.environments]
        files += [r.srdf for r in self.robots if r.srdf is not None]
        if self.contact.srdf is not None:
            files.append(self.contact.srdf)
        return list(dict.fromkeys(files))

    def to_dict(self) -> dict:
        """The scenario as plain TOML-shaped data (what :meth:`to_toml` writes)."""
        return _to_raw(self)

    def to_toml(self) -> str:
        """The fully resolved scenario as TOML text; loading it gives an equal Scenario."""
        header = [
            "# mbsim scenario, fully resolved: every default filled in, every path absolute.",
        ]
        if self.source is not None:
            header.append(f"# resolved from {self.source}")
        return "\n".join(header) + "\n\n" + _emit(self.to_dict())


# --------------------------------------------------------------------------- public loaders


def load_scenario(
    path: str | os.PathLike[str],
    overrides: Mapping[str, object] | None = None,
    *,
    flags: Mapping[str, object] | None = None,
) -> Scenario:
    """Read a TOML scenario file, apply CLI ``flags`` then dotted-key ``overrides``, validate.

    Raises :class:`ScenarioError` naming the file, line (when found), key, value and why.
    """
    source = Path(os.path.abspath(os.fspath(path)))
    if not source.exists():
        raise ScenarioError(f"{source}: scenario file does not exist.")
    if not source.is_file():
        raise ScenarioError(f"{source}: is not a regular file, so it cannot be read as a scenario.")
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{source}: cannot be read ({exc.strerror or exc}).") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"{source}: is not UTF-8 text (byte {exc.start}), so it is not a TOML scenario."
        ) from exc
    return load_scenario_text(
        text, source=source, base_dir=source.parent, overrides=overrides, flags=flags
    )


def load_scenario_text(
    text: str,
    *,
    source: str | os.PathLike[str] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, object] | None = None,
    flags: Mapping[str, object] | None = None,
) -> Scenario:
    """Like :func:`load_scenario`, from TOML text. ``source`` names it in messages and becomes
    ``Scenario.source``; relative paths in the text are resolved against ``base_dir`` (default:
    the folder of ``source``, else the current directory)."""
    src = Path(os.path.abspath(os.fspath(source))) if source is not None else None
    if base_dir is None:
        base_dir = src.parent if src is not None else Path.cwd()
    label = str(src) if src is not None else "<scenario>"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{label}: is not valid TOML: {exc}.") from exc
    ctx = _Ctx(label, text, Path(os.path.abspath(os.fspath(base_dir))))
    raw = _apply_flags(ctx, raw, flags or {})
    raw = _apply_overrides(ctx, raw, overrides or {})
    return _resolve(ctx, raw, src)


def scenario_from_urdf(
    urdf_path: str | os.PathLike[str],
    overrides: Mapping[str, object] | None = None,
    **flag_values: object,
) -> Scenario:
    """The simple ``mbsim run robot.urdf [flags]`` case: one robot, no scenario file.

    ``urdf_path`` may be ``sample:NAME``. Flags: ``name`` (robot name, default the file stem),
    ``environments`` (list of URDF paths or ``sample:NAME``), the robot flags
    :data:`ROBOT_FLAGS` and every key of :data:`FLAG_KEYS`; ``None`` means not given.
    Relative paths are relative to the current directory.
    """
    flags = {k: v for k, v in flag_values.items() if v is not None}
    text = os.fspath(urdf_path)
    if not text.startswith("sample:") and not os.path.isfile(text):
        what = "does not exist" if not os.path.exists(text) else "is not a regular file"
        raise ScenarioError(f"{os.path.abspath(text)}: URDF file {what}.")
    name = flags.pop("name", None)
    if name is None:
        stem = Path(text[len("sample:") :] if text.startswith("sample:") else text).stem
        name = re.sub(r"[^A-Za-z0-9_-]", "_", stem) or "robot"
        if not _NAME_RE.fullmatch(name) or name in _RESERVED_NAMES:
            name = f"robot_{name}"
    if not text.startswith("sample:"):
        text = os.path.abspath(text)
    raw: dict[str, Any] = {"robot": {name: {"urdf": text}}}
    if "output" not in flags:
        flags["output"] = os.path.join(os.getcwd(), f"{name}.h5")
    ctx = _Ctx("command line", "", Path.cwd(), everything_overridden=True)
    raw = _apply_flags(ctx, raw, flags)
    raw = _apply_overrides(ctx, raw, overrides or {})
    return _resolve(ctx, raw, None)


def parse_value(text: str) -> object:
    """A command-line value as TOML would read it (``0.5``, ``true``, ``[0, 0, -9.8]``,
    ``"x"``); anything that is not a TOML value is kept as the plain string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


# --------------------------------------------------------------------------- context, errors


_NO_VALUE = object()


class _Ctx:
    """Where messages point: the source label, its text (for line numbers) and which keys came
    from overrides/flags (those have no line, and their paths are relative to the cwd)."""

    def __init__(
        self, label: str, text: str, base_dir: Path, everything_overridden: bool = False
    ) -> None:
        self.label = label
        self.text = text
        self.base_dir = base_dir
        self.overridden: set[tuple] = set()
        self.everything_overridden = everything_overridden

    def is_overridden(self, path: tuple) -> bool:
        if self.everything_overridden:
            return True
        path = tuple(str(p) for p in path)
        return any(path[: len(p)] == p for p in self.overridden)

    def error(self, path: tuple, why: str, value: object = _NO_VALUE) -> ScenarioError:
        key = _fmt_path(path)
        shown = "" if value is _NO_VALUE else f" = {format_value(value)}"
        if self.is_overridden(path):
            where = f"{self.label}:" if self.everything_overridden else f"{self.label}: override"
            return ScenarioError(f"{where} {key}{shown}: {why}.")
        line = _locate(self.text, path) if self.text else None
        where = f"{self.label}, line {line}" if line else self.label
        return ScenarioError(f"{where}: {key}{shown}: {why}.")

    def base_for(self, path: tuple) -> Path:
        """Folder a relative path at ``path`` is relative to."""
        return Path.cwd() if self.is_overridden(path) else self.base_dir


def _fmt_path(path: Iterable) -> str:
    parts = []
    for p in path:
        p = str(p)
        parts.append(p if _BARE_KEY_RE.fullmatch(p) else json.dumps(p))
    return ".".join(parts) if parts else "(top level)"


def format_value(value: object) -> str:
    """A value as one short TOML-like phrase for error messages (strings quoted, tables named)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _locate(text: str, path: tuple) -> int | None:
    """Best-effort line number of the TOML line that defines ``path`` (or its closest
    enclosing key/table). tomllib keeps no positions, so the text is scanned: table headers,
    array-of-table headers (counted for indices) and ``key =`` lines."""
    header: tuple = ()
    counts: dict[tuple, int] = {}
    best_len, best_line = 0, None
    target = tuple(str(p) for p in path)
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        cand: tuple | None
        m = re.match(r"^\[\[\s*([^\[\]]+?)\s*\]\]\s*(#.*)?$", s)
        if m:
            name = split_key(m.group(1))
            if name is None:
                continue
            counts[name] = counts.get(name, -1) + 1
            header = (*name, str(counts[name]))
            cand = header
        elif (m := re.match(r"^\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", s)) and "=" not in s:
            name = split_key(m.group(1))
            if name is None:
                continue
            header = name
            cand = header
        else:
            m = re.match(rf"^({_KEY_TOKEN}(?:\s*\.\s*{_KEY_TOKEN})*)\s*=", s)
            if not m:
                continue
            key = split_key(m.group(1))
            if key is None:
                continue
            cand = header + key
        if len(cand) > best_len and target[: len(cand)] == cand:
            best_len, best_line = len(cand), lineno
    return best_line


def split_key(text: str) -> tuple[str, ...] | None:
    """Split a TOML dotted key into its parts (quotes removed); None if it is not one."""
    if not _DOTTED_RE.fullmatch(text):
        return None
    parts = []
    for tok in _KEY_TOKEN_RE.findall(text):
        if tok.startswith('"'):
            try:
                tok = json.loads(tok)
            except json.JSONDecodeError:
                return None
        elif tok.startswith("'"):
            tok = tok[1:-1]
        parts.append(tok)
    return tuple(parts)


# --------------------------------------------------------------------------- flags, overrides


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
        spath = tuple(str(p) for p in path)
        ctx.overridden.add(spath)
        shown = _fmt_path(spath)

        def bad(why: str, shown: str = shown) -> ScenarioError:
            where = ctx.label if ctx.everything_overridden else f"{ctx.label}: override"
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


# --------------------------------------------------------------------------- value checks


def _check_keys(ctx: _Ctx, path: tuple, table: dict, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ctx.error((*path, key), f"unknown key ({hint}allowed here: {', '.join(allowed)})")


def _table(ctx: _Ctx, path: tuple, value: object, what: str = "a table") -> dict:
    if not isinstance(value, dict):
        raise ctx.error(path, f"must be {what}", value)
    return value


def _float(
    ctx: _Ctx,
    path: tuple,
    value: object,
    *,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ctx.error(path, "must be a number", value)
    x = float(value)
    if not math.isfinite(x):
        raise ctx.error(path, "must be finite", value)
    if gt is not None and not x > gt:
        raise ctx.error(path, f"must be greater than {gt:g}", value)
    if ge is not None and not x >= ge:
        raise ctx.error(path, f"must be at least {ge:g}", value)
    if le is not None and not x <= le:
        raise ctx.error(path, f"must be at most {le:g}", value)
    return x


def _int(ctx: _Ctx, path: tuple, value: object, *, ge: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 4.0 from a sweep is 4
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.error(path, "must be an integer", value)
    if value < ge:
        raise ctx.error(path, f"must be at least {ge}", value)
    return value


def _bool(ctx: _Ctx, path: tuple, value: object) -> bool:
    if not isinstance(value, bool):
        raise ctx.error(path, "must be true or false", value)
    return value


def _str(ctx: _Ctx, path: tuple, value: object, *, nonempty: bool = True) -> str:
    if not isinstance(value, str):
        raise ctx.error(path, "must be a string", value)
    if nonempty and not value:
        raise ctx.error(path, "must not be empty", value)
    return value


def _choice(ctx: _Ctx, path: tuple, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ctx.error(path, f"must be one of {', '.join(choices)}", value)
    return value


def _vec3(ctx: _Ctx, path: tuple, value: object) -> tuple[float, float, float]:
    if not isinstance(value, list) or len(value) != 3:
        raise ctx.error(path, "must be a list of 3 numbers", value)
    x, y, z = (_float(ctx, (*path, i), v) for i, v in enumerate(value))
    return (x, y, z)


def _name(ctx: _Ctx, path: tuple, name: str, what: str) -> str:
    if not _NAME_RE.fullmatch(name):
        raise ctx.error(
            path, f"{what} names must be letters, digits, '_' or '-', not starting with a digit"
        )
    if name in _RESERVED_NAMES:
        raise ctx.error(path, f"{name!r} is reserved and cannot name a {what}")
    return name


def _file(ctx: _Ctx, path: tuple, value: object, what: str) -> Path:
    """A path (or ``sample:NAME`` for URDFs) that must name an existing file."""
    text = _str(ctx, path, value)
    if what == "URDF" and text.startswith("sample:"):
        from mbsim.samples.catalog import sample_path

        try:
            return Path(os.path.abspath(sample_path(text[len("sample:") :])))
        except MbsimError as exc:
            raise ctx.error(path, str(exc).rstrip("."), value) from exc
    p = Path(os.path.expanduser(text))
    if not p.is_absolute():
        p = ctx.base_for(path) / p
    p = Path(os.path.abspath(p))
    if not p.exists():
        raise ctx.error(path, f"{what} file {p} does not exist", value)
    if not p.is_file():
        raise ctx.error(path, f"{p} is not a regular file", value)
    return p


def _pose(ctx: _Ctx, path: tuple, value: object) -> Pose:
    table = _table(ctx, path, value, "a table { xyz = [x, y, z], rpy = [r, p, y] }")
    _check_keys(ctx, path, table, _POSE_KEYS)
    xyz = _vec3(ctx, (*path, "xyz"), table.get("xyz", [0.0, 0.0, 0.0]))
    rpy = _vec3(ctx, (*path, "rpy"), table.get("rpy", [0.0, 0.0, 0.0]))
    return Pose(xyz, rpy)


def _flatten(ctx: _Ctx, path: tuple, table: dict, prefix: str = "") -> dict[str, object]:
    """``{root_joint = {x = 1}}`` and ``{"root_joint.x" = 1}`` both mean ``root_joint.x``."""
    out: dict[str, object] = {}
    for k, v in table.items():
        name = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            for kk, vv in _flatten(ctx, path, v, name).items():
                if kk in out:
                    raise ctx.error((*path, kk), "is given twice")
                out[kk] = vv
        else:
            if name in out:
                raise ctx.error((*path, name), "is given twice")
            out[name] = v
    return out


def _numbers_by_name(ctx: _Ctx, path: tuple, value: object) -> dict[str, float]:
    table = _table(ctx, path, value, "a table of numbers by joint name")
    return {k: _float(ctx, (*path, k), v) for k, v in _flatten(ctx, path, table).items()}


# --------------------------------------------------------------------------- resolution


def _resolve(ctx: _Ctx, raw: dict, source: Path | None) -> Scenario:
    _check_keys(ctx, (), raw, _TOP_KEYS)
    sim = _simulation(ctx, raw.get("simulation", {}))

    robots_raw = _table(ctx, ("robot",), raw.get("robot", {}), "a table of robots ([robot.NAME])")
    if not robots_raw:
        raise ScenarioError(
            f"{ctx.label}: the scenario has no robot; add a [robot.NAME] table with a urdf key."
        )
    robots = tuple(_robot(ctx, name, value) for name, value in robots_raw.items())
    envs_raw = _table(ctx, ("environment",), raw.get("environment", {}), "a table of environments")
    envs = tuple(_environment(ctx, name, value) for name, value in envs_raw.items())
    for env in envs:
        if env.name in robots_raw:
            raise ctx.error(
                ("environment", env.name), "has the same name as a robot; names must be unique"
            )
    contact = _contact(ctx, raw.get("contact", {}))
    closures_raw = raw.get("closure", [])
    if not isinstance(closures_raw, list):
        raise ctx.error(("closure",), "must be an array of tables ([[closure]])")
    closures = tuple(_closure(ctx, i, c) for i, c in enumerate(closures_raw))
    output = _output(ctx, raw.get("output", {}), source)
    return Scenario(
        simulation=sim,
        robots=robots,
        environments=envs,
        contact=contact,
        closures=closures,
        output=output,
        source=source,
        _text=ctx.text,
        _overridden=frozenset(ctx.overridden) if not ctx.everything_overridden else frozenset({()}),
    )


def _simulation(ctx: _Ctx, value: object) -> Simulation:
    path = ("simulation",)
    t = _table(ctx, path, value)
    _check_keys(ctx, path, t, _SIM_DEFAULTS)
    t = {**_SIM_DEFAULTS, **t}
    duration = _float(ctx, (*path, "duration"), t["duration"], gt=0.0)
    dt = _float(ctx, (*path, "dt"), t["dt"], gt=0.0)
    if dt > duration:
        raise ctx.error((*path, "dt"), f"must not exceed simulation.duration ({duration:g} s)", dt)
    return Simulation(
        duration=duration,
        dt=dt,
        formulation=_choice(ctx, (*path, "formulation"), t["formulation"], FORMULATIONS),
        solver=_choice(ctx, (*path, "solver"), t["solver"], LCP_SOLVERS),
        gravity=_vec3(ctx, (*path, "gravity"), t["gravity"]),
        integrator=_choice(ctx, (*path, "integrator"), t["integrator"], INTEGRATORS),
        dynamics=_choice(ctx, (*path, "dynamics"), t["dynamics"], DYNAMICS),
        delassus=_choice(ctx, (*path, "delassus"), t["delassus"], DELASSUS),
    )


def _robot(ctx: _Ctx, name: str, value: object) -> Robot:
    path = ("robot", name)
    _name(ctx, path, name, "robot")
    t = _table(ctx, path, value, "a table ([robot.NAME] with a urdf key)")
    _check_keys(ctx, path, t, _ROBOT_KEYS)
    if "urdf" not in t:
        raise ctx.error((*path, "urdf"), "is required (the robot's URDF file)")
    pd: dict[str, PdGain] = {}
    pd_raw = _table(ctx, (*path, "pd"), t.get("pd", {}), "a table of PD gains by joint name")
    for joint, gains in pd_raw.items():
        gpath = (*path, "pd", joint)
        g = _table(ctx, gpath, gains, "a table { target = .., kp = .., kd = .. }")
        _check_keys(ctx, gpath, g, _PD_KEYS)
        if "kp" not in g:
            raise ctx.error((*gpath, "kp"), "is required (the PD stiffness)")
        pd[joint] = PdGain(
            target=_float(ctx, (*gpath, "target"), g.get("target", 0.0)),
            kp=_float(ctx, (*gpath, "kp"), g["kp"], ge=0.0),
            kd=_float(ctx, (*gpath, "kd"), g.get("kd", 0.0), ge=0.0),
        )
    srdf = _str(ctx, (*path, "srdf"), t.get("srdf", ""), nonempty=False)
    return Robot(
        name=name,
        urdf=_file(ctx, (*path, "urdf"), t["urdf"], "URDF"),
        base=_choice(ctx, (*path, "base"), t.get("base", "fixed"), BASES),
        base_pose=_pose(ctx, (*path, "base_pose"), t.get("base_pose", {})),
        q0=_numbers_by_name(ctx, (*path, "q0"), t.get("q0", {})),
        v0=_numbers_by_name(ctx, (*path, "v0"), t.get("v0", {})),
        torque=_numbers_by_name(ctx, (*path, "torque"), t.get("torque", {})),
        pd=pd,
        srdf=_file(ctx, (*path, "srdf"), srdf, "SRDF") if srdf else None,
    )


def _environment(ctx: _Ctx, name: str, value: object) -> Environment:
    path = ("environment", name)
    _name(ctx, path, name, "environment")
    t = _table(ctx, path, value, "a table ([environment.NAME] with a urdf key)")
    _check_keys(ctx, path, t, _ENV_KEYS)
    if "urdf" not in t:
        raise ctx.error((*path, "urdf"), "is required (the environment's URDF file)")
    return Environment(
        name=name,
        urdf=_file(ctx, (*path, "urdf"), t["urdf"], "URDF"),
        base_pose=_pose(ctx, (*path, "base_pose"), t.get("base_pose", {})),
    )


def _link_ref(ctx: _Ctx, path: tuple, value: object, *, world_ok: bool) -> str:
    ref = _str(ctx, path, value)
    tree, link = split_link_ref(ref)
    if ref == WORLD:
        if not world_ok:
            raise ctx.error(path, "must name a link, not the world", value)
        return ref
    if not link or "/" in link or (tree == "" and "/" in ref):
        raise ctx.error(path, "must be a link name, 'tree/link' or 'world'", value)
    return ref


def _contact(ctx: _Ctx, value: object) -> Contact:
    path = ("contact",)
    t = _table(ctx, path, value)
    _check_keys(ctx, path, t, _CONTACT_DEFAULTS)
    t = {**_CONTACT_DEFAULTS, **t}
    nf = _int(ctx, (*path, "friction_directions"), t["friction_directions"], ge=4)
    if nf % 2:
        raise ctx.error((*path, "friction_directions"), "must be even", nf)
    dp_path = (*path, "disabled_pairs")
    if not isinstance(t["disabled_pairs"], list):
        raise ctx.error(dp_path, 'must be a list of [link, link] pairs, e.g. [["a", "b"]]')
    disabled = []
    for i, pair in enumerate(t["disabled_pairs"]):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ctx.error((*dp_path, i), "must be a pair [link, link]", pair)
        a = _link_ref(ctx, (*dp_path, i, 0), pair[0], world_ok=False)
        b = _link_ref(ctx, (*dp_path, i, 1), pair[1], world_ok=False)
        disabled.append((a, b))
    pairs_path = (*path, "pairs")
    if not isinstance(t["pairs"], list):
        raise ctx.error(pairs_path, "must be a list of tables { a = .., b = .., mu = .. }")
    pairs = []
    for i, p in enumerate(t["pairs"]):
        ppath = (*pairs_path, i)
        p = _table(ctx, ppath, p, "a table { a = .., b = .., mu = .. }")
        _check_keys(ctx, ppath, p, _PAIR_KEYS)
        for k in ("a", "b"):
            if k not in p:
                raise ctx.error((*ppath, k), "is required (a link name)")
        if not any(k in p for k in ("mu", "restitution", "margin")):
            raise ctx.error(ppath, "sets none of mu, restitution, margin")
        pairs.append(
            PairOverride(
                a=_link_ref(ctx, (*ppath, "a"), p["a"], world_ok=False),
                b=_link_ref(ctx, (*ppath, "b"), p["b"], world_ok=False),
                mu=_float(ctx, (*ppath, "mu"), p["mu"], ge=0.0) if "mu" in p else None,
                restitution=(
                    _float(ctx, (*ppath, "restitution"), p["restitution"], ge=0.0, le=1.0)
                    if "restitution" in p
                    else None
                ),
                margin=(
                    _float(ctx, (*ppath, "margin"), p["margin"], ge=0.0) if "margin" in p else None
                ),
            )
        )
    srdf = _str(ctx, (*path, "srdf"), t["srdf"], nonempty=False)
    return Contact(
        floor=_bool(ctx, (*path, "floor"), t["floor"]),
        margin=_float(ctx, (*path, "margin"), t["margin"], ge=0.0),
        mu=_float(ctx, (*path, "mu"), t["mu"], ge=0.0),
        restitution=_float(ctx, (*path, "restitution"), t["restitution"], ge=0.0, le=1.0),
        friction_directions=nf,
        self_collision=_bool(ctx, (*path, "self_collision"), t["self_collision"]),
        disabled_pairs=tuple(disabled),
        srdf=_file(ctx, (*path, "srdf"), srdf, "SRDF") if srdf else None,
        pairs=tuple(pairs),
        gap_floor=(
            None
            if t["gap_floor"] is None
            else _float(ctx, (*path, "gap_floor"), t["gap_floor"], le=0.0)
        ),
        energy_consistent_impacts=_bool(
            ctx, (*path, "energy_consistent_impacts"), t["energy_consistent_impacts"]
        ),
    )


def _closure(ctx: _Ctx, index: int, value: object) -> Closure:
    path = ("closure", index)
    t = _table(ctx, path, value, "a table ([[closure]])")
    _check_keys(ctx, path, t, _CLOSURE_KEYS)
    for k in ("type", "a"):
        if k not in t:
            raise ctx.error((*path, k), "is required")
    kind = _choice(ctx, (*path, "type"), t["type"], CLOSURE_TYPES)
    a = _link_ref(ctx, (*path, "a"), t["a"], world_ok=True)
    b = _link_ref(ctx, (*path, "b"), t.get("b", WORLD), world_ok=True)
    if a == b:
        raise ctx.error((*path, "b"), "is the same as closure a; a closure joins two frames", b)
    distance = None
    if kind == "distance":
        if "distance" not in t:
            raise ctx.error((*path, "distance"), 'is required for type = "distance"')
        distance = _float(ctx, (*path, "distance"), t["distance"], gt=0.0)
    elif "distance" in t:
        raise ctx.error((*path, "distance"), f'applies only to type = "distance", not {kind!r}')
    return Closure(
        type=kind,
        a=a,
        b=b,
        point_a=_vec3(ctx, (*path, "point_a"), t.get("point_a", [0.0, 0.0, 0.0])),
        point_b=_vec3(ctx, (*path, "point_b"), t.get("point_b", [0.0, 0.0, 0.0])),
        distance=distance,
    )


def _output(ctx: _Ctx, value: object, source: Path | None) -> Output:
    path = ("output",)
    t = _table(ctx, path, value)
    _check_keys(ctx, path, t, _OUTPUT_DEFAULTS)
    t = {**_OUTPUT_DEFAULTS, **t}
    if t["path"] is None:
        # An unwritten default goes to the current directory, like any command's output,
        # rather than next to a scenario that may live in a read-only package folder.
        stem = source.stem if source is not None else "results"
        out = Path.cwd() / f"{stem}.h5"
    else:
        text = _str(ctx, (*path, "path"), t["path"])
        out = Path(os.path.expanduser(text))
        if not out.is_absolute():
            out = ctx.base_for((*path, "path")) / out
    return Output(
        path=Path(os.path.abspath(out)),
        record_every=_int(ctx, (*path, "record_every"), t["record_every"], ge=1),
        record_contacts=_bool(ctx, (*path, "record_contacts"), t["record_contacts"]),
        body_poses=_bool(ctx, (*path, "body_poses"), t["body_poses"]),
        dump_lcp=_choice(ctx, (*path, "dump_lcp"), t["dump_lcp"], DUMP_MODES),
    )


# --------------------------------------------------------------------------- TOML emitter


def _to_raw(s: Scenario) -> dict:
    def pose(p: Pose) -> dict:
        return {"xyz": list(p.xyz), "rpy": list(p.rpy)}

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


def _toml_key(key: str) -> str:
    return key if _BARE_KEY_RE.fullmatch(key) else _toml_str(key)


def _toml_str(text: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes; TOML also forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write {value!r} to a scenario")
        return repr(value)  # shortest round-trip form, always with '.' or 'e'
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _emit(raw: dict) -> str:
    """Tables for the top level and the named robot/environment entries, ``[[closure]]`` for
    the closure array, inline tables and arrays for everything below."""
    out: list[str] = []

    def table(header: str, body: dict) -> None:
        out.append(f"[{header}]")
        out.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in body.items())
        out.append("")

    table("simulation", raw["simulation"])
    for group in ("robot", "environment"):
        for name, body in raw.get(group, {}).items():
            table(f"{group}.{_toml_key(name)}", body)
    table("contact", raw["contact"])
    for cl in raw.get("closure", []):
        out.append("[[closure]]")
        out.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in cl.items())
        out.append("")
    table("output", raw["output"])
    return "\n".join(out)


# --------------------------------------------------------------------------- model checks


def build_scenario_model(scenario: Scenario, *, package_dirs: Mapping[str, str] | None = None):
    """Load every URDF of the scenario, build the :class:`~mbsim.simcore.model.Model` (robots
    first, then environments, one tree each, named as in the scenario) and validate the
    scenario against it. Returns ``(model, specs, scenario)`` where ``scenario`` is the
    canonicalised one from :func:`validate_against_model`."""
    from mbsim.io.urdf import load_urdf
    from mbsim.simcore.model import build_model

    specs = [
        load_urdf(
            r.urdf,
            base=r.base,
            base_pose=r.base_pose.matrix(),
            package_dirs=package_dirs,
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
    return ctx


def _names_list(names: Iterable[str], limit: int = 12) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "") or "none"


def validate_against_model(scenario: Scenario, model) -> Scenario:
    """Check every joint and link name of ``scenario`` against ``model`` (built from the
    scenario's URDFs with tree names = robot/environment names) and the initial state against
    the joint limits. Returns the scenario with link references made canonical
    (``tree/link``, ``world``, ``builtin/floor``) and SRDF pairs added to
    ``contact.disabled_pairs``.
    """
    ctx = _ctx_for(scenario)
    trees = list(model.tree_names)
    links_by_tree: dict[int, set[str]] = {}
    for tree, link in model.link_frames:
        links_by_tree.setdefault(int(tree), set()).add(link)
    # q and v coordinate names of each tree, with their model indices
    q_of: dict[int, dict[str, int]] = {}
    v_of: dict[int, dict[str, int]] = {}
    one_dof: dict[int, dict[str, int]] = {}
    free_joints: dict[int, list[str]] = {}
    for i in range(model.nb):
        t = int(model.tree_of[i])
        qs = range(int(model.qi[i]), int(model.qi[i] + model.nqj[i]))
        vs = range(int(model.vi[i]), int(model.vi[i] + model.nvj[i]))
        for k in qs:
            q_of.setdefault(t, {})[model.q_names[k]] = k
        for k in vs:
            v_of.setdefault(t, {})[model.v_names[k]] = k
        if model.nvj[i] == 1:
            one_dof.setdefault(t, {})[model.joint_names[i]] = int(model.vi[i])
        else:
            free_joints.setdefault(t, []).append(model.joint_names[i])

    def tree_index(path: tuple, name: str) -> int:
        if name not in trees:
            raise ctx.error(path, f"the model has no tree named {name!r} (trees: {trees})")
        return trees.index(name)

    def canonical(path: tuple, ref: str, within: str | None = None) -> str:
        """``tree/link`` for a link reference (``within``: the tree of a bare name)."""
        if ref == WORLD:
            return ref
        tree, link = split_link_ref(ref)
        tree = tree or (within or "")
        if tree == BUILTIN_TREE:
            if link != FLOOR_LINK:
                raise ctx.error(path, f"the built-in tree has only the link {FLOOR_LINK!r}", ref)
            if not scenario.contact.floor:
                raise ctx.error(path, "the built-in floor is off (contact.floor = false)", ref)
            return FLOOR
        if tree:
            if tree not in trees:
                known = _names_list([*trees, *([BUILTIN_TREE] if scenario.contact.floor else [])])
                raise ctx.error(path, f"there is no robot or environment {tree!r} ({known})", ref)
            links = links_by_tree.get(trees.index(tree), set())
            if link not in links:
                raise ctx.error(
                    path, f"{tree} has no link {link!r} (links: {_names_list(sorted(links))})", ref
                )
            return f"{tree}/{link}"
        owners = [trees[t] for t, ls in sorted(links_by_tree.items()) if link in ls]
        if scenario.contact.floor and link == FLOOR_LINK:
            owners.append(BUILTIN_TREE)
        if not owners:
            raise ctx.error(path, "no robot or environment has a link of this name", ref)
        if len(owners) > 1:
            raise ctx.error(
                path,
                f"is ambiguous: {', '.join(owners)} all have such a link; write TREE/{link}",
                ref,
            )
        return f"{owners[0]}/{link}"

    extra_pairs: list[tuple[str, str]] = []
    for r in scenario.robots:
        rpath = ("robot", r.name)
        t = tree_index(rpath, r.name)
        qn, vn = q_of.get(t, {}), v_of.get(t, {})
        for key, names, what in (
            ("q0", qn, "q coordinate"),
            ("v0", vn, "v coordinate"),
            ("torque", vn, "v coordinate"),
            ("pd", one_dof.get(t, {}), "1-DoF joint"),
        ):
            for joint in getattr(r, key):
                if joint not in names:
                    close = difflib.get_close_matches(joint, list(names), n=1)
                    hint = f"did you mean {close[0]!r}? " if close else ""
                    raise ctx.error(
                        (*rpath, key, joint),
                        f"robot {r.name} ({r.urdf.name}) has no {what} of this name "
                        f"({hint}names: {_names_list(names)})",
                    )
        for joint, x in r.q0.items():
            k = qn[joint]
            j = _dof_of_q(model, k)
            if j is not None:
                lo, hi = float(model.lower[j]), float(model.upper[j])
                if not lo <= x <= hi:
                    raise ctx.error(
                        (*rpath, "q0", joint), f"is outside the joint limits [{lo:g}, {hi:g}]", x
                    )
        for joint in free_joints.get(t, []):
            names = [f"{joint}.{c}" for c in ("qw", "qx", "qy", "qz")]
            if any(n in r.q0 for n in names):
                quat = [r.q0.get(n, 1.0 if n.endswith("qw") else 0.0) for n in names]
                norm = math.sqrt(sum(c * c for c in quat))
                if abs(norm - 1.0) > QUAT_NORM_TOL:
                    raise ctx.error(
                        (*rpath, "q0", names[0]),
                        f"the quaternion (qw, qx, qy, qz) = {tuple(quat)} of {joint} has norm "
                        f"{norm:.6g}; give all four components of a unit quaternion",
                    )
        if r.srdf is not None:
            for a, b in _read_srdf(r.srdf):
                spath = (*rpath, "srdf")
                extra_pairs.append((canonical(spath, a, r.name), canonical(spath, b, r.name)))
    for e in scenario.environments:
        tree_index(("environment", e.name), e.name)

    c = scenario.contact
    disabled = [
        (
            canonical(("contact", "disabled_pairs", i, 0), a),
            canonical(("contact", "disabled_pairs", i, 1), b),
        )
        for i, (a, b) in enumerate(c.disabled_pairs)
    ]
    if c.srdf is not None:
        for a, b in _read_srdf(c.srdf):
            path = ("contact", "srdf")
            extra_pairs.append((canonical(path, a), canonical(path, b)))
    seen: set[frozenset] = set()
    all_pairs = []
    for a, b in disabled + extra_pairs:
        if frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            all_pairs.append((a, b))
    pairs = tuple(
        replace(
            p,
            a=canonical(("contact", "pairs", i, "a"), p.a),
            b=canonical(("contact", "pairs", i, "b"), p.b),
        )
        for i, p in enumerate(c.pairs)
    )
    closures = []
    for i, cl in enumerate(scenario.closures):
        a = canonical(("closure", i, "a"), cl.a)
        b = canonical(("closure", i, "b"), cl.b)
        if a == b:
            raise ctx.error(("closure", i, "b"), "is the same link as closure a", cl.b)
        closures.append(replace(cl, a=a, b=b))
    contact = replace(c, disabled_pairs=tuple(all_pairs), pairs=pairs)
    return replace(scenario, contact=contact, closures=tuple(closures))


def _dof_of_q(model, k: int) -> int | None:
    """v index of q index ``k`` if it belongs to a 1-DoF joint (None for free joints)."""
    for i in range(model.nb):
        if model.qi[i] <= k < model.qi[i] + model.nqj[i]:
            return int(model.vi[i]) if model.nqj[i] == 1 else None
    return None


def _read_srdf(path: Path) -> tuple[tuple[str, str], ...]:
    """``<disable_collisions link1=".." link2=".."/>`` pairs of an SRDF file (SrdfError)."""
    return read_srdf(path).disabled
