"""`mbsim view`'s page in a real browser (headless Chromium), skipped when none is installed.

The page is rendered at the first and the last recorded time. Independent truth: the body
poses in the results file, projected to pixels with the camera the page reports (its
view-projection matrix; the camera frames the whole run at load, so it is the same at both
times). The screenshots must differ where the pendulum's tip and the ball were and are, and
nowhere far from them; the canvas must not be blank (the tip is drawn in its URDF colour);
the page must log no error (its error hook writes every error and console.error to
``<html data-errors>``, read back with --dump-dom).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import view_scene as vs
from mbsim.io.results import load_results

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)"
)

WIDTH, HEIGHT, BAR = 800, 600, 64  # window, px; BAR: the control bar under the canvas
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-swiftshader",  # software WebGL, opted in (trusted local page)
    f"--window-size={WIDTH},{HEIGHT}",
    "--virtual-time-budget=10000",
]


def chromium(tmp: Path, url: str, *extra: str) -> str:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def screenshot(tmp: Path, url: str, name: str) -> np.ndarray:
    Image = pytest.importorskip("PIL.Image", reason="Pillow reads the screenshots")
    path = tmp / name
    chromium(tmp, url, f"--screenshot={path}")
    img = np.asarray(Image.open(path).convert("RGB")).astype(int)
    assert img.shape == (HEIGHT, WIDTH, 3)
    return img[: HEIGHT - BAR]  # the canvas; the bar's slider and time label change too


def dom_attrs(tmp: Path, url: str) -> dict:
    html = chromium(tmp, url, "--dump-dom")
    m = re.search(r"<html([^>]*)>", html)
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
    out = {k: v.replace("&quot;", '"') for k, v in attrs.items()}
    out["data-errors"] = json.loads(out.get("data-errors", "null"))
    return out


def quat_matrix(q) -> np.ndarray:
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_page_renders_the_motion_without_errors(tmp_path):
    from mbsim.view.html import page
    from mbsim.view.replay import load_replay

    results = vs.make_results(tmp_path)
    html = tmp_path / "replay.html"
    html.write_text(page(load_replay(results)), encoding="utf-8")
    r = load_results(results)
    t0, t1 = float(r.time[0]), float(r.time[-1])
    url = html.as_uri()

    first = dom_attrs(tmp_path, f"{url}?t={t0}")
    last = dom_attrs(tmp_path, f"{url}?t={t1}")
    for attrs in (first, last):
        assert attrs["data-errors"] == [], attrs["data-errors"]
        assert attrs.get("data-ready") == "1"
    assert (int(first["data-frame"]), int(last["data-frame"])) == (0, len(r.time) - 1)
    playing = dom_attrs(tmp_path, f"{url}?play=1&speed=0.05")  # the player advances
    assert playing["data-errors"] == [] and 0 < int(playing["data-frame"]) < len(r.time) - 1

    vp = np.array(json.loads(first["data-view-projection"])).reshape(4, 4).T  # column-major
    assert first["data-view-projection"] == last["data-view-projection"]
    # --dump-dom lays the page out in a smaller viewport than --screenshot; the camera is the
    # same, only its aspect ratio a differs, and a perspective projection's first row is
    # (f / a) times the view matrix's: rescale it to the screenshot's canvas.
    w, h = map(int, first["data-canvas-size"].split("x"))
    vp[0] *= (w / h) / (WIDTH / (HEIGHT - BAR))

    def pixel(p) -> np.ndarray:
        clip = vp @ np.append(p, 1.0)
        ndc = clip[:3] / clip[3]
        return np.array([(ndc[0] + 1) / 2 * WIDTH, (1 - ndc[1]) / 2 * (HEIGHT - BAR)])

    def tip(k):  # the tip sphere: body 'bar' pose times the fixed joint's 0.3 m offset
        pose = r.body_pose[k, 0]
        return pose[:3] + quat_matrix(pose[3:]) @ np.array([0.0, 0.0, -0.3])

    moved = [pixel(p) for p in (tip(0), tip(-1), r.body_pose[0, 1, :3], r.body_pose[-1, 1, :3])]
    pivot = pixel(r.body_pose[0, 0, :3])  # the bar sweeps between the pivot and the tip

    a = screenshot(tmp_path, f"{url}?t={t0}", "first.png")
    b = screenshot(tmp_path, f"{url}?t={t1}", "last.png")
    again = screenshot(tmp_path, f"{url}?t={t0}", "again.png")
    assert np.abs(a - again).max() <= 8  # the same time renders the same picture

    # not blank: many colours, and the tip is drawn in its URDF blue where it projects
    assert len(np.unique(b.reshape(-1, 3), axis=0)) > 200
    # (the bar enters the sphere at its centre, so look at the square of +-12 px around it;
    # the sphere's 0.06 m radius spans about 35 px in these views)
    for img, k in ((a, 0), (b, -1)):
        x, y = np.round(pixel(tip(k))).astype(int)
        patch = img[y - 12 : y + 13, x - 12 : x + 13].reshape(-1, 3)
        blue = patch[:, 2] > patch[:, 0] + 60
        assert blue.mean() > 0.3, (k, blue.mean())

    diff = np.abs(a - b).max(axis=2) > 40
    ys, xs = np.nonzero(diff)
    assert len(xs) > 500
    # where they differ: the old and new places of the tip and the ball (and the bar, which
    # lies between pivot and tip)
    for p in moved:
        x, y = np.round(p).astype(int)
        assert diff[y - 3 : y + 4, x - 3 : x + 4].any(), p
    pts = np.array([*moved, pivot])
    lo, hi = pts.min(axis=0) - 90, pts.max(axis=0) + 90  # 90 px: the sphere/ball radii
    inside = (xs >= lo[0]) & (xs <= hi[0]) & (ys >= lo[1]) & (ys <= hi[1])
    assert inside.mean() > 0.98, (lo, hi, inside.mean())
