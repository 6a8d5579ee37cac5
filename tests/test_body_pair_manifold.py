"""``contact.manifold = "body-pair"`` (collision/manifold.body_pair_keep): a body made of many
shapes keeps at most 4 contacts per body pair and contact plane. Against closed form: a plate
on k spheres rests at the sphere radius with total normal force m g and no tilt; a box with 8
spheres under it keeps its 4 corners; bodies of one shape each follow the per-shape-pair
trajectory."""

import math

import numpy as np
import pytest

from mbsim.collision.manifold import body_pair_keep
from mbsim.io.scenario import load_scenario_text
from mbsim.simulator import Simulator

G = 9.81
MASS = 1.0
R = 0.02  # m, sphere radius
DT = 1e-3
#: resting tolerances: the stepper holds a resting contact's gap within the recovery rule's
#: band (a fraction of a mm at dt = 1 ms; docs/architecture.md), and the mean normal force
#: over a step equals m g to the LCP's acceptance tolerance once the velocity has settled
HEIGHT_TOL = 2e-4  # m
FORCE_REL = 1e-6
TILT_TOL = 1e-9  # quaternion x, y components


def grid_urdf(points, name="plate") -> str:
    """One 1 kg link with a sphere of radius R at each (x, y, z) of ``points`` (m)."""
    spheres = "".join(
        f'<collision><origin xyz="{x!r} {y!r} {z!r}"/><geometry><sphere radius="{R!r}"/>'
        "</geometry></collision>"
        for x, y, z in points
    )
    i = 0.02
    return (
        f'<?xml version="1.0"?><robot name="{name}"><link name="{name}"><inertial>'
        f'<mass value="{MASS}"/><inertia ixx="{i}" iyy="{i}" izz="{2 * i}" ixy="0" ixz="0" '
        f'iyz="0"/></inertial>{spheres}</link></robot>'
    )


def grid(k, side=0.4, z=0.0):
    cols = math.ceil(math.sqrt(k))
    rows = math.ceil(k / cols)
    return [
        ((i % cols + 0.5) / cols * side - side / 2, (i // cols + 0.5) / rows * side - side / 2, z)
        for i in range(k)
    ]


def simulate(tmp_path, urdf, z0, manifold, steps):
    (tmp_path / "body.urdf").write_text(urdf)
    text = f"""[simulation]
duration = 1.0
dt = {DT!r}
gravity = [0.0, 0.0, {-G!r}]
[robot.body]
urdf = "body.urdf"
base = "floating"
q0 = {{ "root_joint.z" = {z0!r} }}
[contact]
floor = true
mu = 0.5
restitution = 0.0
manifold = "{manifold}"
"""
    sim = Simulator(load_scenario_text(text, base_dir=tmp_path))
    results = [sim.step() for _ in range(steps)]
    return sim, results


@pytest.mark.parametrize("k", [9, 16, 64])
def test_plate_on_k_spheres_rests_at_the_closed_form_height(tmp_path, k):
    """Sphere centres in the plate's plane: at rest the plate's origin is at z = R, the
    normal forces add up to m g, the plate does not tilt, and 4 contacts carry it."""
    sim, res = simulate(tmp_path, grid_urdf(grid(k)), R + 5e-4, "body-pair", 400)
    last = res[-1]
    assert last.n_contacts == 4
    z, quat = sim.q[2], sim.q[3:7]
    assert abs(z - R) <= HEIGHT_TOL
    total = sum(cp.normal_force for cp in last.contact_points)
    assert abs(total - MASS * G) <= FORCE_REL * MASS * G + 1e-9
    assert max(abs(quat[1]), abs(quat[2])) <= TILT_TOL  # q = [x y z qw qx qy qz]
    assert np.abs(sim.v).max() <= 1e-6


def test_box_of_eight_spheres_keeps_its_four_corners(tmp_path):
    """8 spheres in a 2 x 4 grid under a box: the area-maximising 4 are the grid's corners
    (closed form: the corners span the whole rectangle), the box rests at z = R with m g."""
    pts = [(x, y, 0.0) for x in (-0.15, -0.05, 0.05, 0.15) for y in (-0.1, 0.1)]
    sim, res = simulate(tmp_path, grid_urdf(pts, "box"), R + 5e-4, "body-pair", 300)
    last = res[-1]
    xy = sorted((float(p.point[0]), float(p.point[1])) for p in last.contact_points)
    x0, y0 = sim.q[0], sim.q[1]
    corners = sorted((x0 + x, y0 + y) for x in (-0.15, 0.15) for y in (-0.1, 0.1))
    np.testing.assert_allclose(np.array(xy), np.array(corners), atol=1e-5)
    assert abs(sim.q[2] - R) <= HEIGHT_TOL
    total = sum(cp.normal_force for cp in last.contact_points)
    assert abs(total - MASS * G) <= FORCE_REL * MASS * G + 1e-9


def test_shape_pair_keeps_every_sphere(tmp_path):
    """The default (per shape pair) keeps all 8 contacts of the same box."""
    pts = [(x, y, 0.0) for x in (-0.15, -0.05, 0.05, 0.15) for y in (-0.1, 0.1)]
    _, res = simulate(tmp_path, grid_urdf(pts, "box"), R + 5e-4, "shape-pair", 5)
    assert res[-1].n_contacts == 8


def test_one_shape_per_body_gives_the_shape_pair_trajectory(tmp_path):
    """A tumbling single-sphere body and a box of one shape: every body pair is one shape
    pair, so the per-body-pair reduction keeps every contact and the trajectory is the
    per-shape-pair one, bit for bit."""
    (tmp_path / "box.urdf").write_text(
        '<?xml version="1.0"?><robot name="box"><link name="box"><inertial><mass value="1"/>'
        '<inertia ixx="0.002" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial>'
        '<collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link></robot>'
    )

    def run(manifold):
        text = f"""[simulation]
duration = 1.0
dt = {DT!r}
gravity = [0.0, 0.0, {-G!r}]
[robot.a]
urdf = "box.urdf"
base = "floating"
base_pose = {{ xyz = [0.0, 0.0, 0.06], rpy = [0.3, 0.2, 0.1] }}
[robot.b]
urdf = "box.urdf"
base = "floating"
base_pose = {{ xyz = [0.02, 0.01, 0.2], rpy = [0.0, 0.4, 0.0] }}
[contact]
floor = true
mu = 0.5
manifold = "{manifold}"
"""
        sim = Simulator(load_scenario_text(text, base_dir=tmp_path))
        out, counts = [], []
        for _ in range(250):
            counts.append(sim.step().n_contacts)
            out.append(np.concatenate([sim.q, sim.v]))
        return np.array(out), counts

    body, nb = run("body-pair")
    shape, ns = run("shape-pair")
    assert max(ns) > 4  # the two boxes touched each other and the floor
    assert nb == ns
    np.testing.assert_array_equal(body, shape)


def test_kernel_keeps_one_manifold_per_plane_and_world_shape():
    """Kernel level: 6 coplanar floor contacts of body 0 reduce to 4 (deepest kept), its 2
    contacts with a wall (another static shape) and body 0's contacts with body 1 on two
    planes at 90 degrees are all kept."""
    pts, bodies, geoms, normals, gaps = [], [], [], [], []

    def add(p, ba, bb, ga, gb, n, g):
        pts.append(p)
        bodies.append((ba, bb))
        geoms.append((ga, gb))
        normals.append(n)
        gaps.append(g)

    floor, wall = 10, 11
    for i, (x, y) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1), (0.5, 0.5), (0.5, 0.2)]):
        add((x, y, 0.0), 0, -1, i, floor, (0, 0, 1), -1e-4 if i == 4 else 0.0)
    for y in (0.0, 1.0):
        add((2.0, y, 0.5), 0, -1, 6, wall, (-1, 0, 0), 0.0)
    for x in (0.0, 0.3, 0.6, 0.9, 0.5):  # body 1 on top of body 0: 5 points, one plane
        add((x, 0.2, 1.0), 1, 0, 7, 0, (0, 0, 1), 0.0)
    add((0.0, 0.0, 1.0), 0, 1, 1, 8, (1, 0, 0), 0.0)  # a side face, listed the other way
    n = len(gaps)
    keep = np.zeros(n, dtype=np.bool_)
    P = np.array(pts, dtype=float)
    B = np.array(bodies, dtype=np.int64)
    Gm = np.array(geoms, dtype=np.int64)
    kept = body_pair_keep(
        B[:, 0].copy(), B[:, 1].copy(), Gm[:, 0].copy(), Gm[:, 1].copy(), P, P,
        np.array(normals, dtype=float), np.array(gaps), 4, keep,
    )  # fmt: skip
    assert kept == int(keep.sum()) == 4 + 2 + 4 + 1
    # reduce_manifold's order by hand: the deepest (4, the centre), the farthest from it (0,
    # first of four ties), the largest triangle (1, first of two), the most area outside it
    # (2, first of two); (1, 1) and the inner point are dropped
    assert set(np.flatnonzero(keep[:6])) == {0, 1, 2, 4}
    assert keep[6] and keep[7] and keep[-1]
    assert keep[8:13].sum() == 4 and keep[8] and keep[11]  # the two ends of the line


def test_unknown_manifold_is_one_clear_sentence():
    from mbsim.io.scenario import ScenarioError, load_scenario

    with pytest.raises(ScenarioError, match=r"contact\.manifold.*body-pair"):
        load_scenario("sample:pendulum-3.toml", {"contact.manifold": "per-body"})


def test_manifold_survives_to_toml_and_reaches_the_scene():
    from mbsim.io.scenario import load_scenario

    sc = load_scenario("sample:pendulum-3.toml", {"contact.manifold": "body-pair"})
    again = load_scenario_text(sc.to_toml(), source=sc.source)
    assert again.contact.manifold == "body-pair"
    assert load_scenario("sample:pendulum-3.toml").contact.manifold == "shape-pair"
    assert Simulator(sc).scene.manifold == "body-pair"
