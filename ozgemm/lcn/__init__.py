"""ozgemm.lcn — local crossing number of straight-line grid drawings (GD Contest 2025).

The *local crossing number* of a drawing is ``k = max_e c_e``, the largest number of
crossings on any single edge (the drawing is then *k-planar*). This module provides exact
integer counting (:func:`crossings`), validation and repair (:func:`validate`,
:func:`repair`), incremental single-vertex move deltas (:class:`MoveEvaluator`), and a
simulated-annealing solver (:func:`anneal`) with a CPU (NumPy) and a device-resident GPU
(CuPy) implementation, and start layouts for it (:mod:`ozgemm.lcn.layout`). See ``docs/lcn.md``.
"""
from .drawing import Drawing, DrawingFormatError, from_arrays, load, save
from .exact import (CoordinateRangeError, Crossings, MoveEvaluator, Violation, crossing_pairs,
                    crossings, int64_exact, is_valid, move_delta, move_is_valid, repair,
                    segments_intersect, validate)
from .gpu import crossings_gpu
from .solver import AnnealParams, AnnealResult, anneal

__all__ = [
    "Drawing", "DrawingFormatError", "from_arrays", "load", "save",
    "CoordinateRangeError", "Crossings", "MoveEvaluator", "Violation", "crossing_pairs",
    "crossings", "int64_exact", "is_valid", "move_delta", "move_is_valid", "repair",
    "segments_intersect", "validate", "anneal", "AnnealParams", "AnnealResult", "crossings_gpu",
]

