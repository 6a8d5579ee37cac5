"""SRDF files: the ``<disable_collisions link1=".." link2=".."/>`` pairs, read once.

Only the collision filters are used (MoveIt's groups, end effectors and virtual joints are
ignored). The file is parsed with the hardened parser of :mod:`mbsim.io.safe_xml`. Link names
are returned as written (bare URDF link names); the caller decides the tree they belong to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lxml import etree

from mbsim.errors import SrdfError
from mbsim.io.safe_xml import refused_doctype, safe_parser


@dataclass(frozen=True)
class Srdf:
    """``robot``: the ``<robot name>`` (None if absent); ``disabled``: the link pairs of every
    ``<disable_collisions>``, in file order; ``lines``: the line of each (None if unknown)."""

    robot: str | None
    disabled: tuple[tuple[str, str], ...]
    lines: tuple[int | None, ...] = ()


def read_srdf(path: str | os.PathLike[str]) -> Srdf:
    """Read an SRDF file; :class:`~mbsim.errors.SrdfError` (one sentence naming the file and
    the line) if it cannot be read, is not well-formed XML, declares entities or an external
    DTD, or has a ``<disable_collisions>`` without both links."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise SrdfError(f"{path}: SRDF file cannot be read ({exc.strerror or exc}).") from exc
    try:
        root = etree.fromstring(data, safe_parser())
    except (etree.XMLSyntaxError, ValueError) as exc:
        msg = getattr(exc, "msg", None) or str(exc)
        raise SrdfError(f"{path}: SRDF file is not well-formed XML ({msg}).") from exc
    why = refused_doctype(root)
    if why is not None:
        raise SrdfError(f"{path}: SRDF file {why}.")
    pairs, lines = [], []
    for element in root.iter("disable_collisions"):
        a, b = element.get("link1"), element.get("link2")
        if not a or not b:
            raise SrdfError(
                f"{path}, line {element.sourceline}: <disable_collisions> needs both 'link1' "
                "and 'link2'."
            )
        pairs.append((a, b))
        lines.append(element.sourceline)
    return Srdf(root.get("name"), tuple(pairs), tuple(lines))
