"""Cross-process zero-copy sharing of device columns and tables through CUDA IPC, with leases.

``export_ipc()`` returns bytes: a header (host name, device UUID, exporting process), the schema (the
Arrow IPC encoding of a schema, written by PyArrow), one CUDA IPC memory handle per underlying device
allocation with its size, the **leases to take** (the exporting process's lease socket and export id), and
per node of every chunk its length, null count, offset and, per buffer, (handle, offset into that
allocation). Buffers are usually sub-allocations of a pool block: the handle is for the block (found with
``cuMemGetAddressRange``) and the offset locates the buffer in it, as NBEP 7 describes.

``ad.import_ipc(data)`` in another process on the same node finds the GPU by its UUID (processes may number
GPUs differently) and takes a lease on each export the handle names (:mod:`arrowdev.cuda.lease_client`; a
lease refused, or an exporter gone, raises ``InvalidArrowError`` before any memory is read); while the
exporter answers, it maps each allocation once per process (``cudaIpcOpenMemHandle``; CUDA lets a process
open a handle only once, so mappings are shared by every import that uses them) and builds the same
column or table over the mapped memory, zero-copy. When its last array goes, the importer waits for its
work on the device (``cudaDeviceSynchronize``: the exporter may reuse the memory as soon as the lease
ends), lets its mappings go (kept open, idle, for the next import of the same allocation for a while:
:mod:`arrowdev.cuda.ipc_mappings`) and releases its leases.

The rule for lifetime (docs/memory.md): **the exporter keeps the memory until every importer has
released it.** The export is open to new imports while the exporting object lives (or for ``hold`` seconds
after the export, or while it is leased); dropping the exporting object while importers hold leases
keeps its buffers alive, counted in ``memory_stats()["bytes_lent"]``, and the pool gets them back at the
last release. Re-exporting imported data (a slice, a table built over imported columns) names the
original exporter's leases, so the next importer leases the memory where it lives. Importing an export
in its own process needs no CUDA IPC: the lease is taken locally and the buffers are the exporter's own.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import weakref
from typing import Any, Callable

from .. import _capsules
from ..core import chunks as _chunked, layout
from ..errors import InvalidArrowError
from ..core.types import DataType, Device
from ..gpu import memory, runtime
from . import ipc_checks, ipc_mappings, lease_client, lease_server, leases

_MAGIC = b"ARROWDEV-CUDA-IPC-2\n"
_OLD_MAGIC = b"ARROWDEV-CUDA-IPC-1\n"
_HANDLE_HEX = 128  # a cudaIpcMemHandle_t is 64 bytes


class CudaCalls:
    """The CUDA calls IPC makes. tests/support/fake_ipc.py swaps in host memory and fake handles, so the
    lease wiring is tested without a GPU."""

    def check_device(self, device_id: int) -> None:
        runtime.check_device(device_id)  # DeviceUnavailableError, naming why, where CuPy or the driver is missing

    def device_uuid(self, device_id: int) -> str:
        return _device_uuid(device_id)

    def device_with_uuid(self, uuid: str) -> int | None:
        """This process's index of the GPU with ``uuid`` (indices differ between processes that see
        different GPUs: dask-cuda gives each worker its own ``CUDA_VISIBLE_DEVICES``; UUIDs do not)."""
        return next((i for i in range(runtime.device_count()) if _device_uuid(i) == uuid), None)

    def allocation(self, address: int) -> tuple[int, int]:
        """(base, size) of the driver allocation holding ``address``."""
        driver = runtime.driver()
        err, base, size = driver.cuMemGetAddressRange(address)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise InvalidArrowError(f"{address:#x} is not in a device allocation ({err.name})")
        return int(base), int(size)

    def get_handle(self, base: int) -> bytes:
        return bytes(runtime.cupy().cuda.runtime.ipcGetMemHandle(base))

    def open_handle(self, handle: bytes, device_id: int) -> int:
        cp = runtime.cupy()
        with cp.cuda.Device(device_id):
            try:
                return int(cp.cuda.runtime.ipcOpenMemHandle(handle, cp.cuda.runtime.cudaIpcMemLazyEnablePeerAccess))
            except cp.cuda.runtime.CUDARuntimeError as e:
                raise InvalidArrowError(f"cannot open a CUDA IPC handle (stale: its exporter has gone, or not "
                                        f"from this node): {e}") from None

    def close_handle(self, base: int, device_id: int) -> None:
        cp = runtime.cupy()
        with cp.cuda.Device(device_id):
            cp.cuda.runtime.ipcCloseMemHandle(base)

    def synchronize(self, device_id: int) -> None:
        cp = runtime.cupy()
        with cp.cuda.Device(device_id):
            cp.cuda.runtime.deviceSynchronize()

    def pinned(self, addresses: list[int]) -> dict[int, int]:
        """The arrowdev device buffers (address -> size) holding ``addresses``: what an export keeps alive."""
        return memory.buffers_holding(addresses)

    def value_checks(self, frames: list[tuple[int, int, bool]], device_id: int) -> Any:
        """What checks the values in mapped buffers: CuPy on the GPU (core/node_checks.py)."""
        from ..core.node_checks import values_for

        return values_for(frames, device_id, after_current=False)  # the exporter waited for its writes


calls = CudaCalls()


@functools.lru_cache(maxsize=None)
def _device_uuid(device_id: int) -> str:
    props = runtime.cupy().cuda.runtime.getDeviceProperties(device_id)
    return bytes(props["uuid"]).hex()


# ---- export ------------------------------------------------------------------------------------------


class _Exporter:
    """Walks the exported nodes: one handle per allocation, each buffer (handle, offset). Buffers in
    memory this process imported name the original handle and the leases of the import they came from."""

    def __init__(self, device_id: int) -> None:
        self.handles: list[dict[str, Any]] = []
        self.index: dict[int, int] = {}  # allocation base here -> handle index
        self.own_bases: dict[str, int] = {}  # handle (hex) -> base, for this process's own allocations
        self.own_addresses: list[int] = []
        self.foreign: dict[tuple[str, str], dict[str, Any]] = {}  # (address, export) -> lease target
        self.mapped = _mapped_ranges(device_id)

    def buffer(self, address: int) -> list[int] | None:
        if not address:
            return None
        hit = next((m for m in self.mapped if m[0] <= address < m[0] + m[1]), None)
        if hit is not None:
            base, size, handle, targets = hit
            for target in targets:
                self.foreign[(target["address"], target["export"])] = target
        else:
            base, size = calls.allocation(address)
            handle = None if base in self.index else calls.get_handle(base).hex()
            if handle is not None:
                self.own_bases[handle] = base
            self.own_addresses.append(address)
        if base not in self.index:
            self.index[base] = len(self.handles)
            self.handles.append({"handle": handle, "size": size})
        return [self.index[base], address - base]

    def node(self, tree: layout.Node) -> dict[str, Any]:
        return {"length": tree.length, "offset": tree.offset, "null_count": tree.null_count,
                "buffers": [self.buffer(b) for b in tree.buffers], "children": [self.node(c) for c in tree.children],
                "dictionary": None if tree.dictionary is None else self.node(tree.dictionary)}


def _addresses(node: layout.Node) -> list[int]:
    found = [b for b in node.buffers if b]
    for child in node.children:
        found += _addresses(child)
    return found + (_addresses(node.dictionary) if node.dictionary is not None else [])


def _shareable(col: Any, chunks: list[Any], device: Device) -> tuple[list[Any], list[layout.Node]]:
    """``chunks`` and their node trees, or where any buffer lies in memory that grows in place (a long string output
    of a UDF, :mod:`arrowdev.gpu.growable`: CUDA's legacy IPC cannot share it) copies of them in pool memory, which
    the export's lease keeps."""
    from ..gpu.growable import is_growable

    trees = [layout.Node.of(held) for held in chunks]
    if not any(is_growable(a) for tree in trees for a in _addresses(tree)):
        return chunks, trees
    from . import transfer

    read = _chunked.planning_reader([col], ready=True)
    dtype = _chunked.dtype(col)
    items = [(dtype, held, held.null_count, read, 0) for held in chunks]
    copies = transfer.copy_chunks(items, device, device)
    # the copies are queued on arrowdev's stream, and an importer (another process, or this one's checks) reads
    # them with nothing to wait on: they are done before the handle is handed out
    runtime.synchronize_events([held.sync_event for held in copies])
    return copies, [layout.Node.of(held) for held in copies]


def export_ipc(obj: Any, hold: float = 0.0) -> bytes:
    """The IPC description of a device column or table, with its leases (see the module docstring). A
    second export of the same object while its export is open returns the same bytes."""
    if not isinstance(hold, (int, float)) or not hold >= 0:
        raise ValueError(f"expected hold to be a number of seconds >= 0, got {hold!r}")
    registry = lease_server.registry()
    known = registry.open_export_of(obj)
    if known is not None and known.handle is not None:
        registry.extend_hold(known, hold)
        return known.handle
    is_table = not isinstance(obj, _chunked.ColumnCore)
    col = obj.to_struct_array() if is_table else obj  # a table's record batches, as one struct column
    device = col.device
    if device.type != "cuda":
        raise ValueError(f"expected data on a CUDA device for export_ipc, got {device.type}: call to_device() first")
    calls.check_device(device.id)
    _chunked.wait_for_producers(col)
    chunks, trees = _shareable(col, _chunked.exportable_chunks(col), device)
    walker = _Exporter(device.id)
    nodes = [walker.node(tree) for tree in trees]
    kind = "table" if is_table else "column"
    targets = list(walker.foreign.values())
    export = None
    if walker.own_bases or not targets:  # memory of this process (or no buffer at all): leased here
        address = lease_server.server().address
        export = registry.add(chunks, owner=obj, pins=calls.pinned(walker.own_addresses), hold=hold,
                              bases=walker.own_bases, description=f"{kind} of {len(col)} rows on cuda:{device.id}")
        targets.insert(0, {"address": address, "export": export.id, "pid": os.getpid()})
    elif hold:  # only imported memory: its leases stay held here for the window (then the importers' own count)
        lease_server.server()
        registry.add(chunks, owner=obj, hold=hold, description=f"re-exported {kind}")
    header = {"kind": kind, "host": socket.gethostname(), "pid": os.getpid(), "device": device.id,
              "device_uuid": calls.device_uuid(device.id), "handles": walker.handles, "leases": targets,
              "chunks": nodes}
    encoded = json.dumps(header).encode()
    data = _MAGIC + len(encoded).to_bytes(8, "little") + encoded + col.type.ipc_schema
    if export is not None:
        export.handle = data
    return data


# ---- import ------------------------------------------------------------------------------------------

_LOCAL = leases.Peer(os.getpid(), os.getuid(), "this process", local=True)
_imports: weakref.WeakSet[_Imported] = weakref.WeakSet()  # live imports with mapped memory (re-exports)


class _LocalLease:
    """A lease on an export of this same process (no socket: the registry directly)."""

    __slots__ = ("registry", "id")

    def __init__(self, registry: leases.Registry, lease_id: int) -> None:
        self.registry, self.id = registry, lease_id

    def release(self) -> None:
        self.registry.release(self.id, _LOCAL)


class _Imported:
    """What one import holds: its leases and the allocations it mapped. The keep-alive of every node the
    import builds, so it goes with the last array over the imported memory (slices and children included)."""

    def __init__(self, device_id: int, targets: list[dict[str, Any]]) -> None:
        self.device_id, self.targets = device_id, targets
        self.leases: list[Any] = []
        self.own: list[leases.Export] = []  # this process's exports leased (their buffers are local)
        self.mappings: list[ipc_mappings.Mapping] = []

    def take_leases(self, map_memory: Callable[[], list[int]]) -> list[int]:
        """A lease on every export the handle names, all or none, and ``map_memory()``'s result (the bases of the
        allocations). Nothing reads the memory before every lease is held; where one other process is asked,
        its allocations are mapped (``cudaIpcOpenMemHandle``, which reads nothing) while it answers."""
        server = lease_server.running_server()
        try:
            remote = []
            for target in self.targets:
                if target["pid"] == os.getpid() and server is not None and target["address"] == server.address:
                    registry = lease_server.registry()
                    self.leases.append(_LocalLease(registry, registry.lease(target["export"], _LOCAL)))
                    export = registry.find(target["export"])
                    if export is not None:
                        self.own.append(export)
                else:
                    remote.append(target)
            if len(remote) != 1:
                for target in remote:
                    self.leases.append(lease_client.lease(target["address"], target["export"], target["pid"]))
                return map_memory()
            finish = lease_client.start_lease(remote[0]["address"], remote[0]["export"], remote[0]["pid"])
            try:
                bases = map_memory()
            except BaseException:
                self.leases.append(finish())  # a refused lease explains more than a failed mapping
                raise
            self.leases.append(finish())
            return bases
        except BaseException:
            self.release(failed=True)
            raise

    def base_of(self, handle: str) -> int:
        for export in self.own:
            if handle in export.bases:
                return export.bases[handle]
        mapping = ipc_mappings.acquire(handle, self.device_id, calls)
        self.mappings.append(mapping)
        return mapping.base

    def release(self, failed: bool = False) -> None:
        """The leases given back and the mappings let go, after this process's work on the device is done (the
        exporter may reuse the memory once released); a failed import closes what it mapped instead of keeping
        it for the next."""
        if self.mappings:
            try:  # the importer's kernels may still read the memory: the exporter may reuse it once released
                calls.synchronize(self.device_id)
            except Exception:  # noqa: BLE001 - at interpreter exit CUDA may be gone; the process's end releases
                pass
        mapped, self.mappings = self.mappings, []
        ipc_mappings.release(mapped, keep=not failed)
        taken, self.leases = self.leases, []
        for lease in taken:
            lease.release()

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - at interpreter exit; the process's end gives the leases back anyway
            pass


def _mapped_ranges(device_id: int) -> list[tuple[int, int, str, list[dict[str, Any]]]]:
    """(base, size, handle, leases) of every allocation this process mapped on ``device_id`` for live imports."""
    return [(m.base, m.mapped_size, m.handle, imp.targets) for imp in list(_imports) if imp.device_id == device_id
            for m in imp.mappings]


def import_ipc(data: bytes) -> Any:
    """A column or table over another process's device memory, from its ``export_ipc()`` bytes: every node is
    checked against its type and the allocations' sizes before any lease is taken or handle opened, each mapping's
    size and the values in the buffers before anything reads them (:mod:`arrowdev.cuda.ipc_checks`)."""
    header, schema = parse_handle(data)
    dtype, shape, frames_header, places, values_wanted = ipc_checks.check_before_mapping(header, schema)
    if header["host"] != socket.gethostname():
        raise InvalidArrowError(f"the IPC handle comes from another node ({header['host']!r}); this is "
                                f"{socket.gethostname()!r}: CUDA IPC works between processes of one node")
    device_id = calls.device_with_uuid(header["device_uuid"])
    if device_id is None:
        raise InvalidArrowError(f"the IPC handle's GPU (UUID {header['device_uuid']}) is not visible in this "
                                f"process (see CUDA_VISIBLE_DEVICES)")
    imported = _Imported(device_id, header["leases"])
    bases = imported.take_leases(lambda: [imported.base_of(h["handle"]) for h in header["handles"]])
    if imported.mappings:
        _imports.add(imported)
    sizes = [h["size"] for h in header["handles"]]
    try:
        ipc_checks.check_mapped_sizes(sizes, [_mapped_size(imported, base) for base in bases])
        frames = [(bases[handle] + offset, sizes[handle] - offset, True) for handle, offset in places]
        if values_wanted:  # the walk before mapping saw every node and size: only values are left to check
            ipc_checks.check_after_mapping(shape, frames_header, places, frames, calls.value_checks(frames, device_id))
        device = Device("cuda", device_id)
        addresses = [address for address, _, _ in frames]
        chunks = [_build(dtype, node, addresses, imported, device) for node in frames_header["columns"][0]]
    except BaseException:
        imported.release(failed=True)
        raise
    return _chunked.make(header["kind"], dtype, chunks)


def _mapped_size(imported: _Imported, base: int) -> int:
    """The size of the allocation at ``base``: known for a mapping since it was opened, asked of CUDA for this
    process's own memory."""
    return next((m.mapped_size for m in imported.mappings if m.base == base), None) or calls.allocation(base)[1]


def _build(dtype: DataType, node: list, addresses: list[int], keep: _Imported, device: Device) -> Any:
    """A held array over the mapped memory, from a node the checks passed (``ipc_checks``: a frame header's node,
    each buffer naming a frame; ``addresses``: each frame's address here). The checks saw every field, the
    children and dictionary against the type and every buffer inside its allocation: nothing is checked again."""
    length, null_count, offset, entries, children, dictionary = node
    buffers = [0 if entry is None else addresses[entry[0]] for entry in entries]
    built = [_build(t, child, addresses, keep, device) for t, child in zip(dtype.children, children)]
    held_dictionary = None if dictionary is None else _build(dtype.value_type, dictionary, addresses, keep, device)
    return _capsules.build(dtype, length, null_count, offset, buffers, built, held_dictionary,
                           device_type=device.code, device_id=device.id, keepalive=keep)


def parse_handle(data: Any) -> tuple[dict[str, Any], bytes]:
    """(header, schema bytes) of an ``export_ipc()`` result, the header checked field by field (it comes
    from another process: untrusted until checked)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"expected the bytes of ArrowColumn.export_ipc() / ArrowTable.export_ipc(), got "
                         f"{type(data).__name__}")
    data = bytes(data)
    if data.startswith(_OLD_MAGIC):
        raise InvalidArrowError("this IPC handle comes from an arrowdev without leases: export it again with "
                                "this version on both sides")
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 8:
        raise ValueError("expected the bytes of ArrowColumn.export_ipc() / ArrowTable.export_ipc()")
    start = len(_MAGIC) + 8
    size = int.from_bytes(data[len(_MAGIC):start], "little")
    try:
        header = json.loads(data[start:start + size])
    except ValueError as e:
        raise InvalidArrowError(f"the IPC handle's header is not JSON: {e}") from None
    _check_header(header)
    return header, data[start + size:]


def _check_header(header: Any) -> None:
    def wrong(what: str) -> InvalidArrowError:
        return InvalidArrowError(f"the IPC handle's header is malformed: {what}")

    if not isinstance(header, dict) or header.get("kind") not in ("table", "column"):
        raise wrong("expected a dict with kind 'table' or 'column'")
    for key, kind in (("host", str), ("device_uuid", str), ("pid", int), ("handles", list), ("leases", list),
                      ("chunks", list)):
        if not isinstance(header.get(key), kind):
            raise wrong(f"{key} should be a {kind.__name__}, got {header.get(key)!r:.60}")
    for h in header["handles"]:
        if not (isinstance(h, dict) and isinstance(h.get("handle"), str) and len(h["handle"]) == _HANDLE_HEX
                and isinstance(h.get("size"), int) and h["size"] > 0):
            raise wrong(f"a handle should be {{'handle': {_HANDLE_HEX} hex digits, 'size': bytes > 0}}, got {h!r:.100}")
        try:
            bytes.fromhex(h["handle"])
        except ValueError:
            raise wrong(f"a handle is not hex: {h['handle']!r:.100}") from None
    if not header["leases"]:
        raise wrong("no lease to take (a handle from export_ipc names at least its exporter's)")
    for t in header["leases"]:
        if not (isinstance(t, dict) and isinstance(t.get("address"), str) and isinstance(t.get("export"), str)
                and isinstance(t.get("pid"), int) and t["address"] and t["export"].isalnum()):
            raise wrong(f"a lease should be {{'address': socket path, 'export': id, 'pid': int}}, got {t!r:.100}")
