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

What urdfdom and PyBullet accept is repaired with a lint entry (XML prolog and trailing
content, 4-number rpy/scale, lower > upper, zero inertia with a mass, a ``<mimic>`` of a joint
that does not exist); PyBullet's ``<plane>``
collision is kept as a half-space (``LinkSpec.planes``, used by the collision scene); xacro
leftovers, negative limits, mimic cycles, values outside the bounds below and mesh paths
outside the allowed folders are refused (see docs/architecture.md, "URDF loading").

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
from typing import TypedDict, Unpack
from urllib.parse import unquote

import numpy as np
import yourdfpy
from lxml import etree

from mbsim.errors import GeometryError, UrdfError
from mbsim.io.safe_xml import safe_parser
from mbsim.io.shape_inertia import shapes_inertia
from mbsim.simcore.spatial import rpy_matrix
from mbsim.simcore.spec import (
    GeometrySpec,
    Inertial,
    JointSpec,
    LinkSpec,
    MimicSpec,
    RobotSpec,
)

__all__ = ["MeshPathRefused", "load_urdf", "parse_urdf_string", "resolve_mesh_uri"]

#: Joint types URDF defines. ``planar`` (motion in the plane normal to its axis) becomes two
#: prismatic joints and a revolute one in the model builder. ``spherical`` is PyBullet's
#: extension (a ball joint, 3 DoF, its axis ignored; :func:`_spherical_limit`).
URDF_JOINT_TYPES = (
    "revolute",
    "continuous",
    "prismatic",
    "fixed",
    "floating",
    "planar",
    "spherical",
)
#: Types whose axis matters (for planar: the plane's normal).
_MOVING_TYPES = ("revolute", "continuous", "prismatic", "planar")
INERTIA_RTOL = 1e-9
#: Absolute floor of the inertia tolerance (kg m^2): below float noise of any real inertia.
INERTIA_ATOL = 1e-15
#: Largest negative principal moment (kg m^2) repaired to zero rather than refused: that of a
#: 1 g point mass 3 cm off its axis, far below anything that matters dynamically.
INERTIA_REPAIR_MAX = 1e-6
AXIS_UNIT_TOL = 1e-6
#: Range of every length the loader accepts (m): shape sizes lie in [LENGTH_MIN, LENGTH_MAX],
#: origin offsets within +-LENGTH_MAX. 1e-9 m is below any machined feature; 1e6 m (1000 km)
#: is beyond any robot or scene, and keeps FCL's broad phase far from overflow (it crashes on
#: 1e200 m boxes). Mesh scale factors obey the same bounds in absolute value.
LENGTH_MIN, LENGTH_MAX = 1e-9, 1e6
#: Largest mass (kg) and principal moment of inertia (kg m^2) accepted: a 1000 t body, and
#: such a body with a 30 m radius of gyration. Zero and tiny values are fine here (the model
#: builder reports a massless moving body); larger ones only come from typos or fuzzing and
#: would swamp the mass matrix's conditioning.
MASS_MAX, INERTIA_MAX = 1e6, 1e9
#: Mimic multiplier and offset bound (dimensionless; rad or m).
MIMIC_MAX = 1e6
#: Longest message (characters): a million-link file must not print megabytes.
MESSAGE_MAX = 600
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
    inertia_from_collision: bool = True
    allow_outside_paths: bool = False
    #: links whose <inertial> has a mass but no <inertia> (filled from collision shapes)
    no_inertia: dict[str, int] = field(default_factory=dict)
    #: link -> its <plane> half-spaces (PyBullet's extension; _plane)
    planes: dict[str, list[GeometrySpec]] = field(default_factory=dict)
    #: spherical joint -> its applied (swing x, swing y, twist) spans, rad (_spherical_limit)
    spherical_limits: dict[str, tuple[float, float, float]] = field(default_factory=dict)

    def at(self, kind: str, name: str) -> str:
        """``joint 'elbow' (line 12)``: how messages refer to a named element."""
        line = self.lines.get((kind, name))
        return f"{kind} '{name}'" + (f" (line {line})" if line else "")

    def error(self, text: str, exc: type[Exception] = UrdfError) -> Exception:
        """One sentence: ``<file>: <text>.``, at most :data:`MESSAGE_MAX` characters."""
        return exc(_clip(f"{self.source}: {text}", MESSAGE_MAX) + ".")


def _clip(text: str | None, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters with the number of characters left out."""
    text = text or ""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 30]}... ({len(text) - limit + 30} more characters)"


# --------------------------------------------------------------------------- public API


class UrdfLoadOptions(TypedDict, total=False):
    """The keywords :func:`load_urdf` and :func:`parse_urdf_string` share (see load_urdf)."""

    base: str
    base_pose: np.ndarray | None
    package_dirs: Mapping[str, str | os.PathLike[str]] | None
    name: str | None
    strict_inertia: bool
    inertia_from_collision: bool
    allow_outside_paths: bool


def load_urdf(
    path: str | os.PathLike[str],
    *,
    base: str = "fixed",
    base_pose: np.ndarray | None = None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
    name: str | None = None,
    strict_inertia: bool = False,
    inertia_from_collision: bool = True,
    allow_outside_paths: bool = False,
) -> RobotSpec:
    """Read a URDF file into a :class:`RobotSpec` (metres, kilograms, radians).

    base: ``fixed`` or ``floating``, how a root link not called ``world`` attaches to the
    world; base_pose: 4x4 pose of that attachment (identity by default). package_dirs:
    ``{package name: folder}`` consulted first when resolving ``package://`` mesh URIs (see
    :func:`resolve_mesh_uri`). name: robot name (default: the ``<robot name>``).
    strict_inertia: if True, an inertia violating the triangle inequality is an error; by
    default it is kept and reported in ``RobotSpec.lint``. A non-PSD inertia is always an
    error. inertia_from_collision: a link with a mass but an all-zero or missing
    ``<inertia>`` gets the inertia of its collision shapes at that mass (as PyBullet does;
    :mod:`mbsim.io.shape_inertia`), reported in the lint; False keeps a zero inertia as
    written and refuses a missing one. allow_outside_paths: let mesh URIs reach outside the
    URDF's folder tree and the package folders (see :func:`resolve_mesh_uri`); refused by
    default, with a GeometryError.

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
    return parse_urdf_string(
        data,
        source=source,
        base_dir=os.path.dirname(source),
        base=base,
        base_pose=base_pose,
        package_dirs=package_dirs,
        name=name,
        strict_inertia=strict_inertia,
        inertia_from_collision=inertia_from_collision,
        allow_outside_paths=allow_outside_paths,
    )


def parse_urdf_string(
    text: str | bytes,
    *,
    source: str = "<string>",
    base_dir: str | os.PathLike[str] | None = None,
    **options: Unpack[UrdfLoadOptions],
) -> RobotSpec:
    """Like :func:`load_urdf`, from URDF text; ``options`` are load_urdf's keywords.

    source: the name used in messages and stored in ``RobotSpec.source``. base_dir: the
    folder relative mesh paths (and the upward ``package://`` search) start from; without it
    such meshes stay unresolved (``mesh_path=None``).
    """
    if isinstance(text, str):
        # A decoded string may still carry an encoding declaration, which lxml refuses.
        text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text, count=1).encode("utf-8")
    urdf_dir = os.path.abspath(os.fspath(base_dir)) if base_dir is not None else None
    ctx = _Ctx(
        source,
        inertia_from_collision=options.get("inertia_from_collision", True),
        allow_outside_paths=options.get("allow_outside_paths", False),
    )
    return _build(
        ctx,
        text,
        urdf_dir,
        options.get("base", "fixed"),
        options.get("base_pose"),
        options.get("package_dirs"),
        options.get("name"),
        options.get("strict_inertia", False),
    )


def resolve_mesh_uri(
    uri: str,
    urdf_dir: str | os.PathLike[str] | None,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
    *,
    source: str | None = None,
    link: str | None = None,
    allow_outside_paths: bool = False,
) -> str:
    """Absolute path of the existing mesh file a URDF mesh ``filename`` refers to.

    ``package://NAME/rest`` is looked up, in order, in: ``package_dirs[NAME]``; each
    ``ROS_PACKAGE_PATH`` entry that is the package (its folder is called NAME) or contains a
    folder NAME; ``PREFIX/share/NAME`` for each ``AMENT_PREFIX_PATH`` prefix; and each folder
    above the URDF (itself called NAME, or containing a folder NAME). ``file://path``,
    absolute paths and relative paths (relative to ``urdf_dir``) are used as they are; a
    relative path ``DIR/.../FILE`` not found there is looked for in the folders above the
    URDF, up to :data:`PARENT_SEARCH_LEVELS` levels, nearest first (PyBullet searches them too):
    like a package, the folder DIR is found above the URDF.

    Confinement (unless allow_outside_paths): the file must lie inside the URDF's folder
    tree, inside the package folder it was found in (no ``..`` out of it), inside a folder
    found by the upward search, or inside a declared root (``package_dirs`` values,
    ``ROS_PACKAGE_PATH`` entries, ``AMENT_PREFIX_PATH/share``). The check is on the normalised
    path (symlinks inside an allowed folder are the folder owner's choice, e.g. ROS
    symlink installs). Only files with a mesh extension (:data:`MESH_EXTENSIONS`) are
    looked at, and a refused path is never tested for existence, so no message reveals
    whether an unrelated file exists.

    source/link only enrich the message. Raises GeometryError naming the URDF, the link, the
    URI and every allowed path tried.
    """
    base = os.path.abspath(os.fspath(urdf_dir)) if urdf_dir is not None else None
    head = f"{source or '<URDF>'}: {_link_words(link)}mesh '{_clip(uri, 200)}'"
    if uri.startswith("package://"):
        # "package:///name/..." occurs in published files; like Pinocchio, tolerate it.
        package, _, rest = uri[len("package://") :].lstrip("/").partition("/")
        if not package or not rest:
            raise GeometryError(f"{head} does not have the form package://NAME/PATH.")
        path_part = rest
        candidates = [
            (os.path.join(root, rest), root) for root in _package_roots(package, base, package_dirs)
        ]
    elif uri.startswith("file://"):
        path_part = unquote(uri[len("file://") :])
        candidates = _plain_candidates(path_part, base)
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", uri):
        raise GeometryError(
            f"{head} uses an unsupported URI scheme (mbsim understands package://, file://, "
            "absolute and relative paths)."
        )
    else:
        path_part = uri
        candidates = _plain_candidates(uri, base)
    extension = os.path.splitext(path_part)[1].lower()
    if extension not in MESH_EXTENSIONS:
        raise MeshPathRefused(
            f"{head} does not name a mesh file (its extension '{_clip(extension, 20)}' is not "
            f"one of {', '.join(MESH_EXTENSIONS)}), so mbsim does not open it."
        )
    declared = _declared_roots(package_dirs)
    tried: list[str] = []
    refused: list[str] = []
    for candidate, root in candidates:
        path = os.path.normpath(os.path.abspath(candidate))
        allowed = [r for r in (root, base, *declared) if r is not None]
        if not allow_outside_paths and not any(_inside(path, r) for r in allowed):
            refused.append(path)
            continue
        if path not in tried:
            tried.append(path)
            if os.path.isfile(path):
                return path
    if refused and not tried:
        raise MeshPathRefused(
            f"{head} resolves to '{_clip(refused[0], 200)}', outside the URDF's folder "
            f"{_clip(base or '(none)', 200)} and every package folder, so mbsim refuses to "
            "read it; declare its folder with --package-dir NAME=PATH or pass "
            "--allow-outside-paths."
        )
    places = ", ".join(tried) if tried else "nowhere (no package folder or URDF folder known)"
    raise GeometryError(_clip(f"{head} was not found; looked at {places}", 4000) + ".")


class MeshPathRefused(GeometryError):
    """A mesh URI mbsim will not open: outside every allowed folder, or not a mesh file."""


# --------------------------------------------------------------------------- mesh lookup

#: File extensions mbsim will open as meshes (what trimesh reads for URDF collision meshes).
MESH_EXTENSIONS = (".stl", ".obj", ".dae", ".ply", ".off", ".glb", ".gltf")
#: How many folders above the URDF a relative mesh path is looked for in (PyBullet: 5).
PARENT_SEARCH_LEVELS = 5


def _link_words(link: str | None) -> str:
    return f"link '{link}' " if link else ""


def _inside(path: str, folder: str) -> bool:
    """True if normalised absolute ``path`` is ``folder`` or below it."""
    folder = os.path.normpath(os.path.abspath(folder))
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _declared_roots(package_dirs: Mapping[str, str | os.PathLike[str]] | None) -> list[str]:
    """Folders the user declared as package roots: package_dirs, ROS and ament paths."""
    roots = [os.fspath(d) for d in (package_dirs or {}).values()]
    roots += _env_paths("ROS_PACKAGE_PATH")
    roots += [os.path.join(p, "share") for p in _env_paths("AMENT_PREFIX_PATH")]
    return roots


def _plain_candidates(path: str, urdf_dir: str | None) -> list[tuple[str, str | None]]:
    """(candidate, the folder it must stay in) for a plain path: absolute (confined only by
    the URDF folder and declared roots), or relative to the URDF folder, then ``DIR/...``
    in the folders above it (confined to the DIR found there)."""
    if os.path.isabs(path):
        return [(path, None)]
    if urdf_dir is None:
        return []
    found = [(os.path.join(urdf_dir, path), urdf_dir)]
    parts = [p for p in re.split(r"[/\\]", path) if p not in ("", ".")]
    if len(parts) > 1 and ".." not in parts:
        for level, folder in enumerate(_ancestors(urdf_dir)):
            if 1 <= level <= PARENT_SEARCH_LEVELS:
                found.append((os.path.join(folder, path), os.path.join(folder, parts[0])))
    return found


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
        _fill_zero_inertia(ctx, link)
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


def read_urdf_xml(path: str | os.PathLike[str]) -> etree._Element:
    """The root element of the URDF at ``path``, parsed as :func:`load_urdf` parses it (the
    same repairs and refusals), for readers of parts the loader skips (``<visual>``).
    Raises UrdfError naming the file."""
    ctx = _Ctx(os.path.abspath(os.fspath(path)))
    try:
        data = Path(ctx.source).read_bytes()
    except OSError as exc:
        raise ctx.error(f"cannot be read ({exc.strerror or exc})") from None
    return _parse_xml(ctx, data)


def _parse_xml(ctx: _Ctx, data: bytes) -> etree._Element:
    """Parse untrusted bytes; reject malformed XML, entity declarations and external DTDs.

    What urdfdom (TinyXML) accepts and libxml2 does not is repaired by :func:`_repair_prolog`
    and :func:`_cut_trailing_content`, each with a lint entry; the repaired bytes go through the
    same hardened parser, so no entity, DTD, network access or XInclude is ever allowed.
    """
    data, notes = _repair_prolog(data)
    try:
        try:
            root = etree.fromstring(data, safe_parser())
        except etree.XMLSyntaxError as exc:
            cut = _cut_trailing_content(data, exc)
            if cut is None:
                raise
            try:
                root = etree.fromstring(cut, safe_parser())
            except etree.XMLSyntaxError:
                raise exc from None  # the original complaint is the one to report
            notes.append(
                f"content after the end of <{root.tag}> (from line {exc.lineno}) was ignored"
            )
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
    ctx.lint.extend(notes)
    return root


# A declaration preceded only by whitespace and comments (what TinyXML skips), with the span
# of the declaration and of its version number.
_LATE_DECLARATION = re.compile(
    rb"\A(?:\xef\xbb\xbf)?(?:\s|<!--(?:(?!-->).)*-->)*?"
    rb"(<\?xml\s+version\s*=\s*[\"']([^\"']*)[\"'][^?]*\?>)",
    re.DOTALL,
)


def _repair_prolog(data: bytes) -> tuple[bytes, list[str]]:
    """Make an XML declaration libxml2 refuses acceptable, as urdfdom accepts it.

    Two repairs, reported in one lint entry: a version other than 1.x (pybullet_data writes
    ``version="0.0"``) is read as 1.0, and a declaration after leading whitespace or
    comments is moved to the start. Line numbers are preserved (the declaration is replaced
    by spaces where it stood), so messages still point at the right lines.
    """
    match = _LATE_DECLARATION.match(data)
    if match is None:
        return data, []
    notes = []
    decl = match.group(1)
    version = match.group(2)
    if not re.fullmatch(rb"1\.[0-9]+", version):
        notes.append(f"XML declaration version '{version.decode('ascii', 'replace')}' read as 1.0")
        start, end = match.span(2)
        decl = data[match.start(1) : start] + b"1.0" + data[end : match.end(1)]
    bom = data.startswith(b"\xef\xbb\xbf")
    if match.start(1) > (3 if bom else 0):
        notes.append("XML declaration after leading whitespace or comments moved to the start")
    elif not notes:
        return data, []
    notes = ["; ".join(notes) + " (as urdfdom reads it)"]
    blank = re.sub(rb"[^\n]", b" ", data[match.start(1) : match.end(1)])
    head = data[: match.start(1)].removeprefix(b"\xef\xbb\xbf")
    return (b"\xef\xbb\xbf" if bom else b"") + decl + head + blank + data[match.end(1) :], notes


def _cut_trailing_content(data: bytes, exc: etree.XMLSyntaxError) -> bytes | None:
    """The document up to the end of its root element when libxml2's only complaint is
    content after it (TinyXML, hence urdfdom and PyBullet, ignore such content); else None."""
    if "Extra content at the end of the document" not in (exc.msg or "") or exc.lineno < 1:
        return None
    lines = data.split(b"\n")
    if exc.lineno > len(lines):
        return None
    offset = sum(len(line) + 1 for line in lines[: exc.lineno - 1]) + max(exc.offset - 1, 0)
    return data[:offset]


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
    _reject_xacro_expressions(ctx, root)
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


def _reject_xacro_expressions(ctx: _Ctx, root: etree._Element) -> None:
    """``$(find pkg)``, ``${radius * 2}``: xacro substitutions left in the file."""
    for element in root.iter(etree.Element):
        for attr, value in element.attrib.items():
            if "$(" in value or "${" in value:
                raise ctx.error(
                    f"<{element.tag}> at line {element.sourceline} has {attr}="
                    f"'{_clip(value, 80)}', a xacro expression; this is a xacro file, so run "
                    "xacro on it first to produce plain URDF"
                )


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
        values = _pybullet_numbers(text)
        if len(values) not in counts:
            wanted = " or ".join(str(c) for c in counts)
            wanted += " number" if counts == (1,) else " numbers"
            raise ctx.error(f"{where} has {attr}='{_clip(text)}', which is not {wanted}")
        written = " ".join(repr(v) for v in values)
        ctx.lint.append(
            f"{where} has {attr}='{_clip(text)}'; read as '{written}', as PyBullet does"
        )
        element.set(attr, written)  # yourdfpy parses the repaired text
    if not all(math.isfinite(v) for v in values):
        raise ctx.error(f"{where} has {attr}='{_clip(text)}', which is not finite")
    return values


_LENIENT_NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\.?")


def _pybullet_numbers(text: str) -> tuple[float, ...]:
    """Numbers as PyBullet's URDF parser reads them, or () if that is not how they read:
    separated by spaces or commas, each a decimal number optionally followed by a stray
    period (``'0.07, 0, -0.69'``, ``'-1.57.'`` occur in pybullet_data)."""
    parts = [p for p in re.split(r"[\s,]+", text) if p]
    matches = [_LENIENT_NUMBER.fullmatch(p) for p in parts]
    if not parts or not all(matches):
        return ()
    return tuple(float(m.group(1)) for m in matches if m is not None)


def _required_child(ctx: _Ctx, element: etree._Element, tag: str, owner: str) -> etree._Element:
    child = element.find(tag)
    if child is None:
        inner = "" if element.tag in ("link", "joint") else f" <{element.tag}>"
        raise ctx.error(f"{owner}{inner} (line {element.sourceline}) has no <{tag}>")
    return child


def _check_raw_origin(ctx: _Ctx, parent: etree._Element, owner: str) -> None:
    """xyz: 3 lengths within :data:`LENGTH_MAX`; rpy: 3 angles (a 4th number, which
    PyBullet ignores, is dropped with a lint entry)."""
    origin = parent.find("origin")
    if origin is not None:
        xyz = _numbers(ctx, origin, "xyz", owner, (3,))
        if xyz is not None and max(abs(v) for v in xyz) > LENGTH_MAX:
            raise ctx.error(
                f"{owner} <origin> (line {origin.sourceline}) has xyz='{_clip(origin.get('xyz'))}'"
                f", an offset beyond {LENGTH_MAX:g} m"
            )
        _drop_fourth(ctx, origin, "rpy", owner)


def _drop_fourth(ctx: _Ctx, element: etree._Element, attr: str, owner: str) -> None:
    """Accept 3 numbers, or 4 with the 4th dropped (what PyBullet reads), reporting it."""
    counts = (3, 4) if attr == "rpy" else (1, 3, 4)
    values = _numbers(ctx, element, attr, owner, counts, commas=attr == "scale")
    if values is not None and len(values) == 4:
        ctx.lint.append(
            f"{owner} <{element.tag}> (line {element.sourceline}) has {attr}="
            f"'{_clip(element.get(attr))}' with 4 numbers; the first 3 are used, as PyBullet does"
        )
        element.set(attr, " ".join(repr(v) for v in values[:3]))


def _check_raw_link(ctx: _Ctx, element: etree._Element, name: str) -> list[str]:
    owner = f"link '{name}'"  # raw-stage messages give the line of the sub-element
    inertial = element.find("inertial")
    if inertial is not None:
        _check_raw_origin(ctx, inertial, owner)
        mass = _required_child(ctx, inertial, "mass", owner)
        _numbers(ctx, mass, "value", owner, required=True)
        if (
            inertial.find("inertia") is None
            and ctx.inertia_from_collision
            and element.find("collision") is not None
        ):
            # filled from the collision shapes once they are known (_fill_zero_inertia)
            ctx.no_inertia[name] = inertial.sourceline
            etree.SubElement(inertial, "inertia", ixx="0", iyy="0", izz="0")
        inertia = _required_child(ctx, inertial, "inertia", owner)
        for attr in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"):
            # Off-diagonal terms default to 0; yourdfpy would default a missing diagonal to 1.
            _numbers(ctx, inertia, attr, owner, required=attr in ("ixx", "iyy", "izz"))
    tags = []
    for col in element.findall("collision"):
        if _is_plane(col):
            # PyBullet's infinite plane: kept out of the shapes (yourdfpy has no <plane>) and
            # given to the collision scene as a half-space (collision/scene.py)
            ctx.planes.setdefault(name, []).append(_plane(ctx, col, owner))
            element.remove(col)
            continue
        tags.append(_check_raw_collision(ctx, col, owner))
    return tags


def _plane(ctx: _Ctx, collision: etree._Element, owner: str) -> GeometrySpec:
    """A ``<plane normal="nx ny nz"/>`` (PyBullet's extension, default normal +z): the
    half-space behind the plane through the collision origin, normal n (unit, link frame)."""
    _check_raw_origin(ctx, collision, owner)
    plane = collision.find("geometry/plane")
    normal = _numbers(ctx, plane, "normal", owner, (3,)) or (0.0, 0.0, 1.0)
    length = math.sqrt(sum(v * v for v in normal))
    if not length > 0.0:
        raise ctx.error(
            f"{owner} <plane> (line {plane.sourceline}) has normal='{_clip(plane.get('normal'))}'"
            ", a zero vector"
        )
    origin = collision.find("origin")
    xyz = _numbers(ctx, origin, "xyz", owner, (3,)) if origin is not None else None
    rpy = _numbers(ctx, origin, "rpy", owner, (3,)) if origin is not None else None
    pose = np.eye(4)
    pose[:3, :3] = rpy_matrix(rpy or (0.0, 0.0, 0.0))
    pose[:3, 3] = xyz or (0.0, 0.0, 0.0)
    unit = tuple(v / length for v in normal)
    return GeometrySpec("plane", unit, pose, name=collision.get("name") or "")


def _is_plane(collision: etree._Element) -> bool:
    geometry = collision.find("geometry")
    shapes = [] if geometry is None else [c for c in geometry if isinstance(c.tag, str)]
    return len(shapes) == 1 and shapes[0].tag == "plane"


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
        _drop_fourth(ctx, shape, "scale", owner)
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
        ("limit", ("lower", "upper", "effort", "velocity", "twist")),
        ("dynamics", ("damping", "friction")),
        ("mimic", ("multiplier", "offset")),
    ):
        child = element.find(tag)
        for attr in attrs if child is not None else ():
            _numbers(ctx, child, attr, owner)
    mimic = element.find("mimic")
    if mimic is not None and not mimic.get("joint"):
        raise ctx.error(f"{owner} <mimic> (line {mimic.sourceline}) has no 'joint' attribute")
    if element.get("type") == "spherical":
        _spherical_limit(ctx, element, name)


def _spherical_limit(ctx: _Ctx, element: etree._Element, name: str) -> None:
    """A spherical joint's ``<limit lower upper twist effort>``, read as PyBullet reads it
    (simcore/spherical_limits.py, with the Bullet source lines): lower, upper and twist are the
    spans (rad) of the swing about x, the swing about y and the twist about z, applied when
    all three and the effort are positive (URDF2Bullet.cpp's condition) and recorded in
    ``ctx.spherical_limits``. A negative span is an error (PyBullet would silently apply no
    limit); a limit that PyBullet would not create (a span or the effort zero or absent) is
    not applied either, with one lint line saying why. ``effort`` and ``velocity`` apply to
    each angular-velocity component like those of other joints (model.py)."""
    limit = element.find("limit")
    if limit is None:
        return
    given = {a: float(limit.get(a)) for a in ("lower", "upper", "twist") if limit.get(a)}
    if not given:
        return
    where = f"spherical {ctx.at('joint', name)} <limit> (line {limit.sourceline})"
    for attr, value in given.items():
        if value < 0:
            raise ctx.error(
                f"{where} has {attr}={value:.6g}, a negative span: PyBullet reads lower, "
                "upper and twist as the swing-x, swing-y and twist spans (rad), each >= 0"
            )
    effort = float(limit.get("effort")) if limit.get("effort") else 0.0
    spans = tuple(given.get(a, 0.0) for a in ("lower", "upper", "twist"))
    if min(spans) > 0 and effort > 0:
        ctx.spherical_limits[name] = spans
        return
    values = ", ".join(f"{a} {v:.6g}" for a, v in given.items())
    ctx.lint.append(
        f"{where} ({values} rad, effort {effort:.6g}) is not applied, as in PyBullet, which "
        "creates a spherical limit only when lower, upper, twist and effort are all positive"
    )


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
    planes = list(ctx.planes.get(ylink.name, []))
    return LinkSpec(name=ylink.name, inertial=inertial, collisions=collisions, planes=planes)


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
        path = resolve_mesh_uri(
            uri,
            urdf_dir,
            package_dirs,
            source=ctx.source,
            link=link,
            allow_outside_paths=ctx.allow_outside_paths,
        )
    except MeshPathRefused:
        raise  # a refusal is final: the collision module must not try again
    except GeometryError:
        path = None  # the collision module resolves again and reports where it looked
    return GeometrySpec("mesh", scale3, origin, name, mesh_path=path, mesh_uri=uri)


def _joint_spec(ctx: _Ctx, yj: yourdfpy.Joint) -> JointSpec:
    where = ctx.at("joint", yj.name)
    if yj.type not in URDF_JOINT_TYPES:
        raise ctx.error(
            f"{where} has unknown type '{_clip(yj.type)}' (expected one of "
            f"{', '.join(URDF_JOINT_TYPES)})"
        )
    limit, dyn, mimic = yj.limit, yj.dynamics, yj.mimic
    # a spherical joint's lower/upper are swing ranges, not bounds of q (_spherical_limit)
    bounded = yj.type != "spherical"
    return JointSpec(
        name=yj.name,
        type=yj.type,
        parent=yj.parent,
        child=yj.child,
        origin=_pose(yj.origin),
        axis=_unit_axis(ctx, yj),
        lower=_value(limit, "lower") if bounded else float("nan"),
        upper=_value(limit, "upper") if bounded else float("nan"),
        effort=_value(limit, "effort"),
        velocity=_value(limit, "velocity"),
        damping=_value(dyn, "damping"),
        friction=_value(dyn, "friction"),
        mimic=None
        if mimic is None
        else MimicSpec(mimic.joint, _value(mimic, "multiplier", 1.0), _value(mimic, "offset", 0.0)),
        spherical_limit=None if bounded else ctx.spherical_limits.get(yj.name),
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
        # Fixed/floating/spherical joints ignore the axis; xacro often writes "0 0 0" there.
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


def _fill_zero_inertia(ctx: _Ctx, link: LinkSpec) -> None:
    """A mass with an all-zero (or missing) inertia: use the collision shapes' inertia at that
    mass (see :mod:`mbsim.io.shape_inertia`), when enabled and the shapes have a volume."""
    inertial = link.inertial
    if (
        not ctx.inertia_from_collision
        or inertial is None
        or not inertial.mass > 0.0
        or np.any(inertial.inertia != 0.0)
        or not link.collisions
    ):
        return
    for geom in link.collisions:
        _check_shape(ctx, link.name, geom)  # sizes first: the integrals need sane numbers
    where = ctx.at("link", link.name)
    found = shapes_inertia(link.collisions, inertial.mass, f"{ctx.source}: {where}")
    written = "no <inertia>" if link.name in ctx.no_inertia else "an all-zero <inertia>"
    if found is None:
        if link.name in ctx.no_inertia:
            raise ctx.error(
                f"{where} <inertial> (line {ctx.no_inertia[link.name]}) has no <inertia>, and "
                "its collision shapes have no volume to take it from"
            )
        return
    inertial.inertia = found[0]
    ctx.lint.append(
        f"{where} has mass {inertial.mass:.6g} kg but {written}; using the inertia of its "
        f"collision shapes at that mass, principal moments "
        f"{_fmt(np.linalg.eigvalsh(found[0]))} kg m^2 (as PyBullet does)"
    )


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
    if inertial.mass > MASS_MAX:
        raise ctx.error(f"{where} has mass {inertial.mass:.6g} kg, above the {MASS_MAX:g} kg bound")
    largest = float(np.abs(inertial.inertia).max())
    if largest > INERTIA_MAX:
        raise ctx.error(
            f"{where} has an inertia entry of {largest:.6g} kg m^2, above the "
            f"{INERTIA_MAX:g} kg m^2 bound"
        )
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
    """Sizes must be > 0 (m); mesh scales non-zero (negative mirrors the mesh); sizes and
    |scales| within [LENGTH_MIN, LENGTH_MAX]."""
    bad = [p for p in geom.params if (p == 0 if geom.kind == "mesh" else p <= 0)]
    label = "scale" if geom.kind == "mesh" else "size"
    head = f"{ctx.at('link', link)} has a collision {geom.kind} with {label} {_fmt(geom.params)}"
    if bad:
        raise ctx.error(
            f"{head}, containing {bad[0]:.6g}, which must be "
            f"{'non-zero' if geom.kind == 'mesh' else 'positive'}",
            GeometryError,
        )
    out = [p for p in geom.params if not LENGTH_MIN <= abs(p) <= LENGTH_MAX]
    if out:
        unit = "" if geom.kind == "mesh" else " m"
        raise ctx.error(
            f"{head}, containing {out[0]:.6g}, outside the accepted range "
            f"{LENGTH_MIN:g} to {LENGTH_MAX:g}{unit}",
            GeometryError,
        )


def _check_limits(ctx: _Ctx, joint: JointSpec) -> None:
    """lower > upper is Bullet's way to write "no limit": accepted, reported, unlimited.
    Effort, velocity limits and damping, friction must not be negative; mimic multiplier
    and offset lie within +-MIMIC_MAX."""
    where = ctx.at("joint", joint.name)
    if joint.lower > joint.upper:  # False when either is NaN (absent)
        ctx.lint.append(
            f"{where} has lower limit {joint.lower:.6g} above upper limit {joint.upper:.6g}; "
            "read as no position limit (Bullet's convention)"
        )
        joint.lower = joint.upper = float("nan")
    for attr, unit in (
        ("effort", "N m or N"),
        ("velocity", "rad/s or m/s"),
        ("damping", "N m s/rad or N s/m"),
        ("friction", "N m or N"),
    ):
        value = getattr(joint, attr)
        if value < 0:  # False for NaN (absent)
            kind = "limit" if attr in ("effort", "velocity") else "coefficient"
            raise ctx.error(f"{where} has negative {attr} {kind} {value:.6g} {unit}")
    if joint.mimic is not None:
        for attr in ("multiplier", "offset"):
            value = getattr(joint.mimic, attr)
            if abs(value) > MIMIC_MAX:
                raise ctx.error(
                    f"{where} has mimic {attr} {value:.6g}, beyond the +-{MIMIC_MAX:g} bound"
                )


def _check_mimics(ctx: _Ctx, joints: list[JointSpec]) -> None:
    """Mimic targets: a joint mimicking itself or a cycle of mimics is an error; a
    ``<mimic>`` naming a joint that does not exist is dropped with a lint entry (the joint
    then moves freely). urdfdom parses such a ``<mimic>`` without checking its target,
    Pinocchio ignores ``<mimic>`` by default (with ``mimic=True`` it refuses the file:
    "The parent joint of the mimic joint is not in the kinematic tree") and PyBullet ignores
    ``<mimic>`` altogether; example-robot-data's alex_psyonic_hands.urdf has eight."""
    names = {j.name for j in joints}
    for joint in joints:
        if joint.mimic is None:
            continue
        master = joint.mimic.master
        if master == joint.name:
            raise ctx.error(f"{ctx.at('joint', joint.name)} mimics '{master}', itself")
        if master not in names:
            ctx.lint.append(
                f"{ctx.source}: {ctx.at('joint', joint.name)} mimics '{_clip(master)}', a joint "
                "that does not exist; the <mimic> is ignored and the joint moves freely"
            )
            joint.mimic = None
    # Following the masters from any joint must end; a loop has no solution to follow.
    by_name = {j.name: j for j in joints}
    settled: set[str] = set()
    for joint in joints:
        chain: list[str] = []
        current: JointSpec | None = joint
        while current is not None and current.mimic is not None and current.name not in settled:
            if current.name in chain:
                loop = chain[chain.index(current.name) :] + [current.name]
                raise ctx.error(
                    "mimic joints form a cycle "
                    + " -> ".join(f"'{n}'" for n in loop)
                    + "; each joint mimics the next, so none has a master to follow"
                )
            chain.append(current.name)
            current = by_name[current.mimic.master]
        settled.update(chain)


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
