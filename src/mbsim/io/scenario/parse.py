"""TOML text -> :class:`Scenario`: the loaders, then one resolver per section with the value
checks they share (numbers, choices, names, files, poses). Every default is filled in and every
path made absolute."""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mbsim.errors import MbsimError
from mbsim.io.scenario.keys import _Ctx
from mbsim.io.scenario.overrides import _apply_flags, _apply_overrides
from mbsim.io.scenario.types import (
    _CLOSURE_KEYS,
    _CONTACT_DEFAULTS,
    _CONTROL_KEYS,
    _ENV_KEYS,
    _LIMIT_KEYS,
    _NAME_RE,
    _OUTPUT_DEFAULTS,
    _PAIR_KEYS,
    _PD_KEYS,
    _POSE_KEYS,
    _RESERVED_NAMES,
    _ROBOT_KEYS,
    _SIGNAL_KEY,
    _SIM_DEFAULTS,
    _TOP_KEYS,
    CONTROL_MODES,
    INTERPOLATIONS,
    SPLINE_ENDS,
    Closure,
    Contact,
    Environment,
    JointControl,
    JointLimitOverride,
    Output,
    PairOverride,
    PdGain,
    Pose,
    Robot,
    Scenario,
    ScenarioError,
    Signal,
    Simulation,
)
from mbsim.names import MESH_CONTACT_MODES, WORLD, split_link_ref
from mbsim.simcore.options import (
    BASES,
    CLOSURE_TYPES,
    CONTACT_MANIFOLDS,
    CURVATURE_POINTS,
    DELASSUS,
    DUMP_MODES,
    DYNAMICS,
    FORMULATIONS,
    FRICTION_AXES,
    IMPACT_FRICTION,
    INTEGRATORS,
    LCP_SOLVERS,
)


def load_scenario(
    path: str | os.PathLike[str],
    overrides: Mapping[str, object] | None = None,
    *,
    flags: Mapping[str, object] | None = None,
) -> Scenario:
    """Read a TOML scenario file, apply CLI ``flags`` then dotted-key ``overrides``, validate.

    ``path`` may be ``sample:NAME.toml``, a bundled scenario (``mbsim samples list``).
    Raises :class:`ScenarioError` naming the file, line (when found), key, value and why.
    """
    text = os.fspath(path)
    if isinstance(text, str) and text.startswith("sample:"):
        from mbsim.samples.catalog import sample_scenario_path

        try:
            path = sample_scenario_path(text[len("sample:") :])
        except MbsimError as exc:
            raise ScenarioError(str(exc)) from None
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
        name = default_robot_name(text)
    if not text.startswith("sample:"):
        text = os.path.abspath(text)
    raw: dict[str, Any] = {"robot": {name: {"urdf": text}}}
    if "output" not in flags:
        flags["output"] = os.path.join(os.getcwd(), f"{name}.h5")
    ctx = _Ctx("command line", "", Path.cwd(), everything_overridden=True)
    raw = _apply_flags(ctx, raw, flags)
    raw = _apply_overrides(ctx, raw, overrides or {})
    return _resolve(ctx, raw, None)


def default_robot_name(urdf_path: str | os.PathLike[str]) -> str:
    """The name ``mbsim run robot.urdf`` gives its robot (the tree of its ``tree/link``
    names): the file stem, made a valid scenario name."""
    text = os.fspath(urdf_path)
    stem = Path(text[len("sample:") :] if text.startswith("sample:") else text).stem
    name = re.sub(r"[^A-Za-z0-9_-]", "_", stem) or "robot"
    if not _NAME_RE.fullmatch(name) or name in _RESERVED_NAMES:
        name = f"robot_{name}"
    return name


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


#: Bounds on the scenario's numbers (documented in docs/scenario-format.md). Past them a value is
#: a typo or an overflow, not a simulation: FCL's broad phase crashes on a margin of 1e300, and
#: a step count past int64 cannot be counted.
#: - a length (contact margins, base_pose offsets): at most 1e6 m, the URDF loader's bound;
#: - the number of steps, duration / dt: at most 1e12 (11 days of wall time at 1e6 steps/s);
#: - friction_directions: at most 64 edges (a 64-gon is within 0.12 % of the circular cone,
#:   and each edge adds a row per contact to the LCP);
#: - every integer: within int64 (numpy's and HDF5's integers).
LENGTH_MAX = 1e6
STEPS_MAX = 10**12
FRICTION_DIRECTIONS_MAX = 64
INT64_MAX = 2**63 - 1


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
    try:
        x = float(value)
    except OverflowError:  # an integer of 309 digits or more
        raise ctx.error(path, "is beyond the float64 range (must be finite)", value) from None
    if not math.isfinite(x):
        raise ctx.error(path, "must be finite", value)
    if gt is not None and not x > gt:
        raise ctx.error(path, f"must be greater than {gt:g}", value)
    if ge is not None and not x >= ge:
        raise ctx.error(path, f"must be at least {ge:g}", value)
    if le is not None and not x <= le:
        raise ctx.error(path, f"must be at most {le:g}", value)
    return x


def _int(ctx: _Ctx, path: tuple, value: object, *, ge: int, le: int = INT64_MAX) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 4.0 from a sweep is 4
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.error(path, "must be an integer", value)
    if value < ge:
        raise ctx.error(path, f"must be at least {ge}", value)
    if value > le:
        limit = "the 64-bit integer range" if le == INT64_MAX else str(le)
        raise ctx.error(path, f"must be at most {limit}", value)
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
    for i, x in enumerate(xyz):
        if abs(x) > LENGTH_MAX:
            raise ctx.error((*path, "xyz", i), f"must be within +-{LENGTH_MAX:g} m", x)
    rpy = _vec3(ctx, (*path, "rpy"), table.get("rpy", [0.0, 0.0, 0.0]))
    on_floor = _bool(ctx, (*path, "on_floor"), table.get("on_floor", False))
    return Pose(xyz, rpy, on_floor)


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
        _override_values=tuple(ctx.override_values.items()),
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
    steps = duration / dt  # inf when it overflows
    if not steps <= STEPS_MAX:
        raise ctx.error(
            (*path, "dt"),
            f"gives {steps:.3g} steps over simulation.duration = {duration:g} s, more than "
            f"{STEPS_MAX:.0e}; use a larger dt or a shorter duration",
            dt,
        )
    return Simulation(
        duration=duration,
        dt=dt,
        formulation=_choice(ctx, (*path, "formulation"), t["formulation"], FORMULATIONS),
        solver=_choice(ctx, (*path, "solver"), t["solver"], LCP_SOLVERS),
        gravity=_vec3(ctx, (*path, "gravity"), t["gravity"]),
        integrator=_choice(ctx, (*path, "integrator"), t["integrator"], INTEGRATORS),
        dynamics=_choice(ctx, (*path, "dynamics"), t["dynamics"], DYNAMICS),
        delassus=_choice(ctx, (*path, "delassus"), t["delassus"], DELASSUS),
        joint_limits=_bool(ctx, (*path, "joint_limits"), t["joint_limits"]),
        limit_restitution=_float(
            ctx, (*path, "limit_restitution"), t["limit_restitution"], ge=0.0, le=1.0
        ),
        lcp_max_seconds=_float(ctx, (*path, "lcp_max_seconds"), t["lcp_max_seconds"], ge=0.0),
    )


def _urdf_entry(ctx: _Ctx, kind: str, name: str, value: object, keys) -> tuple[tuple, dict]:
    """The key path and table of ``[kind.NAME]`` (a robot or an environment): a valid name,
    a table with only ``keys``, and the required ``urdf`` key."""
    path = (kind, name)
    _name(ctx, path, name, kind)
    t = _table(ctx, path, value, f"a table ([{kind}.NAME] with a urdf key)")
    _check_keys(ctx, path, t, keys)
    if "urdf" not in t:
        raise ctx.error((*path, "urdf"), f"is required (the {kind}'s URDF file)")
    return path, t


def _robot(ctx: _Ctx, name: str, value: object) -> Robot:
    path, t = _urdf_entry(ctx, "robot", name, value, _ROBOT_KEYS)
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
    control_raw = _table(
        ctx, (*path, "control"), t.get("control", {}), "a table of joint controllers by joint name"
    )
    control = {j: _joint_control(ctx, (*path, "control", j), c) for j, c in control_raw.items()}
    for joint in control:
        if joint in pd:
            raise ctx.error(
                (*path, "control", joint), f"joint {joint} is also in robot.{name}.pd; use one"
            )
    srdf = _str(ctx, (*path, "srdf"), t.get("srdf", ""), nonempty=False)
    return Robot(
        joint_limits=_joint_limits(ctx, (*path, "joint_limits"), t.get("joint_limits", {})),
        name=name,
        urdf=_file(ctx, (*path, "urdf"), t["urdf"], "URDF"),
        base=_choice(ctx, (*path, "base"), t.get("base", "fixed"), BASES),
        base_pose=_pose(ctx, (*path, "base_pose"), t.get("base_pose", {})),
        q0=_numbers_by_name(ctx, (*path, "q0"), t.get("q0", {})),
        v0=_numbers_by_name(ctx, (*path, "v0"), t.get("v0", {})),
        torque=_numbers_by_name(ctx, (*path, "torque"), t.get("torque", {})),
        pd=pd,
        srdf=_file(ctx, (*path, "srdf"), srdf, "SRDF") if srdf else None,
        control=control,
    )


def _joint_limits(ctx: _Ctx, path: tuple, value: object) -> dict[str, JointLimitOverride]:
    """``[robot.NAME.joint_limits]``: joint = true | false | { enabled, restitution }."""
    t = _table(ctx, path, value, "a table of joint limit settings by joint name")
    out = {}
    for joint, item in t.items():
        jpath = (*path, joint)
        if isinstance(item, bool):
            out[joint] = JointLimitOverride(enabled=item)
            continue
        g = _table(ctx, jpath, item, "true, false or a table { enabled = .., restitution = .. }")
        _check_keys(ctx, jpath, g, _LIMIT_KEYS)
        eps = g.get("restitution")
        out[joint] = JointLimitOverride(
            enabled=_bool(ctx, (*jpath, "enabled"), g.get("enabled", True)),
            restitution=None
            if eps is None
            else _float(ctx, (*jpath, "restitution"), eps, ge=0.0, le=1.0),
        )
    return out


def _joint_control(ctx: _Ctx, path: tuple, value: object) -> JointControl:
    """One ``[robot.NAME.control]`` entry (docs/scenario-format.md, "Joint control")."""
    c = _table(ctx, path, value, 'a table { mode = "position", target = .., kp = .., kd = .. }')
    if "mode" not in c:
        raise ctx.error((*path, "mode"), f"is required (one of {', '.join(CONTROL_MODES)})")
    mode = _choice(ctx, (*path, "mode"), c["mode"], CONTROL_MODES)
    _check_keys(ctx, path, c, _CONTROL_KEYS[mode])
    gc = _bool(ctx, (*path, "gravity_compensation"), c.get("gravity_compensation", False))
    ff = (
        _signal(ctx, (*path, "feedforward"), c["feedforward"], "tau")
        if "feedforward" in c
        else None
    )
    if mode == "torque":
        if "torque" not in c:
            raise ctx.error((*path, "torque"), "is required (N m or N: a number or a series)")
        return JointControl(
            mode, torque=_signal(ctx, (*path, "torque"), c["torque"], "tau"),
            gravity_compensation=gc,
        )  # fmt: skip
    if "target" not in c:
        raise ctx.error((*path, "target"), f"is required (the {mode} target)")
    if mode == "position" and "kp" not in c:
        raise ctx.error((*path, "kp"), "is required (the PD stiffness, N m/rad or N/m)")
    if mode == "velocity" and "kd" not in c:
        raise ctx.error((*path, "kd"), "is required (the velocity gain, N m s/rad or N s/m)")
    return JointControl(
        mode,
        target=_signal(ctx, (*path, "target"), c["target"], _SIGNAL_KEY[mode]),
        kp=_float(ctx, (*path, "kp"), c.get("kp", 0.0), ge=0.0),
        kd=_float(ctx, (*path, "kd"), c.get("kd", 0.0), ge=0.0),
        gravity_compensation=gc,
        feedforward=ff,
    )


def _signal(ctx: _Ctx, path: tuple, value: object, sample_key: str) -> Signal:
    """A number, ``{ t = [..], <sample_key> = [..], interpolation, ends }`` or
    ``{ csv = "file.csv", column = "name", interpolation, ends }``."""
    if not isinstance(value, dict):
        if isinstance(value, (str, list, bool)):  # not a number, and not a table either
            raise ctx.error(
                path, f"must be a number or a signal table ({{ t = [..], {sample_key} = [..] }} "
                'or { csv = "file.csv" })', value,
            )  # fmt: skip
        return Signal(value=_float(ctx, path, value))
    what = f"t, {sample_key}" if "csv" not in value else "csv, column"
    _check_keys(ctx, path, value, ("t", sample_key, "csv", "column", "interpolation", "ends"))
    interp = _choice(
        ctx, (*path, "interpolation"), value.get("interpolation", "linear"), INTERPOLATIONS
    )
    ends = _choice(ctx, (*path, "ends"), value.get("ends", "natural"), SPLINE_ENDS)
    if "csv" in value:
        for k in ("t", sample_key):
            if k in value:
                raise ctx.error((*path, k), "cannot be given with csv (the file holds the samples)")
        csv_path = _file(ctx, (*path, "csv"), value["csv"], "CSV")
        column = _str(ctx, (*path, "column"), value.get("column", path[-2]))
        t, y = _csv_column(ctx, (*path, "csv"), csv_path, column)
        return Signal(t=t, y=y, interpolation=interp, ends=ends, csv=csv_path, column=column)
    if "column" in value:
        raise ctx.error((*path, "column"), "applies only to a csv signal")
    for k in ("t", sample_key):
        if k not in value:
            raise ctx.error((*path, k), f"is required (a signal table has {what})")
    t = _samples(ctx, (*path, "t"), value["t"])
    y = _samples(ctx, (*path, sample_key), value[sample_key])
    if len(y) != len(t):
        raise ctx.error(
            (*path, sample_key), f"has {len(y)} values but t has {len(t)}", value[sample_key]
        )
    _check_times(ctx, (*path, "t"), t, interp)
    return Signal(t=t, y=y, interpolation=interp, ends=ends)


def _samples(ctx: _Ctx, path: tuple, value: object) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise ctx.error(path, "must be a non-empty list of numbers", value)
    return tuple(_float(ctx, (*path, i), v) for i, v in enumerate(value))


def _check_times(ctx: _Ctx, path: tuple, t: tuple[float, ...], interp: str) -> None:
    need = 3 if interp == "cubic" else 2
    if len(t) < need:
        raise ctx.error(path, f"needs at least {need} samples for {interp} interpolation", list(t))
    for i in range(1, len(t)):
        if not t[i] > t[i - 1]:
            raise ctx.error(
                (*path, i), f"must be greater than the time before it ({t[i - 1]:g} s)", t[i]
            )


def _csv_column(ctx: _Ctx, path: tuple, file: Path, column: str):
    """(time, values) of ``column`` in a CSV file whose first column is the time (s) and whose
    header row names the columns."""
    import csv

    try:
        with open(file, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.reader(fh) if r and not r[0].lstrip().startswith("#")]
    except (OSError, UnicodeDecodeError) as exc:
        raise ctx.error(path, f"cannot read {file} ({exc})") from None
    if len(rows) < 3:
        raise ctx.error(path, f"{file} needs a header row and at least 2 rows of samples")
    header = [h.strip() for h in rows[0]]
    if column not in header[1:]:
        hint = ""
        if len(header) == 1 and any(sep in header[0] for sep in ";\t"):
            hint = "; columns are separated by commas"  # a ';' or tab file reads as one column
        raise ctx.error(
            path, f"{file} has no column {column!r} (columns: {', '.join(header[1:])}){hint}"
        )
    if header.count(column) > 1:  # which one the user meant is not ours to guess
        raise ctx.error(path, f"{file} has {header.count(column)} columns named {column!r}")
    k = header.index(column)
    t, y = [], []
    for line, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            raise ctx.error(path, f"{file}, row {line} has {len(row)} fields, not {len(header)}")
        try:
            tt, yy = float(row[0]), float(row[k])
        except ValueError:
            raise ctx.error(
                path, f"{file}, row {line} holds a value that is not a number"
            ) from None
        if not (math.isfinite(tt) and math.isfinite(yy)):
            raise ctx.error(path, f"{file}, row {line} holds a value that is not finite")
        if t and not tt > t[-1]:
            raise ctx.error(path, f"{file}, row {line}: time {tt:g} s does not increase")
        t.append(tt)
        y.append(yy)
    return tuple(t), tuple(y)


def _environment(ctx: _Ctx, name: str, value: object) -> Environment:
    path, t = _urdf_entry(ctx, "environment", name, value, _ENV_KEYS)
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
    nf = _int(
        ctx,
        (*path, "friction_directions"),
        t["friction_directions"],
        ge=4,
        le=FRICTION_DIRECTIONS_MAX,
    )
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
                    _float(ctx, (*ppath, "margin"), p["margin"], ge=0.0, le=LENGTH_MAX)
                    if "margin" in p
                    else None
                ),
            )
        )
    srdf = _str(ctx, (*path, "srdf"), t["srdf"], nonempty=False)
    mc_path = (*path, "mesh_contact_links")
    mc = _table(ctx, mc_path, t["mesh_contact_links"], 'a table { "tree/link" = "convex-hull" }')
    mesh_links = tuple(
        (
            _link_ref(ctx, (*mc_path, k), k, world_ok=False),
            _choice(ctx, (*mc_path, k), v, MESH_CONTACT_MODES),
        )
        for k, v in mc.items()
    )
    return Contact(
        floor=_bool(ctx, (*path, "floor"), t["floor"]),
        margin=_float(ctx, (*path, "margin"), t["margin"], ge=0.0, le=LENGTH_MAX),
        mu=_float(ctx, (*path, "mu"), t["mu"], ge=0.0),
        restitution=_float(ctx, (*path, "restitution"), t["restitution"], ge=0.0, le=1.0),
        friction_directions=nf,
        self_collision=_bool(ctx, (*path, "self_collision"), t["self_collision"]),
        ignore_initial_overlaps=_bool(
            ctx, (*path, "ignore_initial_overlaps"), t["ignore_initial_overlaps"]
        ),
        disabled_pairs=tuple(disabled),
        srdf=_file(ctx, (*path, "srdf"), srdf, "SRDF") if srdf else None,
        pairs=tuple(pairs),
        gap_floor=(
            None
            if t["gap_floor"] is None
            else _float(ctx, (*path, "gap_floor"), t["gap_floor"], le=0.0)
        ),
        mesh_contact=_choice(ctx, (*path, "mesh_contact"), t["mesh_contact"], MESH_CONTACT_MODES),
        mesh_contact_links=mesh_links,
        energy_consistent_impacts=_bool(
            ctx, (*path, "energy_consistent_impacts"), t["energy_consistent_impacts"]
        ),
        impact_friction=_choice(
            ctx, (*path, "impact_friction"), t["impact_friction"], IMPACT_FRICTION
        ),
        friction_axes=_choice(ctx, (*path, "friction_axes"), t["friction_axes"], FRICTION_AXES),
        curvature_point=_choice(
            ctx, (*path, "curvature_point"), t["curvature_point"], CURVATURE_POINTS
        ),
        manifold=_choice(ctx, (*path, "manifold"), t["manifold"], CONTACT_MANIFOLDS),
        max_recovery_speed=_float(
            ctx, (*path, "max_recovery_speed"), t["max_recovery_speed"], gt=0.0
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
