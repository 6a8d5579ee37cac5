"""One SRDF reader (mbsim.io.srdf) with the one hardened XML parser (mbsim.io.safe_xml): the
scenario and the collision scene read SRDF files the same way and fail with the same error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mbsim.collision.scene import CollisionScene
from mbsim.errors import GeometryError, MbsimError, SrdfError
from mbsim.io.scenario import build_scenario_model, load_scenario_text
from mbsim.io.srdf import read_srdf
from mbsim.io.urdf import load_urdf
from mbsim.simcore.model import build_model

SAMPLES = Path(__file__).parents[1] / "src" / "mbsim" / "sample_robots"


def test_pairs_in_file_order(tmp_path):
    p = tmp_path / "r.srdf"
    p.write_text(
        '<robot name="r"><group name="g"/><disable_collisions link1="a" link2="b" reason="x"/>'
        '<disable_collisions link1="c" link2="a"/></robot>'
    )
    srdf = read_srdf(p)
    assert srdf.robot == "r"
    assert srdf.disabled == (("a", "b"), ("c", "a"))


BAD = {
    # an internal entity would be substituted into the attribute: refused, not expanded
    "entity": (
        '<!DOCTYPE robot [<!ENTITY y "link3">]><robot><disable_collisions link1="link1" '
        'link2="&y;"/></robot>',
        "declares XML entities ('y')",
    ),
    "external_dtd": (
        '<!DOCTYPE robot SYSTEM "http://example.com/x.dtd"><robot/>',
        "external DTD 'http://example.com/x.dtd'",
    ),
    "malformed": ("<robot><disable_collisions link1='a'", "not well-formed XML"),
    "one_link": ('<robot>\n<disable_collisions link1="a"/></robot>', "line 2"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_srdf_is_one_error_from_the_scenario_and_the_scene(tmp_path, case):
    text, why = BAD[case]
    p = tmp_path / "bad.srdf"
    p.write_text(text)
    why = re.escape(why)
    with pytest.raises(SrdfError, match=why) as exc:
        read_srdf(p)
    assert str(p) in str(exc.value)
    scenario = load_scenario_text(
        f'[robot.pendulum]\nurdf = "{SAMPLES / "pendulum-3.urdf"}"\nsrdf = "{p}"\n'
    )
    with pytest.raises(SrdfError, match=why):
        build_scenario_model(scenario)
    model = build_model([load_urdf(SAMPLES / "pendulum-3.urdf")])
    with pytest.raises(SrdfError, match=why):
        CollisionScene.from_model(model, srdf=p)
    assert issubclass(SrdfError, GeometryError) and issubclass(SrdfError, MbsimError)


def test_missing_file(tmp_path):
    with pytest.raises(SrdfError, match="cannot be read"):
        read_srdf(tmp_path / "none.srdf")


def test_a_link_the_robot_lacks_is_named_with_the_srdf_file_and_line(tmp_path):
    """The error used to name the scenario key with the link as its value (``command line:
    robot.pendulum.srdf = "link9"``), not the SRDF file, line and attribute it came from."""
    p = tmp_path / "big.srdf"
    p.write_text(
        '<robot name="r">\n<disable_collisions link1="link1" link2="link2"/>\n'
        '<disable_collisions link1="link1" link2="link9"/>\n</robot>'
    )
    robot = f'[robot.pendulum]\nurdf = "{SAMPLES / "pendulum-3.urdf"}"\n'
    with pytest.raises(SrdfError) as exc:
        build_scenario_model(load_scenario_text(robot + f'srdf = "{p}"\n'))
    msg = str(exc.value)
    assert msg.startswith(f"{p}, line 3: <disable_collisions> link2='link9': pendulum has no ")
    assert "command line" not in msg and "srdf =" not in msg
    with pytest.raises(SrdfError, match=re.escape(f"{p}, line 3: <disable_collisions> link2=")):
        build_scenario_model(load_scenario_text(robot + f'[contact]\nsrdf = "{p}"\n'))
