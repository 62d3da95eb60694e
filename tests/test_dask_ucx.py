"""Ping-pong between two worker processes: every sample type of tests/support/samples.py, in one table
and as separate columns, sliced at an odd offset, chunked and empty, goes worker A -> worker B (ping) ->
worker A (pong) and back to the client, and must equal the original.

- Over UCX (distributed-ucxx, GPU data, two workers on GPU 0): each receiving worker must have
  deserialized it with distributed's ``cuda`` family from frames in device memory (UCX moved them GPU to
  GPU), and the received columns must be on the GPU.
- Over TCP (the control, on the CPU in CI and with GPU data on a GPU): the same log must say ``dask``
  family and host frames, so the UCX assertions are able to fail; GPU data lands on the receiver's GPU.

Which family a receiver used is read from a log kept on each worker: arrowdev's registered deserializers,
wrapped there by :func:`_log_received` (distributed's own dispatch still picks and calls them).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from distributed import Client, LocalCluster, wait

import arrowdev as ad
from support.clusters import close_workers
from support.samples import CASES, source_of

# distributed-ucxx's options (its schema, distributed-ucxx.yaml; dask-cuda's enable_tcp_over_ucx and
# enable_nvlink set the same): UCX_TLS=tcp,cuda_copy,cuda_ipc, and a CUDA context made before UCX starts.
UCX_CONFIG = {"distributed-ucxx.tcp": True, "distributed-ucxx.cuda-copy": True, "distributed-ucxx.nvlink": True,
              "distributed-ucxx.create-cuda-context": True}
LAYOUTS = ["slice(3,11)", "chunked", "empty"]
NEEDS_UCX = "UCX needs distributed-ucxx: pip install 'arrowdev[dask-ucx13]'"


@pytest.fixture(scope="module")
def cluster(request):
    """(protocol, client, worker A, worker B) of a 2-process LocalCluster over ``request.param`` ("tcp" or "ucx"),
    each worker logging what it deserializes. Two workers on GPU 0 take distributed's LocalCluster:
    dask-cuda 26.10's LocalCUDACluster refuses a second worker on one device."""
    import dask

    protocol = request.param
    config = {}
    if protocol == "ucx":
        pytest.importorskip("distributed_ucxx", reason=NEEDS_UCX)
        config = UCX_CONFIG
    with dask.config.set(config), \
            LocalCluster(protocol=protocol, n_workers=2, processes=True, threads_per_worker=1,
                         dashboard_address=":0", worker_dashboard_address=":0") as local, \
            Client(local) as client:
        assert local.scheduler_address.startswith(f"{protocol}://")
        client.run(_log_received)
        a, b = sorted(client.scheduler_info()["workers"])
        yield protocol, client, a, b
        close_workers(local)


# ---- run on the workers ----------------------------------------------------------------------------


def _log_received(dask_worker) -> None:
    """Wraps arrowdev's deserializers of both families on this worker so that each call appends
    (family, kind, frames, frames exposing ``__cuda_array_interface__``) to ``dask_worker.arrowdev_received``."""
    import arrowdev.dask  # noqa: F401  (registers arrowdev's serializers)
    from distributed.protocol.cuda import cuda_deserialize
    from distributed.protocol.serialize import dask_deserialize

    log: list[tuple[str, str, int, int]] = []
    dask_worker.arrowdev_received = log
    classes = [cls for base in (ad.ArrowColumn, ad.ArrowTable) for cls in (base, *base.__subclasses__())]
    for family, dispatch in (("cuda", cuda_deserialize), ("dask", dask_deserialize)):
        # every class's own deserializer first: a subclass found after its base's wrapping would get the wrapper
        originals = {cls: dispatch.dispatch(cls) for cls in classes}
        for cls, deserialize in originals.items():
            def logged(header, frames, family=family, deserialize=deserialize):
                on_device = sum(hasattr(f, "__cuda_array_interface__") for f in frames)
                log.append((family, header["kind"], len(frames), on_device))
                return deserialize(header, frames)
            dispatch.register(cls)(logged)


def _take_received(dask_worker) -> list[tuple[str, str, int, int]]:
    log = dask_worker.arrowdev_received
    taken = [tuple(entry) for entry in log]
    log.clear()
    return taken


def _same(obj):
    return obj


def _device_types(obj) -> set[str]:
    """The device types of a received table and its columns, or of a received list of columns."""
    if isinstance(obj, ad.ArrowTable):
        return {obj.device.type} | {col.device.type for col in obj.columns}
    return {col.device.type for col in obj}


# ---- the test ---------------------------------------------------------------------------------------


def _source(name: str, layout: str) -> pa.Array | pa.ChunkedArray:
    return CASES[name].slice(5, 0) if layout == "empty" else source_of(name, layout)


def _move(client: Client, future, to: str):
    """``future``'s object fetched by worker ``to`` for a task there that returns it: (its future on ``to``,
    what ``to`` logged deserializing it, the device types of what arrived)."""
    moved = client.submit(_same, future, workers=[to], pure=False)
    devices = client.submit(_device_types, moved, workers=[to], pure=False).result()
    return moved, client.run(_take_received, workers=[to])[to], devices


@pytest.mark.parametrize("cluster, device", [
    pytest.param("tcp", "cpu", id="tcp-cpu"),
    pytest.param("tcp", "cuda", id="tcp-cuda", marks=pytest.mark.gpu),
    pytest.param("ucx", "cuda", id="ucx-cuda", marks=pytest.mark.gpu),
], indirect=["cluster"], scope="module")  # module: one cluster per protocol, not one per test
@pytest.mark.parametrize("kind", ["table", "column"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_ping_pong_of_every_type(cluster, device, kind, layout):
    protocol, client, a, b = cluster
    sources = {name.replace("[", "_").replace("]", "_"): _source(name, layout) for name in sorted(CASES)}
    expected = pa.table(sources)
    if kind == "table":
        obj, calls = ad.table(expected), 1
    else:
        obj, calls = [ad.column(s) for s in sources.values()], len(sources)  # a list: one call per column
    if device == "cuda":
        obj = obj.to_device() if kind == "table" else [col.to_device() for col in obj]
    [future] = client.scatter([obj], workers=[a], hash=False)
    wait(future)
    client.run(_take_received)  # forget the scatter's receipt on A
    family = "cuda" if protocol == "ucx" else "dask"
    device_frames = family == "cuda" and device == "cuda"  # GPU data as device frames; else host frames

    ping, received_b, devices_b = _move(client, future, b)
    pong, received_a, devices_a = _move(client, ping, a)
    for worker, received, devices in ((b, received_b, devices_b), (a, received_a, devices_a)):
        assert [entry[:2] for entry in received] == [(family, kind)] * calls, (worker, received)
        # frames in all, and in device memory (an empty table's chunks may have no buffers: no frames)
        frames, on_device = sum(entry[2] for entry in received), sum(entry[3] for entry in received)
        assert (frames > 0 or layout == "empty") and on_device == (frames if device_frames else 0), (worker, received)
        assert devices == {device}, (worker, devices)

    back = client.gather(pong)
    if kind == "table":
        assert back.device.type == device and back.column_names == list(sources)
        assert back.to_pyarrow().equals(expected)
        assert back.to_pylist() == expected.to_pylist()
    else:
        for name, col, source in zip(sources, back, sources.values(), strict=True):
            assert col.device.type == device, name
            assert col.to_pyarrow().equals(expected.column(name)), name
            assert col.to_pylist() == source.to_pylist(), name
