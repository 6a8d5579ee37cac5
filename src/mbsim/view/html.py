"""``mbsim view`` as one self-contained HTML page: three.js, the replay's data and the player,
inlined; it opens from disk with no server and no network.

three.js is vendored unmodified in ``vendor/`` (r170, MIT, see docs/view.md). Its minified
ES module build ends in one ``export{local as Name, ...}`` clause; a module cannot be imported
from a ``file://`` page without a server, so the page runs it as a classic script wrapped in
a function that returns those names as the ``THREE`` object, and OrbitControls' ``import
{...} from 'three'`` becomes a destructuring of that object. The transformation is checked
(it fails loudly if a different three.js build no longer matches).
"""

from __future__ import annotations

import base64
import json
import re
from importlib import resources

import numpy as np

from mbsim.view.replay import Replay

__all__ = ["THREE_VERSION", "page", "three_bundle"]

THREE_VERSION = "0.170.0"
_DEFAULT_COLORS = {"robot": (0.72, 0.74, 0.78, 1.0), "static": (0.78, 0.66, 0.5, 1.0)}


def _asset(name: str) -> str:
    return resources.files("mbsim.view").joinpath(name).read_text(encoding="utf-8")


def three_bundle() -> str:
    """three.js and OrbitControls as one classic script defining ``THREE``."""
    src = _asset("vendor/three.module.min.js")
    m = re.search(r"export\s*\{([^}]*)\}\s*;?\s*$", src)
    if m is None or "import" in src[:200]:
        raise RuntimeError("vendor/three.module.min.js does not end in one export clause")
    pairs = []
    for item in m.group(1).split(","):
        local, _, name = item.strip().partition(" as ")
        pairs.append(f"{name or local}:{local}")
    three = (
        'var THREE=(function(){"use strict";\n'
        + src[: m.start()]
        + "\nreturn {"
        + ",".join(pairs)
        + "};})();\n"
    )
    orbit = _asset("vendor/OrbitControls.js")
    orbit, n_imp = re.subn(r"import\s*\{([^}]*)\}\s*from\s*'three';", r"const {\1} = THREE;", orbit)
    orbit, n_exp = re.subn(
        r"export\s*\{\s*OrbitControls\s*\};", "THREE.OrbitControls = OrbitControls;", orbit
    )
    if (n_imp, n_exp) != (1, 1):
        raise RuntimeError("vendor/OrbitControls.js does not have the expected import/export")
    return three + '(function(){"use strict";\n' + orbit + "\n})();\n"


def _b64(a: np.ndarray, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def payload(rp: Replay) -> dict:
    """The page's data (JSON): arrays of float32/uint32 as base64, little-endian."""
    r = rp.results
    moving_trees = {int(t) for t in r.body_trees}  # robots; environments have no bodies
    meshes = [
        {
            "positions": _b64(m.vertices, "<f4"),
            "indices": _b64(m.faces, "<u4"),
            "color": m.color,
            "name": m.path.rsplit("/", 1)[-1],
        }
        for m in rp.meshes
    ]
    shapes = []
    for s in rp.scene.shapes:
        rgba = s.rgba
        if rgba is None and s.mesh >= 0 and rp.meshes and rp.meshes[s.mesh].color is not None:
            rgba = rp.meshes[s.mesh].color
        if rgba is None:
            rgba = _DEFAULT_COLORS["robot" if s.tree in moving_trees else "static"]
        shapes.append(
            {
                "role": s.role,
                "body": s.body,
                "link": s.link,
                "kind": s.kind,
                "params": [float(x) for x in s.params],
                "pose": [float(x) for x in np.asarray(s.pose).reshape(16)],
                "rgba": [float(x) for x in rgba],
                "mesh": s.mesh,
            }
        )
    ev = rp.events
    kinds = [r.event_kinds[k] for k in ev["kind"]]
    events = {
        "time": [float(t) for t in ev["time"]],
        "kind": kinds,
        "a": [r.body_name(int(i)) for i in ev["body_a"]],
        "b": [r.body_name(int(i)) for i in ev["body_b"]],
        "impulse": [_num(x) for x in ev["normal_impulse"]],
    }
    c = rp.contacts
    return {
        "title": rp.path.name,
        "status": r.status,
        "duration": _num(r.duration),
        "dt": _num(r.dt),
        "bodies": list(r.body_names),
        "floor": rp.scene.floor,
        "times": _b64(rp.times, "<f8"),
        "n_frames": len(rp.times),
        "poses": _b64(rp.poses, "<f4"),
        "meshes": meshes,
        "shapes": shapes,
        "events": events,
        "event_kinds": list(r.event_kinds),
        "contacts": {
            "start": _b64(c["start"], "<u4"),
            "point": _b64(c["point"], "<f4"),
            "normal": _b64(c["normal"], "<f4"),
            "impulse": _b64(c["impulse"], "<f4"),
        },
        "notes": rp.notes,
    }


def page(rp: Replay) -> str:
    """The complete HTML document."""
    data = json.dumps(payload(rp), separators=(",", ":"), allow_nan=False)
    # JSON inside <script>: "</" would end the element; "<\/" is the same JSON string.
    data = data.replace("</", "<\\/")
    html = _asset("viewer.html")
    parts = {
        "/*MBSIM_THREE*/": three_bundle(),
        "/*MBSIM_DATA*/": data,
        "/*MBSIM_APP*/": _asset("viewer.js"),
        "MBSIM_TITLE": _escape(rp.path.name),
    }
    for key in parts:
        if key not in html:
            raise RuntimeError(f"viewer.html has no {key} placeholder")
    # one pass over the template only: inserted text is never searched for placeholders
    pattern = "|".join(re.escape(k) for k in parts)
    return re.sub(pattern, lambda m: parts[m.group(0)], html)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
