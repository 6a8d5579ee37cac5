"""``mbsim plot``: a figure of joint positions, body heights or speeds, energy and events
against time, drawn with matplotlib (the ``plot`` extra).

Axes units: time in s, joint positions in rad (revolute) or m (prismatic), body heights (z of
the body frame origin, world frame) in m, body speeds (of the body frame origin) in m/s,
energies in J. Figure size in pixels (``--width``/``--height``) at ``--dpi``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import typer

from mbsim.cli.export import check_output, write_atomic
from mbsim.errors import MbsimError
from mbsim.io.results import Results, load_results
from mbsim.io.results.labels import body_label, coordinate_labels, coordinate_trees

QUANTITIES = ("height", "speed")
FORMATS = ("png", "pdf", "svg")
_KIND_COLORS = {
    "contact_begin": "tab:green",
    "contact_end": "tab:gray",
    "impact": "tab:red",
    "stick": "tab:blue",
    "slip": "tab:orange",
    "limit_begin": "tab:purple",
    "limit_end": "tab:pink",
}
MAX_PIXELS = 20000


def plot(
    results: Path = typer.Argument(..., help="Results file (HDF5) written by mbsim run."),
    joint: list[str] = typer.Option(
        [], "--joint", "-j", help="Joint (or q coordinate) to plot; repeat for several."
    ),
    body: list[str] = typer.Option([], "--body", "-b", help="Body to plot; repeat for several."),
    quantity: list[str] = typer.Option(
        [],
        "--quantity",
        "-q",
        help="height or speed, one per --body in order (one value applies to all).",
    ),
    energy: bool = typer.Option(False, "--energy", help="Plot kinetic, potential, total energy."),
    tracking: bool = typer.Option(
        False, "--tracking", help="Plot q* - q of every joint under position control."
    ),
    tau: bool = typer.Option(
        False, "--tau", help="Plot the actuator forces of the --joint joints (or of all)."
    ),
    events: bool = typer.Option(False, "--events", help="Mark events with vertical lines."),
    output: Path = typer.Option(None, "--output", "-o", help="Figure file (.png, .pdf, .svg)."),
    width: int = typer.Option(1200, "--width", help="Figure width in pixels."),
    height: int = typer.Option(800, "--height", help="Figure height in pixels."),
    dpi: int = typer.Option(100, "--dpi", help="Dots per inch (text and line scale)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing figure file."),
) -> None:
    """Plot joints, body heights/speeds and energy against time (all joints and energy when
    nothing is selected)."""
    if output is None:
        raise MbsimError("mbsim plot needs an output file: -o figure.png.")
    fmt = output.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise MbsimError(
            f"{output}: unknown figure format {output.suffix or '(no suffix)'!r}; "
            f"use one of {', '.join('.' + f for f in FORMATS)}."
        )
    for name, value in (("--width", width), ("--height", height)):
        if not 16 <= value <= MAX_PIXELS:
            raise MbsimError(f"{name} {value} is out of range: give 16 to {MAX_PIXELS} pixels.")
    if not 10 <= dpi <= 2000:
        raise MbsimError(f"--dpi {dpi} is out of range: give 10 to 2000.")
    figure_cls = _matplotlib()
    check_output(output, force, inputs=[results])
    r = load_results(results)
    panels = select_panels(r, joint, body, quantity, energy, tracking, tau)
    fig = figure_cls(figsize=(width / dpi, height / dpi), dpi=dpi, layout="constrained")
    draw(fig, r, panels, events)
    write_atomic(output, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi))
    typer.echo(str(output))


def select_panels(
    r: Results,
    joint: list[str],
    body: list[str],
    quantity: list[str],
    energy: bool,
    tracking: bool,
    tau: bool,
) -> list[tuple[str, str, list[tuple[str, np.ndarray]]]]:
    """The panels of the command line's selection (``--joint`` selects the forces under
    ``--tau``, else the positions); every joint series labelled ``tree/joint``."""
    panels = build_panels(r, [] if tau else joint, body, quantity, energy, tau or tracking)
    if tau:
        panels.append(tau_panel(r, joint))
    if tracking:
        panels.append(tracking_panel(r))
    return panels


def _matplotlib():
    """matplotlib's Figure class (no pyplot: no global state, no GUI backend)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MbsimError(
            "mbsim plot needs matplotlib, which is not installed: from the mbsim checkout, "
            "run .venv/bin/pip install -e '.[plot]' (or pip install matplotlib into the "
            "environment that runs mbsim)."
        ) from exc
    return Figure


# --------------------------------------------------------------------------- data


def _q_trees(r: Results) -> list[int]:
    """Tree index of every q coordinate."""
    return coordinate_trees(r, "q")


def _split(name: str, r: Results) -> tuple[int | None, str]:
    """``tree/name`` -> (tree index, name); a bare name -> (None, name)."""
    tree, sep, rest = name.partition("/")
    if sep and tree in r.tree_names:
        return r.tree_names.index(tree), rest
    return None, name


def joint_columns(r: Results, name: str, kind: str = "q") -> list[int]:
    """q (or v, ``kind="v"``) columns of a joint (all coordinates of a free joint) or of one
    coordinate, named ``tree/joint`` or by a bare name that only one tree has (MbsimError
    otherwise, listing the ``tree/joint`` names it matches)."""
    names = r.q_names if kind == "q" else r.v_names
    tree, bare = _split(name, r)
    trees = coordinate_trees(r, kind)
    hits = [
        k
        for k, q in enumerate(names)
        if (q == bare or q.startswith(bare + ".")) and (tree is None or trees[k] == tree)
    ]
    labels = coordinate_labels(r, kind)
    if not hits:
        raise MbsimError(
            f"{r.path}: --joint {name!r}: no such joint (joints: {', '.join(labels[:20])}"
            f"{', ...' if len(labels) > 20 else ''})."
        )
    if tree is None and len({trees[k] for k in hits}) > 1:
        matches = list(dict.fromkeys(f"{r.tree_names[trees[k]]}/{bare}" for k in hits))
        raise MbsimError(
            f"{r.path}: --joint {name!r} is ambiguous: it names {', '.join(matches)}; "
            "give one of these tree/joint names."
        )
    return hits


def body_index(r: Results, name: str) -> int:
    """Index of a body by name (``tree/name`` when several trees have it)."""
    tree, bare = _split(name, r)
    hits = [
        b
        for b, n in enumerate(r.body_names)
        if n == bare and (tree is None or int(r.body_trees[b]) == tree)
    ]
    if not hits:
        raise MbsimError(
            f"{r.path}: --body {name!r}: no such body (bodies: {', '.join(r.body_names[:20])}"
            f"{', ...' if len(r.body_names) > 20 else ''})."
        )
    if len(hits) > 1:
        matches = [_link_label(r, bare, b) for b in hits]
        raise MbsimError(
            f"{r.path}: --body {name!r} is ambiguous: it names {', '.join(matches)}; "
            "give one of these tree/link names."
        )
    return hits[0]


def link_frame(r: Results, name: str) -> tuple[int, np.ndarray]:
    """(body index, 3-vector offset in the body frame, m) of a link merged into its parent
    body by a fixed joint (the Panda hand): the link's origin is the body's pose applied to
    the offset. The offset is not in the results file, so the run's URDFs are loaded again
    from the scenario the file stores; MbsimError when no link has that name."""
    from mbsim.io.scenario import build_scenario_model, load_scenario_text

    tree, bare = _split(name, r)
    try:
        model, _, _ = build_scenario_model(load_scenario_text(r.scenario_toml, source=r.path))
    except MbsimError:
        # the URDFs moved or changed: no link can be found, so the name is not a body's
        body_index(r, name)  # raises the usual "no such body" sentence
        raise
    hits = [
        (b, T)
        for (t, link), (b, T) in model.link_frames.items()
        if link == bare and b >= 0 and (tree is None or t == tree)
    ]
    if len(hits) != 1:
        body_index(r, name)  # raises the usual "no such body" / "ambiguous" sentence
    b, T = hits[0]
    return int(b), np.asarray(T, dtype=float)[:3, 3]


def _rotate(quat: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Rotate the vector ``x`` by unit quaternions (n, 4) [w, x, y, z]: (n, 3)."""
    w, u = quat[:, :1], quat[:, 1:]
    t = 2.0 * np.cross(u, np.broadcast_to(x, u.shape))
    return x + w * t + np.cross(u, t)


def body_series(r: Results, b: int, quantity: str, offset=None) -> np.ndarray:
    """Height (z, m) or speed (m/s, by central differences of the position) of body ``b``'s
    origin, or of the point ``offset`` (body frame, m) on it."""
    pos = r.body_pose[:, b, :3]  # type: ignore[index]
    if offset is not None:
        pos = pos + _rotate(r.body_pose[:, b, 3:7], offset)  # type: ignore[index]
    if quantity == "height":
        return pos[:, 2]
    if len(r.time) < 2:
        return np.full(len(r.time), np.nan)
    vel = np.gradient(pos, r.time, axis=0)
    return np.linalg.norm(vel, axis=1)


def tau_panel(r: Results, joints: list[str]):
    """The actuator forces (/trajectory/tau, N m or N) of ``joints`` (all when empty),
    labelled ``tree/joint`` (:func:`coordinate_labels`)."""
    if r.tau is None:
        raise MbsimError(f"{r.path}: records no actuator forces (written by an older mbsim).")
    cols = [k for name in joints for k in joint_columns(r, name, "v")]
    cols = list(dict.fromkeys(cols)) or list(range(len(r.v_names)))
    labels = coordinate_labels(r, "v")
    return ("actuator forces", "tau [N m or N]", [(labels[k], r.tau[:, k]) for k in cols])


def tracking_panel(r: Results):
    """q*(t) - q(t) of every joint under position control (``pd`` or a ``position`` control
    of the scenario stored in the file; targets re-evaluated from it, CSVs read again)."""
    from mbsim.control.signals import SignalFn
    from mbsim.io.scenario import Signal, load_scenario_text

    sc = load_scenario_text(r.scenario_toml, source=r.path)
    labels = coordinate_labels(r, "q")
    series = []
    for robot in sc.robots:
        targets = {j: Signal(g.target) for j, g in robot.pd.items()}
        targets.update({j: c.target for j, c in robot.control.items() if c.mode == "position"})
        for j, signal in targets.items():
            (k,) = joint_columns(r, f"{robot.name}/{j}")
            f = SignalFn(signal)
            ref = np.array([f(t)[0] for t in r.time])
            series.append((labels[k], ref - r.q[:, k]))
    if not series:
        raise MbsimError(f"{r.path}: --tracking: no joint of this run is under position control.")
    return ("tracking error", "q* - q [rad or m]", series)


def _link_label(r: Results, name: str, b: int) -> str:
    """``tree/link`` of the body or merged link ``name`` on body ``b`` (bare without tree
    names in the file)."""
    return body_label(r, b, _split(name, r)[1])


def _body_or_link(r: Results, name: str) -> tuple[int, np.ndarray | None]:
    """(body, None) for a body's name, (body, offset) for a link merged into a body."""
    try:
        return body_index(r, name), None
    except MbsimError:
        return link_frame(r, name)


def build_panels(
    r: Results,
    joints: list[str],
    bodies: list[str],
    quantities: list[str],
    energy: bool,
    extra: bool = False,
) -> list[tuple[str, str, list[tuple[str, np.ndarray]]]]:
    """(title, y label, [(label, series)]) per panel, validating every selection; ``extra``:
    other panels (--tau, --tracking) were asked for, so no default selection."""
    if not joints and not bodies and not energy and not extra:
        joints = list(dict.fromkeys(n.split(".")[0] for n in coordinate_labels(r, "q")))
        energy = True
    panels = []
    if joints:
        labels = coordinate_labels(r, "q")
        cols = [k for name in joints for k in joint_columns(r, name)]
        series = [(labels[k], r.q[:, k]) for k in dict.fromkeys(cols)]
        panels.append(("joint positions", "q [rad or m]", series))
    if quantities and not bodies:
        raise MbsimError("--quantity needs a --body to apply to.")
    if bodies:
        if not quantities:
            quantities = ["height"]
        if len(quantities) == 1:
            quantities = quantities * len(bodies)
        if len(quantities) != len(bodies):
            raise MbsimError(
                f"give one --quantity per --body ({len(bodies)} bodies, "
                f"{len(quantities)} quantities), or a single one for all."
            )
        for q in quantities:
            if q not in QUANTITIES:
                raise MbsimError(f"--quantity {q!r} is not one of {', '.join(QUANTITIES)}.")
        if r.body_pose is None:
            raise MbsimError(
                f"{r.path}: body heights and speeds need body poses, which this run did not "
                "record; rerun with output.body_poses = true (--body-poses)."
            )
        where = {name: _body_or_link(r, name) for name in bodies}
        for q in QUANTITIES:
            series = [
                (
                    f"{_link_label(r, name, where[name][0])} {q}",
                    body_series(r, where[name][0], q, where[name][1]),
                )
                for name, qq in zip(bodies, quantities, strict=True)
                if qq == q
            ]
            if series:
                unit = "z [m]" if q == "height" else "speed [m/s]"
                panels.append((f"body {q}", unit, series))
    if energy:
        panels.append(
            (
                "energy",
                "energy [J]",
                [(n, r.energy[:, k]) for k, n in enumerate(("kinetic", "potential", "total"))],
            )
        )
    return panels


# --------------------------------------------------------------------------- drawing


def draw(fig, r: Results, panels, events: bool) -> None:
    """One axes per panel, shared time axis; events as vertical lines coloured by kind."""
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    kinds = r.event_kind_names() if events and len(r.events.get("time", [])) else None
    for ax, (title, ylabel, series) in zip(axes, panels, strict=True):
        for label, y in series:
            ax.plot(r.time, y, label=label, linewidth=1.0)
        if kinds is not None:
            for kind in dict.fromkeys(kinds):
                t = r.events["time"][kinds == kind]
                ax.vlines(
                    t,
                    0,
                    1,
                    transform=ax.get_xaxis_transform(),
                    colors=_KIND_COLORS.get(kind, "k"),
                    linewidth=0.6,
                    alpha=0.7,
                    label=f"{kind} ({len(t)})",
                )
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if len(series) <= 16 or kinds is not None:
            ax.legend(loc="best", fontsize="small", ncols=2 if len(series) > 6 else 1)
    axes[-1].set_xlabel("time [s]")
    status = "" if r.status == "complete" else f" [{r.status}]"
    fig.suptitle(f"{os.path.basename(r.path)}{status}")


__all__ = [
    "plot",
    "build_panels",
    "coordinate_labels",
    "select_panels",
    "joint_columns",
    "body_index",
    "body_series",
    "draw",
]
