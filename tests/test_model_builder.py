"""The model builder: merging, massless links, forests, floating bases, mimic records."""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.errors import ModelError
from mbsim.io.urdf import parse_urdf_string
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import crba
from mbsim.simcore.joints import FREE
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model


def urdf(body: str, name: str = "r") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n'


def link(name: str, mass: float | None = 1.0, com=(0, 0, 0)) -> str:
    if mass is None:
        return f'<link name="{name}"/>'
    return (
        f'<link name="{name}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/>'
        f'<mass value="{mass}"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
        "</inertial></link>"
    )


def joint(name, parent, child, type_="revolute", xyz="0 0 0", axis="0 0 1", extra=""):
    limit = '<limit lower="-1" upper="1" effort="10" velocity="2"/>' if type_ == "revolute" else ""
    return (
        f'<joint name="{name}" type="{type_}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{limit}{extra}</joint>'
    )


def test_massless_leaf_on_a_moving_joint_is_rejected_naming_the_joint():
    text = urdf(link("base") + link("tip", None) + joint("wrist", "base", "tip"))
    with pytest.raises(ModelError) as info:
        build_model([parse_urdf_string(text, source="arm.urdf")])
    msg = str(info.value)
    assert "arm.urdf" in msg and "'wrist'" in msg and "'tip'" in msg and "\n" not in msg


def test_massless_link_between_massive_ones_is_fine_and_reported():
    """A massless link on a fixed joint merges into its parent, with a lint entry."""
    text = urdf(
        link("base")
        + link("a")
        + link("flange", None)
        + link("b")
        + joint("j1", "base", "a")
        + joint("weld", "a", "flange", "fixed", xyz="0 0 0.5")
        + joint("j2", "flange", "b", axis="1 0 0")
    )
    model = build_model([parse_urdf_string(text, source="arm.urdf")])
    assert model.nb == 2 and model.nv == 2
    assert any("'flange'" in w and "merged" in w for w in model.lint)
    # b's joint sits 0.5 m up a's frame: the fixed offset is carried into the tree transform
    assert np.allclose(model.tree_r[1], [0.0, 0.0, 0.5])


def test_fixed_base_root_is_welded_and_floating_base_adds_a_free_joint():
    text = urdf(link("base", 3.0) + link("a") + joint("j1", "base", "a"))
    fixed = build_model([parse_urdf_string(text)])
    assert fixed.nb == 1 and fixed.nq == 1 and fixed.total_mass() == pytest.approx(1.0)
    floating = build_model([parse_urdf_string(text, base="floating")])
    assert floating.jtype[0] == FREE and floating.nq == 8 and floating.nv == 7
    assert floating.total_mass() == pytest.approx(4.0)
    assert floating.joint_names[0] == "root_joint"
    # the free joint's translational mass block is the total mass (closed form)
    M = crba(floating, Data(floating), floating.neutral_q())
    assert np.allclose(M[:3, :3], 4.0 * np.eye(3))


def test_world_root_link_is_the_world_frame():
    text = urdf(link("world", None) + link("a") + joint("j1", "world", "a", xyz="0 0 2"))
    model = build_model([parse_urdf_string(text)])
    assert model.nb == 1 and model.parent[0] == -1
    data = Data(model)
    forward_kinematics(model, data, np.zeros(1))
    assert np.allclose(data.p_world[0], [0.0, 0.0, 2.0])


def test_base_pose_places_the_robot():
    text = urdf(link("base") + link("a") + joint("j1", "base", "a", xyz="0 0 1"))
    pose = np.eye(4)
    pose[:3, 3] = [1.0, 2.0, 3.0]
    model = build_model([parse_urdf_string(text, base_pose=pose)])
    data = Data(model)
    forward_kinematics(model, data, np.zeros(1))
    assert np.allclose(data.p_world[0], [1.0, 2.0, 4.0])


def test_forest_of_two_robots():
    one = parse_urdf_string(urdf(link("base") + link("a") + joint("j", "base", "a"), "one"))
    two = parse_urdf_string(urdf(link("base") + link("b") + joint("j", "base", "b"), "two"))
    model = build_model([one, two])
    assert model.tree_names == ("one", "two")
    assert list(model.tree_of) == [0, 1] and list(model.parent) == [-1, -1]
    M = crba(model, Data(model), np.zeros(2))
    assert M[0, 1] == 0.0  # two trees never couple in the mass matrix


def test_mimic_joint_is_recorded():
    text = urdf(
        link("base")
        + link("a")
        + link("b")
        + joint("j1", "base", "a")
        + joint("j2", "base", "b", extra='<mimic joint="j1" multiplier="-2" offset="0.1"/>')
    )
    model = build_model([parse_urdf_string(text)])
    (m,) = model.mimics
    assert (m.joint, m.master, m.multiplier, m.offset) == ("j2", "j1", -2.0, 0.1)
    assert model.q_names[m.q_index] == "j2" and model.q_names[m.master_q_index] == "j1"


def test_limits_and_damping_are_kept():
    text = urdf(
        link("base")
        + link("a")
        + joint("j1", "base", "a", extra='<dynamics damping="0.7" friction="0.1"/>')
    )
    model = build_model([parse_urdf_string(text)])
    assert (model.lower[0], model.upper[0], model.effort[0]) == (-1.0, 1.0, 10.0)
    assert model.velocity_limit[0] == 2.0 and model.damping[0] == 0.7
