"""numba's file cache keyed by the whole package (mbsim/kernel_cache.py).

A cached kernel that calls a kernel of another file carries the callee's code in its own cache
entry; numba's default key is only the caller's own file, so a changed callee alone would be
served from the stale entry. The test makes a two-file package, runs it cached in a fresh
process, changes only the callee's file and runs again: with mbsim's locators the new callee is
used; with numba's own (the control) the stale one is, which is the bug the locators prevent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CALLER = """
from numba import njit
from callee import value

@njit(cache=True)
def run():
    return value() + 0
"""

CALLEE = """
from numba import njit

@njit(cache=True)
def value():
    return {n}
"""

PROBE = """
import sys
from pathlib import Path
import mbsim.kernel_cache as kc
from numba.core import caching
pkg = Path(sys.argv[1])
if sys.argv[2] == "package":
    kc.PACKAGE_DIR = pkg.resolve()
else:  # control: numba's own locators only
    caching.CacheImpl._locator_classes[:] = [
        c for c in caching.CacheImpl._locator_classes if c not in kc.LOCATORS
    ]
sys.path.insert(0, str(pkg))
import caller
print(caller.run())
"""


def _run(pkg, mode, cache_dir) -> int:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(pkg), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


@pytest.mark.parametrize("mode", ["package", "numba"])
def test_a_changed_callee_file_is_not_served_from_the_callers_cache(tmp_path, mode):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "caller.py").write_text(textwrap.dedent(CALLER))
    callee = pkg / "callee.py"
    callee.write_text(textwrap.dedent(CALLEE.format(n=1)))
    cache_dir = tmp_path / "cache"
    assert _run(pkg, mode, cache_dir) == 1

    callee.write_text(textwrap.dedent(CALLEE.format(n=2)))  # same size: only mtime moves
    st = callee.stat()
    os.utime(callee, ns=(st.st_atime_ns, st.st_mtime_ns + 10**10))
    got = _run(pkg, mode, cache_dir)
    if mode == "package":
        assert got == 2
    else:  # numba's key alone serves the caller's stale machine code
        assert got == 1


def test_the_package_stamp_follows_every_source_file(tmp_path, monkeypatch):
    import mbsim.kernel_cache as kc

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 1\n")
    monkeypatch.setattr(kc, "PACKAGE_DIR", tmp_path)
    kc.package_stamp.cache_clear()
    try:
        before = kc.package_stamp()
        b = tmp_path / "sub" / "b.py"
        st = b.stat()
        os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        kc.package_stamp.cache_clear()
        assert kc.package_stamp() != before
    finally:
        kc.package_stamp.cache_clear()


def test_mbsim_kernels_use_the_package_locator():
    from mbsim.kernel_cache import LOCATORS
    from mbsim.simcore.lcp.problem import principal_kernel

    assert isinstance(principal_kernel._cache._impl._locator, LOCATORS)
