"""``mbsim view``: replay a results file in 3D -- a self-contained HTML page (three.js inlined,
opens from disk in any browser) or an animated glTF binary (``--format glb``). See docs/view.md.
"""

from __future__ import annotations

from pathlib import Path

import typer

from mbsim.errors import MbsimError

FORMATS = ("html", "glb")
#: Output size above which a warning is printed (bytes): browsers get slow with larger pages.
WARN_BYTES = 50 * 1000 * 1000


def view(
    results: Path = typer.Argument(..., help="Results file (HDF5) written by mbsim run."),
    output: Path = typer.Option(
        None, "--output", "-o", help="Output file (default: the results file's name, .html/.glb)."
    ),
    fmt: str = typer.Option("html", "--format", "-f", help="html (default) or glb."),
    max_frames: int = typer.Option(
        None, "--max-frames", help="Frame budget: longer runs are subsampled (default 2000)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
) -> None:
    """Write a replay of a results file: an HTML page that plays it, or an animated glTF."""
    from mbsim.cli.export import check_output, write_atomic
    from mbsim.view.replay import FRAME_BUDGET, load_replay

    if fmt not in FORMATS:
        raise MbsimError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}.")
    if max_frames is not None and max_frames < 2:
        raise MbsimError(f"--max-frames {max_frames} must be at least 2.")
    if output is None:
        output = Path(results.name).with_suffix("." + fmt)
    if output.resolve() == results.resolve():
        raise MbsimError(f"{output}: is the results file itself; give another output file.")
    check_output(output, force)
    rp = load_replay(results, max_frames=max_frames or FRAME_BUDGET)
    if fmt == "html":
        from mbsim.view.html import page

        data = page(rp).encode("utf-8")
    else:
        from mbsim.view.glb import glb_bytes

        data = glb_bytes(rp)
    write_atomic(output, lambda fh: fh.write(data))
    for note in rp.notes:
        typer.echo(f"note: {note}", err=True)
    size = len(data)
    typer.echo(f"{output}: {size / 1e6:.2f} MB, {len(rp.times)} frames")
    if size > WARN_BYTES:
        typer.echo(
            f"warning: {output} is {size / 1e6:.0f} MB (above 50 MB); lower --max-frames "
            "or the mesh resolution if the viewer is slow to open it.",
            err=True,
        )
