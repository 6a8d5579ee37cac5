"""numba's file cache of mbsim's kernels, keyed by the whole package's source.

numba keys a cached kernel by its own file's modification time and size only. A kernel that
calls a kernel of another file (the compiled loop calls the narrowphase, the contact step the
LCP's guess, ...) inlines or links that callee's code into its own cache entry, so after an
update that changes only the callee's file (``git pull``, a reinstall) numba would load the
caller's old machine code: the run would silently compute with the old callee. Here every
kernel of the package is keyed by a stamp of all the package's ``.py`` files (path, mtime,
size), so any change to any of them makes numba compile every kernel afresh on the next run.

:func:`install` puts the locators below ahead of numba's own, in numba's order
(``NUMBA_CACHE_DIR`` when it is set, else the ``__pycache__`` next to the source, else the
user's cache directory); files outside the package keep numba's locators. Importing this
module installs them: each subpackage that defines kernels imports it first.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from numba.core import caching

PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def package_stamp() -> str:
    """Hex digest of (relative path, mtime_ns, size) over every ``.py`` file of the package,
    computed once per process (~250 stat calls)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(PACKAGE_DIR)}:{st.st_mtime_ns}:{st.st_size}\n".encode())
    return digest.hexdigest()


def _in_package(py_file: str) -> bool:
    try:
        Path(py_file).resolve().relative_to(PACKAGE_DIR)
    except (OSError, ValueError):
        return False
    return True


class _PackageStamped:
    """Mixin: numba's stamp of the kernel's own file, plus :func:`package_stamp`."""

    def get_source_stamp(self):
        return (super().get_source_stamp(), package_stamp())

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _in_package(py_file):
            return None
        return super().from_function(py_func, py_file)


class PackageUserProvidedLocator(_PackageStamped, caching.UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR`` (numba's own choice when it is set)."""


class PackageInTreeLocator(_PackageStamped, caching.InTreeCacheLocator):
    """``__pycache__`` beside the source (numba's default)."""


class PackageUserWideLocator(_PackageStamped, caching.UserWideCacheLocator):
    """The user's cache directory, when the package's own folder is not writable."""


LOCATORS = (PackageUserProvidedLocator, PackageInTreeLocator, PackageUserWideLocator)


def install() -> None:
    """Put the package's locators first in numba's list, in numba's own order (once)."""
    classes = caching.CacheImpl._locator_classes
    if classes[: len(LOCATORS)] != list(LOCATORS):
        classes[:0] = LOCATORS


install()
