"""Sweep files (TOML): a base scenario and the parameters to vary, expanded into runs.

docs/batch.md is the reference. In short::

    scenario = "pendulum-3.toml"        # relative to this file, or "sample:NAME.toml"
    out_dir = "runs"                    # default: ./<sweep file stem>/ in the current folder
    file_pattern = "run-{id:04d}.h5"    # one results file per run
    summary = "summary"                 # summary.csv and summary.h5 in out_dir

    [set]                               # the same overrides for every run
    "simulation.duration" = 0.2

    [sweep.grid]                        # one axis per key: the cartesian product
    "contact.mu" = [0.2, 0.5, 0.8]

    [sweep.range]                       # one axis per key, evenly spaced values
    "simulation.dt" = { start = 1e-4, stop = 4e-4, num = 4 }

    [[sweep.zip]]                       # one axis per table: lists varied together
    "robot.pendulum.q0.joint_1" = [0.1, 0.2]
    "robot.pendulum.v0.joint_1" = [0.0, 1.0]

    [sweep.random]                      # one axis per table: `samples` seeded draws
    seed = 7
    samples = 8
    "contact.restitution" = { uniform = [0.0, 0.9] }

The runs are the cartesian product of the axes, in the order the tables and keys appear in
the file, the last axis varying fastest; run ids count from 0. Keys are the scenario's dotted
override keys (docs/scenario-format.md); values are checked by the scenario loader when a run
is prepared, so one bad value fails one run, not the sweep. Units are those of each key.

Every problem with the sweep file itself raises :class:`SweepError`: one sentence naming the
sweep file, the key and the value.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from mbsim.batch.keys import is_prefix, join_key
from mbsim.errors import MbsimError
from mbsim.io.scenario import format_value, split_key

__all__ = ["MAX_RUNS", "Axis", "RunSpec", "Sweep", "SweepError", "load_sweep"]

#: Refuse sweeps with more runs than this: the run list is built in memory, and a product
#: that large is almost always a mistake in the file.
MAX_RUNS = 1_000_000

SCENARIO_SECTIONS = ("simulation", "robot", "environment", "contact", "closure", "output")
_TOP_KEYS = ("scenario", "out_dir", "file_pattern", "summary", "set", "sweep")
_KINDS = ("grid", "range", "zip", "random")
_RANGE_KEYS = ("start", "stop", "num", "step", "scale")
_DISTRIBUTIONS = ("uniform", "loguniform", "normal", "integers", "choice")
DEFAULT_PATTERN = "run-{id:04d}.h5"
DEFAULT_SUMMARY = "summary"


class SweepError(MbsimError):
    """A sweep file is malformed (the message names the file, key and value)."""


@dataclass(frozen=True)
class Axis:
    """One dimension of the sweep: ``points[i]`` gives one value per key of ``keys``."""

    kind: str
    keys: tuple[str, ...]
    points: tuple[tuple[object, ...], ...]


@dataclass(frozen=True)
class RunSpec:
    """One run: ``params`` are the varied values (canonical key -> value); ``overrides`` adds
    the sweep's fixed ``[set]`` values; ``path`` is its results file (absolute)."""

    run_id: int
    params: dict[str, object]
    overrides: dict[str, object]
    path: Path


@dataclass(frozen=True)
class Sweep:
    """A loaded sweep file. ``fixed``: the ``[set]`` overrides; ``axes`` in file order.
    ``package_dirs`` / ``allow_outside_paths``: where the runs may read mesh files (set from
    the command line, never from the sweep file)."""

    path: Path
    sha256: str
    scenario: Path
    out_dir: Path
    file_pattern: str
    summary: str
    fixed: dict[str, object] = field(default_factory=dict)
    axes: tuple[Axis, ...] = ()
    package_dirs: dict[str, str] = field(default_factory=dict)
    allow_outside_paths: bool = False

    @property
    def parameters(self) -> list[str]:
        """The varied keys, in axis order (the summary's parameter columns)."""
        return [k for a in self.axes for k in a.keys]

    @property
    def n_runs(self) -> int:
        return math.prod(len(a.points) for a in self.axes)

    def file_name(self, run_id: int) -> str:
        return self.file_pattern.format(id=run_id)

    def runs(self) -> list[RunSpec]:
        """Every run, in id order (the last axis varies fastest)."""
        sizes = [len(a.points) for a in self.axes]
        out = []
        for run_id, index in enumerate(np.ndindex(*sizes) if sizes else [()]):
            params: dict[str, object] = {}
            for axis, i in zip(self.axes, index, strict=True):
                params.update(zip(axis.keys, axis.points[i], strict=True))
            out.append(
                RunSpec(
                    run_id=run_id,
                    params=params,
                    overrides={**self.fixed, **params},
                    path=self.out_dir / self.file_name(run_id),
                )
            )
        return out


# --------------------------------------------------------------------------- loading


def load_sweep(path: str | os.PathLike[str], *, out_dir: str | os.PathLike[str] | None = None):
    """Read and check a sweep file; ``path`` may be ``sample:NAME.toml`` (a bundled sweep).
    ``out_dir`` (from the command line, relative to the current folder) replaces the file's.
    Raises :class:`SweepError`."""
    source = _sweep_path(os.fspath(path))
    try:
        data = source.read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        raise SweepError(f"{source}: cannot be read ({exc.strerror or exc}).") from exc
    except UnicodeDecodeError as exc:
        raise SweepError(f"{source}: is not UTF-8 text (byte {exc.start}).") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepError(f"{source}: is not valid TOML: {exc}.") from exc
    ctx = _Ctx(source)
    for key in raw:
        if key not in _TOP_KEYS:
            raise ctx.error(
                (key,), f"unknown key ({_hint(key, _TOP_KEYS)}allowed: {', '.join(_TOP_KEYS)})"
            )
    if "scenario" not in raw:
        raise SweepError(f"{source}: scenario: is required (the base scenario file to vary).")
    scenario = _scenario_path(ctx, raw["scenario"])
    pattern = _file_pattern(ctx, raw.get("file_pattern", DEFAULT_PATTERN))
    summary = _summary_name(ctx, raw.get("summary", DEFAULT_SUMMARY))
    if out_dir is not None:
        out = Path(os.path.abspath(os.path.expanduser(os.fspath(out_dir))))
    elif "out_dir" in raw:
        value = raw["out_dir"]
        if not isinstance(value, str) or not value.strip():
            raise ctx.error(("out_dir",), "must be a folder name (a non-empty string)", value)
        out = Path(os.path.expanduser(value))
        out = Path(os.path.abspath(out if out.is_absolute() else source.parent / out))
    else:
        # Like a scenario's default output: the current folder, never next to a sweep file
        # that may live in a read-only package folder.
        out = Path.cwd() / source.stem
    base = source.parent
    fixed = {k: _anchor(k, v, base) for k, v in _fixed(ctx, raw.get("set", {})).items()}
    axes = [
        replace(
            a,
            points=tuple(
                tuple(_anchor(k, v, base) for k, v in zip(a.keys, point, strict=True))
                for point in a.points
            ),
        )
        for a in _axes(ctx, raw.get("sweep", {}))
    ]
    _check_overlaps(ctx, fixed, axes)
    n = math.prod(len(a.points) for a in axes)
    if n > MAX_RUNS:
        raise SweepError(f"{source}: the sweep has {n} runs, more than the limit of {MAX_RUNS}.")
    names = {pattern.format(id=i) for i in range(n)}
    if len(names) != n:
        raise ctx.error(
            ("file_pattern",),
            f"gives the same file name to different runs (only {len(names)} names for {n} runs)",
            pattern,
        )
    if f"{summary}.csv" in names or f"{summary}.h5" in names:
        raise ctx.error(("summary",), "collides with a run's file name", summary)
    return Sweep(
        path=source,
        sha256=hashlib.sha256(data).hexdigest(),
        scenario=scenario,
        out_dir=out,
        file_pattern=pattern,
        summary=summary,
        fixed=fixed,
        axes=tuple(axes),
    )


def _sweep_path(text: str) -> Path:
    if text.startswith("sample:"):
        from mbsim.samples.catalog import bundled_dir

        p = bundled_dir() / text[len("sample:") :]
        if not p.is_file():
            raise SweepError(f"{text}: no such bundled sweep file (see `mbsim samples list`).")
        return p
    p = Path(os.path.abspath(os.path.expanduser(text)))
    if not p.exists():
        raise SweepError(f"{p}: sweep file does not exist.")
    if not p.is_file():
        raise SweepError(f"{p}: is not a regular file, so it cannot be read as a sweep file.")
    return p


class _Ctx:
    def __init__(self, source: Path) -> None:
        self.source = source

    def error(self, path: tuple, why: str, value: object = ...) -> SweepError:
        # the parts are table names of the sweep file and canonical dotted keys: join as is
        key = ".".join(str(p) for p in path)
        shown = "" if value is ... else f" = {format_value(value)}"
        return SweepError(f"{self.source}: {key}{shown}: {why}.")


def _hint(key: str, allowed) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def _scenario_path(ctx: _Ctx, value: object) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ctx.error(("scenario",), "must be the path of a scenario file", value)
    if value.startswith("sample:"):
        from mbsim.samples.catalog import bundled_dir

        name = value[len("sample:") :]
        p = bundled_dir() / name
        if not name.endswith(".toml") or not p.is_file():
            raise ctx.error(
                ("scenario",),
                "is not a bundled scenario (e.g. sample:pendulum-3.toml; see `mbsim samples list`)",
                value,
            )
        return p
    p = Path(os.path.expanduser(value))
    p = Path(os.path.abspath(p if p.is_absolute() else ctx.source.parent / p))
    if not p.is_file():
        why = "does not exist" if not p.exists() else "is not a regular file"
        raise ctx.error(("scenario",), f"{p} {why}", value)
    return p


def _file_pattern(ctx: _Ctx, value: object) -> str:
    bad = 'must be a file name with {id} for the run id, e.g. "run-{id:04d}.h5"'
    if not isinstance(value, str):
        raise ctx.error(("file_pattern",), bad, value)
    try:
        first, second = value.format(id=0), value.format(id=1)
    except (KeyError, IndexError, ValueError, AttributeError):
        raise ctx.error(("file_pattern",), bad, value) from None
    if first == second:
        raise ctx.error(("file_pattern",), bad, value)
    if "/" in first or os.sep in first or first in (".", "..") or not first.strip():
        raise ctx.error(
            ("file_pattern",), "must be a plain file name inside out_dir (no folders)", value
        )
    return value


def _summary_name(ctx: _Ctx, value: object) -> str:
    if (
        not isinstance(value, str)
        or not value.strip()
        or "/" in value
        or os.sep in value
        or value in (".", "..")
    ):
        raise ctx.error(
            ("summary",),
            "must be a plain file stem (summary.csv and summary.h5 are written in out_dir)",
            value,
        )
    return value


# --------------------------------------------------------------------------- keys

#: Scenario keys whose values are file paths.
_PATH_KEYS = ("urdf", "srdf")


def _anchor(key: str, value: object, base: Path) -> object:
    """A relative file path in a sweep value, made absolute against the sweep file's folder:
    paths written in a file are relative to the file (as in scenarios), and a Dask worker
    runs in a folder of its own, so the current folder would mean something else there."""
    return _anchor_parts(split_key(key) or (key,), value, base)


def _anchor_parts(parts: tuple[str, ...], value: object, base: Path) -> object:
    if isinstance(value, dict):
        return {k: _anchor_parts((*parts, k), v, base) for k, v in value.items()}
    if parts[-1] in _PATH_KEYS and isinstance(value, str) and value.strip():
        if value.startswith("sample:"):
            return value
        p = Path(os.path.expanduser(value))
        return str(p if p.is_absolute() else base / p)
    return value


def _key_parts(key: str) -> tuple[str, ...]:
    """A TOML key of a sweep table as scenario key parts: ``"contact.mu"`` (one quoted key)
    and ``contact.mu`` (nested tables) mean the same."""
    parts = split_key(key)
    return parts if parts else (key,)


def _check_scenario_key(ctx: _Ctx, where: tuple, parts: tuple[str, ...]) -> str:
    if parts[0] not in SCENARIO_SECTIONS:
        raise ctx.error(
            (*where, join_key(parts)),
            f"is not a scenario key ({_hint(parts[0], SCENARIO_SECTIONS)}keys start with "
            f"{', '.join(SCENARIO_SECTIONS)})",
        )
    if len(parts) < 2:
        raise ctx.error(
            (*where, join_key(parts)), "names a whole section; name a key in it, e.g. contact.mu"
        )
    if parts[:2] == ("output", "path"):
        raise ctx.error(
            (*where, join_key(parts)),
            "cannot be set in a sweep: each run's results file is out_dir/file_pattern",
        )
    return join_key(parts)


def _leaves(ctx: _Ctx, where: tuple, table: dict, is_spec) -> list[tuple[str, object]]:
    """(canonical key, value) for every leaf of ``table``; nested tables are key parts unless
    ``is_spec(table)`` says the table is itself the value (a range or a distribution)."""
    out: list[tuple[str, object]] = []

    def walk(prefix: tuple[str, ...], node: dict) -> None:
        for k, v in node.items():
            parts = (*prefix, *_key_parts(k))
            if isinstance(v, dict) and not is_spec(v):
                if not v:
                    raise ctx.error((*where, join_key(parts)), "is an empty table")
                walk(parts, v)
            else:
                out.append((_check_scenario_key(ctx, where, parts), v))

    walk((), table)
    seen: set[str] = set()
    for key, _ in out:
        if key in seen:
            raise ctx.error((*where, key), "is given twice")
        seen.add(key)
    return out


def _never_spec(_: dict) -> bool:
    return False


# A table with any range (distribution) key is a range (distribution), so that a misspelt
# key inside it is reported as such rather than read as a deeper scenario key.
def _is_range(v: dict) -> bool:
    return any(k in _RANGE_KEYS for k in v)


def _is_distribution(v: dict) -> bool:
    return any(k in _DISTRIBUTIONS for k in v)


def _table(ctx: _Ctx, where: tuple, value: object, what: str) -> dict:
    if not isinstance(value, dict):
        raise ctx.error(where, f"must be {what}", value)
    return value


def _fixed(ctx: _Ctx, value: object) -> dict[str, object]:
    table = _table(ctx, ("set",), value, "a table of scenario keys and values ([set])")
    return dict(_leaves(ctx, ("set",), table, _never_spec))


def _check_overlaps(ctx: _Ctx, fixed: dict, axes: list[Axis]) -> None:
    """Two keys where one contains the other (``robot.p.q0`` and ``robot.p.q0.joint_1``)
    would depend on the order they are applied in: refuse them, naming both."""
    keys = [(k, "set") for k in fixed] + [(k, f"sweep.{a.kind}") for a in axes for k in a.keys]
    parts = [(split_key(k) or (k,), k, where) for k, where in keys]
    for i, (pa, ka, wa) in enumerate(parts):
        for pb, kb, wb in parts[i + 1 :]:
            if is_prefix(pa, pb) or is_prefix(pb, pa):
                same = "is also set" if ka == kb else f"overlaps {kb}, set"
                raise SweepError(
                    f"{ctx.source}: {ka} (in {wa}) {same} in {wb}; give each parameter once."
                )


# --------------------------------------------------------------------------- axes


def _axes(ctx: _Ctx, value: object) -> list[Axis]:
    sweep = _table(ctx, ("sweep",), value, "a table of grid, range, zip and random tables")
    axes: list[Axis] = []
    for kind, body in sweep.items():
        if kind not in _KINDS:
            raise ctx.error(
                ("sweep", kind),
                f"unknown kind of sweep ({_hint(kind, _KINDS)}allowed: {', '.join(_KINDS)})",
            )
        if kind == "grid":
            axes += _grid(ctx, _table(ctx, ("sweep", kind), body, "a table of value lists"))
        elif kind == "range":
            axes += _ranges(ctx, _table(ctx, ("sweep", kind), body, "a table of ranges"))
        else:
            # one table or an array of tables ([[sweep.zip]]), each table one axis
            groups = body if isinstance(body, list) else [body]
            for i, group in enumerate(groups):
                where = ("sweep", kind, i) if isinstance(body, list) else ("sweep", kind)
                group = _table(ctx, where, group, "a table")
                axes.append(
                    _zip(ctx, where, group) if kind == "zip" else _random(ctx, where, group)
                )
    return axes


def _values(ctx: _Ctx, where: tuple, key: str, value: object) -> list:
    if not isinstance(value, list):
        raise ctx.error(
            (*where, key),
            "must be a list of values (write [x] for one value, or put a fixed value in [set])",
            value,
        )
    if not value:
        raise ctx.error((*where, key), "is an empty list, which would make the sweep empty")
    return value


def _grid(ctx: _Ctx, table: dict) -> list[Axis]:
    where = ("sweep", "grid")
    return [
        Axis("grid", (key,), tuple((v,) for v in _values(ctx, where, key, value)))
        for key, value in _leaves(ctx, where, table, _never_spec)
    ]


def _zip(ctx: _Ctx, where: tuple, table: dict) -> Axis:
    leaves = _leaves(ctx, where, table, _never_spec)
    if not leaves:
        raise ctx.error(where, "is an empty table")
    lists = [(key, _values(ctx, where, key, value)) for key, value in leaves]
    first_key, first = lists[0]
    for key, values in lists[1:]:
        if len(values) != len(first):
            raise ctx.error(
                (*where, key),
                f"has {len(values)} values but {first_key} has "
                f"{len(first)}; zipped lists must have the same length",
            )
    keys = tuple(k for k, _ in lists)
    return Axis("zip", keys, tuple(zip(*(v for _, v in lists), strict=True)))


#: Integers in ranges and draws must fit a signed 64-bit integer (numpy's, HDF5's).
INT64_MAX = 2**63 - 1


def _number(ctx: _Ctx, path: tuple, value: object) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ctx.error(path, "must be a finite number", value)
    if isinstance(value, int):
        if abs(value) > INT64_MAX:
            raise ctx.error(path, "is an integer beyond the 64-bit range (+-9.2e18)", value)
    elif not math.isfinite(value):
        raise ctx.error(path, "must be a finite number", value)
    return value


def _finite_points(ctx: _Ctx, path: tuple, points: list) -> list:
    """The values of a range or draw, refused when they overflow float64 (e.g. a span of
    -1e308 .. 1e308 has no finite width)."""
    if not all(math.isfinite(p) for p in points):
        raise ctx.error(path, "gives values beyond the float64 range (the span overflows)")
    return points


def _ranges(ctx: _Ctx, table: dict) -> list[Axis]:
    where = ("sweep", "range")
    axes = []
    for key, spec in _leaves(ctx, where, table, _is_range):
        path = (*where, key)
        if not isinstance(spec, dict):
            raise ctx.error(
                path,
                "must be a table like { start = 0.1, stop = 0.5, num = 5 } "
                "or { start = 0.1, stop = 0.5, step = 0.1 }",
                spec,
            )
        for part in spec:
            if part not in _RANGE_KEYS:
                raise ctx.error(
                    (*path, part),
                    f"unknown key in a range ({_hint(part, _RANGE_KEYS)}"
                    f"allowed: {', '.join(_RANGE_KEYS)})",
                )
        for part in ("start", "stop"):
            if part not in spec:
                raise ctx.error((*path, part), "is required in a range")
        start = _number(ctx, (*path, "start"), spec["start"])
        stop = _number(ctx, (*path, "stop"), spec["stop"])
        if ("num" in spec) == ("step" in spec):
            raise ctx.error(path, "needs exactly one of num (how many values) and step")
        scale = spec.get("scale", "linear")
        if scale not in ("linear", "log"):
            raise ctx.error((*path, "scale"), 'must be "linear" or "log"', scale)
        if not math.isfinite(float(stop) - float(start)):
            raise ctx.error(path, "spans more than the float64 range", [start, stop])
        if "num" in spec:
            num = spec["num"]
            if isinstance(num, bool) or not isinstance(num, int) or not 1 <= num <= MAX_RUNS:
                raise ctx.error((*path, "num"), f"must be an integer from 1 to {MAX_RUNS}", num)
            if scale == "log":
                if not (start > 0 and stop > 0):
                    raise ctx.error(path, "a log range needs start and stop greater than 0")
                values = np.geomspace(start, stop, num)
            else:
                values = np.linspace(start, stop, num)
            points = _finite_points(ctx, path, [float(v) for v in values])
        else:
            if "scale" in spec:
                raise ctx.error((*path, "scale"), "goes with num, not with step")
            step = _number(ctx, (*path, "step"), spec["step"])
            if step == 0 or (stop - start) * step < 0:
                raise ctx.error(
                    (*path, "step"), f"must be non-zero and lead from {start} to {stop}", step
                )
            # start + k step, not a running sum, so rounding does not accumulate; the stop
            # is included when it is hit to within a millionth of a step. The quotient is
            # taken in float64 and checked before it becomes a count: a step of 5e-324 or a
            # span of 1e308 makes it overflow to inf.
            quotient = (float(stop) - float(start)) / float(step)
            if not quotient + 1 <= MAX_RUNS:
                raise ctx.error(
                    (*path, "step"),
                    f"gives {quotient + 1:.3g} values from {start} to {stop}, more than {MAX_RUNS}",
                    step,
                )
            count = int(math.floor(quotient + 1e-6)) + 1
            exact = all(isinstance(x, int) for x in (start, stop, step))
            points = [start + k * step if exact else float(start + k * step) for k in range(count)]
            _finite_points(ctx, path, points)
        axes.append(Axis("range", (key,), tuple((v,) for v in points)))
    return axes


def _random(ctx: _Ctx, where: tuple, table: dict) -> Axis:
    body = dict(table)
    for part in ("seed", "samples"):
        if part not in body:
            raise ctx.error(
                (*where, part),
                "is required in a random table (seed makes the "
                "draws repeatable, samples is how many)",
            )
    seed, samples = body.pop("seed"), body.pop("samples")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ctx.error((*where, "seed"), "must be an integer >= 0", seed)
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_RUNS:
        raise ctx.error((*where, "samples"), f"must be an integer from 1 to {MAX_RUNS}", samples)
    leaves = _leaves(ctx, where, body, _is_distribution)
    if not leaves:
        raise ctx.error(
            where, 'has no parameter to draw (e.g. "contact.mu" = { uniform = [0.1, 0.9] })'
        )
    rng = np.random.default_rng(seed)
    columns = []
    # One generator per table, keys drawn in file order: the same file gives the same values.
    for key, spec in leaves:
        columns.append(_draw(ctx, (*where, key), spec, rng, samples))
    keys = tuple(k for k, _ in leaves)
    return Axis("random", keys, tuple(zip(*columns, strict=True)))


def _draw(ctx: _Ctx, path: tuple, spec: object, rng, n: int) -> list:
    example = (
        "must be a table with one distribution: { uniform = [lo, hi] }, { loguniform = "
        "[lo, hi] }, { normal = [mean, std] }, { integers = [lo, hi] } or { choice = [a, ...] }"
    )
    if not isinstance(spec, dict) or len(spec) != 1:
        raise ctx.error(path, example, spec)
    dist, args = next(iter(spec.items()))
    p = (*path, dist)
    if dist not in _DISTRIBUTIONS:
        raise ctx.error(
            p,
            f"unknown distribution ({_hint(dist, _DISTRIBUTIONS)}allowed: "
            f"{', '.join(_DISTRIBUTIONS)})",
        )
    if dist == "choice":
        if not isinstance(args, list) or not args:
            raise ctx.error(p, "must be a non-empty list of values", args)
        return [args[int(i)] for i in rng.integers(0, len(args), size=n)]
    if not isinstance(args, list) or len(args) != 2:
        raise ctx.error(p, "must be a list of two numbers", args)
    a, b = (_number(ctx, p, x) for x in args)
    if dist == "integers":
        if not (isinstance(a, int) and isinstance(b, int)) or a > b:
            raise ctx.error(p, "must be two integers [lo, hi] with lo <= hi (both included)", args)
        return [int(x) for x in rng.integers(a, b, size=n, endpoint=True)]
    if dist == "normal":
        if b < 0:
            raise ctx.error(p, "needs a standard deviation >= 0 (the second number)", args)
        return _finite_points(ctx, p, [float(x) for x in rng.normal(a, b, size=n)])
    if a > b:
        raise ctx.error(p, "must be [lo, hi] with lo <= hi", args)
    if dist == "loguniform":
        if a <= 0:
            raise ctx.error(p, "needs lo > 0", args)
        draws = np.exp(rng.uniform(math.log(a), math.log(b), size=n))
        return _finite_points(ctx, p, [float(x) for x in draws])
    if not math.isfinite(float(b) - float(a)):
        raise ctx.error(p, "spans more than the float64 range", args)
    return _finite_points(ctx, p, [float(x) for x in rng.uniform(a, b, size=n)])
