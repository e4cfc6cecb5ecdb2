"""Exact references the tests measure against: every distinct shingle hash; a head by
its definition."""

from __future__ import annotations

import numpy as np
import xxhash

from simdedup.fingerprint import fingerprint_texts
from simdedup.settings import HEAD_TOKENS
from simdedup.sketch import shingle_hashes as shingle_runs


def exact_shingles(text: str, fold: bool = True) -> np.ndarray:
    """The sorted, distinct hashes of a text's verification shingles."""
    return np.unique(shingle_runs([text], fold)[0])


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted arrays of distinct hashes (1.0 for two empty ones)."""
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (len(a) + len(b) - inter) if len(a) + len(b) else 1.0


def head_of_words(text: str) -> int | None:
    """The head fingerprint of a text of lowercase ASCII words at the default settings,
    by its definition: the fingerprint of the HEAD_TOKENS words from the word with the
    smallest xxh3-64 among those with HEAD_TOKENS - 1 words after them (ties: the
    earliest); None for a text of HEAD_TOKENS words or fewer."""
    words = text.split()
    if len(words) <= HEAD_TOKENS:
        return None
    hashes = [xxhash.xxh3_64_intdigest(w.encode()) for w in words]
    start = sorted(range(len(words) - HEAD_TOKENS + 1), key=lambda i: (hashes[i], i))[0]
    return fingerprint_texts([" ".join(words[start : start + HEAD_TOKENS])])[0]
