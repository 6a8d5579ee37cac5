"""Call a compiled kernel by its address, so that a caller's compilation does not compile it again.

numba compiles a kernel that calls another jitted kernel by linking the callee's code into the
caller's and optimising the whole again (LLVM's module passes and machine code for every
function linked in). A kernel deep in a chain of calls is so compiled once for itself and once
more for each kernel above it. For the compiled loop of steps (free_loop.py) that calls the
compiled contact step (contact_fused.py), that was most of a first run's compile time
(docs/results.md, "First run: the contact step compiled once").

A call made with :func:`native_caller` calls the callee through its address instead: the
callee is compiled on its own, once, for the argument types of the call site (the same
compilation, and the same machine code, as a call from Python with those types), and the
caller holds only the call.
The address is a run-time value, never a constant of the caller's code: numba caches the
caller's object code to files, and a cached caller runs in processes where the callee sits
at another address. The caller passes a table of the callee's compilations, (key, address)
rows (:func:`address_table`), and the call looks up the row of its argument types'
:func:`signature_key` in it. With no such row (the callee not compiled in this process for
those types, or a caller cached before the callee's arguments changed) nothing is called and
the call answers ``(False, zero)``: the caller decides what to do without the callee.

The call itself is numba's own calling convention for jitted functions (as a linked call;
arrays passed as borrowed references, an exception raised in the callee propagates to the
caller), so results are the same bit for bit as with a linked call; only LLVM's inlining
across the call is given up.
"""

from __future__ import annotations

import ctypes
import importlib
import pickle
import zlib

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def signature_key(args, restype) -> int:
    """The key of a compilation of argument types ``args`` and return type ``restype``
    (numba types): CRC-32 of their names, the same in every process."""
    text = ",".join(str(t) for t in args) + "->" + str(restype)
    return zlib.crc32(text.encode())


def address_table(dispatcher) -> np.ndarray:
    """(k, 2) int64: the key (:func:`signature_key`) and address of each compilation of
    ``dispatcher`` in this process (compile or load the one needed first)."""
    rows = []
    for sig, cres in list(dispatcher.overloads.items()):
        addr = cres.library.get_pointer_to_function(cres.fndesc.mangled_name)
        if addr:
            rows.append((signature_key(sig, cres.signature.return_type), addr))
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def _lookup(table, key):
    for i in range(table.shape[0]):
        if table[i, 0] == key:
            return table[i, 1]
    return 0


def native_caller(restype):
    """An intrinsic ``call(table, *args)`` for jitted kernels: the call of the function whose
    compilations ``table`` lists (:func:`address_table`) on ``args``, through the address of
    its compilation for the argument types here and the return type ``restype`` (a numba
    type): (True, result), or (False, zero) when the table has no such compilation (module
    docstring). Typing the call neither compiles the function nor links it into the caller:
    the run compiles (or loads) it for these types itself, from Python, before it builds the
    table, possibly in another process (warmup.py)."""

    @intrinsic
    def call(typingctx, table, *args):
        argtys = tuple(types.unliteral(a) for a in args)
        key = signature_key(argtys, restype)
        out = types.Tuple((types.boolean, restype))

        def codegen(context, builder, signature, llargs):
            addr = context.compile_internal(
                builder, _lookup, types.int64(signature.args[0], types.int64),
                [llargs[0], context.get_constant(types.int64, key)],
            )  # fmt: skip
            found = builder.icmp_signed("!=", addr, ir.Constant(addr.type, 0))
            rty = context.get_value_type(restype)
            result = cgutils.alloca_once_value(builder, cgutils.get_null_value(rty))
            with builder.if_then(found):
                fnty = context.call_conv.get_function_type(restype, argtys)
                fnptr = builder.inttoptr(addr, fnty.as_pointer())
                vals = cgutils.unpack_tuple(builder, llargs[1], len(args))
                cargs = [
                    context.cast(builder, v, t, a)
                    for v, t, a in zip(vals, args, argtys, strict=True)
                ]
                status, res = context.call_conv.call_function(
                    builder, fnptr, restype, argtys, cargs
                )
                with cgutils.if_unlikely(builder, status.is_error):
                    context.call_conv.return_status_propagate(builder, status)
                builder.store(res, result)
            return context.make_tuple(builder, out, [found, builder.load(result)])

        return out(table, types.StarArgTuple.from_types(args)), codegen

    return call


#: what :func:`_resolve` answers when a Ctrl-C (KeyboardInterrupt) cut it short: the caller
#: raises KeyboardInterrupt then, not its RuntimeError (cli/sigint.py raises a remembered
#: Ctrl-C at the end of a compile, which may be the callee's compile or cache load here)
INTERRUPTED = -1


def _resolve(spec: int, size: int) -> int:
    """The address of the compilation :func:`native_call` describes in the ``size`` bytes
    at ``spec`` (a pickled (module, function name, argument types, return type)), compiled
    or loaded from numba's cache now; 0 when there is none (the caller raises then);
    :data:`INTERRUPTED` after a KeyboardInterrupt (the caller raises it again: an
    exception cannot cross the C callback itself, ctypes would print and drop it)."""
    try:
        module, name, args, restype = pickle.loads(ctypes.string_at(spec, size))
        dispatcher = getattr(importlib.import_module(module), name)
        dispatcher.compile(args)
        cres = dispatcher.overloads[args]
        if cres.signature.return_type != restype:
            return 0
        return int(cres.library.get_pointer_to_function(cres.fndesc.mangled_name) or 0)
    except KeyboardInterrupt:
        return INTERRUPTED
    except Exception:  # the caller raises its own error: no address
        return 0


_RESOLVE_T = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
_resolver = _RESOLVE_T(_resolve)  # kept alive: compiled code calls it
#: the symbol compiled callers call :func:`_resolve` by: registered before any caller's code
#: is made or loaded from the cache (this module is imported by every caller's module)
RESOLVE = "mbsim_native_resolve"
llvm.add_symbol(RESOLVE, ctypes.cast(_resolver, ctypes.c_void_p).value)


def native(dispatcher, restype=None):
    """An intrinsic ``call(*args)`` for jitted kernels: ``dispatcher(*args)`` (a jitted
    module-level function) through its address (module docstring), found on the call's
    first run in each process: compiled or loaded from numba's cache then by
    :func:`_resolve` (a call back into Python, once) and kept in a slot of the caller's
    code. Typing the call compiles the function for these argument types (on its own, as a
    call from Python would, into numba's cache), so a caller compiled in one process finds
    its callees compiled. Results and exceptions are those of a linked call.

    With ``restype`` (the numba type the function returns for the call's argument types,
    which must be exact: a test should check it) typing compiles nothing: the function is
    compiled (or loaded from the cache) only when a call first runs, so a caller whose runs
    seldom or never reach the call does not compile it on a first run."""
    py = dispatcher.py_func
    fnty = types.Dispatcher(dispatcher)

    @intrinsic
    def call(typingctx, *args):
        return _typed(typingctx, fnty, py, args, restype)

    return call


def _typed(typingctx, fn, py, args, restype=None):
    """:func:`native`'s call: its signature and code generator."""
    module = importlib.import_module(py.__module__)
    if getattr(module, py.__name__, None) is not fn.dispatcher:
        return None  # not found again by name in another process
    if restype is None:
        sig = fn.get_call_type(typingctx, args, {})
        restype = sig.return_type
    else:  # not compiled now: the argument types as a call from Python would type them
        sig = restype(*(types.unliteral(a) for a in args))
    spec = pickle.dumps((py.__module__, py.__name__, tuple(sig.args), restype))
    slot_name = f"_mbsim_native_slot.{zlib.crc32(spec):08x}"

    def codegen(context, builder, signature, llargs):
        mod = builder.module
        i64 = ir.IntType(64)
        slot = mod.globals.get(slot_name)
        if slot is None:
            slot = cgutils.add_global_variable(mod, i64, slot_name)
            slot.linkage = "internal"
            slot.initializer = ir.Constant(i64, 0)
        addr0 = builder.load(slot)
        with builder.if_then(builder.icmp_unsigned("==", addr0, i64(0)), likely=False):
            data = cgutils.global_constant(mod, slot_name + ".spec", cgutils.make_bytearray(spec))
            ptr = builder.bitcast(data, ir.IntType(8).as_pointer())
            resolve = cgutils.get_or_insert_function(
                mod, ir.FunctionType(i64, [ir.IntType(8).as_pointer(), i64]), RESOLVE
            )
            found = builder.call(resolve, [ptr, i64(len(spec))])
            cut = builder.icmp_signed("==", found, i64(INTERRUPTED))
            with builder.if_then(cut, likely=False):
                context.call_conv.return_user_exc(builder, KeyboardInterrupt, ())
            with builder.if_then(builder.icmp_unsigned("==", found, i64(0)), likely=False):
                context.call_conv.return_user_exc(
                    builder, RuntimeError, (f"mbsim: no compiled {py.__name__} to call",)
                )
            builder.store(found, slot)
        addr = builder.load(slot)
        fnty = context.call_conv.get_function_type(restype, sig.args)
        fnptr = builder.inttoptr(addr, fnty.as_pointer())
        vals = cgutils.unpack_tuple(builder, llargs[0], len(args))
        cargs = [
            context.cast(builder, v, t, a) for v, t, a in zip(vals, args, sig.args, strict=True)
        ]
        status, res = context.call_conv.call_function(builder, fnptr, restype, sig.args, cargs)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return res

    return restype(types.StarArgTuple.from_types(args)), codegen


#: the table of a callee with no compilation (callers' placeholder)
EMPTY = np.zeros((0, 2), dtype=np.int64)

__all__ = ["EMPTY", "address_table", "native", "native_caller", "signature_key"]
