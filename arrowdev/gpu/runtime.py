"""The CUDA runtime as arrowdev uses it, through CuPy: devices, streams, events, small reads.

CuPy is imported only when a GPU feature is used, so arrowdev imports and works on machines
without CuPy or a GPU; there, GPU features raise :class:`arrowdev.DeviceUnavailableError`.

Sync events (docs/architecture.md C7) are ``cudaEvent_t*``: the address of memory that holds an event
handle. :func:`wait_on_events` makes a stream wait on them before arrowdev's work touches the data;
:func:`synchronize_events` blocks the host before the CPU reads (pinned host memory).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Any, Iterable, Iterator

import numpy as np

from ..errors import CaptureError, DeviceUnavailableError, InvalidArrowError, install_hint

_lock = threading.Lock()
_streams: dict[int, Any] = {}
_free_events: dict[int, list[Any]] = {}  # device id -> CuPy events no array holds (SyncEvent)
# event handle -> arrowdev's stream (pointer) a live SyncEvent last recorded it on: a wait on it there is a no-op
_recorded_on_own_stream: dict[int, int] = {}
# stream pointer -> the capture.Graph being captured on it (cuda/capture.py); empty but while one is open
captures: dict[int, Any] = {}
# Called after the host has waited for producers' events (memory.py adds its release of what fired): what a
# copy kept alive for its event (the source column, through memory.keep_until) is let go as soon as the host
# knows the copy is done, not at some later arrowdev call (a producer's release ran late, or not before exit).
after_host_waits: list[Any] = []


_cupy: Any = None  # the cupy module, once it has been found usable (it is asked for on every GPU call)


def cupy() -> Any:
    """The cupy module, or DeviceUnavailableError naming what is missing."""
    global _cupy
    if _cupy is not None:
        return _cupy
    try:
        import cupy as cp
    except ImportError as e:
        raise DeviceUnavailableError(
            f"this needs CuPy and a CUDA GPU: {install_hint('cuda13')} ({e})") from None
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, no device: CuPy raises CUDARuntimeError
        raise DeviceUnavailableError(f"no CUDA device is usable here: {e}") from None
    if count == 0:
        raise DeviceUnavailableError("no CUDA device is present")
    _cupy = cp
    return cp


def driver() -> Any:
    """cuda.bindings' driver API (``cuda.bindings.driver``), initialised; DeviceUnavailableError naming
    the cause when cuda-bindings is missing or cannot load the driver (cuda.pathfinder's
    DynamicLibNotFoundError on a machine without an NVIDIA driver)."""
    try:
        from cuda.bindings import driver as api
    except ImportError as e:
        raise DeviceUnavailableError(f"this needs cuda-bindings: {install_hint('cuda13')} ({e})") from None
    try:
        (err,) = api.cuInit(0)
    except Exception as e:  # cuda.pathfinder cannot find libcuda: no driver installed
        raise DeviceUnavailableError(f"the CUDA driver cannot be loaded here: {type(e).__name__}: {e}") from None
    if err != api.CUresult.CUDA_SUCCESS:
        raise DeviceUnavailableError(f"the CUDA driver does not start here: cuInit failed ({err.name})")
    return api


def is_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        cupy()
        return True
    except DeviceUnavailableError:
        return False


def device_count() -> int:
    return cupy().cuda.runtime.getDeviceCount()


def check_device(device_id: int) -> int:
    count = device_count()
    if not isinstance(device_id, int) or not 0 <= device_id < count:
        raise ValueError(f"expected a CUDA device id in [0, {count}), got {device_id!r}")
    return device_id


class _RawStream:
    """A raw ``cudaStream_t`` that speaks the CUDA stream protocol (``__cuda_stream__``)."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def external_stream(handle: Any, device_id: int) -> Any:
    """A CuPy stream over a foreign stream: a raw ``cudaStream_t`` int (CAI's 1 and 2, the legacy
    and per-thread default streams, included) or any object with ``__cuda_stream__``."""
    cp = cupy()
    source = handle if hasattr(handle, "__cuda_stream__") else _RawStream(int(handle))
    with cp.cuda.Device(device_id):
        return cp.cuda.Stream.from_external(source)


ALREADY_CURRENT = contextlib.nullcontext()  # what on_device gives when the device is current (reusable)


def on_device(device_id: int) -> Any:
    """A context in which ``device_id`` is the current device: a null context when it already is (asking
    costs less than CuPy's switch and switch back, on paths taken once per UDF call)."""
    cp = cupy()
    return ALREADY_CURRENT if cp.cuda.runtime.getDevice() == device_id else cp.cuda.Device(device_id)


@contextlib.contextmanager
def on_stream(device_id: int, after_current: bool = False) -> Iterator[Any]:
    """A context in which ``device_id`` is the current device and arrowdev's stream there the current stream
    (CuPy work queued inside it is ordered with arrowdev's own, not on CUDA's legacy stream); yields the stream.
    ``after_current``: the stream first waits for the work already queued on CuPy's current stream of the device
    (CUDA's legacy stream unless the caller made another current), where memory that names no stream of its own
    (received device frames) was written: arrowdev's stream is non-blocking, so it would not wait otherwise."""
    cp = cupy()
    with cp.cuda.Device(device_id):
        stream = stream_for(device_id)  # made on its device
        if after_current:
            current = cp.cuda.get_current_stream()
            if current.ptr != stream.ptr:
                written = cp.cuda.Event(disable_timing=True)
                written.record(current)
                stream.wait_event(written)
        with stream:
            yield stream


def stream_for(device_id: int, stream: Any = None) -> Any:
    """The stream arrowdev's work on ``device_id`` goes to: the caller's (a CuPy stream, an object
    with ``__cuda_stream__`` or a raw ``cudaStream_t`` int), else one non-blocking stream per
    device, made on first use. CaptureError while that stream is being captured: only UDF calls, which
    keep the stream from before, run inside ``ad.cuda.capture()``."""
    if stream is None:
        made = _streams.get(device_id)  # the common case, without the lock
        if made is not None:
            if captures and made.ptr in captures:
                raise CaptureError(f"arrowdev's stream on device {device_id} is being captured (ad.cuda.capture()): "
                                   "only UDF calls can run inside the block; make this copy, export or read "
                                   "before or after it")
            return made
    cp = cupy()
    if stream is not None:
        return stream if isinstance(stream, cp.cuda.Stream) else external_stream(stream, device_id)
    with _lock:
        if device_id not in _streams:
            with cp.cuda.Device(device_id):
                _streams[device_id] = cp.cuda.Stream(non_blocking=True)
        return _streams[device_id]


def capturing(device_id: int) -> bool:
    """Whether arrowdev's stream on ``device_id`` is being captured (cuda/capture.py)."""
    made = _streams.get(device_id)
    return made is not None and made.ptr in captures


def _event_handle(address: int) -> int:
    """The cudaEvent_t handle at a ``cudaEvent_t*`` address; 0 for a null address or handle."""
    return (ctypes.c_void_p.from_address(address).value or 0) if address else 0


def wait_on_events(stream: Any, events: Iterable[int]) -> None:
    """Makes ``stream`` wait for every producer event (``cudaEvent_t*``) before later work (no list built:
    this runs on every UDF call). An event repeated in a row is waited on once (chunks of one copy share it);
    one that arrowdev recorded on ``stream`` itself (a UDF's output fed to the next call) not at all: the
    stream runs its work in order."""
    last, stream_ptr = 0, stream.ptr
    if captures and stream_ptr in captures:
        captures[stream_ptr].order_after(_event_handle(address) for address in events)
        return
    for address in events:
        handle = _event_handle(address)
        if handle and handle != last and _recorded_on_own_stream.get(handle) != stream_ptr:
            _on_event(handle, cupy().cuda.runtime.streamWaitEvent, stream_ptr, handle, 0)
            last = handle


def synchronize_events(events: Iterable[int]) -> None:
    """Blocks the host until every producer event (``cudaEvent_t*``) has fired, each distinct event once (the
    chunks of a table copied in one batch share one: a table of many chunks would wait on it per chunk)."""
    waited = False
    for handle in dict.fromkeys(_event_handle(address) for address in events):
        if handle:
            synchronize_event_handle(handle)
            waited = True
    if waited:
        for hook in after_host_waits:
            hook()


def synchronize_event_handle(handle: int) -> None:
    """Blocks the host until the event ``handle`` (a ``cudaEvent_t``) has fired."""
    _on_event(handle, cupy().cuda.runtime.eventSynchronize, handle)


def _on_event(handle: int, call: Any, *args: Any) -> None:
    """A CUDA call on a producer's event; a handle CUDA refuses is the producer's error."""
    try:
        call(*args)
    except cupy().cuda.runtime.CUDARuntimeError as e:
        raise InvalidArrowError(f"the producer's sync_event holds {handle:#x}, which CUDA refuses as an event: {e}") from e


class SyncEvent:
    """An event recorded on a stream after the work that produces an array, and the memory
    holding its handle: ``address`` is the ``cudaEvent_t*`` to put in ``ArrowDeviceArray.sync_event``.

    Events are reused: when a SyncEvent goes (the array holding it was released by every consumer), its
    event returns to a free list of its device and is recorded again by a later SyncEvent. A wait queued on
    it before (``cudaStreamWaitEvent``) keeps the recording it saw; ``memory.keep_until`` holds the
    SyncEvent while it watches the event, so the event is not recycled before that watch ends."""

    __slots__ = ("event", "device_id", "_handle")

    def __init__(self, stream: Any, device_id: int) -> None:
        cp = cupy()
        try:
            event = _free_events[device_id].pop()  # list.pop is atomic: no lock needed
        except (KeyError, IndexError):
            event = None
        if event is None:
            with cp.cuda.Device(device_id):  # an event belongs to the device it is made on: the stream's
                event = cp.cuda.Event(disable_timing=True)
        self.event, self.device_id = event, device_id
        self._handle = ctypes.c_void_p(event.ptr)
        if captures and stream.ptr in captures:  # recorded after each run of the captured work instead
            captures[stream.ptr].record_after_runs(self)
            return
        self.record(stream)

    def record(self, stream: Any) -> None:
        """Records the event on ``stream`` (again): it fires once the work queued there so far is done."""
        self.event.record(stream)
        own = _streams.get(self.device_id)
        if own is not None and own.ptr == stream.ptr:  # arrowdev's streams live as long as the process
            _recorded_on_own_stream[self.event.ptr] = own.ptr
        else:
            _recorded_on_own_stream.pop(self.event.ptr, None)

    def __del__(self) -> None:
        if _free_events is None:  # the interpreter is shutting down
            return
        free = _free_events.setdefault(self.device_id, [])
        if len(free) < 1024:
            free.append(self.event)
        else:  # the event is destroyed with this object: CUDA may hand its handle to someone else's event
            _recorded_on_own_stream.pop(self.event.ptr, None)

    @property
    def address(self) -> int:
        return ctypes.addressof(self._handle)


def read_bytes(address: int, nbytes: int, device_id: int) -> bytes:
    """Copies ``nbytes`` of device memory to the host (synchronous; for offsets and bitmaps)."""
    if nbytes == 0:
        return b""
    cp = cupy()
    out = np.empty(nbytes, dtype=np.uint8)
    with cp.cuda.Device(device_id):
        cp.cuda.runtime.memcpy(out.ctypes.data, address, nbytes, cp.cuda.runtime.memcpyDeviceToHost)
    return out.tobytes()


def read_many(requests: list[tuple[int, int]], device_id: int, stream: Any = None) -> list[bytes]:
    """Copies each (address, nbytes) of device memory to the host: one batch of asynchronous copies into
    pinned memory on ``stream`` (arrowdev's by default), then one wait (planning a table of many string chunks
    reads two offsets per chunk: read one by one, each waited for its own synchronous copy)."""
    total = sum(nbytes for _, nbytes in requests)
    if total == 0:
        return [b"" for _ in requests]
    cp = cupy()
    pinned = cp.cuda.alloc_pinned_memory(total)
    stream = stream if stream is not None else stream_for(device_id)
    with cp.cuda.Device(device_id):
        position = 0
        for address, nbytes in requests:
            cp.cuda.runtime.memcpyAsync(pinned.ptr + position, address, nbytes, cp.cuda.runtime.memcpyDeviceToHost,
                                        stream.ptr)
            position += nbytes
        stream.synchronize()
    data = ctypes.string_at(pinned.ptr, total)
    out, position = [], 0
    for _, nbytes in requests:
        out.append(data[position:position + nbytes])
        position += nbytes
    return out


_popcount_kernel: Any = None


def count_set_bits(address: int, bit_offset: int, length: int, device_id: int) -> int:
    """Set bits among bits [bit_offset, bit_offset + length) of a bitmap in device memory, counted on the
    device (a kernel, a sum, an 8-byte read on arrowdev's stream) instead of copied to the host."""
    if length <= 0:
        return 0
    global _popcount_kernel
    cp = cupy()
    if _popcount_kernel is None:
        _popcount_kernel = cp.ElementwiseKernel(
            "raw uint8 bits, int32 head, int32 tail, int64 last", "uint8 y",
            "unsigned int b = bits[i]; if (i == 0) b &= 0xFFu << head; if (i == last) b &= (1u << tail) - 1u;"
            " y = __popc(b);", "arrowdev_popcount_bytes")
    first, end = bit_offset // 8, bit_offset + length
    last = (end - 1) // 8
    nbytes = last - first + 1
    with on_stream(device_id):
        mem = cp.cuda.UnownedMemory(address + first, nbytes, None, device_id)
        bits = cp.ndarray(nbytes, cp.uint8, cp.cuda.MemoryPointer(mem, 0))
        per_byte = _popcount_kernel(bits, np.int32(bit_offset % 8), np.int32(end - 8 * last), np.int64(nbytes - 1),
                                    size=nbytes)
        return int(per_byte.sum(dtype=cp.int64))


_peers_enabled: set[tuple[int, int]] = set()


def enable_peer_access(device_id: int, peer_id: int) -> None:
    """Lets ``device_id`` and ``peer_id`` read each other's memory directly where the hardware can (NVLink or
    PCIe peer to peer): copies between them then go GPU to GPU instead of through host memory. Once per pair."""
    pair = (min(device_id, peer_id), max(device_id, peer_id))
    if device_id == peer_id or pair in _peers_enabled:
        return
    api = cupy().cuda.runtime
    for one, other in (pair, pair[::-1]):
        if api.deviceCanAccessPeer(one, other):
            with cupy().cuda.Device(one):
                try:
                    api.deviceEnablePeerAccess(other)
                except api.CUDARuntimeError as e:  # enabled already (by CuPy, PyTorch, ...): what was wanted
                    if "PeerAccessAlreadyEnabled" not in str(e):
                        raise
    with _lock:
        _peers_enabled.add(pair)


def allocation_range(address: int) -> tuple[int, int]:
    """(start, size) of the CUDA allocation holding device address ``address``; (address, 0) where the
    driver does not know the address."""
    api = driver()
    attribute = api.CUpointer_attribute
    err, start = api.cuPointerGetAttribute(attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address)
    err_size, size = api.cuPointerGetAttribute(attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE, address)
    if err != api.CUresult.CUDA_SUCCESS or err_size != api.CUresult.CUDA_SUCCESS:
        return address, 0
    return int(start), int(size)


def pointer_device(address: int) -> tuple[str, int]:
    """(device type name, device id) of a pointer: 'cuda', 'cuda_managed', 'cuda_host' or 'cpu'."""
    runtime = cupy().cuda.runtime
    attrs = runtime.pointerGetAttributes(address)
    kind = {runtime.memoryTypeDevice: "cuda", runtime.memoryTypeManaged: "cuda_managed",
            runtime.memoryTypeHost: "cuda_host"}.get(attrs.type, "cpu")
    return kind, attrs.device if kind != "cpu" else -1
