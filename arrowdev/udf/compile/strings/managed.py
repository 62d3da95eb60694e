"""Managed strings on the device: allocation from the launch's arena, the MemInfo header, byte writes,
slices that share a MemInfo, and per-row failure flags. Lowered for one numba target at a time.

How an operation finds the arena. A UDF's signature is the user's, so it cannot carry the arena. The kernel
calls ``begin_row(state)`` before the UDF: it stores the address of the launch's arena state in
``arrowdev_arena_state``, a variable every module of the kernel shares (a per-block ``__shared__`` variable on
CUDA, so concurrent launches of one kernel never see each other's arena), and clears the row's failure flag. On
the CPU, whose kernels release the GIL and so run in several threads at once, both live in the calling thread's
slots, which the native core keeps (``capsules/kernel_slots.h``: numba's JIT cannot allocate thread-local
variables): the code calls ``arrowdev_arena_state_slot`` and ``arrowdev_row_failed_slot`` (their addresses
registered with LLVM by :func:`register_cpu_slots`) where it needs them.

Arena state (int64[4], written by the host): base address, capacity, bytes claimed (an atomic counter that
keeps counting past the capacity, so the host learns what a re-run needs), allocator (0: the arena; 1: one
NRT ``MemInfo_alloc`` per string, i.e. device ``malloc``, the cuDF design, kept for the benchmark to compare
against; CUDA only).

Allocation is one atomic add. A block is a MemInfo header (``HEADER`` bytes, NRT's layout: refct, dtor,
dtor_info, data, size) and the bytes, rounded up to 16 on a GPU (the header goes in 16-byte stores), 8 on the CPU. The header's count starts at 2: one reference for the
new value, which NRT increfs and decrefs through the UDF, and one the arena owns. NRT's decref therefore never
reaches zero, so NRT never calls device ``free`` on arena memory; the arena drops its references all at once
when it is released. If the arena is full the string comes back empty (size 0, MemInfo NULL, data pointing
at the state), writes to it are skipped, and the host re-runs the launch with a larger arena; nothing is
truncated.
"""

from __future__ import annotations

from typing import Any

from .meminfo_layout import ALLOCATOR_DEVICE_MALLOC, CPU_HEADER, GPU_BLOCK_ALIGN, HEADER, WORD, ArenaWord, MemInfo
from .numba_types import string_types

MAX_THREADS_PER_BLOCK = 1024


def _shared_global(builder: Any, name: str, ty: Any) -> Any:
    """The module's ``name`` variable in CUDA shared memory (one per block), declared linkonce_odr so every module
    of one kernel shares it (the CPU's slots are the calling thread's instead: :func:`_cpu_slot`)."""
    from llvmlite import ir

    module = builder.module
    try:
        return module.get_global(name)
    except KeyError:
        gv = ir.GlobalVariable(module, ty, name, addrspace=3)
        gv.linkage = "linkonce_odr"
        gv.initializer = ir.Constant(ty, ir.Undefined)
        gv.align = 8
        return gv


class _Shared:
    """What the managed-string lowerings of one target share: the string types, the target's cgutils, the
    LLVM integer types, and the module variables every row reads (the arena state's address, the row flags)."""

    def __init__(self, target: Any) -> None:
        from llvmlite import ir

        self.t = string_types()
        self.cgutils = target.cgutils
        self.cuda = target.name == "cuda"
        self.i8, self.i64 = ir.IntType(8), ir.IntType(64)
        self.state_ptr_t = self.i64.as_pointer()

    def state_slot(self, builder: Any) -> Any:
        if not self.cuda:
            return _cpu_slot(builder, CPU_ARENA_SLOT, self.state_ptr_t)
        return _shared_global(builder, "arrowdev_arena_state", self.state_ptr_t)

    def row_flag(self, builder: Any) -> Any:
        from llvmlite import ir

        if not self.cuda:
            return _cpu_slot(builder, CPU_FAILED_SLOT, self.i8)
        from numba.cuda import nvvmutils

        i64 = self.i64
        flags = _shared_global(builder, "arrowdev_row_failed", ir.ArrayType(self.i8, MAX_THREADS_PER_BLOCK))
        lane = builder.zext(nvvmutils.call_sreg(builder, "tid.x"), i64)
        return builder.gep(flags, [i64(0), lane])


# the native core's kernel_arena_slot and kernel_failed_slot as the CPU kernels call them; probe.py tells a UDF that
# makes strings or fails rows by these names in its code (the CUDA globals' names are their prefixes)
CPU_ARENA_SLOT, CPU_FAILED_SLOT = "arrowdev_arena_state_slot", "arrowdev_row_failed_slot"


def register_cpu_slots() -> None:
    """Makes the CPU slot functions known to numba's JIT, before a CPU kernel that makes strings or fails rows is
    compiled or loaded from the cache."""
    from llvmlite import binding

    from .... import _capsules

    arena_slot, failed_slot = _capsules.kernel_slots_addresses()
    binding.add_symbol(CPU_ARENA_SLOT, arena_slot)
    binding.add_symbol(CPU_FAILED_SLOT, failed_slot)


def _cpu_slot(builder: Any, name: str, slot_t: Any) -> Any:
    """The address of this thread's slot ``name`` (of ``slot_t``), from the native core. The call is declared free
    of side effects and reading no memory, so LLVM keeps one per function where it can."""
    from llvmlite import ir

    module = builder.module
    try:
        fn = module.get_global(name)
    except KeyError:
        fn = ir.Function(module, ir.FunctionType(slot_t.as_pointer(), []), name)
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
    return builder.call(fn, [])


def register_managed(target: Any) -> dict[str, Any]:
    """Registers the managed-string intrinsics and casts with one target; returns the intrinsics."""
    env = _Shared(target)
    return {**_row_intrinsics(target, env), **_allocation_intrinsics(target, env), **_view_intrinsics(target, env),
            **_address_intrinsics(target, env)}


def _row_intrinsics(target: Any, env: _Shared) -> dict[str, Any]:
    """Row start (the arena state's address into the shared slot) and the row-failure flag."""
    from numba.core import types

    i8, state_ptr_t, state_slot, row_flag = env.i8, env.state_ptr_t, env.state_slot, env.row_flag

    @target.intrinsic
    def begin_row(typingctx, state):
        def codegen(context, builder, sig, args):
            builder.store(builder.inttoptr(args[0], state_ptr_t), state_slot(builder))
            builder.store(i8(0), row_flag(builder))
            return context.get_dummy_value()

        return types.none(types.int64), codegen

    @target.intrinsic
    def fail_row(typingctx):
        def codegen(context, builder, sig, args):
            builder.store(i8(1), row_flag(builder))
            return context.get_dummy_value()

        return types.none(), codegen

    @target.intrinsic
    def row_failed(typingctx):
        def codegen(context, builder, sig, args):
            return builder.icmp_unsigned("!=", builder.load(row_flag(builder)), i8(0))

        return types.boolean(), codegen

    return {"begin_row": begin_row, "fail_row": fail_row, "row_failed": row_failed}


def _allocation_intrinsics(target: Any, env: _Shared) -> dict[str, Any]:
    """New strings: a block of the launch's arena (or, for the benchmark, NRT's device malloc)."""
    from llvmlite import ir
    from numba.core import types

    t, cgutils, cuda, i8, i64, state_slot = env.t, env.cgutils, env.cuda, env.i8, env.i64, env.state_slot

    @target.intrinsic
    def new_string(typingctx, nbytes):
        def codegen(context, builder, sig, args):
            return _allocate(context, builder, args[0])

        return t.managed_string(types.int64), codegen

    def _allocate(context, builder, nbytes):
        state = builder.load(state_slot(builder))
        if not cuda:
            return _from_arena(context, builder, state, nbytes)
        out = cgutils.alloca_once(builder, context.get_value_type(t.managed_string))
        allocator = builder.load(builder.gep(state, [i64(int(ArenaWord.ALLOCATOR))]))
        device_malloc = builder.icmp_signed("==", allocator, i64(int(ALLOCATOR_DEVICE_MALLOC)))
        with builder.if_else(device_malloc, likely=False) as (then, otherwise):
            with then:
                builder.store(_from_device_malloc(context, builder, state, nbytes), out)
            with otherwise:
                builder.store(_from_arena(context, builder, state, nbytes), out)
        return builder.load(out)

    def _from_device_malloc(context, builder, state, nbytes):
        """The cuDF design: NRT allocates MemInfo and bytes with device malloc; NRT's decref frees them."""
        alloc = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i8.as_pointer(), [i64, ir.IntType(32)]),
                                               "NRT_MemInfo_alloc_aligned")
        padded = builder.and_(builder.add(nbytes, i64(7)), i64(~7))  # writers store the last word whole
        meminfo = builder.call(alloc, [padded, ir.IntType(32)(8)])
        out = cgutils.create_struct_proxy(t.managed_string)(context, builder)
        failed = cgutils.is_null(builder, meminfo)
        readable = builder.select(failed, state, builder.bitcast(meminfo, i64.as_pointer()))  # never load via NULL
        data = builder.select(failed, builder.ptrtoint(state, i64),
                              builder.load(builder.gep(readable, [i64(int(MemInfo.DATA))])))
        out.meminfo = builder.bitcast(meminfo, out.meminfo.type)
        out.data = builder.inttoptr(data, out.data.type)
        out.size = builder.select(failed, i64(0), nbytes)
        return out._getvalue()

    def _from_arena(context, builder, state, nbytes):
        align = GPU_BLOCK_ALIGN if cuda else WORD  # as meminfo_layout.block_bytes rounds
        rounded = builder.and_(builder.add(nbytes, i64(align - 1)), i64(-align))
        total = builder.add(rounded, i64(HEADER if cuda else CPU_HEADER))
        counter = builder.gep(state, [i64(int(ArenaWord.CLAIMED))])
        if cuda:
            claimed = _warp_claim(builder, counter, total)
        else:  # a CPU launch runs in one thread, with an arena of its own: a plain add, no atomic
            claimed = builder.load(counter)
            builder.store(builder.add(claimed, total), counter)
        capacity = builder.load(builder.gep(state, [i64(int(ArenaWord.CAPACITY))]))
        fits = builder.icmp_signed("<=", builder.add(claimed, total), capacity)
        out = cgutils.create_struct_proxy(t.managed_string)(context, builder)
        with builder.if_else(fits, likely=None if cuda else True) as (then, otherwise):
            with then:
                block = builder.add(builder.load(builder.gep(state, [i64(int(ArenaWord.BASE))])), claimed)
                header = builder.inttoptr(block, i64.as_pointer())
                if cuda:
                    data = builder.add(block, i64(HEADER))
                    _store_header(builder, header, [i64(2), i64(0), i64(0), data, nbytes, i64(0)])
                else:  # no counts on the CPU (models.py): the size alone, for the host's walk of the blocks
                    data = builder.add(block, i64(CPU_HEADER))
                    builder.store(nbytes, header)
                out.meminfo = builder.inttoptr(block, out.meminfo.type)
                out.data = builder.inttoptr(data, out.data.type)
                out.size = nbytes
            with otherwise:  # arena full: an empty string; the host sees the counter and re-runs
                out.meminfo = ir.Constant(out.meminfo.type, None)
                out.data = builder.bitcast(state, out.data.type)
                out.size = i64(0)
        return out._getvalue()

    return {"new_string": new_string}


def _view_intrinsics(target: Any, env: _Shared) -> dict[str, Any]:
    """Borrowed views, byte writes through them, and substrings that share a MemInfo."""
    from llvmlite import ir
    from numba.core import types

    t, cgutils, i8 = env.t, env.cgutils, env.i8

    @target.intrinsic
    def view_of(typingctx, s):
        """A borrowed view of a string's bytes, valid while the string lives. Operations read and write
        through views: passing a managed string to a helper makes NRT incref and decref its MemInfo (an
        atomic each) on every call, which cost more than the work itself."""
        if not isinstance(s, t.stringlike):
            return None

        def codegen(context, builder, sig, args):
            source = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
            view = cgutils.create_struct_proxy(t.string_view)(context, builder)
            view.data, view.size = source.data, source.size
            return view._getvalue()

        return t.string_view(s), codegen

    @target.intrinsic
    def set_byte(typingctx, s, index, value):
        """Writes byte ``index`` of a new string (through its view); skipped past its size (a failed
        allocation has size 0)."""
        if not isinstance(s, (t.ManagedString, t.StringView)):
            return None

        def codegen(context, builder, sig, args):
            string = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
            index, value = args[1], context.cast(builder, args[2], sig.args[2], types.int64)
            inside = builder.icmp_unsigned("<", index, string.size)  # a failed allocation has size 0
            with builder.if_then(inside, likely=True):
                builder.store(builder.trunc(value, i8), builder.gep(string.data, [index]))
            return context.get_dummy_value()

        return types.none(s, types.int64, value), codegen

    @target.intrinsic
    def substring(typingctx, s, start, nbytes):
        """``nbytes`` bytes of ``s`` from byte ``start``: no copy; a managed string shares its MemInfo."""
        if not isinstance(s, t.stringlike):
            return None

        def codegen(context, builder, sig, args):
            source = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
            out = cgutils.create_struct_proxy(t.managed_string)(context, builder)
            if isinstance(sig.args[0], t.ManagedString):
                out.meminfo = source.meminfo
            else:
                out.meminfo = ir.Constant(out.meminfo.type, None)
            out.data = builder.gep(source.data, [args[1]])
            out.size = args[2]
            value = out._getvalue()
            if context.enable_nrt and isinstance(sig.args[0], t.ManagedString):
                context.nrt.incref(builder, t.managed_string, value)  # a new reference to the shared MemInfo
            return value

        return t.managed_string(s, types.int64, types.int64), codegen

    return {"view_of": view_of, "set_byte": set_byte, "substring": substring}


def _address_intrinsics(target: Any, env: _Shared) -> dict[str, Any]:
    """Addresses (a MemInfo's, a string's bytes, the arena's base) and the fused multiply-add."""
    from llvmlite import ir
    from numba.core import types

    t, cgutils, i64, state_slot = env.t, env.cgutils, env.i64, env.state_slot

    @target.intrinsic
    def meminfo_of(typingctx, s):
        """The address of a managed string's MemInfo (0 when it borrows its bytes)."""
        if not isinstance(s, t.ManagedString):
            return None

        def codegen(context, builder, sig, args):
            string = cgutils.create_struct_proxy(t.managed_string)(context, builder, value=args[0])
            return builder.ptrtoint(string.meminfo, i64)

        return types.int64(s), codegen

    @target.intrinsic
    def address_of(typingctx, s):
        if not isinstance(s, t.stringlike):
            return None

        def codegen(context, builder, sig, args):
            return builder.ptrtoint(cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0]).data, i64)

        return types.int64(s), codegen

    @target.intrinsic
    def arena_base(typingctx):
        """The arena's base address (string_view outputs address it as 2 GiB windows)."""
        def codegen(context, builder, sig, args):
            return builder.load(builder.gep(builder.load(state_slot(builder)), [i64(int(ArenaWord.BASE))]))

        return types.int64(), codegen

    @target.intrinsic
    def fused_multiply_add(typingctx, a, b, c):
        """a * b + c with one rounding (float(s) forms exact products with it)."""
        def codegen(context, builder, sig, args):
            double = ir.DoubleType()
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(double, [double] * 3), "llvm.fma.f64")
            values = [context.cast(builder, v, ty, types.float64) for v, ty in zip(args, sig.args)]
            return builder.call(fma, values)

        return types.float64(a, b, c), codegen

    return {"meminfo_of": meminfo_of, "address_of": address_of, "arena_base": arena_base,
            "fused_multiply_add": fused_multiply_add}


def _store_header(builder: Any, header: Any, words: list[Any]) -> None:
    """The six words of a GPU block's header (NRT's MemInfo: refct, dtor, dtor_info, data, size; then padding)
    as three 16-byte stores (the block is 16-byte aligned): each store of a thread's own header is a memory
    transaction, so three instead of five cut the L2 traffic of a kernel making short strings (docs/strings.md)."""
    from llvmlite import ir

    i64 = ir.IntType(64)
    pair_t = ir.VectorType(i64, 2)
    pairs = builder.bitcast(header, pair_t.as_pointer())
    for k in range(0, len(words), 2):
        pair = builder.insert_element(ir.Constant(pair_t, None), words[k], ir.IntType(32)(0))
        pair = builder.insert_element(pair, words[k + 1], ir.IntType(32)(1))
        builder.store(pair, builder.gep(pairs, [i64(k // 2)]), align=16)


def _warp_claim(builder: Any, counter: Any, total: Any) -> Any:
    """Claims ``total`` bytes from ``counter`` with one atomic add per warp instead of one per thread (a
    single counter taking ten million atomics serialises on it): the active lanes (any subset: allocation
    happens in divergent code) scan their sizes in five shuffle steps, each lane reading the active lane
    ``d`` ranks below it (``fns``: the n-th set bit of the mask), the lowest adds the warp's sum, and each
    lane's block starts at that base plus the sizes of the active lanes below it. Sizes travel as two
    32-bit halves."""
    from llvmlite import ir

    from numba.cuda import cgutils

    i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
    module = builder.module
    active_mask = ir.InlineAsm(ir.FunctionType(i32, []), "activemask.b32 $0;", "=r", side_effect=True)
    # fns.b32 d, mask, base, offset: the lane of the |offset|-th set bit of mask counting down from base,
    # base itself (always set here) the first: offset -(d + 1) is the active lane d ranks below
    nth_below = ir.InlineAsm(ir.FunctionType(i32, [i32, i32, i32]), "fns.b32 $0, $1, $2, $3;", "=r,r,r,r")
    lane_id = cgutils.get_or_insert_function(module, ir.FunctionType(i32, []), "llvm.nvvm.read.ptx.sreg.laneid")
    # NVVM's shuffle: (mask, mode (0: from an indexed lane), value, lane, clamp) -> {value, in range}
    shuffle = cgutils.get_or_insert_function(
        module, ir.FunctionType(ir.LiteralStructType((i32, i1)), [i32, i32, i32, i32, i32]),
        "llvm.nvvm.shfl.sync.i32")
    lowest = cgutils.get_or_insert_function(module, ir.FunctionType(i32, [i32, i1]), "llvm.cttz.i32")
    highest = cgutils.get_or_insert_function(module, ir.FunctionType(i32, [i32, i1]), "llvm.ctlz.i32")

    def shuffle64(mask, value, source):
        def half(v):
            return builder.extract_value(builder.call(shuffle, [mask, i32(0), v, source, i32(31)]), 0)

        low, high = half(builder.trunc(value, i32)), half(builder.trunc(builder.lshr(value, i64(32)), i32))
        return builder.or_(builder.shl(builder.zext(high, i64), i64(32)), builder.zext(low, i64))

    mask, lane = builder.call(active_mask, []), builder.call(lane_id, [])
    inclusive = total
    for step in (1, 2, 4, 8, 16):  # inclusive scan over the active lanes in rank order
        source = builder.call(nth_below, [mask, lane, i32(-step - 1)])  # 0xffffffff when there is none
        value = shuffle64(mask, inclusive, builder.and_(source, i32(31)))
        has = builder.icmp_unsigned("!=", source, i32(0xFFFFFFFF))
        inclusive = builder.add(inclusive, builder.select(has, value, i64(0)))
    last = builder.sub(i32(31), builder.call(highest, [mask, i1(1)]))
    whole = shuffle64(mask, inclusive, last)
    leader = builder.call(lowest, [mask, i1(1)])
    base = cgutils.alloca_once_value(builder, i64(0))
    with builder.if_then(builder.icmp_unsigned("==", lane, leader)):
        builder.store(builder.atomic_rmw("add", counter, whole, "monotonic"), base)
    return builder.add(shuffle64(mask, builder.load(base), leader), builder.sub(inclusive, total))


def register_casts(target: Any, copy_impl: Any) -> None:
    """View -> managed: the same bytes, no MemInfo. Literal -> managed: a copy in the arena (a literal's
    bytes live in the kernel's module, which is no Arrow buffer)."""
    from llvmlite import ir

    t = string_types()
    cgutils = target.cgutils

    @target.lower_cast(t.StringView, t.ManagedString)
    def _view_to_managed(context, builder, fromty, toty, value):
        view = cgutils.create_struct_proxy(fromty)(context, builder, value=value)
        out = cgutils.create_struct_proxy(toty)(context, builder)
        out.meminfo = ir.Constant(out.meminfo.type, None)
        out.data, out.size = view.data, view.size
        return out._getvalue()

    @target.lower_cast(t.Utf8ConstantType, t.ManagedString)
    def _literal_to_managed(context, builder, fromty, toty, value):
        return context.compile_internal(builder, copy_impl, target.templates.signature(toty, fromty), [value])
