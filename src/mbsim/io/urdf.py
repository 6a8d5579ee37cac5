"""Load URDF files into :class:`~mbsim.simcore.spec.RobotSpec` (SI units, no interpretation).

Pipeline, and why each step exists:

1. **Safe XML parse.** The document is parsed by our own hardened lxml parser (no entity
   expansion, no DTD loading, no network) and rejected if its DOCTYPE declares entities or
   names an external DTD. yourdfpy alone is not safe to feed untrusted files: it parses with
   lxml's default parser, which expands internal entities, and when parsing fails (an
   undefined external entity, a billion-laughs document hitting libxml2's amplification
   limit, or plain malformed XML) it silently re-parses with ``recover=True`` and returns
   whatever fragment survived.
2. **Raw checks.** Every element and attribute we use is checked on the raw tree: required
   elements and attributes exist, numbers parse, have the right count and are finite.
   yourdfpy validates nothing at load time: it crashes with KeyError/AttributeError/
   IndexError/ValueError on missing pieces, accepts NaN and inf, defaults a missing
   ``ixx``/``iyy``/``izz`` to 1 and keeps ``<dynamics>`` values as strings.
3. **yourdfpy parse** of a sanitised copy (links and joints only, visuals dropped, no
   DOCTYPE) without loading meshes. yourdfpy has no ``<capsule>``; capsules are handed over
   as cylinders of the same radius and length and re-labelled from the raw tree afterwards.
4. **Conversion** to the spec dataclasses, then **semantic checks**: joint types, tree
   topology, mass, inertia, geometry sizes, limits, mimic targets.

Every problem raises :class:`~mbsim.errors.UrdfError` (or :class:`~mbsim.errors.GeometryError`
for shape sizes and missing meshes) with one sentence naming the file, the element and the
offending value; no exception from lxml or yourdfpy escapes.

Tolerances (documented here because they decide what is an error):

* Inertia: with principal moments l0 <= l1 <= l2 and
  tol = 1e-9 * (|l0| + |l1| + |l2|) + 1e-15 kg m^2, the inertia must be positive semidefinite
  (l0 >= -tol). A slightly negative moment (down to -1e-6 kg m^2, as rounding leaves in some
  published files, e.g. tiago's antennas) is raised to zero and reported in the lint; a more
  negative one is an error. The inertia should
  satisfy the triangle inequality (l0 + l1 >= l2 - tol). Many published URDFs (go1, anymal,
  pr2, tiago...) violate the latter, so by default such inertias are kept as written and
  reported in the lint; ``strict_inertia=True`` makes the violation an error.
* Joint axes are normalised; a lint entry is added when |norm - 1| > 1e-6 (so axes printed
  with a few digits, e.g. ``0 0.7071 0.7071``, do not produce noise). A zero axis on a
  moving joint is an error.
* Mesh scales must be non-zero; negative components (mirrored meshes, common in published
  humanoid URDFs) are kept, so collision code must fix face winding when det(scale) < 0.
"""

from __future__ import annotations

import copy
import io
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import yourdfpy
from lxml import etree

from mbsim.errors import GeometryError, UrdfError
from mbsim.io.safe_xml import safe_parser
from mbsim.simcore.spec import (
    JOINT_TYPES,
    GeometrySpec,
    Inertial,
    JointSpec,
    LinkSpec,
    MimicSpec,
    RobotSpec,
)

__all__ = ["load_urdf", "parse_urdf_string", "resolve_mesh_uri"]

#: Joint types URDF defines; ``planar`` is valid URDF but mbsim cannot simulate it.
URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_MOVING_TYPES = ("revolute", "continuous", "prismatic")
INERTIA_RTOL = 1e-9
#: Absolute floor of the inertia tolerance (kg m^2): below float noise of any real inertia.
INERTIA_ATOL = 1e-15
#: Largest negative principal moment (kg m^2) repaired to zero rather than refused: that of a
#: 1 g point mass 3 cm off its axis, far below anything that matters dynamically.
INERTIA_REPAIR_MAX = 1e-6
AXIS_UNIT_TOL = 1e-6
_BASE_POSE_TOL = 1e-6

# Shape tag -> (attribute, allowed counts, commas allowed). yourdfpy splits box sizes and mesh
# scales on commas too, so we accept what it accepts and nothing more.
_SHAPE_ATTRS: dict[str, tuple[tuple[str, tuple[int, ...], bool], ...]] = {
    "box": (("size", (3,), True),),
    "sphere": (("radius", (1,), False),),
    "cylinder": (("radius", (1,), False), ("length", (1,), False)),
    "capsule": (("radius", (1,), False), ("length", (1,), False)),
    "mesh": (),
}
# Both namespace URIs occur in the wild.
_XACRO_NAMESPACES = ("{http://www.ros.org/wiki/xacro}", "{http://wiki.ros.org/xacro}")
_YOURDFPY_OPTIONS = dict(
    build_scene_graph=False,
    build_collision_scene_graph=False,
    load_meshes=False,
    load_collision_meshes=False,
)


@dataclass
class _Ctx:
    """What every message needs: the file, and source lines of named links and joints."""

    source: str
    robot: str = ""
    lines: dict[tuple[str, str], int] = field(default_factory=dict)
    lint: list[str] = field(default_factory=list)

    def at(self, kind: str, name: str) -> str:
        """``joint 'elbow' (line 12)``: how messages refer to a named element."""
        line = self.lines.get((kind, name))
        return f"{kind} '{name}'" + (f" (line {line})" if line else "")

    def error(self, text: str, exc: type[Exception] = UrdfError) -> Exception:
        """One sentence: ``<file>: <text>.``"""
        return exc(f"{self.source}: {text}.")


# --------------------------------------------------------------------------- public API


def load_urdf(
    path: str | os.PathLike[str],
    *,
    base: str = "fixed",
    base_pose: np.ndarray | None = None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
    name: str | None = None,
    strict_inertia: bool = False,
) -> RobotSpec:
    """Read a URDF file into a :class:`RobotSpec` (metres, kilograms, radians).

    base: ``fixed`` or ``floating``, how a root link not called ``world`` attaches to the
    world; base_pose: 4x4 pose of that attachment (identity by default). package_dirs:
    ``{package name: folder}`` consulted first when resolving ``package://`` mesh URIs (see
    :func:`resolve_mesh_uri`). name: robot name (default: the ``<robot name>``).
    strict_inertia: if True, an inertia violating the triangle inequality is an error; by
    default it is kept and reported in ``RobotSpec.lint``. A non-PSD inertia is always an
    error.

    Raises UrdfError (GeometryError for degenerate shape sizes) naming file, element, value.
    """
    source = os.path.abspath(os.fspath(path))
    ctx = _Ctx(source)
    if not os.path.exists(source):
        raise ctx.error("URDF file does not exist")
    if not os.path.isfile(source):
        raise ctx.error("is not a regular file, so it cannot be read as a URDF")
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise ctx.error(f"cannot be read ({exc.strerror or exc})") from exc
    return _build(
        ctx, data, os.path.dirname(source), base, base_pose, package_dirs, name, strict_inertia
    )


def parse_urdf_string(
    text: str | bytes,
    *,
    source: str = "<string>",
    base_dir: str | os.PathLike[str] | None = None,
    base: str = "fixed",
    base_pose: np.ndarray | None = None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
    name: str | None = None,
    strict_inertia: bool = False,
) -> RobotSpec:
    """Like :func:`load_urdf`, from URDF text.

    source: the name used in messages and stored in ``RobotSpec.source``. base_dir: the
    folder relative mesh paths (and the upward ``package://`` search) start from; without it
    such meshes stay unresolved (``mesh_path=None``).
    """
    if isinstance(text, str):
        # A decoded string may still carry an encoding declaration, which lxml refuses.
        text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text, count=1).encode("utf-8")
    urdf_dir = os.path.abspath(os.fspath(base_dir)) if base_dir is not None else None
    return _build(_Ctx(source), text, urdf_dir, base, base_pose, package_dirs, name, strict_inertia)


def resolve_mesh_uri(
    uri: str,
    urdf_dir: str | os.PathLike[str] | None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
    *,
    source: str | None = None,
    link: str | None = None,
) -> str:
    """Absolute path of the existing file a URDF mesh ``filename`` refers to.

    ``package://NAME/rest`` is looked up, in order, in: ``package_dirs[NAME]``; each
    ``ROS_PACKAGE_PATH`` entry that is the package (its folder is called NAME) or contains a
    folder NAME; ``PREFIX/share/NAME`` for each ``AMENT_PREFIX_PATH`` prefix; and each folder
    above the URDF (itself called NAME, or containing a folder NAME). ``file://path``,
    absolute paths and relative paths (relative to ``urdf_dir``) are used as they are.

    source/link only enrich the message. Raises GeometryError naming the URDF, the link, the
    URI and every path tried.
    """
    base = os.fspath(urdf_dir) if urdf_dir is not None else None
    if uri.startswith("package://"):
        # "package:///name/..." occurs in published files; like Pinocchio, tolerate it.
        package, _, rest = uri[len("package://") :].lstrip("/").partition("/")
        if not package or not rest:
            raise GeometryError(
                f"{source or '<URDF>'}: {_link_words(link)}mesh '{uri}' does not have the form "
                "package://NAME/PATH."
            )
        candidates = [
            os.path.join(root, rest) for root in _package_roots(package, base, package_dirs)
        ]
    elif uri.startswith("file://"):
        candidates = _plain_candidates(unquote(uri[len("file://") :]), base)
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", uri):
        raise GeometryError(
            f"{source or '<URDF>'}: {_link_words(link)}mesh '{uri}' uses an unsupported URI "
            "scheme (mbsim understands package://, file://, absolute and relative paths)."
        )
    else:
        candidates = _plain_candidates(uri, base)
    tried = list(dict.fromkeys(os.path.abspath(c) for c in candidates))
    for path in tried:
        if os.path.isfile(path):
            return path
    places = ", ".join(tried) if tried else "nowhere (no package folder or URDF folder known)"
    raise GeometryError(
        f"{source or '<URDF>'}: {_link_words(link)}mesh '{uri}' was not found; looked at {places}."
    )


# --------------------------------------------------------------------------- mesh lookup


def _link_words(link: str | None) -> str:
    return f"link '{link}' " if link else ""


def _plain_candidates(path: str, urdf_dir: str | None) -> list[str]:
    """A plain path is absolute, or relative to the URDF folder (if known)."""
    if os.path.isabs(path):
        return [path]
    return [os.path.join(urdf_dir, path)] if urdf_dir is not None else []


def _package_roots(
    package: str,
    urdf_dir: str | None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None,
) -> Iterator[str]:
    """Candidate folders for ROS package ``package``, in search order (see resolve_mesh_uri)."""
    if package_dirs and package in package_dirs:
        yield os.fspath(package_dirs[package])
    for entry in _env_paths("ROS_PACKAGE_PATH"):
        if os.path.basename(os.path.normpath(entry)) == package:
            yield entry
        yield os.path.join(entry, package)
    for prefix in _env_paths("AMENT_PREFIX_PATH"):
        yield os.path.join(prefix, "share", package)
    if urdf_dir is not None:
        # "an ancestor called NAME" is covered too: its parent is an ancestor containing NAME.
        for folder in _ancestors(os.path.abspath(urdf_dir)):
            yield os.path.join(folder, package)


def _env_paths(variable: str) -> list[str]:
    return [p for p in os.environ.get(variable, "").split(os.pathsep) if p]


def _ancestors(folder: str) -> Iterator[str]:
    """``folder`` and every folder above it, up to the filesystem root."""
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


# --------------------------------------------------------------------------- pipeline


def _build(
    ctx: _Ctx,
    data: bytes,
    urdf_dir: str | None,
    base: str,
    base_pose: np.ndarray | None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None,
    name: str | None,
    strict_inertia: bool,
) -> RobotSpec:
    pose = _check_base(ctx, base, base_pose)
    root = _parse_xml(ctx, data)
    shape_tags = _check_raw_robot(ctx, root)
    robot = _parse_with_yourdfpy(ctx, root)
    links = [_link_spec(ctx, yl, shape_tags[yl.name], urdf_dir, package_dirs) for yl in robot.links]
    joints = [_joint_spec(ctx, yj) for yj in robot.joints]
    for link in links:
        _check_link(ctx, link, strict_inertia)
    for joint in joints:
        _check_limits(ctx, joint)
    _check_mimics(ctx, joints)
    root_link = _check_tree(ctx, links, joints)
    return RobotSpec(
        name=name if name is not None else ctx.robot,
        links=links,
        joints=joints,
        root=root_link,
        source=ctx.source,
        base=base,
        base_pose=pose,
        lint=ctx.lint,
        urdf_dir=urdf_dir,
        package_dirs={k: str(v) for k, v in (package_dirs or {}).items()},
    )


def _check_base(ctx: _Ctx, base: str, base_pose: np.ndarray | None) -> np.ndarray:
    """Validate the attachment options; returns base_pose as a float 4x4 copy."""
    if base not in ("fixed", "floating"):
        raise ctx.error(f"base={base!r} is not one of 'fixed', 'floating'")
    if base_pose is None:
        return np.eye(4)
    pose = np.array(base_pose, dtype=float)
    rigid = pose.shape == (4, 4) and bool(np.all(np.isfinite(pose)))
    if rigid:
        rot = pose[:3, :3]
        rigid = (
            np.allclose(pose[3], [0.0, 0.0, 0.0, 1.0], atol=_BASE_POSE_TOL)
            and np.allclose(rot.T @ rot, np.eye(3), atol=_BASE_POSE_TOL)
            and np.linalg.det(rot) > 0
        )
    if not rigid:
        raise ctx.error(f"base_pose {pose.tolist()} is not a finite 4x4 rigid transform")
    return pose


# --------------------------------------------------------------------------- XML safety


def _parse_xml(ctx: _Ctx, data: bytes) -> etree._Element:
    """Parse untrusted bytes; reject malformed XML, entity declarations and external DTDs."""
    try:
        root = etree.fromstring(data, safe_parser())
    except etree.XMLSyntaxError as exc:
        if b"<!ENTITY" in data:
            # libxml2 fails on entity use (external entity in an attribute, amplification
            # limit); the real problem is the declaration, so say that.
            raise _entity_error(ctx, data) from exc
        line, column = exc.position if exc.position else (exc.lineno, 0)
        reason = re.sub(r", line \d+, column \d+$", "", exc.msg or str(exc))
        raise ctx.error(
            f"is not well-formed XML at line {line}, column {column} ({reason})"
        ) from exc
    except ValueError as exc:  # lxml raises this for some undecodable inputs
        raise ctx.error(f"is not well-formed XML ({exc})") from exc
    _reject_doctype(ctx, root.getroottree().docinfo, data)
    return root


def _entity_error(ctx: _Ctx, data: bytes) -> Exception:
    names = re.findall(rb"<!ENTITY\s+(?:%\s+)?([^\s>]+)", data)
    listed = ", ".join(repr(n.decode("utf-8", "replace")) for n in names[:5])
    return ctx.error(
        f"declares XML entities ({listed}) in its DOCTYPE, which mbsim refuses to expand for safety"
    )


def _reject_doctype(ctx: _Ctx, docinfo: etree.DocInfo, data: bytes) -> None:
    dtd = docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise _entity_error(ctx, data)
    if docinfo.system_url or docinfo.public_id:
        # Never loaded, so entities it defines would silently vanish: refuse instead.
        url = docinfo.system_url or docinfo.public_id
        raise ctx.error(f"names an external DTD '{url}' in its DOCTYPE, which mbsim refuses")


# --------------------------------------------------------------------------- raw checks


def _check_raw_robot(ctx: _Ctx, root: etree._Element) -> dict[str, list[str]]:
    """Check the raw tree; returns link name -> collision shape tags, in document order."""
    if root.tag != "robot":
        raise ctx.error(f"has root element <{root.tag}>, but a URDF's root must be <robot>")
    for element in root.iter(etree.Element):  # elements only, no entity references
        qname = etree.QName(element)
        if "{" + (qname.namespace or "") + "}" in _XACRO_NAMESPACES:
            raise ctx.error(
                f"contains xacro element <xacro:{qname.localname}> at line "
                f"{element.sourceline}; run xacro to produce plain URDF first"
            )
    robot_name = root.get("name")
    if not robot_name:
        # urdfdom refuses this, but published files (example-robot-data's ur3) omit it.
        stem = "robot" if ctx.source.startswith("<") else Path(ctx.source).stem
        ctx.lint.append(f"<robot> has no 'name' attribute; named '{stem}'")
        robot_name = stem
    ctx.robot = robot_name
    shape_tags: dict[str, list[str]] = {}
    for element in root.findall("link"):
        name = _unique_name(ctx, element, "link")
        shape_tags[name] = _check_raw_link(ctx, element, name)
    for element in root.findall("joint"):
        _check_raw_joint(ctx, element, _unique_name(ctx, element, "joint"))
    if not shape_tags:
        raise ctx.error(f"robot '{robot_name}' has no <link> elements")
    return shape_tags


def _unique_name(ctx: _Ctx, element: etree._Element, kind: str) -> str:
    name = element.get("name")
    if not name:
        raise ctx.error(f"<{kind}> at line {element.sourceline} has no 'name' attribute")
    if (kind, name) in ctx.lines:
        raise ctx.error(
            f"{kind} name '{name}' is used twice (lines {ctx.lines[(kind, name)]} and "
            f"{element.sourceline})"
        )
    ctx.lines[(kind, name)] = element.sourceline
    return name


def _numbers(
    ctx: _Ctx,
    element: etree._Element,
    attr: str,
    owner: str,
    counts: tuple[int, ...] = (1,),
    *,
    required: bool = False,
    commas: bool = False,
) -> tuple[float, ...] | None:
    """Parse attribute ``attr`` as finite floats; None if absent and not required."""
    text = element.get(attr)
    where = f"{owner} <{element.tag}> (line {element.sourceline})"
    if text is None:
        if required:
            raise ctx.error(f"{where} has no '{attr}' attribute")
        return None
    parts = (text.replace(",", " ") if commas else text).split()
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) not in counts or len(parts) != len(values):
        wanted = " or ".join(str(c) for c in counts) + (" number" if counts == (1,) else " numbers")
        raise ctx.error(f"{where} has {attr}='{text}', which is not {wanted}")
    if not all(math.isfinite(v) for v in values):
        raise ctx.error(f"{where} has {attr}='{text}', which is not finite")
    return values


def _required_child(ctx: _Ctx, element: etree._Element, tag: str, owner: str) -> etree._Element:
    child = element.find(tag)
    if child is None:
        inner = "" if element.tag in ("link", "joint") else f" <{element.tag}>"
        raise ctx.error(f"{owner}{inner} (line {element.sourceline}) has no <{tag}>")
    return child


def _check_raw_origin(ctx: _Ctx, parent: etree._Element, owner: str) -> None:
    origin = parent.find("origin")
    if origin is not None:
        _numbers(ctx, origin, "xyz", owner, (3,))
        _numbers(ctx, origin, "rpy", owner, (3,))


def _check_raw_link(ctx: _Ctx, element: etree._Element, name: str) -> list[str]:
    owner = f"link '{name}'"  # raw-stage messages give the line of the sub-element
    inertial = element.find("inertial")
    if inertial is not None:
        _check_raw_origin(ctx, inertial, owner)
        mass = _required_child(ctx, inertial, "mass", owner)
        _numbers(ctx, mass, "value", owner, required=True)
        inertia = _required_child(ctx, inertial, "inertia", owner)
        for attr in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"):
            # Off-diagonal terms default to 0; yourdfpy would default a missing diagonal to 1.
            _numbers(ctx, inertia, attr, owner, required=attr in ("ixx", "iyy", "izz"))
    return [_check_raw_collision(ctx, c, owner) for c in element.findall("collision")]


def _check_raw_collision(ctx: _Ctx, element: etree._Element, owner: str) -> str:
    """Check one ``<collision>``; returns its shape tag."""
    _check_raw_origin(ctx, element, owner)
    geometry = _required_child(ctx, element, "geometry", owner)
    shapes = [c for c in geometry if isinstance(c.tag, str)]
    where = f"{owner} <geometry> (line {geometry.sourceline})"
    if len(shapes) != 1:
        tags = ", ".join(f"<{s.tag}>" for s in shapes) or "nothing"
        raise ctx.error(f"{where} must hold exactly one shape, but holds {tags}")
    shape = shapes[0]
    if shape.tag not in _SHAPE_ATTRS:
        raise ctx.error(
            f"{where} has unknown shape <{shape.tag}> (expected one of {', '.join(_SHAPE_ATTRS)})"
        )
    for attr, counts, commas in _SHAPE_ATTRS[shape.tag]:
        _numbers(ctx, shape, attr, owner, counts, required=True, commas=commas)
    if shape.tag == "mesh":
        if not (shape.get("filename") or "").strip():
            raise ctx.error(f"{where} has a <mesh> without a 'filename'")
        _numbers(ctx, shape, "scale", owner, (1, 3), commas=True)
    return shape.tag


def _check_raw_joint(ctx: _Ctx, element: etree._Element, name: str) -> None:
    owner = f"joint '{name}'"
    if not element.get("type"):
        raise ctx.error(f"{owner} (line {element.sourceline}) has no 'type' attribute")
    for tag in ("parent", "child"):
        child = _required_child(ctx, element, tag, owner)
        if not child.get("link"):
            raise ctx.error(f"{owner} <{tag}> (line {child.sourceline}) has no 'link' attribute")
    _check_raw_origin(ctx, element, owner)
    axis = element.find("axis")
    if axis is not None:
        _numbers(ctx, axis, "xyz", owner, (3,))
    for tag, attrs in (
        ("limit", ("lower", "upper", "effort", "velocity")),
        ("dynamics", ("damping", "friction")),
        ("mimic", ("multiplier", "offset")),
    ):
        child = element.find(tag)
        for attr in attrs if child is not None else ():
            _numbers(ctx, child, attr, owner)
    mimic = element.find("mimic")
    if mimic is not None and not mimic.get("joint"):
        raise ctx.error(f"{owner} <mimic> (line {mimic.sourceline}) has no 'joint' attribute")


# --------------------------------------------------------------------------- yourdfpy


def _parse_with_yourdfpy(ctx: _Ctx, root: etree._Element) -> yourdfpy.Robot:
    """Parse a checked tree with yourdfpy, without meshes; wraps anything it throws."""
    try:
        urdf = yourdfpy.URDF.load(
            io.BytesIO(etree.tostring(_copy_for_yourdfpy(root))), **_YOURDFPY_OPTIONS
        )
    except Exception as exc:  # any yourdfpy failure is a URDF problem reported as one sentence
        raise ctx.error(f"could not be parsed by yourdfpy ({type(exc).__name__}: {exc})") from exc
    return urdf.robot


def _copy_for_yourdfpy(root: etree._Element) -> etree._Element:
    """Links and joints holding only what the raw checks vetted: visuals, calibration and
    safety controllers are unused and would otherwise be parsed (and crash yourdfpy) unchecked;
    capsules are presented as cylinders because yourdfpy rejects the tag."""
    clean = etree.Element("robot", name=root.get("name") or "robot")
    for element in root:
        if element.tag in ("link", "joint"):
            clean.append(copy.deepcopy(element))
    for path in ("link/visual", "joint/calibration", "joint/safety_controller"):
        for unused in clean.findall(path):
            unused.getparent().remove(unused)
    for capsule in clean.findall("link/collision/geometry/capsule"):
        capsule.tag = "cylinder"
    return clean


# --------------------------------------------------------------------------- conversion


def _pose(matrix: np.ndarray | None) -> np.ndarray:
    return np.eye(4) if matrix is None else np.array(matrix, dtype=float)


def _link_spec(
    ctx: _Ctx,
    ylink: yourdfpy.Link,
    shape_tags: list[str],
    urdf_dir: str | None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None,
) -> LinkSpec:
    inertial = _inertial(ylink.inertial) if ylink.inertial is not None else None
    collisions = [
        _geometry(ctx, ylink.name, col, tag, urdf_dir, package_dirs)
        for col, tag in zip(ylink.collisions, shape_tags, strict=True)
    ]
    return LinkSpec(name=ylink.name, inertial=inertial, collisions=collisions)


def _inertial(yin: yourdfpy.Inertial) -> Inertial:
    """URDF inertia is about the COM in the ``<inertial><origin>`` axes; rotate it into the
    link axes: I_link = R I R^T with R the origin's rotation (kg m^2); com = origin xyz (m)."""
    origin = _pose(yin.origin)
    rot = origin[:3, :3]
    inertia = rot @ np.array(yin.inertia, dtype=float) @ rot.T
    # Restore exact symmetry lost to rounding in the products.
    inertia = 0.5 * (inertia + inertia.T)
    return Inertial(mass=float(yin.mass), com=origin[:3, 3].copy(), inertia=inertia)


def _geometry(
    ctx: _Ctx,
    link: str,
    col: yourdfpy.Collision,
    tag: str,
    urdf_dir: str | None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None,
) -> GeometrySpec:
    geom = col.geometry
    origin = _pose(col.origin)
    name = col.name or ""
    if tag == "box":
        return GeometrySpec("box", tuple(float(s) for s in geom.box.size), origin, name)
    if tag == "sphere":
        return GeometrySpec("sphere", (float(geom.sphere.radius),), origin, name)
    if tag in ("cylinder", "capsule"):
        params = (float(geom.cylinder.radius), float(geom.cylinder.length))
        return GeometrySpec(tag, params, origin, name)
    scale = geom.mesh.scale
    scale3 = (
        (1.0, 1.0, 1.0) if scale is None else tuple(float(v) for v in np.broadcast_to(scale, 3))
    )
    uri = geom.mesh.filename
    try:
        path = resolve_mesh_uri(uri, urdf_dir, package_dirs, source=ctx.source, link=link)
    except GeometryError:
        path = None  # the collision module resolves again and reports where it looked
    return GeometrySpec("mesh", scale3, origin, name, mesh_path=path, mesh_uri=uri)


def _joint_spec(ctx: _Ctx, yj: yourdfpy.Joint) -> JointSpec:
    where = ctx.at("joint", yj.name)
    if yj.type == "planar":
        raise ctx.error(f"{where} is a planar joint, which mbsim does not support")
    if yj.type not in URDF_JOINT_TYPES:
        raise ctx.error(
            f"{where} has unknown type '{yj.type}' (expected one of {', '.join(JOINT_TYPES)})"
        )
    limit, dyn, mimic = yj.limit, yj.dynamics, yj.mimic
    return JointSpec(
        name=yj.name,
        type=yj.type,
        parent=yj.parent,
        child=yj.child,
        origin=_pose(yj.origin),
        axis=_unit_axis(ctx, yj),
        lower=_value(limit, "lower"),
        upper=_value(limit, "upper"),
        effort=_value(limit, "effort"),
        velocity=_value(limit, "velocity"),
        damping=_value(dyn, "damping"),
        friction=_value(dyn, "friction"),
        mimic=None
        if mimic is None
        else MimicSpec(mimic.joint, _value(mimic, "multiplier", 1.0), _value(mimic, "offset", 0.0)),
    )


def _value(obj: object | None, attr: str, default: float = float("nan")) -> float:
    """``obj.attr`` as a float, ``default`` when the element or attribute is absent.

    yourdfpy gives floats, strings (``<dynamics>``) or None for absent values.
    """
    x = None if obj is None else getattr(obj, attr)
    return default if x is None else float(x)


def _unit_axis(ctx: _Ctx, yj: yourdfpy.Joint) -> np.ndarray:
    """Unit joint axis; lint when the file's axis was not unit (|norm - 1| > AXIS_UNIT_TOL)."""
    axis = np.array(yj.axis if yj.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    norm = float(np.linalg.norm(axis))
    if yj.type not in _MOVING_TYPES:
        # Fixed/floating joints ignore the axis; xacro often writes "0 0 0" for them.
        return axis / norm if norm > 0 else np.array([1.0, 0.0, 0.0])
    if norm == 0.0:
        raise ctx.error(f"{ctx.at('joint', yj.name)} has a zero-length axis {_fmt(axis)}")
    unit = axis / norm
    if abs(norm - 1.0) > AXIS_UNIT_TOL:
        ctx.lint.append(
            f"joint '{yj.name}': axis {_fmt(axis)} is not a unit vector; normalised to {_fmt(unit)}"
        )
    return unit


def _fmt(values: Iterable[float]) -> str:
    return "(" + ", ".join(f"{v:.6g}" for v in values) + ")"


# --------------------------------------------------------------------------- semantic checks


def _check_link(ctx: _Ctx, link: LinkSpec, strict_inertia: bool) -> None:
    if link.inertial is not None:
        _check_inertial(ctx, link.name, link.inertial, strict_inertia)
    for geom in link.collisions:
        _check_shape(ctx, link.name, geom)


def _check_inertial(ctx: _Ctx, link: str, inertial: Inertial, strict: bool) -> None:
    """Mass >= 0 (kg); inertia PSD and obeying the triangle inequality (see module doc).

    Zero mass with zero inertia is allowed: massless links are the model builder's business.
    """
    where = ctx.at("link", link)
    if inertial.mass < 0:
        raise ctx.error(f"{where} has negative mass {inertial.mass:.6g} kg")
    moments, axes = np.linalg.eigh(inertial.inertia)
    tol = INERTIA_RTOL * float(np.abs(moments).sum()) + INERTIA_ATOL
    head = f"{where} has inertia with principal moments {_fmt(moments)} kg m^2, which"
    if moments[0] < -INERTIA_REPAIR_MAX:
        # a clearly negative principal moment is impossible and can make M indefinite
        raise ctx.error(f"{head} is not positive semidefinite")
    if moments[0] < -tol:
        # tiny negative moments (rounding in published files): raise them to zero, loudly
        inertial.inertia = axes @ np.diag(np.maximum(moments, 0.0)) @ axes.T
        ctx.lint.append(f"{head} is not positive semidefinite; negative moments raised to 0")
        moments = np.maximum(moments, 0.0)
    if moments[0] + moments[1] < moments[2] - tol:
        text = (
            f"{head} violates the triangle inequality ({moments[0]:.6g} + {moments[1]:.6g} < "
            f"{moments[2]:.6g})"
        )
        if strict:
            raise ctx.error(text)
        ctx.lint.append(f"{text}; kept as written")


def _check_shape(ctx: _Ctx, link: str, geom: GeometrySpec) -> None:
    """Sizes must be > 0 (m); mesh scales non-zero (negative mirrors the mesh)."""
    bad = [p for p in geom.params if (p == 0 if geom.kind == "mesh" else p <= 0)]
    if bad:
        label = "scale" if geom.kind == "mesh" else "size"
        raise ctx.error(
            f"{ctx.at('link', link)} has a collision {geom.kind} with {label} "
            f"{_fmt(geom.params)}, containing {bad[0]:.6g}, which must be "
            f"{'non-zero' if geom.kind == 'mesh' else 'positive'}",
            GeometryError,
        )


def _check_limits(ctx: _Ctx, joint: JointSpec) -> None:
    if joint.lower > joint.upper:  # False when either is NaN (absent)
        raise ctx.error(
            f"{ctx.at('joint', joint.name)} has lower limit {joint.lower:.6g} above upper "
            f"limit {joint.upper:.6g}"
        )


def _check_mimics(ctx: _Ctx, joints: list[JointSpec]) -> None:
    names = {j.name for j in joints}
    for joint in joints:
        if joint.mimic is None:
            continue
        master = joint.mimic.master
        if master not in names or master == joint.name:
            what = "itself" if master == joint.name else "a joint that does not exist"
            raise ctx.error(f"{ctx.at('joint', joint.name)} mimics '{master}', {what}")


def _check_tree(ctx: _Ctx, links: list[LinkSpec], joints: list[JointSpec]) -> str:
    """The links and joints must form one tree; returns the root link's name."""
    names = {link.name for link in links}
    parent_joint: dict[str, JointSpec] = {}
    for joint in joints:
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in names:
                raise ctx.error(
                    f"{ctx.at('joint', joint.name)} has {role} link '{link}', which is not a "
                    f"<link> of robot '{ctx.robot}'"
                )
        if joint.child in parent_joint:
            raise ctx.error(
                f"{ctx.at('link', joint.child)} is the child of two joints, "
                f"'{parent_joint[joint.child].name}' and '{joint.name}'; a URDF must be a tree"
            )
        parent_joint[joint.child] = joint
    _check_acyclic(ctx, links, parent_joint)
    roots = [link.name for link in links if link.name not in parent_joint]
    if len(roots) != 1:
        listed = ", ".join(f"'{r}'" for r in roots)
        raise ctx.error(
            f"robot '{ctx.robot}' has {len(roots)} root links ({listed}), i.e. links that are "
            "no joint's child; a URDF must form a single tree"
        )
    return roots[0]


def _check_acyclic(ctx: _Ctx, links: list[LinkSpec], parent_joint: dict[str, JointSpec]) -> None:
    """Walk up from every link; meeting a link twice on one walk is a cycle."""
    known_ok: set[str] = set()
    for link in links:
        path: list[str] = []
        current: str | None = link.name
        while current is not None and current not in known_ok:
            if current in path:
                # path runs child -> parent; report the loop parent -> child.
                loop = (path[path.index(current) :] + [current])[::-1]
                names = ", ".join(f"'{parent_joint[n].name}'" for n in loop[1:])
                subject = f"joint {names} forms" if len(loop) == 2 else f"joints {names} form"
                raise ctx.error(
                    f"{subject} a cycle through links {' -> '.join(repr(n) for n in loop)}; "
                    "a URDF must be a tree"
                )
            path.append(current)
            joint = parent_joint.get(current)
            current = joint.parent if joint is not None else None
        known_ok.update(path)
