"""The bad-input corpus: every case is a command line and the files it needs.

A case is run by ``test_corpus.py`` as ``mbsim ARGS`` in a fresh folder holding its files.
``expect`` says what a correct mbsim does with it:

- ``"error"``: exit 2 and one line ``mbsim: error: ...`` on stderr (bad input);
- ``"usage"``: exit 2 and Typer's usage block (``Usage:`` / ``Try ... --help`` / the boxed
  error), the documented form for a command line that does not parse (README);
- ``"failed"``: exit 1 and one line ``mbsim: failed: ...`` (the simulation failed; the results
  file says ``failed``);
- ``"ok"``: exit 0 (the input is valid);
- ``"warning"``: exit 0, and a stderr line before the run names the doubtful value (accepted
  as published URDFs need it, but never silently).

``names`` are fragments the error line must contain (the file, key or value at fault), so a
misleading sentence fails too. ``xfail`` names the issue-17 item and the owner area of a case
that is wrong today; the mark is strict, so the fix flips it.

The files are built here from small templates (no data files to keep in step with the code):
a one-link robot, a scenario around it, a sweep around that scenario, and results files written
by the tests' own bouncing-ball writer, then damaged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# ----------------------------------------------------------------------------- owners
URDF = "issue 17, loader (branch urdf)"


@dataclass
class Case:
    id: str
    args: list[str]
    files: dict[str, str | bytes | Callable[[Path], None]] = field(default_factory=dict)
    expect: str = "error"
    names: tuple[str, ...] = ()
    xfail: str | None = None
    #: files the case must leave byte-for-byte as they were (inputs, pre-existing outputs)
    keep: tuple[str, ...] = ()
    #: an output the case must not leave behind passed off as complete
    out: str | None = "o.h5"
    timeout: float = 600.0


# ----------------------------------------------------------------------------- templates
def robot(inertial: str = "", collision: str = "", joints: str = "", extra_links: str = "") -> str:
    inertial = inertial or inertial_xml()
    collision = collision or '<collision><geometry><sphere radius="0.1"/></geometry></collision>'
    return f"""<?xml version="1.0"?>
<robot name="r">
  <link name="body">{inertial}{collision}</link>
  {extra_links}
  {joints}
</robot>
"""


def inertial_xml(mass="1.0", ixx="0.01", iyy="0.01", izz="0.01", origin="") -> str:
    return (
        f'<inertial>{origin}<mass value="{mass}"/><inertia ixx="{ixx}" iyy="{iyy}" '
        f'izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>'
    )


def arm(joint_attrs: str = "", joint_body: str = "", link2: str = "") -> str:
    """Two links and a revolute joint between them (the joint gets extra XML)."""
    link2 = link2 or f'<link name="arm">{inertial_xml()}</link>'
    return robot(
        extra_links=link2,
        joints=f'<joint name="j1" type="revolute" {joint_attrs}><parent link="body"/>'
        f'<child link="arm"/><origin xyz="0 0 0.2"/><axis xyz="0 1 0"/>'
        f'<limit lower="-1" upper="1" effort="10" velocity="1"/>{joint_body}</joint>',
    )


def box(size: str) -> str:
    return robot(collision=f'<collision><geometry><box size="{size}"/></geometry></collision>')


BALL = robot()
RUN = ["--duration", "0.01", "--dt", "1e-3", "--out", "o.h5", "--quiet"]
# floating above the floor (a 0.1 m sphere at z = 0.5 m): nothing but the case's fault can fail
RUN_FLOOR = ["--floor", "--base", "floating", "--set", "robot.r.q0.root_joint.z=0.5", *RUN]

SCENARIO = """[simulation]
duration = 0.01
dt = 1e-3

[robot.r]
urdf = "r.urdf"
base = "floating"
q0 = { root_joint.z = 0.1 }   # resting on the floor: contact from step 0

[environment.floor]
urdf = "sample:ground"

[contact]
mu = 0.5
margin = 1e-3
friction_directions = 4

[output]
path = "o.h5"
"""


def scenario(old: str = "", new: str = "") -> dict:
    text = SCENARIO
    if old:
        assert old in text, old
        text = text.replace(old, new, 1)
    return {"s.toml": text, "r.urdf": BALL}


SWEEP = 'scenario = "s.toml"\nout_dir = "runs"\n'


def sweep(body: str) -> dict:
    return {"w.toml": SWEEP + body, **scenario()}


def chain(n: int) -> str:
    links = "".join(f'<link name="l{i}">{inertial_xml()}</link>' for i in range(n + 1))
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
        f'<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/></joint>'
        for i in range(1, n + 1)
    )
    return f'<?xml version="1.0"?><robot name="c">{links}{joints}</robot>'


# ----------------------------------------------------------------------------- results files
def ball_results(path: Path) -> None:
    """A valid results file: the tests' bouncing ball (tests/test_results.py), 1500 rows with
    impacts and contact events."""
    from test_results import write_ball_file

    write_ball_file(path, 1500)


def damaged(edit: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        ball_results(path)
        edit(path)

    return make


def _flip_bytes(path: Path) -> None:
    """Every 16th byte after the first 2 KiB (superblock and root group left intact)."""
    data = bytearray(path.read_bytes())
    for k in range(2048, len(data), 16):
        data[k] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _h5(edit: Callable) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        import h5py

        with h5py.File(path, "r+") as h5:
            edit(h5)

    return run


def _trajectory_dataset(h5) -> None:
    del h5["trajectory"]
    h5["trajectory"] = [1.0, 2.0, 3.0]


def _scalar_time(h5) -> None:
    del h5["trajectory/time"]
    h5["trajectory/time"] = 1.0


def _bad_event_kind(h5) -> None:
    """A kind number outside the enum (h5py writes the base integer unchecked)."""
    h5["events/kind"][0] = 99


#: damage -> (how, the issue-17 item when it is wrong today, the commands that read that part)
RESULTS_EDITS = {
    "flipped-bytes": (damaged(_flip_bytes), None, "all"),
    "truncated": (damaged(_truncate), None, "all"),
    "trajectory-dataset": (
        damaged(_h5(_trajectory_dataset)),
        None,
        "all",
    ),
    "scalar-time": (
        damaged(_h5(_scalar_time)),
        None,
        "all",
    ),
    "bad-event-kind": (
        damaged(_h5(_bad_event_kind)),
        None,
        ("inspect", "inspect-events", "export-events"),
    ),
    "text-file": (lambda p: p.write_text("not hdf5\n"), None, "all"),
    "empty-file": (lambda p: p.write_bytes(b""), None, "all"),
}

RESULTS_COMMANDS = {
    "inspect": ["inspect", "in.h5"],
    "inspect-events": ["inspect", "in.h5", "--events"],
    "export": ["export", "in.h5", "--format", "csv", "--what", "trajectory", "-o", "x.csv"],
    "export-events": ["export", "in.h5", "--format", "csv", "--what", "events", "-o", "x.csv"],
    "plot": ["plot", "in.h5", "--quantity", "height", "--body", "ball", "-o", "x.png"],
    "run-from": ["run", "--from", "in.h5", "--out", "o.h5", "--quiet"],
    "view": ["view", "in.h5", "-o", "x.html"],
}


# ----------------------------------------------------------------------------- the cases
def _cases() -> list[Case]:
    c: list[Case] = []
    add = c.append

    # --- URDF files given to `run` (and `info`)
    def urdf(id, text, *names, args=RUN_FLOOR, xfail=None, expect="error", command="run"):
        files = {"r.urdf": text} if text is not None else {}
        add(Case(f"urdf-{id}", [command, "r.urdf", *args], files, expect, names, xfail))

    urdf("missing", None, "r.urdf", "does not exist")
    urdf("empty", "", "r.urdf")
    urdf("not-xml", "robot, not xml", "r.urdf")
    urdf("binary", b"\xff\xfe\x00\x01\x80" * 20, "r.urdf")
    urdf("unclosed-tag", '<robot name="r"><link name="a"></robot>', "r.urdf", "line")
    urdf("root-not-robot", '<?xml version="1.0"?><model name="r"/>', "r.urdf", "robot")
    urdf("no-links", '<?xml version="1.0"?><robot name="r"/>', "r.urdf")
    urdf("negative-mass", robot(inertial_xml(mass="-1")), "body", "-1")
    urdf("nan-mass", robot(inertial_xml(mass="nan")), "body", "nan")
    urdf("inf-mass", robot(inertial_xml(mass="inf")), "body", "inf")
    urdf("400-digit-mass", robot(inertial_xml(mass="9" * 400)), "body")
    urdf("not-psd", robot(inertial_xml(ixx="1", iyy="1", izz="1").replace('ixy="0"', 'ixy="2"')),
         "body", "semidefinite")  # fmt: skip
    urdf(
        "mass-1e300",
        arm(link2=f'<link name="arm">{inertial_xml(mass="1e300")}</link>'),
        "arm",
        args=RUN,
    )
    urdf(
        "inertia-1e300",
        arm(link2=f'<link name="arm">{inertial_xml(ixx="1e300", iyy="1e300", izz="1e300")}</link>'),
        "arm",
        args=RUN,
    )
    urdf("box-zero", box("0.1 0 0.1"), "body")
    urdf("box-negative", box("0.1 -1 0.1"), "body", "-1")
    urdf("box-nan", box("1 nan 1"), "body", "nan")
    urdf("box-two-sizes", box("1 1"), "body")
    for size in ("1e200", "1e300"):
        urdf(
            f"box-{size}",
            box(f"{size} {size} {size}"),
            "body",
        )
    urdf(
        "sphere-1e200",
        robot(collision='<collision><geometry><sphere radius="1e200"/></geometry></collision>'),
        "body",
    )
    urdf(
        "mesh-scale-1e300",
        robot(
            collision='<collision><geometry><mesh filename="cube.stl" scale="1e300 1e300 1e300"/>'
            "</geometry></collision>"
        ),
        "body",
    )
    c[-1].files["cube.stl"] = _cube_stl
    urdf("mesh-missing", robot(collision='<collision><geometry><mesh filename="nope.stl"/>'
         "</geometry></collision>"), "nope.stl")  # fmt: skip
    urdf("mesh-not-a-mesh", robot(collision='<collision><geometry><mesh filename="r.urdf"/>'
         "</geometry></collision>"), "r.urdf")  # fmt: skip
    urdf(
        "mesh-outside-folder",
        robot(
            collision='<collision><geometry><mesh filename="../outside.stl"/>'
            "</geometry></collision>"
        ),  # fmt: skip
        "outside.stl",
        "outside",
    )
    c[-1].files["../outside.stl"] = _cube_stl
    urdf(
        "mesh-file-etc-passwd",
        robot(
            collision='<collision><geometry><mesh filename="file:///etc/passwd"/>'
            "</geometry></collision>"
        ),  # fmt: skip
        "file:///etc/passwd",
    )
    urdf("unknown-joint-type", arm().replace('type="revolute"', 'type="hinge"'), "j1", "hinge",
         args=RUN)  # fmt: skip
    urdf("joint-missing-child", arm().replace('<child link="arm"/>', '<child link="nope"/>'),
         "nope", args=RUN)  # fmt: skip
    urdf("joint-zero-axis", arm().replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>'), "j1",
         args=RUN)  # fmt: skip
    urdf("joint-nan-origin", arm().replace('<origin xyz="0 0 0.2"/>', '<origin xyz="0 nan 0"/>'),
         "j1", args=RUN)  # fmt: skip
    urdf("two-roots", robot(extra_links=f'<link name="loose">{inertial_xml()}</link>'), "loose",
         args=RUN)  # fmt: skip
    urdf(
        "joint-cycle",
        arm(
            joint_body="",
        ).replace(
            "</robot>",
            '<joint name="j2" type="fixed"><parent link="arm"/><child link="body"/></joint>'
            "</robot>",
        ),
        "body",
        args=RUN,
    )
    urdf("entity-expansion", '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
         '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><robot name="&b;"/>', "r.urdf",
         args=RUN)  # fmt: skip
    urdf("external-dtd", '<?xml version="1.0"?><!DOCTYPE r SYSTEM "http://example.invalid/r.dtd">'
         '<robot name="r"/>', "r.urdf", args=RUN)  # fmt: skip
    urdf(
        "triangle-inertia",
        robot(inertial_xml(ixx="1", iyy="1", izz="3")),
        "body",
        "triangle",
        expect="warning",
    )
    urdf(
        "negative-effort",
        arm().replace('effort="10"', 'effort="-10"'),
        "j1",
        "effort",
        args=RUN,
    )
    urdf(
        "negative-velocity-limit",
        arm().replace('velocity="1"', 'velocity="-1"'),
        "j1",
        "velocity",
        args=RUN,
    )
    urdf(
        "negative-damping",
        arm(joint_body='<dynamics damping="-5"/>'),
        "j1",
        "damping",
        args=RUN,
    )
    urdf(
        "mimic-cycle",
        _mimic_cycle(),
        "mimic",
        args=RUN,
    )
    urdf(
        "chain-1200",
        chain(1200),
        "r.urdf",
        args=[],
        command="info",
        expect="ok",
    )
    c[-1].out = None

    # --- scenario files
    def scen(id, old, new, *names, xfail=None, expect="error", extra=()):
        add(Case(f"scenario-{id}", ["run", "s.toml", "--quiet", *extra], scenario(old, new),
                 expect, names, xfail))  # fmt: skip

    scen("not-toml", "[contact]", "[contact", "s.toml", "TOML")
    scen("unknown-key", "mu = 0.5", "muu = 0.5", "contact.muu")
    scen("dt-negative", "dt = 1e-3", "dt = -1e-3", "simulation.dt")
    scen("dt-nan", "dt = 1e-3", "dt = nan", "simulation.dt")
    scen("dt-inf", "dt = 1e-3", "dt = inf", "simulation.dt")
    scen("dt-string", "dt = 1e-3", 'dt = "fast"', "simulation.dt")
    scen("duration-negative", "duration = 0.01", "duration = -1.0", "simulation.duration")
    scen(
        "duration-400-digits",
        "duration = 0.01",
        "duration = " + "9" * 400,
        "simulation.duration",
    )
    scen(
        "record-every-beyond-int64",
        "[output]",
        f"[output]\nrecord_every = {2**70}",
        "output.record_every",
    )
    scen(
        "friction-directions-2e70",
        "friction_directions = 4",
        f"friction_directions = {2**70}",
        "contact.friction_directions",
    )
    scen(
        "friction-directions-1e6",
        "friction_directions = 4",
        "friction_directions = 1000000",
        "contact.friction_directions",
    )
    scen("mu-negative", "mu = 0.5", "mu = -0.5", "contact.mu")
    scen(
        "margin-1e30",
        "margin = 1e-3",
        "margin = 1e30",
        "contact.margin",
    )
    scen("robot-urdf-missing", 'urdf = "r.urdf"', 'urdf = "nope.urdf"', "nope.urdf")
    scen("robot-urdf-directory", 'urdf = "r.urdf"', 'urdf = "."', "robot.r.urdf")
    scen("q0-unknown-joint", "root_joint.z = 0.1", "nope = 0.5", "nope")
    scen("q0-nan", "root_joint.z = 0.1", "root_joint.z = nan", "root_joint")
    scen(
        "output-name-300-bytes",
        'path = "o.h5"',
        f'path = "{"x" * 300}.h5"',
        "bytes",
    )
    scen(
        "output-nul-byte",
        'path = "o.h5"',
        'path = "o\\u0000.h5"',
        "NUL",
    )
    scen("output-is-directory", 'path = "o.h5"', 'path = "."', "directory")
    for shape in ('box size="1e200 1e200 1e200"', 'sphere radius="1e300"'):
        size = shape.split('"')[1].split()[0]
        scen(
            f"{shape.split()[0]}-{size}-on-floor",
            "",
            "",
            "body",
        )
        c[-1].files["r.urdf"] = robot(
            collision=f"<collision><geometry><{shape}/></geometry></collision>"
        )
    scen("empty", "", "", "s.toml", "no robot")
    c[-1].files["s.toml"] = ""

    # --- command-line flags and --set overrides on the scenario
    def flags(id, args, *names, xfail=None, expect="error"):
        add(Case(f"flags-{id}", ["run", "s.toml", "--quiet", *args], scenario(), expect, names,
                 xfail))  # fmt: skip

    flags("dt-not-a-number", ["--dt", "abc"], expect="usage")
    flags("duration-negative", ["--duration", "-1"], "duration")
    flags(
        "duration-1e300-dt-1e-10",
        ["--duration", "1e300", "--dt", "1e-10"],
        "duration",
    )
    flags(
        "dt-1e-300",
        ["--dt", "1e-300"],
        "dt",
    )
    flags("formulation-unknown", ["--formulation", "xyz"], "xyz")
    flags("solver-unknown", ["--solver", "simplex"], "simplex")
    flags("record-every-zero", ["--record-every", "0"], "record_every")
    flags(
        "friction-directions-2e70",
        ["--friction-directions", str(2**70)],
        "friction_directions",
    )
    flags("set-no-equals", ["--set", "contact.mu"], "contact.mu")
    flags("set-bad-number", ["--set", "contact.mu=abc"], "contact.mu")
    flags("set-unknown-key", ["--set", "contact.muu=0.3"], "contact.muu")
    flags("set-unknown-robot", ["--set", "robot.nope.q0.j=1"], "nope")
    flags("set-dt-zero", ["--set", "simulation.dt=0"], "simulation.dt")
    flags("set-duration-1e400", ["--set", "simulation.duration=1e400"], "simulation.duration")
    flags(
        "set-margin-1e300",
        ["--set", "contact.margin=1e300"],
        "contact.margin",
    )
    flags(
        "set-margin-1e30",
        ["--set", "contact.margin=1e30"],
        "contact.margin",
    )
    flags(
        "set-400-digit-integer",
        ["--set", "simulation.duration=" + "9" * 400],
        "simulation.duration",
    )
    # the paper's pendulum (a robot, a room, self-collision): FCL's broad phase on many shapes
    pend = ["run", "sample:pendulum-3.toml", "--duration", "0.001", "--out", "o.h5", "--quiet"]
    add(Case("pendulum-set-margin-1e300", [*pend, "--set", "contact.margin=1e300"], {}, "error",
             ("contact.margin",), None))  # fmt: skip
    for shape in ('box size="1e200 1e200 1e200"', 'sphere radius="1e300"'):
        kind, size = shape.split()[0], shape.split('"')[1].split()[0]
        add(Case(f"pendulum-env-{kind}-{size}", [*pend, "--env", "big.urdf"],
                 {"big.urdf": robot(collision=f"<collision><geometry><{shape}/></geometry>"
                                    "</collision>").replace('name="r"', 'name="big"')},
                 "error", ("big.urdf",),
                 None))  # fmt: skip
    flags("out-exists", ["--out", "r.urdf"], "r.urdf")
    c[-1].keep = ("r.urdf",)
    flags(
        "out-is-own-input-force",
        ["--out", "r.urdf", "--force"],
        "r.urdf",
    )
    c[-1].keep = ("r.urdf",)
    flags("out-directory", ["--out", "."], ".")
    flags(
        "out-name-300-bytes",
        ["--out", "y" * 300 + ".h5"],
        "yyy",
    )
    flags("from-and-source", ["--from", "s.toml"], "--from")
    flags("env-missing", ["--env", "nope.urdf"], "nope.urdf")

    # --- sweep files given to `batch --dry-run`
    def batch(id, body, *names, xfail=None, args=("--dry-run",)):
        add(Case(f"batch-{id}", ["batch", "w.toml", *args], sweep(body), "error", names, xfail))
        c[-1].out = None

    batch("not-toml", "[sweep.grid", "w.toml")
    batch("grid-not-a-list", '[sweep.grid]\n"contact.mu" = 0.3\n', "sweep.grid.contact.mu")
    batch("grid-empty-list", '[sweep.grid]\n"contact.mu" = []\n', "sweep.grid.contact.mu")
    batch("unknown-kind", '[sweep.grd]\n"contact.mu" = [1]\n', "sweep.grd")
    batch("scenario-missing", "", "nope.toml")
    c[-1].files["w.toml"] = 'scenario = "nope.toml"\n[sweep.grid]\n"contact.mu" = [0.1]\n'
    batch(
        "step-5e-324",
        '[sweep.range]\n"contact.mu" = { start = 0, stop = 1, step = 5e-324 }\n',
        "sweep.range.contact.mu.step",
    )
    batch(
        "step-span-1e308",
        '[sweep.range]\n"contact.mu" = { start = -1e308, stop = 1e308, step = 1e300 }\n',
        "sweep.range.contact.mu",
    )
    batch(
        "num-span-1e308",
        '[sweep.range]\n"contact.mu" = { start = -1.7e308, stop = 1.7e308, num = 3 }\n',
        "sweep.range.contact.mu",
    )
    batch(
        "start-400-digits",
        '[sweep.range]\n"contact.mu" = { start = ' + "9" * 400 + ", stop = 1, num = 2 }\n",
        "sweep.range.contact.mu.start",
    )
    batch(
        "integers-beyond-int64",
        f'[sweep.random]\nseed = 1\nsamples = 2\n"contact.friction_directions" = '
        f"{{ integers = [4, {2**70}] }}\n",
        "sweep.random.contact.friction_directions",
    )
    batch(
        "uniform-span-1e308",
        '[sweep.random]\nseed = 1\nsamples = 2\n"contact.mu" = { uniform = [-1.7e308, 1.7e308] }\n',
        "sweep.random.contact.mu",
    )
    batch("samples-1e30", f'[sweep.random]\nseed = 1\nsamples = {10**30}\n"contact.mu" = '
          "{ uniform = [0, 1] }\n", "samples")  # fmt: skip
    batch("seed-negative", '[sweep.random]\nseed = -1\nsamples = 2\n"contact.mu" = '
          "{ uniform = [0, 1] }\n", "seed")  # fmt: skip
    batch("jobs-zero", '[sweep.grid]\n"contact.mu" = [0.1]\n', "--jobs", args=("--jobs", "0"))
    batch("file-pattern-no-id", 'file_pattern = "run.h5"\n[sweep.grid]\n"contact.mu" = [0.1]\n',
          "file_pattern")  # fmt: skip

    # --- results files given to inspect / export / plot / run --from
    for edit, (make, why, commands) in RESULTS_EDITS.items():
        if commands == "all":
            commands = [cmd for cmd in RESULTS_COMMANDS if cmd != "export-events"]
        for cmd in commands:
            args = RESULTS_COMMANDS[cmd]
            case = Case(f"results-{edit}-{cmd}", list(args), {"in.h5": make}, "error", ("in.h5",))
            case.xfail = why
            case.keep = ("in.h5",)
            case.out = "o.h5" if cmd == "run-from" else None
            add(case)
    add(Case("results-missing-inspect", ["inspect", "nope.h5"], {}, "error", ("nope.h5",)))
    add(Case("results-directory-export", ["export", ".", "-o", "x.csv"], {}, "error", (".",)))
    add(
        Case(
            "results-export-exists",
            ["export", "in.h5", "--format", "csv", "--what", "trajectory", "-o", "x.csv"],
            {"in.h5": ball_results, "x.csv": "precious\n"},
            "error",
            ("x.csv",),
            keep=("x.csv",),
        )
    )
    add(Case("results-plot-unknown-body", ["plot", "in.h5", "--body", "nope", "--quantity",
             "height", "-o", "x.png"], {"in.h5": ball_results}, "error", ("nope",)))  # fmt: skip
    add(Case("results-export-unknown-format", ["export", "in.h5", "--format", "xls", "-o",
             "x.xls"], {"in.h5": ball_results}, "error", ("xls",)))  # fmt: skip
    return c


def _mimic_cycle() -> str:
    links = "".join(f'<link name="l{i}">{inertial_xml()}</link>' for i in range(3))
    return f"""<?xml version="1.0"?>
<robot name="m">{links}
  <joint name="a" type="revolute"><parent link="l0"/><child link="l1"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="b"/></joint>
  <joint name="b" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="a"/></joint>
</robot>
"""


def _cube_stl(path: Path) -> None:
    """A unit cube as ASCII STL (12 triangles)."""
    v = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
             (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]  # fmt: skip
    rows = ["solid cube"]
    for f in faces:
        rows += ["facet normal 0 0 0", "outer loop"]
        rows += [f"vertex {v[i][0]} {v[i][1]} {v[i][2]}" for i in f]
        rows += ["endloop", "endfacet"]
    rows.append("endsolid cube")
    path.write_text("\n".join(rows) + "\n")


CASES = _cases()
