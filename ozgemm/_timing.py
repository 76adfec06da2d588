"""Phase timing shared by the pipelines (``timings`` dicts of ``execute``)."""
from __future__ import annotations

import time

__all__ = ["lap_timer"]


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
