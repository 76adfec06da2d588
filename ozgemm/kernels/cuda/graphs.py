"""CUDA graphs of small repeated products: the whole speculative product replayed by one launch.

A speculative product (:func:`ozgemm.precision.planner.make_plan` with ``speculate=True``)
queues everything — statistics, the bound GEMM, the planner's scalars, the shifts for the
guessed moduli count with the width derived on the device, residues, the INT8 GEMMs, the
reconstruction — before the host reads anything. What it queues depends only on the
contract, the shapes, the dtypes and the guessed moduli count, never on the values, so it
can be recorded once into a CUDA graph (stream capture) and replayed for new operands of the
same kind: the operands are copied into the graph's own input buffers, the graph is launched,
the result is copied out and the planner's scalars are read — the host waits for their copy
only, an event-record node of the graph, while the rest of the graph runs on — and the host
confirms the plan exactly as for an eager call (:func:`~ozgemm.precision.planner.confirm_plan`; a wrong guess
or NaN/Inf runs the product again without a graph). The bits are those of the eager call.

At n <= 2048 the per-call host work of the eager pipeline (about 1.1-1.5 ms of Python and
launches on the H200, against 0.1-0.7 ms of GPU work) decides the time; a replay costs one
launch and the host's confirmation (docs/design.md, "Small products: CUDA graphs").

Memory: every buffer the recorded work uses comes from a memory pool owned by the graph, so
nothing else can reuse it while the graph lives; a bounded number of graphs is kept per
thread, least recently used dropped first. A graph is recorded (not run) after the second
call of the same kind, which runs eagerly with a guess and so has uploaded everything the
recording reads; replays start with the third (a one-off product keeps no memory).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import cupy as cp
import numpy as np

from . import cublas

__all__ = ["Recorder"]


_RECORDING = threading.local()


def recording() -> bool:
    """Whether this thread is recording a product into one of ozgemm's own graphs (the
    capture :class:`_Graph` makes, not one of the caller's)."""
    return getattr(_RECORDING, "on", False)


class _Read:
    """The planner's host values of a replay, already read (the ``pending`` of its plan)."""

    def __init__(self, host):
        self._host = host

    def read(self):
        return self._host


class _Graph:
    """One recorded product: the graph, its input buffers, its plan and result, its pool."""

    def __init__(self, run, a, b):
        self.pool = cp.cuda.MemoryPool()
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.lock = threading.Lock()
        self.last = None  # the stream of the last replay
        self.end = None  # an event after the last replay's work: waited for before the pool goes
        with cp.cuda.using_allocator(self.pool.malloc):
            self.a = cp.empty(a.shape, dtype=a.dtype)
            self.b = cp.empty(b.shape, dtype=b.dtype)
            with self.stream:
                cublas.handle()  # bound to the capturing stream before the capture begins
                self.stream.begin_capture()
                _RECORDING.on = True
                try:
                    self.plan, self.c, self.extra = run(self.a, self.b)
                finally:
                    _RECORDING.on = False
                    graph = self.stream.end_capture()  # ends (and discards) a failed capture too
        if self.plan.pending is None:
            raise RuntimeError("not a speculative product")
        self.graph = graph
        self.host = self.plan.pending.host_buffer()
        self.nbytes = self.pool.total_bytes()

    def replay(self, a, b):
        """(plan, c, extra) of ``a @ b`` as ``run`` returns them: inputs copied in, one launch,
        the result copied out, the planner's host values read (``extra``: run's other values,
        the recording's own arrays)."""
        stream = cp.cuda.get_current_stream()
        with self.lock:
            if self.last is not None and self.last.ptr != stream.ptr:
                # work queued after the last replay on another stream may still read the
                # buffers (a wrong guess's rerun reads the inputs and statistics): wait for it
                stream.wait_event(self.last.record())
            self.last = stream
            self.a.data.copy_from_device_async(a.data, a.nbytes, stream)
            self.b.data.copy_from_device_async(b.data, b.nbytes, stream)
            self.graph.launch(stream)
            c = self.c.copy()
            self.end = stream.record()
            if self.plan.pending.node:
                self.plan.pending.wait()  # this launch's copy of the scalars; the rest runs on meanwhile
            else:
                stream.synchronize()
            host = self.host.copy()
        return self.plan.evolve(pending=_Read(host)), c, self.extra

    def __del__(self):  # the last replay's work may still run: its memory goes back after it
        try:
            if getattr(self, "end", None) is not None:
                self.end.synchronize()
        except Exception:  # interpreter shutdown
            pass


class Recorder:
    """Per-thread graphs of small speculative 2-D products (module docstring).

    ``max_work``: products of at most this many multiply-adds (m k n) are recorded;
    ``max_graphs`` / ``max_bytes``: graphs kept per thread and the device memory they may
    hold together."""

    def __init__(self, max_work: int, max_graphs: int = 8, max_bytes: int = 2 << 30):
        self.max_work, self.max_graphs, self.max_bytes = int(max_work), int(max_graphs), int(max_bytes)
        self._local = threading.local()

    def _state(self):
        st = getattr(self._local, "st", None)
        if st is None:
            st = self._local.st = (OrderedDict(), OrderedDict())  # graphs; calls seen without one
        return st

    def eligible(self, a, b, kmax: int) -> bool:
        """2-D C-contiguous float32/float64 cupy operands of a recordable size, the current
        stream not itself capturing."""
        if not (isinstance(a, cp.ndarray) and isinstance(b, cp.ndarray) and a.ndim == 2 and b.ndim == 2):
            return False
        m, k = a.shape
        n = b.shape[1]
        return (0 < m * k * n <= self.max_work and k <= kmax and a.dtype == b.dtype
                and a.dtype in (np.float32, np.float64) and a.flags.c_contiguous and b.flags.c_contiguous
                and not cp.cuda.get_current_stream().is_capturing())

    def run(self, key, run, a, b, valid):
        """``run(a, b)`` -> (plan, c, extra) of a speculative product, or its replay (module docstring).
        ``key``: the product's kind (contract, shapes, dtypes); ``valid(plan)``: whether a
        recorded plan's guess is still the one the planner would make."""
        graphs, seen = self._state()
        key = key + (cp.cuda.runtime.getDevice(),)
        if key in graphs:
            g = graphs[key]
            if g is None:  # not recordable
                return run(a, b)
            if g.last is not None and g.last.ptr != cp.cuda.get_current_stream().ptr and g.last.is_capturing():
                # the last replay's stream is in a capture of the caller's: waiting on it would
                # join this stream to that capture (nothing would run), so this call runs eagerly
                return run(a, b)
            if valid(g.plan):
                graphs.move_to_end(key)
                return g.replay(a, b)
            del graphs[key]  # the guess moved on: recorded again on a later call
            seen[key] = True
            return run(a, b)
        if key not in seen:
            seen[key] = True
            while len(seen) > 4 * self.max_graphs:
                seen.popitem(last=False)
            return run(a, b)
        del seen[key]
        out = run(a, b)  # eager (it also uploads what the recording reads, e.g. the guess's table)
        g = None
        if out[0].pending is not None:  # a speculative product (others read the host mid-way)
            try:
                g = _Graph(run, a, b)
            except Exception:  # a phase that cannot be recorded (a host read, ...): eager, and not again
                g = None
            if g is not None and (g.plan.n_moduli != out[0].n_moduli or g.nbytes > self.max_bytes):
                g = None  # another guess than the eager call's (its tables unchecked), or too large to keep
        graphs[key] = g
        self._trim(graphs)
        return out

    def _trim(self, graphs):
        while len(graphs) > 4 * self.max_graphs or (
                sum(g is not None for g in graphs.values()) > self.max_graphs
                or sum(g.nbytes for g in graphs.values() if g is not None) > self.max_bytes):
            graphs.popitem(last=False)
