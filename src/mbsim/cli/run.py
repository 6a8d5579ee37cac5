"""``mbsim run``: simulate a URDF robot or a TOML scenario and write an HDF5 results file.

Progress goes to stderr (rich), the summary (or ``--json``) to stdout. Exit codes: 0 complete,
1 the simulation failed, 2 bad input, 130 interrupted (Ctrl-C or SIGTERM; the file says
``interrupted`` and holds every step up to the stop).
"""

from __future__ import annotations

import json
import shlex
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import typer

from mbsim.cli import mesh_paths
from mbsim.cli.main import check_interrupt, deferred_interrupt
from mbsim.errors import MbsimError

# The simulator, the scenario loader and the results module are imported inside the functions
# that use them: they load numpy, numba and h5py (~1 s), which `mbsim run --help` must not pay.


def run(
    source: str = typer.Argument(
        None, help="URDF of the robot, a .toml scenario, or sample:NAME (see `mbsim samples`)."
    ),
    env: list[str] = typer.Option(None, "--env", help="Environment URDF (repeatable)."),
    floor: bool = typer.Option(None, "--floor/--no-floor", help="Built-in ground plane z = 0."),
    duration: float = typer.Option(None, "--duration", help="Simulated time, s."),
    dt: float = typer.Option(None, "--dt", help="Time step, s."),
    formulation: str = typer.Option(None, help="os | rmc | mc | nmc | nmc-os."),
    solver: str = typer.Option(None, help="lemke | pgs."),
    mu: float = typer.Option(None, "--mu", help="Friction coefficient."),
    restitution: float = typer.Option(None, "--restitution", help="Coefficient of restitution."),
    friction_directions: int = typer.Option(None, help="Edges of the friction polyhedron."),
    base: str = typer.Option(None, "--base", help="fixed | floating (single robot)."),
    set_: list[str] = typer.Option(
        None,
        "--set",
        help="Override a scenario key: --set contact.mu=0.3 (repeatable; VALUE is read as TOML: "
        '0.5, true, [0, 1], { mode = "torque", torque = 1.0 }; a bare word is text).',
    ),
    out: Path = typer.Option(None, "--out", "-o", help="Results file (default: NAME.h5)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing results file."),
    record_every: int = typer.Option(None, help="Record every K-th step."),
    record_contacts: bool = typer.Option(None, "--record-contacts", help="Store every contact."),
    body_poses: bool = typer.Option(
        None, "--body-poses/--no-body-poses", help="Store every body's pose (default: on)."
    ),
    srdf: Path = typer.Option(
        None, "--srdf", help="SRDF whose <disable_collisions> pairs are not checked."
    ),
    self_collision: bool = typer.Option(
        None, "--self-collision/--no-self-collision", help="Check the robot's own links."
    ),
    keep_initial_overlaps: bool = typer.Option(
        False,
        "--keep-initial-overlaps",
        help="Check link pairs that overlap at the initial state too (ignored by default).",
    ),
    place_on_floor: bool = typer.Option(
        None,
        "--place-on-floor",
        help="Set the base height so the lowest collision point rests on the floor z = 0.",
    ),
    package_dir: list[str] = mesh_paths.PACKAGE_DIR,
    allow_outside_paths: bool = mesh_paths.ALLOW_OUTSIDE_PATHS,
    from_: Path = typer.Option(
        None, "--from", help="Repeat the run recorded in this results file."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Simulate and write trajectories, contact events and diagnostics to HDF5."""
    flags = {
        "environments": env or None,
        "floor": floor,
        "duration": duration,
        "dt": dt,
        "formulation": formulation,
        "solver": solver,
        "mu": mu,
        "restitution": restitution,
        "friction_directions": friction_directions,
        "base": base,
        "output": str(out) if out is not None else None,
        "record_every": record_every,
        "record_contacts": record_contacts,
        "body_poses": body_poses,
        "srdf": str(srdf) if srdf is not None else None,
        "self_collision": self_collision,
        "ignore_initial_overlaps": False if keep_initial_overlaps else None,
        "place_on_floor": place_on_floor,
    }
    flags = {k: v for k, v in flags.items() if v is not None}
    # imports, a results file read (--from), kernels compiled or loaded from numba's cache:
    # a Ctrl-C is raised after them, not inside (cli/sigint.py); no file exists yet
    with deferred_interrupt():
        from mbsim.simcore import warmup
        from mbsim.simulator import Simulator

        overrides = _overrides(set_ or [])
        scenario = _scenario(source, from_, flags, overrides)
        # on a cold numba cache, the contact step compiles in a helper process from now on
        warmup.start(warmup.early_jobs(scenario))
        sim = Simulator(
            scenario,
            package_dirs=mesh_paths.parse_package_dirs(package_dir or []),
            allow_outside_paths=allow_outside_paths,
        )
    sc = sim.scenario
    print_notes(sim.lint, "mbsim run")
    command = " ".join(shlex.quote(a) for a in ["mbsim", *sys.argv[1:]])
    stop = {"requested": False}

    def request_stop(signum, frame):
        # finish the current step and its writes, then stop: no half-written records
        stop["requested"] = True

    # a Ctrl-C remembered so far (before main armed its handler) ends the command now,
    # before this handler replaces main's and the run starts
    check_interrupt()
    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    warmup.start_clock()
    compiled0 = warmup.compile_seconds()
    try:
        with warmup.compile_ahead(warmup.jobs(sim)), _progress(sim, quiet or as_json) as progress:
            summary = sim.run_to_file(
                command, force=force, progress=progress, should_stop=lambda: stop["requested"]
            )
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if summary.status != "complete":
        # "interrupted by the user ...": the status is the message's first word already
        said = summary.message.split(" ", 1)[0] == summary.status
        what = summary.message if said else f"{summary.status}: {summary.message}"
        typer.echo(f"mbsim: {what} (results so far in {sc.output.path})", err=True)
        raise typer.Exit(130 if summary.status == "interrupted" else 1)
    _print_summary(summary, sc, as_json, warmup.compile_seconds() - compiled0)


def print_notes(notes: list[str], who: str) -> None:
    """The loader's warnings and the start-pose notes (mbsim.start_pose), on stderr before
    the first step."""
    for note in notes:
        typer.echo(f"{who}: note: {note}", err=True)


def _overrides(items: list[str]) -> dict:
    from mbsim.io.scenario import parse_value

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise MbsimError(f"--set {item!r} must look like KEY=VALUE, e.g. contact.mu=0.3")
        value = value.strip()
        parsed = parse_value(value)
        if parsed == value and value[:1] in ("{", "[", '"', "'"):  # parse_value kept the text
            # meant as a TOML table, list or string, but not one: kept as text, it would be
            # refused later as a string, which hides the real mistake (an unquoted word)
            raise MbsimError(
                f"--set {item!r}: {value} is not a TOML value (tables {{ .. }} and lists [ .. ] "
                'are read as TOML, so their words need quotes: { mode = "torque", torque = 1.0 })'
            )
        out[key.strip()] = parsed
    return out


def _scenario(source, from_, flags, overrides):
    from mbsim.io.scenario import load_scenario, scenario_from_urdf
    from mbsim.samples.catalog import bundled_dir

    if from_ is not None:
        if source is not None:
            raise MbsimError("give either a URDF/scenario or --from RESULTS.h5, not both")
        return _from_results(from_, flags, overrides)
    if source is None:
        raise MbsimError("mbsim run needs a URDF, a .toml scenario, sample:NAME or --from FILE")
    if source.endswith(".toml"):
        if source.startswith("sample:"):
            path = bundled_dir() / source[len("sample:") :]
            if not path.is_file():
                raise MbsimError(f"{source}: no such bundled scenario (see `mbsim samples list`)")
            source = str(path)
        return load_scenario(source, overrides, flags=flags)
    return scenario_from_urdf(source, overrides, **flags)


def _from_results(path: Path, flags, overrides):
    from mbsim.io.results import load_results
    from mbsim.io.scenario import load_scenario_text

    path = path.resolve()
    if not path.is_file():
        raise MbsimError(f"{path}: results file does not exist")
    results = load_results(path)
    if results.controller == "python":
        raise MbsimError(
            f"--from {path.name}: this run was driven by a Python controller "
            f"({results.controller_name or 'unnamed'}), which the file does not hold, so it "
            "cannot be replayed; rerun it from Python with Simulator.run(controller=...)"
        )
    text = results.scenario_toml
    if "output" not in flags:
        raise MbsimError(f"--from {path.name}: give --out for the new results file")
    from mbsim.io.files import recorded_file_change

    for f, digest in results.input_files.items():
        change = recorded_file_change(f, digest)
        if change:  # a different input would not repeat the run: refuse rather than drift
            raise MbsimError(
                f"--from {path.name}: its input file {f} has {change} since the run (sha256 "
                "recorded in /scenario), so the run cannot be repeated; to run with the file "
                "as it is now, run the scenario itself (the file's /scenario/toml)"
            )
    return load_scenario_text(str(text), source=path, overrides=overrides, flags=flags)


@contextmanager
def _progress(sim, quiet):
    """A rich progress bar on stderr for the run; yields its ``progress`` callback (None
    when quiet)."""
    if quiet:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    n = sim.scenario.simulation.n_steps
    cols = (
        TextColumn("[bold]t = {task.fields[t]:.3f} s"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("{task.fields[rate]:.0f} steps/s, {task.fields[nc]} contacts"),
        TimeRemainingColumn(),
    )
    start = time.perf_counter()
    with Progress(*cols, transient=True, console=_stderr_console()) as bar:
        task = bar.add_task("run", total=n, t=0.0, rate=0.0, nc=0)

        def progress(step, total, t, nc):
            rate = step / max(time.perf_counter() - start, 1e-9)
            bar.update(task, completed=step, t=t, rate=rate, nc=nc)

        yield progress


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


#: compile time (s) within a run below which the summary does not mention it
COMPILE_NOTE_SECONDS = 0.5


def _print_summary(summary, sc, as_json, compiled=0.0):
    """The run's summary; ``compiled``: the seconds of its wall time spent compiling numba
    kernels (or waiting for the compile-ahead helper), said when it is noticeable, with the
    rate without them, so a first run's rate is not taken for mbsim's speed."""
    d = summary.as_dict()
    d["events"] = event_counts(summary.events)
    d["results"] = str(sc.output.path)
    d["compile_seconds"] = compiled
    if as_json:
        typer.echo(json.dumps(d, indent=2))
        return
    ev = ", ".join(f"{v} {k}" for k, v in d["events"].items() if v) or "none"
    lines = [
        f"mbsim run: {summary.status}, {summary.steps} steps, {summary.sim_time:.6g} s simulated "
        f"in {summary.wall_seconds:.3g} s ({d['steps_per_second'] or 0:.0f} steps/s, "
        f"real-time factor {summary.real_time_factor:.3g})" + _compile_note(summary, compiled),
        f"events: {ev}",
        f"max penetration: {summary.max_penetration:.3g} m; worst LCP residual: "
        f"{summary.worst_lcp_residual:.3g}; impacts that gained energy: {summary.energy_gains}",
        f"energy gained: {summary.energy_sources.text()}",
        f"results: {sc.output.path}",
    ]
    if summary.max_velocity_ratio > 0.0:
        lines.insert(
            3,
            f"largest |v| / velocity limit: {summary.max_velocity_ratio:.3g} "
            f"({summary.max_velocity_joint}; velocity limits are reported, not enforced)",
        )
    if summary.saturated_steps:
        lines.insert(
            3,
            f"steps with a joint force clamped at its URDF effort: {summary.saturated_steps} "
            "(/trajectory/tau_limit)",
        )
    if summary.softened_steps:
        lines.insert(
            3,
            f"steps solved with softened recovery (their LCP had no solution with it): "
            f"{summary.softened_steps}, the first at {summary.softened_first}",
        )
    if sc.closures or summary.max_constraint_error > 0.0:
        lines.insert(
            3, f"max loop-closure / mimic error: {summary.max_constraint_error:.3g} (m or rad)"
        )
    typer.echo("\n".join(lines))


def event_counts(events: dict) -> dict:
    """The run's event counts by kind, as the results file has them: every kind of its
    ``/events/kind`` enum (``schema.EVENT_KINDS``) in code order, 0 for a kind that did not
    occur (what ``mbsim inspect`` shows as ``events_by_kind``), then any other key of
    ``events``. The run loop's summary only holds the kinds it met (and ``contact_end``,
    counted after every step), so ``--json`` listed ``contact_end: 0`` and no other zero."""
    from mbsim.io.results.schema import EVENT_KINDS

    out = {k: int(events.get(k, 0)) for k in EVENT_KINDS}
    out.update({k: int(v) for k, v in events.items() if k not in out})
    return out


def _compile_note(summary, compiled: float) -> str:
    """'; X s of it compiling kernels (first run only), N steps/s without' when compiling took
    at least COMPILE_NOTE_SECONDS of the run, else ''."""
    if compiled < COMPILE_NOTE_SECONDS:
        return ""
    rest = summary.wall_seconds - compiled
    rate = f", {summary.steps / rest:.0f} steps/s without" if rest > 0.0 and summary.steps else ""
    return f"; {compiled:.3g} s of it compiling kernels (first run only){rate}"
