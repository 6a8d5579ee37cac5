"""Dotted scenario keys (``contact.mu``, ``robot.box.q0."root_joint.z"``) as sweeps use them.

The scenario loader reads the same syntax (TOML dotted keys: bare parts or quoted parts);
here keys are split, put back together in one canonical spelling and compared, so that
``contact.mu`` and ``"contact"."mu"`` name the same parameter of a sweep.
"""

from __future__ import annotations

import json
import re

_BARE_RE = re.compile(r"[A-Za-z0-9_-]+")


def join_key(parts: tuple[str, ...]) -> str:
    """The canonical spelling of a key: bare parts as they are, others double-quoted."""
    return ".".join(p if _BARE_RE.fullmatch(p) else json.dumps(p) for p in parts)


def is_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """True when key ``a`` is ``b`` or a table that contains ``b``."""
    return len(a) <= len(b) and b[: len(a)] == a
