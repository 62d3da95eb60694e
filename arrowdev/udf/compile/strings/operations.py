"""String operations that make strings, or parse them, written as plain Python over a few intrinsics.

Each function here is compiled inside the UDF that uses it (``context.compile_internal``), once per numba
target, with that target's intrinsics bound to the names below (``bind``). Helpers called from these
functions are lowered the same way (``HELPERS``: name -> result type), not jitted: numba-cuda would compile a
called device function for the current GPU, and CI has none.

Every result equals Python's ``str`` on valid UTF-8. Reads and writes go through borrowed views
(``view_of``): a managed string passed to a helper would have NRT incref and decref its MemInfo on every
call. Only what keeps bytes alive (``substring`` of the original string, the returned ``out``) sees the
managed string itself. New bytes come from ``new_string`` (the launch's arena,
see ``managed.py``); results that are part of an existing string (``strip``, slices, indexing, a
``replace`` that matched nothing) are ``substring``\\ s: no copy, the MemInfo shared. Operations Python would
raise in (``int("x")``, ``s[99]``, ``s.index("absent")``) call ``fail_row()``: the row becomes null.
"""

from __future__ import annotations

import types as pytypes
from typing import Any

from .parsing import (_INF, _INFINITY, _NAN, _ascii_lower, _digit, _scaled, _skip_space, _skip_space_back, _subnormal,
                      _to_float, _to_int, _word, from_int, to_float, to_int)
from .unicode_tables import ROW_MASK, SINGLE_SHIFT, SIZE_MASK, SIZE_SHIFT  # how an index slot is laid out

# Names the functions below read as globals without this module defining them: ``bind`` supplies them per
# target (that target's intrinsics, the lowering module's helpers, the Unicode tables) in a namespace of the
# functions' own; this module's globals are never rebound.
BOUND = ("byte_at", "size_of", "new_string", "set_byte", "substring", "fail_row", "view_of", "chars_before",
         "writer_of", "write_bytes", "write_finish", "load_bytes", "ascii_prefix", "ascii_case",
         "code_point_at", "in_ranges", "find_byte", "rfind_byte", "matches_at", "_width_of", "fused_multiply_add",
         "POW10", "SPACE_CHAR", "UPPER_MAP", "LOWER_MAP", "TITLE_MAP", "UPPER_INDEX", "LOWER_INDEX", "TITLE_INDEX", "SPACE", "UPPER", "LOWER", "CASED",
         "CASE_IGNORABLE", "DECIMAL")

HELPERS = {"_slot_of": "int64", "_utf8_size": "int64", "_put": "writer", "_mapped_size": "int64",
           "_write_mapped": "writer", "_final_sigma": "boolean", "_byte_of_char": "int64", "_previous": "int64",
           "_has_code": "boolean", "_strippable": "boolean", "_fill": "writer", "_copy": "writer",
           "_digit": "int64", "_skip_space": "int64", "_skip_space_back": "int64", "_case": "managed",
           "_strip_bounds": "int64", "_to_int": "int64", "_to_float": "float64", "_stripped": "managed", "_pad": "managed", "_ascii_lower": "int64", "_mapped_slot": "int64",
           "_mapped_code": "int64", "_ascii_mapped": "int64", "_case_rule": "int64", "_case_size": "int64",
           "_scaled": "float64", "_subnormal": "float64", "_repeat": "managed", "_replace": "managed", "_copy_of": "managed"}


# --- helpers ---------------------------------------------------------------------------------------

def _utf8_size(code):
    return 1 if code < 0x80 else (2 if code < 0x800 else (3 if code < 0x10000 else 4))


def _put(w, code):
    """Appends ``code`` as UTF-8 to writer ``w`` (``words.py``); returns the writer."""
    if code < 0x80:
        return write_bytes(w, code, 1)
    if code < 0x800:
        return write_bytes(w, (0xC0 | (code >> 6)) | ((0x80 | (code & 0x3F)) << 8), 2)
    if code < 0x10000:
        return write_bytes(w, (0xE0 | (code >> 12)) | ((0x80 | ((code >> 6) & 0x3F)) << 8)
                           | ((0x80 | (code & 0x3F)) << 16), 3)
    return write_bytes(w, (0xF0 | (code >> 18)) | ((0x80 | ((code >> 12) & 0x3F)) << 8)
                       | ((0x80 | ((code >> 6) & 0x3F)) << 16) | ((0x80 | (code & 0x3F)) << 24), 4)


def _copy(w, s, start, count):
    """Appends ``count`` bytes of ``s`` from byte ``start``, eight at a time; returns the writer."""
    k = 0
    while k < count:
        step = min(8, count - k)
        w = write_bytes(w, load_bytes(s, start + k, step), step)
        k += step
    return w


def _fill(w, code, times):
    for _ in range(times):
        w = _put(w, code)
    return w


def _slot_of(code, index):
    """The slot of ``code`` in a case map's direct index (``unicode_tables._index``: its row, the UTF-8
    size of its mapping, the mapped code point when it is one), or -1: two loads."""
    block = code >> 7
    if block >= index[0]:
        return -1
    start = index[1 + block]
    if start < 0:
        return -1
    return index[start + (code & 127)]


def _mapped_slot(code, which):
    """Slot of ``code`` in mapping table ``which`` (1 upper, 2 lower, 3 title; 0: no mapping), or -1."""
    if which == 1:
        return _slot_of(code, UPPER_INDEX)
    if which == 2:
        return _slot_of(code, LOWER_INDEX)
    if which == 3:
        return _slot_of(code, TITLE_INDEX)
    return -1


def _mapped_code(which, row, k):
    """The k-th code point (1..3) of row ``row`` of table ``which``; 0 past its end."""
    if which == 1:
        return UPPER_MAP[4 * row + k]
    if which == 2:
        return LOWER_MAP[4 * row + k]
    return TITLE_MAP[4 * row + k]


def _ascii_mapped(code, which):
    if which == 2:
        return code + 32 if 65 <= code <= 90 else code
    if which != 0:
        return code - 32 if 97 <= code <= 122 else code
    return code


def _mapped_size(code, which):
    """UTF-8 bytes of ``code`` mapped by table ``which`` (itself when unmapped)."""
    if code < 0x80:
        return 1
    slot = _mapped_slot(code, which)
    if slot < 0:
        return _utf8_size(code)
    return (slot >> SIZE_SHIFT) & SIZE_MASK


def _write_mapped(w, code, which):
    if code < 0x80:
        return write_bytes(w, _ascii_mapped(code, which), 1)
    slot = _mapped_slot(code, which)
    if slot < 0:
        return _put(w, code)
    if (slot >> SINGLE_SHIFT) != 0:  # mapped to one code point
        return _put(w, slot >> SINGLE_SHIFT)
    row = slot & ROW_MASK
    for k in range(1, 4):
        mapped = _mapped_code(which, row, k)
        if mapped != 0:
            w = _put(w, mapped)
    return w


def _previous(s, at):
    """Byte index of the character before the one at ``at``."""
    at -= 1
    while at > 0 and (byte_at(s, at) & 0xC0) == 0x80:
        at -= 1
    return at


def _final_sigma(s, at):
    """Whether the capital sigma at ``at`` ends a word (CPython's rule: a cased character before it,
    case-ignorable ones skipped, and none after it)."""
    before = at
    found = False
    while before > 0:
        before = _previous(s, before)
        code = code_point_at(s, before)
        if not in_ranges(code, CASE_IGNORABLE):
            found = in_ranges(code, CASED)
            break
    if not found:
        return False
    after = at + 2
    while after < size_of(s):
        code = code_point_at(s, after)
        if not in_ranges(code, CASE_IGNORABLE):
            return not in_ranges(code, CASED)
        after += _width_of(byte_at(s, after))
    return True


def _case_rule(s, at, code, mode, previous_cased):
    """How the character at ``at`` maps under ``mode`` (0 upper, 1 lower, 2 swapcase, 3 title,
    4 capitalize), with CPython's rules: ``which << 24 | code``, ``which`` the table (0 none, 1 upper,
    2 lower, 3 title) and ``code`` the character, a capital sigma that ends a word already made final."""
    which = 1
    if mode == 1:
        which = 2
    elif mode == 2:
        which = 2 if in_ranges(code, UPPER) else (1 if in_ranges(code, LOWER) else 0)
    elif mode == 3:
        which = 2 if previous_cased else 3
    elif mode == 4:
        which = 3 if at == 0 else 2
    if which == 2 and code == 0x3A3 and _final_sigma(s, at):
        code = 0x3C2
    return (which << 24) | code


def _case_size(s, mode):
    """UTF-8 bytes of ``s`` case-mapped under ``mode``. Each step takes up to eight bytes: the ASCII run at
    their start (upper, lower and swapcase map ASCII on their own, one byte each; title and capitalize
    depend on the character before, so their runs are empty), then the one character after the run."""
    total, at, previous_cased, n = 0, 0, False, size_of(s)
    while at < n:
        step = min(8, n - at)
        run = ascii_prefix(load_bytes(s, at, step), step) if mode <= 2 else 0
        total += run
        at += run
        if run == step:
            continue
        code = code_point_at(s, at)
        rule = _case_rule(s, at, code, mode, previous_cased)
        total += _mapped_size(rule & 0xFFFFFF, rule >> 24)
        previous_cased = in_ranges(code, CASED) if mode == 3 else False
        at += _width_of(byte_at(s, at))
    return total


def _case(s, mode):
    """``s`` case-mapped under ``mode``, in the steps of ``_case_size``: an ASCII run mapped eight bytes at
    a time (SWAR), then one character through the case maps."""
    out = new_string(_case_size(s, mode))
    w = writer_of(out)
    at, previous_cased, n = 0, False, size_of(s)
    while at < n:
        step = min(8, n - at)
        word = load_bytes(s, at, step)
        run = ascii_prefix(word, step) if mode <= 2 else 0
        if run > 0:  # bytes past the run are not written: write_bytes keeps the low `run` bytes
            w = write_bytes(w, ascii_case(word, mode), run)
            at += run
        if run == step:
            continue
        code = code_point_at(s, at)
        rule = _case_rule(s, at, code, mode, previous_cased)
        w = _write_mapped(w, rule & 0xFFFFFF, rule >> 24)
        previous_cased = in_ranges(code, CASED) if mode == 3 else False
        at += _width_of(byte_at(s, at))
    write_finish(w)
    return out


def _has_code(chars, code):
    at = 0
    while at < size_of(chars):
        if code_point_at(chars, at) == code:
            return True
        at += _width_of(byte_at(chars, at))
    return False


def _strippable(code, chars, whitespace):
    return in_ranges(code, SPACE) if whitespace else _has_code(chars, code)


def _strip_bounds(s, chars, whitespace, left, right):
    """``start << 32 | end``: the bytes that remain of ``s`` after stripping."""
    start, end = 0, size_of(s)
    if left:
        while start < end and _strippable(code_point_at(s, start), chars, whitespace):
            start += _width_of(byte_at(s, start))
    if right:
        while end > start:
            last = _previous(s, end)
            if not _strippable(code_point_at(s, last), chars, whitespace):
                break
            end = last
    return (start << 32) | end


def _byte_of_char(s, index):
    """Byte index of character ``index`` (0 <= index <= len)."""
    at, seen = 0, 0
    while seen < index and at < size_of(s):
        at += _width_of(byte_at(s, at))
        seen += 1
    return at


def _pad(original, s, width, fill, left_share):
    """``s`` (a view of ``original``) padded to ``width`` characters with ``fill`` (one character);
    ``left_share``: 0 (ljust), 1 (rjust), 2 (center, CPython's rounding)."""
    n = chars_before(s, size_of(s))
    if size_of(fill) == 0 or chars_before(fill, size_of(fill)) != 1:
        fail_row()  # Python: TypeError, the fill character must be exactly one character long
        return substring(original, 0, 0)
    if width <= n:
        return substring(original, 0, size_of(s))
    margin = width - n
    left = 0 if left_share == 0 else (margin if left_share == 1 else margin // 2 + (margin & width & 1))
    code = code_point_at(fill, 0)
    out = new_string(size_of(s) + margin * size_of(fill))
    w = _fill(writer_of(out), code, left)
    w = _copy(w, s, 0, size_of(s))
    write_finish(_fill(w, code, margin - left))
    return out


# --- operations ------------------------------------------------------------------------------------

def _copy_of(s):
    out = new_string(size_of(s))
    write_finish(_copy(writer_of(out), view_of(s), 0, size_of(s)))
    return out


def copy_of(s):
    return _copy_of(s)


def concat(a, b):
    out = new_string(size_of(a) + size_of(b))
    w = _copy(writer_of(out), view_of(a), 0, size_of(a))
    write_finish(_copy(w, view_of(b), 0, size_of(b)))
    return out


def _repeat(s, times):
    if times <= 0:
        return substring(s, 0, 0)
    out = new_string(size_of(s) * times)
    w = writer_of(out)
    for _ in range(times):
        w = _copy(w, s, 0, size_of(s))
    write_finish(w)
    return out


def repeat(s, times):
    return _repeat(view_of(s), times)


def repeat_left(times, s):
    return _repeat(view_of(s), times)


def upper(s):
    return _case(view_of(s), 0)


def lower(s):
    return _case(view_of(s), 1)


def swapcase(s):
    return _case(view_of(s), 2)


def title(s):
    return _case(view_of(s), 3)


def capitalize(s):
    return _case(view_of(s), 4)


def _stripped(s, bounds):
    return substring(s, bounds >> 32, (bounds & 0xFFFFFFFF) - (bounds >> 32))


def strip(s):
    return _stripped(s, _strip_bounds(view_of(s), view_of(s), True, True, True))


def lstrip(s):
    return _stripped(s, _strip_bounds(view_of(s), view_of(s), True, True, False))


def rstrip(s):
    return _stripped(s, _strip_bounds(view_of(s), view_of(s), True, False, True))


def strip_chars(s, chars):
    return _stripped(s, _strip_bounds(view_of(s), view_of(chars), False, True, True))


def lstrip_chars(s, chars):
    return _stripped(s, _strip_bounds(view_of(s), view_of(chars), False, True, False))


def rstrip_chars(s, chars):
    return _stripped(s, _strip_bounds(view_of(s), view_of(chars), False, False, True))


def _replace(original, s, old, new, count):
    """Python's ``s.replace(old, new, count)`` (count < 0: all); ``s`` is a view of ``original``."""
    n_chars = chars_before(s, size_of(s))
    if size_of(old) == 0:  # new goes before every character and at the end, count times at most
        matches = n_chars + 1 if count < 0 else min(count, n_chars + 1)
    else:
        matches, at = 0, 0
        while (count < 0 or matches < count) and at <= size_of(s) - size_of(old):
            if matches_at(s, old, at):
                matches += 1
                at += size_of(old)
            else:
                at += 1
    if matches == 0:
        return substring(original, 0, size_of(s))
    out = new_string(size_of(s) + matches * (size_of(new) - size_of(old)))
    w = writer_of(out)
    at, done = 0, 0
    if size_of(old) == 0:
        while done < matches:
            w = _copy(w, new, 0, size_of(new))
            done += 1
            if at < size_of(s):
                width = _width_of(byte_at(s, at))
                w = _copy(w, s, at, width)
                at += width
        write_finish(_copy(w, s, at, size_of(s) - at))
        return out
    copied = 0  # bytes of s before ``at`` already written; unmatched runs are copied eight bytes at a time
    while done < matches:
        if matches_at(s, old, at):
            w = _copy(_copy(w, s, copied, at - copied), new, 0, size_of(new))
            at += size_of(old)
            copied = at
            done += 1
        else:
            at += 1
    write_finish(_copy(w, s, copied, size_of(s) - copied))
    return out


def replace(s, old, new):
    return _replace(s, view_of(s), view_of(old), view_of(new), -1)


def replace_count(s, old, new, count):
    return _replace(s, view_of(s), view_of(old), view_of(new), count)


def char_at(s, index):
    v = view_of(s)
    n = chars_before(v, size_of(v))
    if index < 0:
        index += n
    if index < 0 or index >= n:
        fail_row()  # Python: IndexError
        return substring(s, 0, 0)
    at = _byte_of_char(v, index)
    return substring(s, at, _width_of(byte_at(v, at)))


def sliced(s, piece):
    v = view_of(s)
    start, stop, step = piece.indices(chars_before(v, size_of(v)))
    if step == 1:
        if stop <= start:
            return substring(s, 0, 0)
        first = _byte_of_char(v, start)
        return substring(s, first, _byte_of_char(v, stop) - first)
    total = 0
    for index in range(start, stop, step):
        total += _width_of(byte_at(v, _byte_of_char(v, index)))
    out = new_string(total)
    w = writer_of(out)
    for index in range(start, stop, step):
        at = _byte_of_char(v, index)
        w = _copy(w, v, at, _width_of(byte_at(v, at)))
    write_finish(w)
    return out


def zfill(s, width):
    v = view_of(s)
    n = chars_before(v, size_of(v))
    if width <= n:
        return substring(s, 0, size_of(v))
    zeros = width - n
    out = new_string(size_of(v) + zeros)
    signed = size_of(v) > 0 and (byte_at(v, 0) == 43 or byte_at(v, 0) == 45)
    w = _copy(writer_of(out), v, 0, 1 if signed else 0)
    w = _fill(w, 48, zeros)
    write_finish(_copy(w, v, 1 if signed else 0, size_of(v) - (1 if signed else 0)))
    return out


def ljust(s, width, fill):
    return _pad(s, view_of(s), width, view_of(fill), 0)


def rjust(s, width, fill):
    return _pad(s, view_of(s), width, view_of(fill), 1)


def center(s, width, fill):
    return _pad(s, view_of(s), width, view_of(fill), 2)


def ljust_space(s, width):
    return _pad(s, view_of(s), width, view_of(SPACE_CHAR), 0)


def rjust_space(s, width):
    return _pad(s, view_of(s), width, view_of(SPACE_CHAR), 1)


def center_space(s, width):
    return _pad(s, view_of(s), width, view_of(SPACE_CHAR), 2)


def index(s, sub):
    v = view_of(s)
    at = find_byte(v, view_of(sub))
    if at < 0:
        fail_row()  # Python: ValueError
        return -1
    return chars_before(v, at)


def rindex(s, sub):
    v = view_of(s)
    at = rfind_byte(v, view_of(sub))
    if at < 0:
        fail_row()
        return -1
    return chars_before(v, at)


def string_of(s):
    return substring(s, 0, size_of(s))


# --- results, as the kernel stores them --------------------------------------------------------------

def store_pair(out, i, r):
    """Row i's result as (address, size) for the gather pass (``string`` / ``large_string`` outputs)."""
    out[2 * i] = address_of(r)
    out[2 * i + 1] = size_of(r)


def store_view(out, i, r):
    """Row i's result as a 16-byte ``string_view`` view (int32 x 4): up to 12 bytes inline, otherwise a
    prefix and (buffer, offset) in the arena, which is exported as 2 GiB buffers. Bytes outside the arena
    (a row of an input column) are copied into it first."""
    n = size_of(r)
    out[4 * i] = n
    if n <= 12:
        for w in range(3):
            word = 0
            for k in range(4):
                if 4 * w + k < n:
                    word |= byte_at(r, 4 * w + k) << (8 * k)
            out[4 * i + 1 + w] = word
        return
    if meminfo_of(r) == 0:
        r = _copy_of(r)
    out[4 * i + 1] = byte_at(r, 0) | (byte_at(r, 1) << 8) | (byte_at(r, 2) << 16) | (byte_at(r, 3) << 24)
    where = address_of(r) - arena_base()
    out[4 * i + 2] = where >> 31
    out[4 * i + 3] = where & 0x7FFFFFFF


STORES = ("store_pair", "store_view")

OPERATIONS = ("copy_of", "concat", "repeat", "repeat_left", "upper", "lower", "swapcase", "title", "capitalize",
              "strip", "lstrip", "rstrip", "strip_chars", "lstrip_chars", "rstrip_chars", "replace",
              "replace_count", "char_at", "sliced", "zfill", "ljust", "rjust", "center", "ljust_space",
              "rjust_space", "center_space", "from_int", "to_int",
              "to_float", "index", "rindex", "string_of")


def bind(names: dict[str, Any]) -> dict[str, Any]:
    """This module's functions with ``names`` (one target's intrinsics, helper stubs and tables) as their
    globals; returns {name: function} for the helpers and operations."""
    import math

    import numpy as np

    missing = sorted(set(BOUND) - set(names))
    if missing:
        raise RuntimeError(f"string operations need {missing} bound for this target")
    namespace = dict(globals())
    namespace.update(names, np=np, math=math)
    functions = {}
    for name in (*HELPERS, *OPERATIONS, *STORES):
        original = globals()[name]
        functions[name] = pytypes.FunctionType(original.__code__, namespace, name, original.__defaults__)
    return functions
