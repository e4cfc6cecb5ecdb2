"""The exact reference the sketch tests measure against: every distinct shingle hash."""

from __future__ import annotations

import numpy as np

from simdedup.sketch import shingle_hashes as shingle_runs


def exact_shingles(text: str, fold: bool = True) -> np.ndarray:
    """The sorted, distinct hashes of a text's verification shingles."""
    return np.unique(shingle_runs([text], fold)[0])


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted arrays of distinct hashes (1.0 for two empty ones)."""
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (len(a) + len(b) - inter) if len(a) + len(b) else 1.0
