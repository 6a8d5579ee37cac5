"""Calls of compiled kernels through their addresses (simcore/native_call.py).

Truth: the same kernel called directly (numba's linked call, and from Python): the call by
address must return the same values bit for bit, write the same arrays, raise the callee's
exception, and, with the table version, answer "not found" rather than call anything for
argument types the table holds no compilation of.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit, types

from mbsim.simcore.native_call import EMPTY, address_table, native, native_caller


@njit
def _kernel(a, b, x):
    if x < 0.0:
        raise ValueError("negative scale")
    s = 0.0
    for i in range(a.shape[0]):
        b[i] = np.sin(a[i]) * x
        s += b[i] / 3.0
    out = np.empty(2)
    out[0] = s
    out[1] = -s
    return s, out


_kernel_call = native(_kernel)
_call_table = native_caller(types.Tuple((types.float64, types.float64[::1])))


@njit
def _linked(a, b, x):
    return _kernel(a, b, x)


@njit
def _by_address(a, b, x):
    return _kernel_call(a, b, x)


@njit
def _by_table(table, a, b, x):
    return _call_table(table, a, b, x)


def test_same_results_as_a_linked_call():
    a = np.linspace(-3.0, 3.0, 17)
    b1, b2 = np.zeros(17), np.zeros(17)
    s1, o1 = _linked(a, b1, 1.7)
    s2, o2 = _by_address(a, b2, 1.7)
    assert s1 == s2
    assert np.array_equal(o1, o2) and np.array_equal(b1, b2)


def test_exception_of_the_callee_propagates():
    with pytest.raises(ValueError, match="negative scale"):
        _by_address(np.ones(3), np.zeros(3), -1.0)


def test_table_finds_the_compilation_or_answers_not_found():
    a, b = np.linspace(0.0, 1.0, 5), np.zeros(5)
    ok, _ = _by_table(EMPTY, a, b, 2.0)
    assert not ok and not b.any()  # nothing called
    _kernel(a, b, 2.0)  # compiled for these argument types from Python
    b[:] = 0.0
    ok, (s, out) = _by_table(address_table(_kernel), a, b, 2.0)
    s_ref, out_ref = _linked(a, np.zeros(5), 2.0)
    assert ok and s == s_ref and np.array_equal(out, out_ref)
    ok, _ = _by_table(address_table(_kernel), a.astype(np.float32), b, 2.0)
    assert not ok  # no compilation for float32 arrays in the table


@njit
def _square(x):
    return x * x


_square_call = native(_square)


@njit
def _square_by_address(x):
    return _square_call(x)


def test_ctrl_c_while_the_callee_is_found_is_a_keyboard_interrupt(monkeypatch):
    # a Ctrl-C raised while the first call finds its callee (cli/sigint.py raises a remembered
    # one at the end of the callee's compile or cache load) reaches the caller's caller as a
    # KeyboardInterrupt, not as the call's "no compiled ..." RuntimeError; the next call finds
    # the callee
    import types as pytypes

    from mbsim.simcore import native_call

    _square_by_address.compile((types.float64,))  # compiled before the interrupt, not called

    def interrupted(name):
        raise KeyboardInterrupt

    fake = pytypes.SimpleNamespace(import_module=interrupted)
    monkeypatch.setattr(native_call, "importlib", fake)
    with pytest.raises(KeyboardInterrupt):
        _square_by_address(3.0)
    monkeypatch.undo()
    assert _square_by_address(3.0) == 9.0
