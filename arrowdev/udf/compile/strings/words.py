"""Strings read and written eight bytes at a time, for one numba target at a time.

A byte store is one memory transaction, and a GPU's L1 passes stores through to L2: a kernel writing
strings byte by byte is bound by L2 transactions long before it reaches memory bandwidth (docs/strings.md
has the profile). Operations that make strings therefore write through a **writer**: a ``UniTuple(int64,
5)`` (aligned address of the next word, pending bytes as a little-endian word, how many are pending, how
many leading bytes of the first word belong to someone else, the end of the string's bytes) that gathers
bytes into a register and stores whole aligned words. Its first word is written byte by byte when its
start is not aligned (a gather into the middle of a data buffer, where the bytes before belong to another
row), and so is its last (``write_finish``), except in a new string, whose block is padded to 8 bytes and
whose last word is stored whole: a writer never touches a byte outside its string (or its padding), and
writes nothing to a string whose allocation failed (size 0: the arena was full, see ``managed.py``).

Reads go the same way: ``load_bytes(s, at, count)`` returns up to eight bytes of ``s`` as one word, from
the one or two aligned words that hold them. Those aligned words may hold bytes just outside the string
(never outside the aligned 8-byte granule of a byte inside it, so never another page or allocation:
Arrow buffers are 8-byte aligned and padded).

``ascii_prefix`` and ``ascii_case`` map runs of ASCII bytes eight at a time (SWAR: no byte of a word
carries into the next), the fast path of ``upper``/``lower``/``swapcase``.
"""

from __future__ import annotations

from typing import Any

from .numba_types import string_types

WRITER_WORDS = 5  # (address of the next aligned word, pending bytes, pending count, bytes to skip, end)
CASE_UPPER, CASE_LOWER, CASE_SWAP = 0, 1, 2  # ascii_case modes, as operations._case numbers them


def writer_type() -> Any:
    from numba.core import types

    return types.UniTuple(types.int64, WRITER_WORDS)


def register_words(target: Any) -> dict[str, Any]:
    """Registers the word intrinsics with one target; returns them by name."""
    return {**_writer_intrinsics(target), **_read_intrinsics(target)}


def _unpack(builder: Any, writer: Any) -> list[Any]:
    return [builder.extract_value(writer, k) for k in range(WRITER_WORDS)]


def _pack(context: Any, builder: Any, values: list[Any]) -> Any:
    from llvmlite import ir

    packed = ir.Constant(context.get_value_type(writer_type()), ir.Undefined)
    for k, value in enumerate(values):
        packed = builder.insert_value(packed, value, k)
    return packed


def _store_bytes(builder: Any, cgutils: Any, address: Any, word: Any, first: Any, end: Any, limit: Any) -> None:
    """Stores bytes ``first .. end - 1`` of ``word`` at ``address + k``, those below address ``limit``
    (a loop of byte stores)."""
    from llvmlite import ir

    i8, i64 = ir.IntType(8), ir.IntType(64)
    base = builder.inttoptr(address, i8.as_pointer())
    room = builder.sub(limit, address)
    end = builder.select(builder.icmp_signed("<", room, end), room, end)
    with cgutils.for_range(builder, end, start=first) as loop:
        value = builder.trunc(builder.lshr(word, builder.mul(loop.index, i64(8))), i8)
        builder.store(value, builder.gep(base, [loop.index]))


def _low_bytes(builder: Any, value: Any, count: Any) -> Any:
    """``value`` with only its low ``count`` (1..8) bytes kept."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    shifted = builder.sub(builder.shl(i64(1), builder.mul(count, i64(8))), i64(1))  # poison at 8: not selected
    return builder.and_(value, builder.select(builder.icmp_signed(">=", count, i64(8)), i64(-1), shifted))


def _writer_intrinsics(target: Any) -> dict[str, Any]:
    from llvmlite import ir
    from numba.core import types

    t, cgutils, i64 = string_types(), target.cgutils, ir.IntType(64)
    writer = writer_type()

    def start_at(context, builder, address, size):
        misaligned = builder.and_(address, i64(7))
        return _pack(context, builder, [builder.sub(address, misaligned), i64(0), misaligned, misaligned,
                                        builder.add(address, size)])

    @target.intrinsic
    def writer_of(typingctx, s):
        """A writer over the bytes of new string ``s``: a block of its own that starts 8-byte aligned and is
        padded to a multiple of 8 (``managed.py``), so its last word is stored whole, padding included."""
        if not isinstance(s, t.stringlike):
            return None

        def codegen(context, builder, sig, args):
            string = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
            padded = builder.and_(builder.add(string.size, i64(7)), i64(~7))
            return start_at(context, builder, builder.ptrtoint(string.data, i64), padded)

        return writer(s), codegen

    @target.intrinsic
    def writer_at(typingctx, address, size):
        """A writer over ``size`` bytes at ``address`` (any alignment)."""
        def codegen(context, builder, sig, args):
            return start_at(context, builder, context.cast(builder, args[0], sig.args[0], types.int64),
                            context.cast(builder, args[1], sig.args[1], types.int64))

        return writer(types.int64, types.int64), codegen

    @target.intrinsic
    def write_bytes(typingctx, w, value, count):
        """Appends the low ``count`` (1..8) bytes of ``value``; stores the word once it holds eight."""
        def codegen(context, builder, sig, args):
            address, pending, filled, skip, end = _unpack(builder, args[0])
            value = context.cast(builder, args[1], sig.args[1], types.int64)
            count = context.cast(builder, args[2], sig.args[2], types.int64)
            value = _low_bytes(builder, value, count)
            pending = builder.or_(pending, builder.shl(value, builder.mul(filled, i64(8))))  # filled <= 7
            total = builder.add(filled, count)
            out = cgutils.alloca_once_value(builder, _pack(context, builder, [address, pending, total, skip, end]))
            with builder.if_then(builder.icmp_signed(">=", total, i64(8))):
                _store_word(builder, address, pending, skip, end)
                used = builder.sub(i64(8), filled)  # bytes of value that went into the stored word, 1..8
                rest = builder.lshr(value, builder.mul(builder.and_(used, i64(7)), i64(8)))
                rest = builder.select(builder.icmp_signed("==", used, i64(8)), i64(0), rest)
                builder.store(_pack(context, builder, [builder.add(address, i64(8)), rest,
                                                       builder.sub(total, i64(8)), i64(0), end]), out)
            return builder.load(out)

        return writer(w, value, count), codegen

    def _store_word(builder, address, word, skip, end):
        inside = builder.icmp_signed("<=", builder.add(address, i64(8)), end)
        with builder.if_else(builder.and_(builder.icmp_signed("==", skip, i64(0)), inside),
                             likely=True) as (whole, partial):
            with whole:
                builder.store(word, builder.inttoptr(address, i64.as_pointer()), align=8)
            with partial:
                _store_bytes(builder, cgutils, address, word, skip, i64(8), end)

    @target.intrinsic
    def write_finish(typingctx, w):
        """Stores the pending bytes (fewer than eight): as one word where the writer owns the whole word
        (a new string's padding), else byte by byte."""
        def codegen(context, builder, sig, args):
            address, pending, filled, skip, end = _unpack(builder, args[0])
            owned = builder.and_(builder.icmp_signed("==", skip, i64(0)),
                                 builder.icmp_signed("<=", builder.add(address, i64(8)), end))
            with builder.if_else(builder.and_(owned, builder.icmp_signed(">", filled, i64(0)))) as (whole, partial):
                with whole:
                    builder.store(pending, builder.inttoptr(address, i64.as_pointer()), align=8)
                with partial:
                    _store_bytes(builder, cgutils, address, pending, skip, filled, end)
            return context.get_dummy_value()

        return types.none(w), codegen

    @target.intrinsic
    def copy_bytes(typingctx, destination, source, count):
        """Copies ``count`` bytes from address ``source`` to address ``destination`` (``llvm.memcpy``): the CPU
        gather's copy of a row, where the host's ``memcpy`` beats assembling words (a CPU store of a part of a
        word costs what a whole one does)."""
        def codegen(context, builder, sig, args):
            u8 = ir.IntType(8).as_pointer()
            to, source_, count_ = (context.cast(builder, value, kind, types.int64) for value, kind in zip(args, sig.args))
            cgutils.raw_memcpy(builder, builder.inttoptr(to, u8), builder.inttoptr(source_, u8), count_, 1)
            return context.get_dummy_value()

        return types.none(destination, source, count), codegen

    @target.intrinsic
    def store_word(typingctx, address, value):
        """Stores the eight bytes of ``value`` at ``address`` (a multiple of 8): the GPU gather's words that lie
        wholly inside its rows, where the writer's bookkeeping for partial words costs more than the store."""
        def codegen(context, builder, sig, args):
            to, word = (context.cast(builder, v, kind, types.int64) for v, kind in zip(args, sig.args))
            builder.store(word, builder.inttoptr(to, i64.as_pointer()), align=8)
            return context.get_dummy_value()

        return types.none(address, value), codegen

    return {"writer_of": writer_of, "writer_at": writer_at, "write_bytes": write_bytes,
            "write_finish": write_finish, "copy_bytes": copy_bytes, "store_word": store_word}


def _read_intrinsics(target: Any) -> dict[str, Any]:
    from llvmlite import ir
    from numba.core import types

    t, cgutils, i64 = string_types(), target.cgutils, ir.IntType(64)
    high_bits = i64(0x8080808080808080)

    @target.intrinsic
    def load_bytes(typingctx, s, at, count):
        """Bytes ``at .. at + count - 1`` (count 1..8, inside ``s``) of ``s`` as a little-endian word;
        bytes past ``count`` are zero."""
        if not isinstance(s, t.stringlike):
            return None

        def codegen(context, builder, sig, args):
            data = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0]).data
            at = context.cast(builder, args[1], sig.args[1], types.int64)
            count = context.cast(builder, args[2], sig.args[2], types.int64)
            address = builder.add(builder.ptrtoint(data, i64), at)
            shift = builder.and_(address, i64(7))
            aligned = builder.sub(address, shift)
            first = builder.load(builder.inttoptr(aligned, i64.as_pointer()), align=8)
            word = cgutils.alloca_once_value(builder, builder.lshr(first, builder.mul(shift, i64(8))))
            with builder.if_then(builder.icmp_signed(">", builder.add(shift, count), i64(8))):
                second = builder.load(builder.inttoptr(builder.add(aligned, i64(8)), i64.as_pointer()), align=8)
                high = builder.shl(second, builder.mul(builder.sub(i64(8), shift), i64(8)))  # shift is 1..7 here
                builder.store(builder.or_(builder.load(word), high), word)
            return _low_bytes(builder, builder.load(word), count)

        return types.int64(s, at, count), codegen

    @target.intrinsic
    def ascii_prefix(typingctx, word, count):
        """How many of the first ``count`` bytes of ``word`` are ASCII before the first that is not."""
        def codegen(context, builder, sig, args):
            word = context.cast(builder, args[0], sig.args[0], types.int64)
            count = context.cast(builder, args[1], sig.args[1], types.int64)
            cttz = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, ir.IntType(1)]),
                                                  "llvm.cttz.i64")
            high = builder.and_(word, high_bits)
            first = builder.udiv(builder.call(cttz, [high, ir.IntType(1)(0)]), i64(8))  # 8 when none is set
            return builder.select(builder.icmp_signed("<", first, count), first, count)

        return types.int64(word, count), codegen

    @target.intrinsic
    def ascii_case(typingctx, word, mode):
        """``word``'s ASCII bytes upper-cased (mode 0), lower-cased (1) or swapped (2)."""
        def codegen(context, builder, sig, args):
            word = context.cast(builder, args[0], sig.args[0], types.int64)
            mode = context.cast(builder, args[1], sig.args[1], types.int64)
            low7 = builder.and_(word, i64(0x7F7F7F7F7F7F7F7F))

            def at_least(c):  # high bit of each byte set where that byte (7 bits) >= c
                return builder.and_(builder.add(low7, i64(0x0101010101010101 * (0x80 - c))), high_bits)

            lower = builder.and_(at_least(ord("a")), builder.not_(at_least(ord("z") + 1)))
            upper = builder.and_(at_least(ord("A")), builder.not_(at_least(ord("Z") + 1)))
            flip = builder.select(builder.icmp_signed("==", mode, i64(CASE_UPPER)), lower,
                                  builder.select(builder.icmp_signed("==", mode, i64(CASE_LOWER)), upper,
                                                 builder.or_(lower, upper)))
            flip = builder.and_(flip, builder.not_(builder.and_(word, high_bits)))  # non-ASCII bytes stay
            return builder.xor(word, builder.lshr(flip, i64(2)))  # 0x80 >> 2: the case bit, 0x20

        return types.int64(word, mode), codegen

    return {"load_bytes": load_bytes, "ascii_prefix": ascii_prefix, "ascii_case": ascii_case}
