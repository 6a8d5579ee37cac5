"""The scenario -> Simulator -> collision seam: link references stay ``tree/link`` end to end.

Both cases go through a real :class:`mbsim.Simulator` built from scenario text. Expected
values come from geometry worked by hand and from closed-form Coulomb sliding, never from the
code under test.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mbsim.io.scenario import load_scenario_text
from mbsim.simulator import Simulator

SAMPLES = Path(__file__).parents[1] / "src" / "mbsim" / "sample_robots"

# Two copies of pendulum-3 (hinges at z = 10, 6, 2 m; spheres of radius 2 m centred 2 m below
# each hinge), b placed 20 m along y so the copies never touch. q = (0, pi/2, pi/2 + 0.01)
# folds link 3 back onto link 1 (tests/test_collision_filters.py works the geometry: sphere 3's
# centre is 4 sin(pi/4 - 0.005)-ish away, i.e. |c3 - c1| < 4 m = the sum of the radii).
TWO_PENDULUMS = f"""\
[simulation]
duration = 0.001
dt = 1e-3
gravity = [0.0, 0.0, 0.0]

[robot.a]
urdf = "{SAMPLES / "pendulum-3.urdf"}"
q0 = {{ joint_2 = {math.pi / 2!r}, joint_3 = {math.pi / 2 + 0.01!r} }}

[robot.b]
urdf = "{SAMPLES / "pendulum-3.urdf"}"
base_pose = {{ xyz = [0.0, 20.0, 0.0] }}
q0 = {{ joint_2 = {math.pi / 2!r}, joint_3 = {math.pi / 2 + 0.01!r} }}

[contact]
mu = 0.0
disabled_pairs = [["a/link1", "a/link3"]]
ignore_initial_overlaps = false   # the folded pairs overlap at the start: keep them checked

[output]
path = "unused.h5"
"""


def _shape(sim, name: str) -> int:
    """The one collision shape of link ``name`` (``tree/link``)."""
    found = [i for i, n in enumerate(sim.scene.links) if n == name]
    assert len(found) == 1, (name, sim.scene.links)
    return found[0]


def _touching(sim, report) -> set[frozenset]:
    c = report.contacts
    if c is None:
        return set()
    links = sim.scene.links
    return {frozenset((links[a], links[b])) for a, b in zip(c.geom_a, c.geom_b, strict=True)}


def test_disabled_pair_of_one_robot_leaves_the_other_copy_colliding():
    sim = Simulator(load_scenario_text(TWO_PENDULUMS))
    assert sim.scenario.contact.disabled_pairs == (("a/link1", "a/link3"),)
    report = sim.step()
    touching = _touching(sim, report)
    # a's pair is disabled; b's identical pair, folded the same way, still collides
    assert frozenset(("a/link1", "a/link3")) not in touching
    assert frozenset(("b/link1", "b/link3")) in touching
    # the entry names a's links only: the cross pairs a-b stay checked
    allowed = sim.scene.allowed
    assert not allowed[_shape(sim, "a/link1"), _shape(sim, "a/link3")]
    assert allowed[_shape(sim, "b/link1"), _shape(sim, "b/link3")]
    assert allowed[_shape(sim, "a/link1"), _shape(sim, "b/link3")]
    assert allowed[_shape(sim, "b/link1"), _shape(sim, "a/link3")]


BOX_URDF = """\
<robot name="box">
  <link name="box">
    <inertial>
      <mass value="1.0"/>
      <inertia ixx="0.00667" iyy="0.00667" izz="0.00667" ixy="0" ixz="0" iyz="0"/>
    </inertial>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision>
  </link>
</robot>
"""

G = 9.81  # m/s^2
V0 = 1.0  # m/s, initial sliding speed along +x
T_SLIDE = 0.3  # s: shorter than V0 / (mu g) for both mu = 0.1 (1.02 s) and the check below


def _box_scenario(tmp_path, pairs: str) -> str:
    urdf = tmp_path / "box.urdf"
    urdf.write_text(BOX_URDF)
    return f"""\
[simulation]
duration = {T_SLIDE!r}
dt = 1e-3
gravity = [0.0, 0.0, {-G!r}]

[robot.box]
urdf = "{urdf}"
base = "floating"
q0 = {{ "root_joint.z" = 0.1 }}
v0 = {{ "root_joint.vx" = {V0!r} }}

[contact]
floor = true
mu = 0.5
restitution = 0.0
{pairs}

[output]
path = "{tmp_path / "box.h5"}"
"""


@pytest.mark.parametrize("floor", ["floor", "builtin/floor"])
def test_pair_override_against_the_builtin_floor_sets_the_contact_mu(tmp_path, floor):
    """A box resting on the floor (gap 0), sliding at V0 along x: Coulomb friction decelerates
    it at mu g, so after T the speed is V0 - mu g T (closed form; the 4-direction pyramid has an
    edge along x, so it is exact for sliding along x). mu = 0.1 from the pair, not 0.5."""
    text = _box_scenario(tmp_path, f'pairs = [{{ a = "box", b = "{floor}", mu = 0.1 }}]')
    sim = Simulator(load_scenario_text(text))
    assert sim.scenario.contact.pairs[0].b == "builtin/floor"
    for _ in range(sim.scenario.simulation.n_steps):
        report = sim.step()
    assert report.n_contacts > 0
    vx = sim.v[sim.model.v_names.index("root_joint.vx")]
    # tolerance: the first step's contact set-up and LCP rounding, far below the 0.12 m/s
    # between mu = 0.1 (0.7057 m/s) and mu = 0.5 (stopped)
    assert vx == pytest.approx(V0 - 0.1 * G * T_SLIDE, abs=2e-3)


def test_pair_table_keeps_the_global_mu_elsewhere(tmp_path):
    """Without the pair the same box slides at mu = 0.5: 1 - 0.5 g 0.3 < 0, so it stops."""
    sim = Simulator(load_scenario_text(_box_scenario(tmp_path, "")))
    for _ in range(sim.scenario.simulation.n_steps):
        sim.step()
    vx = sim.v[sim.model.v_names.index("root_joint.vx")]
    assert abs(vx) < 1e-6
    assert np.isfinite(sim.q).all()


@pytest.mark.parametrize(
    ("margin", "pair_margin", "touching"), [(1e-3, 1e-2, True), (1e-2, 1e-3, False)]
)
def test_pair_margin_decides_whether_a_near_pair_is_a_contact(
    tmp_path, margin, pair_margin, touching
):
    """The box hovers 5 mm above the floor (z = 0.1 + 0.005, gravity off): a contact exactly
    when its pair's margin exceeds 5 mm, whatever the global margin (docs/scenario-format.md:
    a pair may override margin)."""
    text = _box_scenario(
        tmp_path, f'pairs = [{{ a = "box", b = "builtin/floor", margin = {pair_margin!r} }}]'
    )
    text = text.replace('"root_joint.z" = 0.1', '"root_joint.z" = 0.105')
    text = text.replace(f"gravity = [0.0, 0.0, {-G!r}]", "gravity = [0.0, 0.0, 0.0]")
    text = text.replace("floor = true\n", f"floor = true\nmargin = {margin!r}\n")
    sim = Simulator(load_scenario_text(text))
    report = sim.step()
    assert (report.n_contacts > 0) is touching
    if touching:
        assert report.contacts.gap == pytest.approx(np.full(report.n_contacts, 0.005), abs=1e-9)
