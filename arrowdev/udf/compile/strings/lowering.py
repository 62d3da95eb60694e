"""Lowering of string operations, for one numba target at a time.

Two intrinsics reach memory: ``byte_at(s, i)`` and ``size_of(s)``; a literal is lowered to a module
constant of its bytes, with the same ``{data, size}`` layout as a view. Every operation is then plain
Python over bytes (``context.compile_internal``), written once for views and literals. All of them are
exact on valid UTF-8: code points never straddle a match, byte order is code point order, and a
character index is the number of non-continuation bytes before a byte index.
"""

from __future__ import annotations

import operator
from typing import Any

from .managed import register_managed
from .names import COMPARISONS, METHODS, PREDICATES
from .tables import Table, register_tables, table_type
from ..targets import compiled_only_stub
from .numba_types import string_types
from .words import register_words, writer_type


def chars_before(s, end):  # noqa: D103 - stubs: numba calls their registered lowering
    raise NotImplementedError("compiled only")


def matches_at(s, sub, at):  # noqa: D103
    raise NotImplementedError("compiled only")


def find_byte(s, sub):  # noqa: D103
    raise NotImplementedError("compiled only")


def rfind_byte(s, sub):  # noqa: D103
    raise NotImplementedError("compiled only")


def compare(a, b):  # noqa: D103
    raise NotImplementedError("compiled only")


def code_point_at(s, at):  # noqa: D103
    raise NotImplementedError("compiled only")


def in_ranges(code, table):  # noqa: D103 - table: flat (first, last) pairs, sorted
    raise NotImplementedError("compiled only")


def _width(lead):
    """Bytes of the UTF-8 sequence that starts with byte ``lead``."""
    return 1 if lead < 0x80 else (2 if lead < 0xE0 else (3 if lead < 0xF0 else 4))


def _utf8_impls(byte_at: Any, size_of: Any) -> tuple[dict[Any, tuple[str, Any]], dict[str, Any]]:
    """(helpers: stub -> (result type name, implementation), operations: name -> implementation), as
    Python over the two intrinsics and the helper stubs."""
    operations = {**_comparison_impls(size_of), **_search_impls(size_of), **_predicate_impls(byte_at, size_of)}
    return _byte_helper_impls(byte_at, size_of), operations


def _byte_helper_impls(byte_at: Any, size_of: Any) -> dict[Any, tuple[str, Any]]:
    """The helpers the operations share (``chars_before``, ``matches_at``, ``find_byte``, ``rfind_byte``,
    ``compare``, ``code_point_at``): stub -> (result type name, implementation). Helpers are stubs with
    lowerings of their own rather than jitted functions: numba-cuda compiles a called device function for
    the current GPU, and CI has none; a lowering compiles inside the caller."""

    def chars_before_impl(s, end):
        n = 0
        for k in range(end):
            if (byte_at(s, k) & 0xC0) != 0x80:
                n += 1
        return n

    def matches_at_impl(s, sub, at):
        for k in range(size_of(sub)):
            if byte_at(s, at + k) != byte_at(sub, k):
                return False
        return True

    def find_byte_impl(s, sub):
        for at in range(size_of(s) - size_of(sub) + 1):
            if matches_at(s, sub, at):
                return at
        return -1

    def rfind_byte_impl(s, sub):
        at = size_of(s) - size_of(sub)
        while at >= 0:
            if matches_at(s, sub, at):
                return at
            at -= 1
        return -1

    def compare_impl(a, b):
        for k in range(min(size_of(a), size_of(b))):
            x, y = byte_at(a, k), byte_at(b, k)
            if x != y:
                return -1 if x < y else 1
        return (size_of(a) > size_of(b)) - (size_of(a) < size_of(b))

    def code_point_at_impl(s, at):
        lead = byte_at(s, at)
        if lead < 0x80:
            return lead
        if lead < 0xE0:
            return ((lead & 0x1F) << 6) | (byte_at(s, at + 1) & 0x3F)
        if lead < 0xF0:
            return ((lead & 0x0F) << 12) | ((byte_at(s, at + 1) & 0x3F) << 6) | (byte_at(s, at + 2) & 0x3F)
        return (((lead & 0x07) << 18) | ((byte_at(s, at + 1) & 0x3F) << 12) | ((byte_at(s, at + 2) & 0x3F) << 6)
                | (byte_at(s, at + 3) & 0x3F))

    return {chars_before: ("int64", chars_before_impl), matches_at: ("boolean", matches_at_impl),
            find_byte: ("int64", find_byte_impl), rfind_byte: ("int64", rfind_byte_impl),
            compare: ("int64", compare_impl), code_point_at: ("int64", code_point_at_impl)}


def _comparison_impls(size_of: Any) -> dict[str, Any]:
    """``len`` and the six comparisons: byte order is code point order on valid UTF-8."""

    def length(s):
        return chars_before(s, size_of(s))

    def eq(a, b):
        return size_of(a) == size_of(b) and compare(a, b) == 0

    def ne(a, b):
        return not (size_of(a) == size_of(b) and compare(a, b) == 0)

    def lt(a, b):
        return compare(a, b) < 0

    def le(a, b):
        return compare(a, b) <= 0

    def gt(a, b):
        return compare(a, b) > 0

    def ge(a, b):
        return compare(a, b) >= 0

    return {"len": length, "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge}


def _search_impls(size_of: Any) -> dict[str, Any]:
    """``startswith``, ``endswith``, ``find``, ``rfind``, ``count`` and ``in``: byte matches, reported as
    character indices (the code points before the matching byte)."""

    def startswith(s, prefix):
        return size_of(s) >= size_of(prefix) and matches_at(s, prefix, 0)

    def endswith(s, suffix):
        return size_of(s) >= size_of(suffix) and matches_at(s, suffix, size_of(s) - size_of(suffix))

    def find(s, sub):
        at = find_byte(s, sub)
        return -1 if at < 0 else chars_before(s, at)

    def rfind(s, sub):
        at = rfind_byte(s, sub)
        return -1 if at < 0 else chars_before(s, at)

    def count(s, sub):
        if size_of(sub) == 0:
            return chars_before(s, size_of(s)) + 1
        n, at, last = 0, 0, size_of(s) - size_of(sub)
        while at <= last:
            if matches_at(s, sub, at):
                n += 1
                at += size_of(sub)
            else:
                at += 1
        return n

    def contains(s, sub):
        return find_byte(s, sub) >= 0

    return {"startswith": startswith, "endswith": endswith, "find": find, "rfind": rfind, "count": count,
            "contains": contains}


# isalpha, isalnum, isdecimal, isdigit, isnumeric, isspace: not empty, and every character in the table
_EVERY_SOURCE = """
def {name}(s):
    n = size_of(s)
    if n == 0:
        return False
    at = 0
    while at < n:
        if not in_ranges(code_point_at(s, at), {table}):
            return False
        at += _width_of(byte_at(s, at))
    return True
"""
_EVERY = {"isalpha": "ALPHA", "isalnum": "ALNUM", "isdecimal": "DECIMAL", "isdigit": "DIGIT",
          "isnumeric": "NUMERIC", "isspace": "SPACE"}

# isupper / islower: no character of the opposite case or titlecase, and at least one of this case
_CASED_SOURCE = """
def {name}(s):
    cased, at = False, 0
    while at < size_of(s):
        code = code_point_at(s, at)
        if in_ranges(code, {opposite}) or in_ranges(code, TITLE):
            return False
        cased = cased or in_ranges(code, {same})
        at += _width_of(byte_at(s, at))
    return cased
"""
_CASED = {"isupper": ("UPPER", "LOWER"), "islower": ("LOWER", "UPPER")}

_TITLE_SOURCE = """
def istitle(s):  # upper/titlecase only after uncased characters, lowercase only after cased ones
    cased, previous_cased, at = False, False, 0
    while at < size_of(s):
        code = code_point_at(s, at)
        if in_ranges(code, UPPER) or in_ranges(code, TITLE):
            if previous_cased:
                return False
            previous_cased = cased = True
        elif in_ranges(code, LOWER):
            if not previous_cased:
                return False
            previous_cased = cased = True
        else:
            previous_cased = False
        at += _width_of(byte_at(s, at))
    return cased
"""


def _predicate_impls(byte_at: Any, size_of: Any) -> dict[str, Any]:
    """``isalpha`` ... ``istitle`` with CPython's rules over the generated per-character tables. They are
    compiled from source in a namespace of their own so that the tables are globals (numba freezes global
    arrays as constants; closure arrays would break numba's internal-function cache)."""
    from . import unicode_tables as tables

    namespace: dict[str, Any] = {"byte_at": byte_at, "size_of": size_of, "code_point_at": code_point_at,
                                 "in_ranges": in_ranges, "_width_of": _width_of}
    for name in ("ALPHA", "ALNUM", "DECIMAL", "DIGIT", "NUMERIC", "SPACE", "UPPER", "LOWER", "TITLE"):
        namespace[name] = Table(name, getattr(tables, name))
    source = "".join(_EVERY_SOURCE.format(name=name, table=table) for name, table in _EVERY.items())
    source += "".join(_CASED_SOURCE.format(name=name, same=same, opposite=opposite)
                      for name, (same, opposite) in _CASED.items())
    source += _TITLE_SOURCE
    exec(compile(source, "<arrowdev string predicates>", "exec"), namespace)
    return {name: namespace[name] for name in PREDICATES}


def _width_of(lead):  # noqa: D103 - stub: lowered as _width
    raise NotImplementedError("compiled only")


def register_lowering(target: Any) -> dict[str, Any]:
    """Registers the constant, the intrinsics and every operation with one target; returns the
    intrinsics the kernels use (``make_view``, ``begin_row``, ``row_failed``, ...)."""
    from llvmlite import ir
    from numba.core import types

    t = string_types()
    cgutils = target.cgutils
    stringlike = t.stringlike
    register_tables(target)

    @target.lower_constant(t.Utf8ConstantType)
    def _constant(context, builder, ty, value):
        data = bytearray(ty.data) or bytearray(b"\0")
        array = cgutils.global_constant(builder.module, f"arrowdev_utf8_{abs(hash(ty.data)):x}_{len(ty.data)}",
                                        ir.Constant(ir.ArrayType(ir.IntType(8), len(data)), data))
        view = cgutils.create_struct_proxy(ty)(context, builder)
        view.data = builder.bitcast(array, ir.IntType(8).as_pointer())
        view.size = context.get_constant(types.int64, len(ty.data))
        return view._getvalue()

    @target.intrinsic
    def make_view(typingctx, address, size):
        def codegen(context, builder, sig, args):
            view = cgutils.create_struct_proxy(t.string_view)(context, builder)
            view.data = builder.inttoptr(args[0], ir.IntType(8).as_pointer())
            view.size = args[1]
            return view._getvalue()

        return t.string_view(types.int64, types.int64), codegen

    @target.intrinsic
    def byte_at(typingctx, s, index):
        if not isinstance(s, stringlike):
            return None

        def codegen(context, builder, sig, args):
            view = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
            return builder.zext(builder.load(builder.gep(view.data, [args[1]])), ir.IntType(64))

        return types.int64(s, types.int64), codegen

    @target.intrinsic
    def size_of(typingctx, s):
        if not isinstance(s, stringlike):
            return None

        def codegen(context, builder, sig, args):
            return cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0]).size

        return types.int64(s), codegen

    helpers, impls = _utf8_impls(byte_at, size_of)

    for stub, (result, impl) in helpers.items():
        _register_helper(target, stub, getattr(types, result), stringlike, _lower_with(impl))
    _register_number_helpers(target, _lower_with)

    for left in stringlike:
        target.lower_builtin(len, left)(_lower_with(impls["len"]))
        for right in stringlike:
            for op, name in COMPARISONS.items():
                target.lower_builtin(op, left, right)(_lower_with(impls[name]))
            target.lower_builtin(operator.contains, left, right)(_lower_with(impls["contains"]))
        for name in METHODS:
            for right in stringlike:
                target.lower_builtin(f"String.{name}", left, right)(_lower_with(impls[name]))
        for name in PREDICATES:
            target.lower_builtin(f"String.{name}", left)(_lower_with(impls[name]))
    intrinsics = {**register_managed(target), **register_words(target)}
    intrinsics.update(make_view=make_view, byte_at=byte_at)
    _register_operations(target, intrinsics, byte_at, size_of)
    return intrinsics


def _lower_with(impl: Any) -> Any:
    def lower(context, builder, sig, args):
        return context.compile_internal(builder, impl, sig, args)

    return lower


def _powers_of_ten() -> list[float]:
    """10**e for e in -342..308 as double-double pairs (high, low): high the nearest double, low the
    nearest double to what remains (exact fractions, so each pair is within 2**-106 of the power). Past
    +-290 the power is stored times 2**-+600 so that it, and a product with it, stay normal doubles
    (``operations._scaled`` multiplies the 2**+-600 back)."""
    from fractions import Fraction

    pairs: list[float] = []
    for exponent in range(-342, 309):
        exact = Fraction(10) ** exponent
        if exponent < -290:
            exact *= Fraction(2) ** 600
        elif exponent > 290:
            exact /= Fraction(2) ** 600
        high = float(exact)
        pairs += [high, float(exact - Fraction(high))]
    return pairs


def _fixed_result(argcount: int, result: Any) -> Any:
    """A type_callable typer for a helper of ``argcount`` arguments that always returns ``result``
    (numba binds the typer's own parameters to the call's arguments, so their number must match)."""
    params = ", ".join(f"a{k}" for k in range(argcount))
    namespace: dict[str, Any] = {"result": result}
    exec(f"def typer({params}):\n    return result\n", namespace)
    return lambda context: namespace["typer"]


_OPERATION_STUBS: dict[str, Any] = {}


def _operation_stubs() -> dict[str, Any]:
    """One stub per helper of ``operations`` (shared by the targets: each registers its own lowering)."""
    from . import operations

    if not _OPERATION_STUBS:
        for name in operations.HELPERS:
            code = getattr(operations, name).__code__
            _OPERATION_STUBS[name] = compiled_only_stub(name, code.co_argcount)
    return _OPERATION_STUBS


def _register_operations(target: Any, intrinsics: dict[str, Any], byte_at: Any, size_of: Any) -> None:
    """Typing-key -> lowering of every string-making and parsing operation of ``operations``."""
    from numba.core import types

    from . import operations
    from . import unicode_tables as tables
    from .literals import Utf8Constant, to_str
    from .managed import register_casts

    t = string_types()
    stubs = dict(_operation_stubs())  # a copy: the CPU adds stubs of its own below
    names: dict[str, Any] = {**intrinsics, **stubs, "byte_at": byte_at, "size_of": size_of,
                             "chars_before": chars_before, "code_point_at": code_point_at, "in_ranges": in_ranges,
                             "find_byte": find_byte, "rfind_byte": rfind_byte, "matches_at": matches_at,
                             "_width_of": _width_of, "SPACE_CHAR": Utf8Constant(" ")}
    for name in ("UPPER_MAP", "LOWER_MAP", "TITLE_MAP", "UPPER_INDEX", "LOWER_INDEX", "TITLE_INDEX", "SPACE", "UPPER", "LOWER", "CASED", "CASE_IGNORABLE",
                 "DECIMAL"):
        names[name] = Table(name, getattr(tables, name))
    names["POW10"] = Table("POW10", _powers_of_ten(), floats=True)
    functions = operations.bind(names)
    results = {"int64": types.int64, "boolean": types.boolean, "float64": types.float64,
               "managed": t.managed_string, "writer": writer_type()}
    helpers = dict(operations.HELPERS)
    if target.name == "cpu":  # a few helpers of the CPU's own (cpu_operations.py); the GPU keeps operations'
        from .cpu_operations import GENERAL, bind_cpu

        for name in GENERAL:  # the shared version stays callable as name + "_general"
            general = stubs[name + "_general"] = compiled_only_stub(name + "_general", stubs[name].__code__.co_argcount)
            functions[general.__name__], helpers[general.__name__] = functions[name], helpers[name]
        functions.update(bind_cpu({**names, **stubs}))
    for name, result in helpers.items():
        stub = stubs[name]

        target.type_callable(stub)(_fixed_result(stub.__code__.co_argcount, results[result]))
        target.lower_builtin(stub, *[types.Any] * stub.__code__.co_argcount)(_lower_with(functions[name]))
    register_casts(target, functions["copy_of"])

    def lower(key: Any, name: str, *argtypes: Any) -> None:
        target.lower_builtin(key, *argtypes)(_lower_with(functions[name]))

    anything, integer = types.Any, types.Integer
    for s in t.stringlike:
        for name in ("upper", "lower", "swapcase", "title", "capitalize", "strip", "lstrip", "rstrip"):
            lower(f"String.{name}", name, s)
        for name in ("strip", "lstrip", "rstrip"):
            lower(f"String.{name}", f"{name}_chars", s, anything)
        for name in ("index", "rindex"):
            lower(f"String.{name}", name, s, anything)
        lower("String.replace", "replace", s, anything, anything)
        lower("String.replace", "replace_count", s, anything, anything, anything)
        lower("String.zfill", "zfill", s, anything)
        for name in ("ljust", "rjust", "center"):
            lower(f"String.{name}", name, s, anything, anything)
            lower(f"String.{name}", f"{name}_space", s, anything)
        lower(operator.add, "concat", s, anything)
        lower(operator.mul, "repeat", s, integer)
        lower(operator.mul, "repeat_left", integer, s)
        lower(operator.getitem, "char_at", s, integer)
        lower(operator.getitem, "sliced", s, types.SliceType)
        lower(int, "to_int", s)
        lower(float, "to_float", s)
        lower(to_str, "string_of", s)
    lower(to_str, "from_int", integer)
    _register_stores(target, intrinsics, functions)


def _register_stores(target: Any, intrinsics: dict[str, Any], functions: dict[str, Any]) -> None:
    """``store_pair`` / ``store_view`` for the kernels: the result argument is typed as a managed
    string, so numba converts a view, a literal or an Optional (known not None there) to one."""
    from numba.core import types

    from . import operations

    t = string_types()
    # the target's own Signature class: numba-cuda's callable templates accept only theirs (its
    # `signature()` helper builds numba's when numba is installed)
    signature_class = target.templates.Signature
    for name in operations.STORES:
        stub = compiled_only_stub(name, 3)

        def typer_for(context):
            def typer(out, i, r):
                return signature_class(types.none, (out, types.int64, t.managed_string), recvr=None)
            return typer

        target.type_callable(stub)(typer_for)
        target.lower_builtin(stub, types.Any, types.Any, types.Any)(_lower_with(functions[name]))
        intrinsics[name] = stub


def _register_helper(target: Any, stub: Any, result: Any, stringlike: tuple, lower: Any) -> None:
    """Typing and lowering of one helper stub (its first argument is a string)."""
    from numba.core import types

    if stub.__code__.co_argcount == 2:
        def typer_for(context):
            def typer(a, b):
                return result if isinstance(a, stringlike) else None
            return typer
    else:
        def typer_for(context):
            def typer(a, b, c):
                return result if isinstance(a, stringlike) else None
            return typer
    target.type_callable(stub)(typer_for)
    target.lower_builtin(stub, *([types.Any] * stub.__code__.co_argcount))(lower)


def _in_ranges_impl(code, table):
    low, high = 0, len(table) // 2 - 1
    while low <= high:
        middle = (low + high) // 2
        if code < table[2 * middle]:
            high = middle - 1
        elif code > table[2 * middle + 1]:
            low = middle + 1
        else:
            return True
    return False


def _register_number_helpers(target: Any, lower_with: Any) -> None:
    """``in_ranges(code, table)`` (binary search over flat sorted ranges) and ``_width_of(lead)``."""
    from numba.core import types

    @target.type_callable(in_ranges)
    def _type_in_ranges(context):
        def typer(code, table):
            return types.boolean if isinstance(table, table_type()) else None
        return typer

    target.lower_builtin(in_ranges, types.Any, types.Any)(lower_with(_in_ranges_impl))

    @target.type_callable(_width_of)
    def _type_width(context):
        def typer(lead):
            return types.int64
        return typer

    target.lower_builtin(_width_of, types.Any)(lower_with(_width))
