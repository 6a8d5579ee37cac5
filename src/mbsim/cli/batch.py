"""``mbsim batch``: run a parameter sweep on local worker processes or a Dask cluster.

Parsing and printing only; the work is in :mod:`mbsim.batch`. Progress goes to stderr (one
rich bar for the sweep), the summary (or ``--json``) to stdout. Exit codes: 0 every run
complete, 1 some run failed, 2 bad input (the sweep file, the options, a file the sweep must
not overwrite), 130 the sweep was interrupted (the summary says which runs ended).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import typer

from mbsim.cli import mesh_paths
from mbsim.cli.main import check_interrupt, deferred_interrupt
from mbsim.errors import MbsimError


def default_jobs() -> int:
    """Cores this process may run on (the affinity mask, not the machine's core count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def batch(
    sweep: str = typer.Argument(..., help="Sweep file (TOML), or sample:NAME.toml."),
    jobs: int = typer.Option(
        None, "--jobs", "-j", help="Local worker processes (default: the number of cores)."
    ),
    scheduler: str = typer.Option(
        None,
        "--scheduler",
        help="Run on the Dask distributed scheduler at tcp://HOST:PORT (dask extra).",
    ),
    out_dir: Path = typer.Option(
        None, "--out-dir", help="Folder of the results and summary (default: the sweep's)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="List the runs and what would happen to each; run nothing."
    ),
    force: bool = typer.Option(
        False, "--force", help="Re-run every run, replacing the files already there."
    ),
    timeout: float = typer.Option(
        None,
        "--timeout",
        help="Seconds to wait for Dask workers when none is connected (default: 60 s at "
        "the start, then as long as it takes).",
    ),
    package_dir: list[str] = mesh_paths.PACKAGE_DIR,
    allow_outside_paths: bool = mesh_paths.ALLOW_OUTSIDE_PATHS,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Run every combination of a sweep file's parameters; one results file per run."""
    # a Ctrl-C during the imports is raised once they are done, not inside (cli/sigint.py)
    with deferred_interrupt():
        from mbsim.batch import DaskBackend, LocalBackend, load_sweep, plan_sweep, run_sweep
        from mbsim.batch.backends import WorkersGone

    if jobs is not None and scheduler is not None:
        raise MbsimError("give either --jobs (local workers) or --scheduler (Dask), not both.")
    if jobs is not None and jobs < 1:
        raise MbsimError(f"--jobs {jobs}: must be at least 1.")
    if timeout is not None and not timeout > 0:
        raise MbsimError(f"--timeout {timeout:g}: must be a positive number of seconds.")
    from dataclasses import replace

    sw = load_sweep(sweep, out_dir=out_dir)
    sw = replace(
        sw,
        package_dirs=mesh_paths.parse_package_dirs(package_dir or []),
        allow_outside_paths=allow_outside_paths,
    )
    if dry_run:
        _print_plan(sw, plan_sweep(sw, force=force), as_json)
        return
    n_jobs = jobs or default_jobs()

    def say(line: str) -> None:
        typer.echo(f"mbsim batch: {line}", err=True)

    def backend():
        if scheduler:
            wait = timeout if timeout is not None else 60.0
            return DaskBackend(scheduler, wait_workers=wait, on_wait=say)
        return LocalBackend(n_jobs)

    where = f"the Dask scheduler at {scheduler}" if scheduler else f"{n_jobs} local worker(s)"
    stop = {"requested": False}

    def request_stop(signum, frame):
        if stop["requested"]:
            raise KeyboardInterrupt  # a second Ctrl-C: stop waiting
        stop["requested"] = True
        typer.echo(
            "mbsim batch: stopping: the running runs end at their next step, finished files "
            "are kept (Ctrl-C again to stop waiting)",
            err=True,
        )

    # a Ctrl-C remembered so far (before main armed its handler) ends the command now,
    # before this handler replaces main's and the sweep starts
    check_interrupt()
    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        bar = _Bar(quiet or as_json)
        with bar:
            result = run_sweep(
                sw,
                backend,
                force=force,
                should_stop=lambda: stop["requested"],
                on_plan=bar.plan,
                on_start=bar.start,
                on_done=bar.done,
                timeout=timeout,
                on_wait=bar.say,
            )
    except WorkersGone as exc:
        typer.echo(f"mbsim batch: failed: {exc} (the summary lists the runs that ended)", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        typer.echo("mbsim batch: interrupted; the summary lists the runs that ended", err=True)
        raise typer.Exit(130) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    _print_result(result, where, as_json)
    counts = result.counts
    if result.status == "interrupted":
        raise typer.Exit(130)
    if result.status != "complete" or counts["complete"] != len(result.rows):
        raise typer.Exit(1)


class _Bar:
    """The sweep's progress bar on stderr: runs done / failed / running and the ETA."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.progress = None
        self.task = None
        self.counts = {"done": 0, "failed": 0, "running": 0}

    def __enter__(self):
        if not self.quiet:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.progress = Progress(
                TextColumn("[bold]sweep"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TextColumn(
                    "{task.fields[done]} done, {task.fields[failed]} failed, "
                    "{task.fields[running]} running"
                ),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        if self.progress is not None:
            self.progress.__exit__(*exc)
        return False

    def _update(self, advance: int = 0) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=advance, **self.counts)

    def plan(self, plan) -> None:
        todo = sum(p.action == "run" for p in plan)
        if self.progress is not None:
            reused = sum(p.action == "reuse" for p in plan)
            invalid = sum(p.action == "invalid" for p in plan)
            self.progress.console.print(
                f"mbsim batch: {len(plan)} runs: {todo} to run, {reused} reused (complete), "
                f"{invalid} invalid"
            )
            self.task = self.progress.add_task("sweep", total=todo, **self.counts)

    def say(self, line: str) -> None:
        """One line on stderr, above the bar (printed even with --quiet: waiting for
        workers must never be silent)."""
        if self.progress is not None:
            self.progress.console.print(f"mbsim batch: {line}", markup=False)
        else:
            typer.echo(f"mbsim batch: {line}", err=True)

    def start(self, p) -> None:
        self.counts["running"] += 1
        self._update()

    def done(self, p, result) -> None:
        self.counts["running"] -= 1
        key = "done" if result["status"] == "complete" else "failed"
        if result["status"] in ("complete", "failed"):
            self.counts[key] += 1
        self._update(advance=1)


def _fmt(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)


def _print_plan(sw, plan, as_json: bool) -> None:
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "sweep": str(sw.path),
                    "scenario": str(sw.scenario),
                    "out_dir": str(sw.out_dir),
                    "runs": [
                        {
                            "run_id": p.spec.run_id,
                            "file": p.spec.path.name,
                            "action": p.action,
                            "reason": p.reason,
                            "params": p.spec.params,
                        }
                        for p in plan
                    ],
                },
                indent=2,
            )
        )
        return
    n = {a: sum(p.action == a for p in plan) for a in ("run", "reuse", "invalid")}
    lines = [
        f"{sw.path.name}: {len(plan)} runs of {sw.scenario} into {sw.out_dir} "
        f"({n['run']} to run, {n['reuse']} to reuse, {n['invalid']} invalid)"
    ]
    head = ["run", "file", "action", "reason", *sw.parameters]
    table = [
        [
            str(p.spec.run_id),
            p.spec.path.name,
            p.action,
            "see below" if p.action == "invalid" else p.reason,
            *(_fmt(p.spec.params[k]) for k in sw.parameters),
        ]
        for p in plan
    ]
    widths = [max(len(r[i]) for r in [head, *table]) for i in range(len(head))]
    for r in [head, *table]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for p in plan:
        if p.action == "invalid":
            lines.append(f"run {p.spec.run_id} is invalid: {p.reason}")
    typer.echo("\n".join(lines))


def _print_result(result, where: str, as_json: bool) -> None:
    c = result.counts
    failed = [r for r in result.rows if r["status"] != "complete"]
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "sweep": str(result.sweep.path),
                    "status": result.status,
                    "runs": len(result.rows),
                    **c,
                    "wall_s": result.wall_s,
                    "out_dir": str(result.sweep.out_dir),
                    "summary_csv": str(result.csv_path),
                    "summary_h5": str(result.h5_path),
                    "not_complete": [
                        {
                            "run_id": r["run_id"],
                            "file": r["file"],
                            "status": r["status"],
                            "message": r["message"],
                        }
                        for r in failed
                    ],
                },
                indent=2,
            )
        )
        return
    lines = [
        f"mbsim batch: {result.status}: {len(result.rows)} runs, {c['complete']} complete "
        f"({c['reused']} reused), {c['failed']} failed, {c['interrupted']} interrupted, "
        f"{c['not_run']} not run, in {_duration(result.wall_s)} on {where}",
        f"summary: {result.csv_path}, {result.h5_path}",
    ]
    for r in failed:
        lines.append(f"  run {r['run_id']} ({r['file']}) {r['status']}: {r['message']}")
    typer.echo("\n".join(lines))


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else time.strftime("%H:%M:%S", time.gmtime(seconds))
