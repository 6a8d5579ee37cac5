"""Issue 19's acceptance over two corpora of real URDFs: pybullet_data (every URDF but the
random_urdfs folder) and example-robot-data (ERD).

(a) every URDF that PyBullet loads also loads in ``mbsim info``, fixed and floating, with nv
    equal to Pinocchio's (``buildModelFromUrdf``, with ``JointModelFreeFlyer`` when floating)
    where Pinocchio loads it; where it does not because of PyBullet's ``spherical`` joints
    (urdfdom has no such type), equal to the DoF count read from the XML (:func:`xml_nv`:
    3 per spherical joint). A root link that carries no mass together with the links welded
    to it is the world in mbsim also with a floating base (PyBullet fixes such a base too):
    for those the floating nv is compared with Pinocchio's fixed-base nv. The mass is read
    from the XML here, independently of mbsim's loader.
(b) a 1 s floating drop onto the floor from 0.1 m above the resting height (dt = 1 ms,
    tests/drop_corpus.py) completes with no solver failure and no divergence;
(c) where PyBullet's same drop (joint motors off, same start pose and friction) comes to
    rest, the resting height of the floating link's frame is within REST_TOL = 1 cm of
    PyBullet's.

The default run drops a few rigid objects and robots of each corpus; ``pytest -m slow
tests/test_corpus_drop.py`` drops the rest and loads the rest of ERD (about 25 minutes on 2
shared cores), and
``python benchmarks/bench_pybullet_corpus.py --markdown`` prints the table of docs/results.md.
Files that cannot pass are listed below with the reason; the solver failures still open in
issue 19 are non-strict xfails, to be removed when they pass.

Skipped, saying why, when pybullet (test extra), Pinocchio or example-robot-data is missing.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from lxml import etree

pytest.importorskip("pybullet", reason="pybullet is not installed (test extra)")
pytest.importorskip("pinocchio", reason="Pinocchio is not installed (test extra)")
import pybullet_data  # noqa: E402

import drop_corpus  # noqa: E402

PB = Path(pybullet_data.getDataPath())
PB_URDFS = sorted(p for p in PB.rglob("*.urdf") if "random_urdfs" not in p.parts)


def _erd_robots() -> Path | None:
    try:
        from pin_oracle import robots_dir

        folder = robots_dir()
    except Exception:  # noqa: BLE001 -- not installed: the ERD tests skip
        return None
    return folder if folder.is_dir() else None


ERD = _erd_robots()
ERD_URDFS = sorted(ERD.rglob("*.urdf")) if ERD else []
#: PyBullet finds ERD's package:// meshes from the folder holding example-robot-data/
ERD_SEARCH = ERD.parent.parent if ERD else None

#: (a) PyBullet loads these, mbsim refuses them with one sentence: file -> why
NOT_LOADED = {
    "husky/husky.urdf": "a xacro source ($(optenv ...) in an <origin>): run xacro first",
}

#: (b) drops that end in a solver failure or diverge: file -> (why, strict). The non-strict ones
#: failed (Lemke, numerical) in the run of 2026-11-25 (docs/results.md). kinova and
#: anymal-kinova, which start with joints outside their limits, run since a step whose LCP has
#: no solution with its recovery terms is solved with them softened (simcore/stepper.py,
#: tests/test_softened_recovery.py). racecar_differential and tiago_pro
#: (parts flush where no joint can part them) pass since start_pose ignores link pairs that
#: touch at the start; icub, romeo_small and alex_sake_hands since open meshes collide as
#: their hulls and float32 convex meshes are convex; alex_psyonic_hands since a candidate's
#: verifiability is judged on its componentwise rounding bound || |M| |z| || (docs/results.md).
DROP_FAILS: dict[str, tuple[str, bool]] = {}

#: (c) resting heights more than 1 cm from PyBullet's: file -> (why, strict)
REST_DIFFERS = {
    # knees free, legs straight down: an unstable equilibrium that mbsim's drop keeps (the
    # robot and its start are symmetric, its contacts exact) and PyBullet's iterative solver
    # leaves (its legs fold: 0.345 m against 0.077 m)
    "erd:quadruped_description/urdf/quadruped.urdf": (
        "stands in an unstable equilibrium that PyBullet leaves",
        False,
    ),
}

#: a few rigid objects (boxes, a sphere, convex-decomposed meshes) and robots, for the
#: default run (< 1 min together)
DEFAULT_DROPS = [
    "cube_small.urdf",
    "sphere_small.urdf",
    "domino/domino.urdf",
    "duck_vhacd.urdf",
    "r2d2.urdf",
    "quadruped/minitaur_v1.urdf",
    "erd:anymal_b_simple_description/robots/anymal.urdf",
    "erd:double_pendulum_description/urdf/double_pendulum_simple.urdf",
]
#: ERD files whose load is checked in the default run (all of them in the slow run: loading
#: every ERD mesh takes minutes)
DEFAULT_ERD_LOADS = [
    "erd:panda_description/urdf/panda.urdf",
    "erd:solo_description/robots/solo12.urdf",
    "erd:double_pendulum_description/urdf/double_pendulum.urdf",
    "erd:romeo_description/urdf/romeo.urdf",
]


def _name(path: Path) -> str:
    if ERD and path.is_relative_to(ERD):
        return "erd:" + path.relative_to(ERD).as_posix()
    return path.relative_to(PB).as_posix()


def _search_path(path: Path) -> Path | None:
    return ERD_SEARCH if ERD and path.is_relative_to(ERD) else None


def _cases(default: list[str] | None, marks_for=None) -> list:
    """pytest params over both corpora: the ``default`` names in the default run, the rest
    (every file when ``default`` is None) marked slow; ``marks_for(name)`` adds xfail marks."""
    params = []
    for path in PB_URDFS + ERD_URDFS:
        name = _name(path)
        marks = list(marks_for(name)) if marks_for else []
        if default is not None and name not in default:
            marks.append(pytest.mark.slow)
        params.append(pytest.param(path, id=name, marks=marks))
    return params


def _xfail(table: dict):
    def marks(name):
        if name in table:
            why, strict = table[name]
            yield pytest.mark.xfail(strict=strict, reason=why)

    return marks


def massless_root(path: Path) -> bool:
    """Whether the URDF's root link and the links welded to it by fixed joints have no mass
    (read from the XML: ``<inertial><mass>``, missing = 0)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
    robot = etree.parse(str(path), parser).getroot()
    joints = robot.findall("joint")
    children = {j.find("child").get("link") for j in joints if j.find("child") is not None}
    links = {e.get("name"): e for e in robot.findall("link")}
    roots = [n for n in links if n not in children]
    welded, grew = set(roots[:1]), True
    while grew:
        grew = False
        for j in joints:
            parent, child = j.find("parent"), j.find("child")
            if j.get("type") == "fixed" and parent is not None and child is not None:
                if parent.get("link") in welded and child.get("link") not in welded:
                    welded.add(child.get("link"))
                    grew = True
    mass = 0.0
    for name in welded:
        element = links[name].find("inertial/mass") if name in links else None
        if element is not None:
            mass += float(element.get("value", "0"))
    return mass == 0.0


#: DoFs of each URDF joint type (``spherical``: PyBullet's ball joint, 3 rotations)
JOINT_DOFS = {"revolute": 1, "continuous": 1, "prismatic": 1, "fixed": 0, "floating": 6,
              "planar": 3, "spherical": 3}  # fmt: skip


def _joints(path: Path) -> list:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=True)
    return etree.parse(str(path), parser).getroot().findall("joint")


def _joint_types(path: Path) -> set[str]:
    return {j.get("type") for j in _joints(path)}


def xml_nv(path: Path, floating: bool) -> int:
    """nv read from the XML alone: JOINT_DOFS per joint, plus 6 for a floating base."""
    return sum(JOINT_DOFS[j.get("type")] for j in _joints(path)) + (6 if floating else 0)


# ------------------------------------------------------------------------ (a) load and nv
def _load_cases():
    params = []
    for path in PB_URDFS + ERD_URDFS:
        name = _name(path)
        marks = []
        if name in NOT_LOADED:
            marks.append(pytest.mark.xfail(strict=True, reason=NOT_LOADED[name]))
        if name.startswith("erd:") and name not in DEFAULT_ERD_LOADS:
            marks.append(pytest.mark.slow)
        params.append(pytest.param(path, id=name, marks=marks))
    return params


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("path", _load_cases())
def test_loads_in_info_with_pinocchio_nv(path, floating):
    if not drop_corpus.bullet_loads(path):
        pytest.skip("PyBullet does not load it either")
    info, output = drop_corpus.mbsim_info(path, floating)
    assert info is not None, output
    world_root = floating and massless_root(path)
    if world_root:
        assert any("kept fixed as the world frame" in w for w in info["warnings"])
    expected = drop_corpus.pinocchio_nv(path, floating and not world_root)
    if expected is None and _joint_types(path) & {"spherical"}:
        expected = xml_nv(path, floating and not world_root)
    if expected is not None:  # bicycle, biped2d, microtaur: Pinocchio refuses them
        assert info["nv"] == expected


# ------------------------------------------------------------------------ (b), (c) the drop
@pytest.fixture(scope="module")
def drops():
    """One drop per file, shared by (b) and (c)."""
    return {}


def _drop(drops, path):
    name = _name(path)
    if name not in drops:
        if not drop_corpus.bullet_loads(path):
            drops[name] = None
        elif name in NOT_LOADED:
            drops[name] = None
        else:
            drops[name] = drop_corpus.drop_row(path, name, search_path=_search_path(path))
    if drops[name] is None:
        pytest.skip("not loaded (see test_loads_in_info_with_pinocchio_nv)")
    return drops[name]


@pytest.mark.parametrize("path", _cases(DEFAULT_DROPS, _xfail(DROP_FAILS)))
def test_floating_drop_completes(drops, path):
    row = _drop(drops, path)
    assert row.ok, row.message


@pytest.mark.parametrize("path", _cases(DEFAULT_DROPS, _xfail({**DROP_FAILS, **REST_DIFFERS})))
def test_resting_height_matches_pybullet(drops, path):
    row = _drop(drops, path)
    if row.compared != "yes":
        pytest.skip(f"not compared: {row.compared}")
    assert row.ok, row.message
    assert math.isfinite(row.z_mbsim)
    assert abs(row.difference) <= drop_corpus.REST_TOL, (row.z_mbsim, row.z_bullet)
