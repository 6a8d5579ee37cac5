"""Dotted scenario keys (``contact.mu``, ``robot.box.q0."root_joint.z"``) as sweeps use them.

The scenario loader reads the same syntax (TOML dotted keys: bare parts or quoted parts);
here keys are split, put back together in one canonical spelling and compared, so that
``contact.mu`` and ``"contact"."mu"`` name the same parameter of a sweep.
"""

from __future__ import annotations

import json
import re

_BARE_RE = re.compile(r"[A-Za-z0-9_-]+")
_TOKEN = r"(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
_TOKEN_RE = re.compile(_TOKEN)
_DOTTED_RE = re.compile(rf"\s*{_TOKEN}(?:\s*\.\s*{_TOKEN})*\s*")


def split_key(text: str) -> tuple[str, ...] | None:
    """``'robot.box.q0."root_joint.z"'`` -> ``("robot", "box", "q0", "root_joint.z")``;
    None when ``text`` is not a TOML dotted key."""
    if not _DOTTED_RE.fullmatch(text):
        return None
    parts = []
    for tok in _TOKEN_RE.findall(text):
        if tok.startswith('"'):
            try:
                tok = json.loads(tok)
            except json.JSONDecodeError:
                return None
        elif tok.startswith("'"):
            tok = tok[1:-1]
        parts.append(tok)
    return tuple(parts)


def join_key(parts: tuple[str, ...]) -> str:
    """The canonical spelling of a key: bare parts as they are, others double-quoted."""
    return ".".join(p if _BARE_RE.fullmatch(p) else json.dumps(p) for p in parts)


def is_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """True when key ``a`` is ``b`` or a table that contains ``b``."""
    return len(a) <= len(b) and b[: len(a)] == a
