"""The start note for a link made of many collision shapes (start_pose.many_shape_notes):
ERD anymal_c's base (11 primitives) lying on the floor has up to 36 contacts and slow
degenerate LCPs; contact.manifold = "body-pair" keeps 4 a body pair and plane."""

from __future__ import annotations

import pytest

from mbsim.io.scenario import load_scenario_text
from mbsim.simulator import Simulator
from mbsim.start_pose import MANY_SHAPES, many_shape_notes


def _urdf(n: int) -> str:
    boxes = "".join(
        f'<collision><origin xyz="{0.1 * i} 0 0"/><geometry><box size="0.05 0.05 0.05"/>'
        "</geometry></collision>"
        for i in range(n)
    )
    return f"""<?xml version="1.0"?>
<robot name="r"><link name="body"><inertial><mass value="1"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>{boxes}</link>
</robot>"""


def _sim(tmp_path, n, manifold="shape-pair"):
    (tmp_path / "r.urdf").write_text(_urdf(n))
    text = f"""
[simulation]
duration = 0.01
[robot.r]
urdf = "r.urdf"
base = "floating"
base_pose = {{ xyz = [0, 0, 0.5] }}
[contact]
floor = true
manifold = "{manifold}"
[output]
path = "{tmp_path / "run.h5"}"
"""
    return Simulator(load_scenario_text(text, base_dir=tmp_path))


def _scene(tmp_path, n, manifold="shape-pair"):
    return _sim(tmp_path, n, manifold).scene


def test_a_link_with_many_shapes_is_named_once(tmp_path):
    (note,) = many_shape_notes(_scene(tmp_path, MANY_SHAPES + 1))
    assert f"r/body ({MANY_SHAPES + 1} shapes)" in note
    assert "--set contact.manifold=body-pair" in note and "\n" not in note


@pytest.mark.parametrize(("n", "manifold"), [(MANY_SHAPES, "shape-pair"), (12, "body-pair")])
def test_no_note_at_the_limit_or_with_the_body_pair_manifold(tmp_path, n, manifold):
    assert many_shape_notes(_scene(tmp_path, n, manifold)) == []


@pytest.mark.parametrize(("n", "manifold"), [(MANY_SHAPES + 1, "shape-pair"), (12, "body-pair")])
def test_the_simulator_carries_the_note_with_its_other_notes(tmp_path, n, manifold):
    """The note is one of the Simulator's start notes (``lint``), which `mbsim run` prints and
    a Python user reads, exactly when many_shape_notes makes one."""
    sim = _sim(tmp_path, n, manifold)
    mine = [s for s in sim.lint if "made of many collision shapes" in s]
    assert mine == many_shape_notes(sim.scene)
    assert len(mine) == (1 if manifold == "shape-pair" else 0)
