"""Repeated GPU work recorded once as a CUDA graph and replayed: a call's host work paid once.

A UDF call over a 10^7-row column spends about as long in Python before its kernel starts as the
kernel runs (docs/udf.md). Inside ``with ad.cuda.capture() as graph:``, UDF calls on the device are
recorded into a CUDA graph instead of run one by one (the stream's capture mode, relaxed); when the
block ends the graph runs once, so its outputs hold what the calls would have given; ``graph.replay()``
runs the same kernels again over the same buffers, for the price of one graph launch. As with PyTorch's
CUDA graphs, the inputs and outputs are static: write new values into the inputs' memory in place, replay,
read the outputs.

Invariants (docs/udf.md, "Captured calls"):

- Everything the captured kernels read or write stays allocated while the graph lives: the buffers
  allocated on the stream during the capture and the inputs the calls held (the graph keeps them).
- The work queued before the capture has run when the capture starts (the stream is synchronised), and
  inputs made elsewhere are waited for on the host while capturing: the graph itself waits on nothing.
- Each replay runs after the work queued so far on the caller's current CuPy stream (new inputs written
  there), and the outputs' sync events are recorded again after it, so consumers wait for the replay.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterable, Iterator

from ..errors import CaptureError
from ..gpu import runtime

__all__ = ["Graph", "capture"]

_lock = threading.Lock()


class Graph:
    """GPU work recorded by :func:`capture`; :meth:`replay` runs it again."""

    def __init__(self, device_id: int, stream: Any) -> None:
        self.device_id, self._stream = device_id, stream
        self._graph: Any = None  # cupy.cuda.Graph, once the capture has ended
        self._kept: list[Any] = []  # buffers and inputs the captured kernels use
        self._events: list[Any] = []  # runtime.SyncEvent of each output, recorded after every run
        self._recorded: set[int] = set()  # their event handles
        self._caller_done: Any = None  # an event on the caller's stream, made on the first replay

    def replay(self) -> None:
        """Runs the captured work again on arrowdev's stream of the device, after the work queued so far
        on the caller's current CuPy stream; the outputs' sync events fire when it is done."""
        if self._graph is None:
            raise CaptureError("this graph has no captured work: replay() is for the graph a "
                               "`with ad.cuda.capture() as graph:` block gave once it ended")
        cp = runtime.cupy()
        with runtime.on_device(self.device_id):
            caller = cp.cuda.get_current_stream()
            if caller.ptr != self._stream.ptr:
                if self._caller_done is None:
                    self._caller_done = cp.cuda.Event(disable_timing=True)
                self._caller_done.record(caller)
                self._stream.wait_event(self._caller_done)
            self._graph.launch(self._stream)
            for sync in self._events:
                sync.record(self._stream)

    # ---- what the rest of arrowdev tells the graph while it is being captured ------------------

    def keep(self, objects: Any) -> None:
        """Keeps ``objects`` (buffers, held inputs) alive as long as the graph."""
        self._kept.append(objects)

    def record_after_runs(self, sync: Any) -> None:
        """An output's sync event (``runtime.SyncEvent``): recorded after each run of the graph."""
        self._events.append(sync)
        self._recorded.add(sync.event.ptr)

    def records(self, event: Any) -> bool:
        """Whether ``event`` (a CuPy event) is one this graph records after its runs."""
        return event.ptr in self._recorded

    def order_after(self, handles: Iterable[int]) -> None:
        """Makes captured work come after the producers of its inputs: outputs of this capture come
        earlier on the stream anyway; other producers are waited for on the host now (a captured wait
        on an event recorded outside the capture is not allowed)."""
        for handle in handles:
            if handle and handle not in self._recorded:
                runtime.synchronize_event_handle(handle)


@contextlib.contextmanager
def capture(device: int | None = None) -> Iterator[Graph]:
    """Records the UDF calls on ``device`` (default: the current device) made inside the block as a CUDA
    graph, runs it once when the block ends, and gives it for :meth:`Graph.replay`.

    Only calls that need no host work between their kernels can be captured: repeated UDF calls over
    one-chunk GPU columns without nulls whose output is numbers or bools (the prepared path, taken from
    a layout's third call: call the UDF twice before capturing it). Others raise :class:`CaptureError`
    naming the reason. Capture from one thread at a time: arrowdev's work on the device from other
    threads during the block is captured too.

    .. code-block:: python

        x = ad.column(cupy.arange(5, dtype=cupy.float64))
        f = lambda v: v * 2 + 1
        x.apply(f), x.apply(f)                  # warm up: the first call compiles, the second prepares
        with ad.cuda.capture() as graph:
            y = x.apply(f)                      # recorded; run once when the block ends
        cupy.asarray(x)[:] = 10                 # new inputs, written in place
        graph.replay()
        y.to_pylist()                           # [21.0, 21.0, 21.0, 21.0, 21.0]

    docs/udf.md has this example as a test run on the GPU machine.
    """
    cp = runtime.cupy()
    device_id = cp.cuda.runtime.getDevice() if device is None else runtime.check_device(device)
    if runtime.capturing(device_id):
        raise CaptureError(f"a capture on device {device_id} is already open: captures do not nest")
    stream = runtime.stream_for(device_id)
    graph = Graph(device_id, stream)
    with runtime.on_device(device_id):
        with _lock:
            if stream.ptr in runtime.captures:
                raise CaptureError(f"a capture on device {device_id} is already open: captures do not nest")
            runtime.captures[stream.ptr] = graph
        try:
            stream.synchronize()  # the work queued before: done, so captured kernels need not wait for it
            stream.begin_capture()
            try:
                yield graph
            except cp.cuda.runtime.CUDARuntimeError as e:  # CUDA refused an operation while capturing
                with contextlib.suppress(Exception):
                    stream.end_capture()
                raise CaptureError(f"an operation inside the capture on device {device_id} cannot be captured "
                                   f"by CUDA (only UDF calls can): {e}") from e
            except BaseException:
                with contextlib.suppress(Exception):  # the block's error is the one to see
                    stream.end_capture()
                raise
            graph._graph = _end(stream, device_id)
        finally:
            with _lock:
                del runtime.captures[stream.ptr]
        graph.replay()


def _end(stream: Any, device_id: int) -> Any:
    """Ends the stream's capture; the CUDA graph, or CaptureError where CUDA invalidated the capture."""
    cp = runtime.cupy()
    try:
        return stream.end_capture()
    except cp.cuda.runtime.CUDARuntimeError as e:
        raise CaptureError(f"the capture on device {device_id} failed: an operation inside it cannot be "
                           f"captured by CUDA (a host read or a synchronisation): {e}") from e
