"""``mbsim bench pendulum --links N``: one row of the paper's Table 2 on this machine."""

from __future__ import annotations

import json

import typer

from mbsim.bench import DEFAULT_DURATION, PAPER_TABLE_2, run_pendulum

app = typer.Typer(help="Benchmarks from the papers.", no_args_is_help=True)


@app.command("pendulum")
def pendulum(
    links: int = typer.Option(12, "--links", "-n", help="Number of pendulum links."),
    duration: float = typer.Option(DEFAULT_DURATION, help="Simulated time per run, s."),
    formulations: str = typer.Option("os,nmc-os", help="Comma-separated formulations."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON on stdout."),
) -> None:
    """Time the Sec. 8 pendulum (dt 0.1 ms) with each formulation; report the speed-up."""
    if links < 1:
        raise typer.BadParameter(f"--links {links} must be at least 1")
    rows = [run_pendulum(links, f.strip(), duration) for f in formulations.split(",") if f.strip()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        sizes = ", ".join(f"{k}x{v}" for k, v in r["lcp_sizes"].items()) or "none"
        typer.echo(
            f"{r['formulation']:7s} {r['links']} links: {r['wall_s']:.3f} s wall for "
            f"{r['steps']} steps ({r['steps_per_s']:.0f} steps/s); LCP sizes {sizes}"
        )
    by = {r["formulation"]: r for r in rows}
    if "os" in by and "nmc-os" in by:
        speedup = by["nmc-os"]["wall_s"] / by["os"]["wall_s"]
        paper = PAPER_TABLE_2.get(links)
        ref = f" (paper: {paper[5]})" if paper else ""
        typer.echo(f"NMC/OS-to-OS speed-up: {speedup:.1f}{ref}")
