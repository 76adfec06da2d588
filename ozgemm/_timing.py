"""Phase timing shared by the pipelines (``timings`` dicts of ``execute``)."""
from __future__ import annotations

import statistics
import time

__all__ = ["lap_timer", "median_time"]


def lap_timer(backend, timings):
    """A ``lap(name, t0) -> t1`` function: adds the time since ``t0`` to ``timings[name]``
    (synchronising an asynchronous backend first) when ``timings`` is a dict; no-op otherwise."""
    sync = backend.synchronize

    def lap(name, t0):
        if timings is not None:
            sync()
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
        return time.perf_counter()

    return lap


def median_time(fn, reps, sync=lambda: None):
    """Median wall time in seconds of ``reps`` calls of ``fn`` after one warm-up call, each
    followed by ``sync()`` (a device synchronisation for asynchronous libraries)."""
    fn()
    sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
