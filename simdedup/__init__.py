"""simdedup: find near-duplicate text with SimHash fingerprints and a block index.

The library works without the command line: read documents, fingerprint them in
batches, look them up in an exact block index, and decide what duplicates what.
"""

from __future__ import annotations

from .calibrate import calibrate
from .dedup import Decision, Deduplicator, dedup, fingerprint_documents
from .features import extract, normalize, tokenize
from .fingerprint import (
    FeatureHasher,
    column_sums,
    distance,
    fingerprint_batch,
    fingerprint_texts,
    fingerprints_from_sums,
    format_fingerprint,
)
from .index import BlockIndex, near_pairs
from .parallel import fingerprint_batches
from .read import Document, Problem, ReadOptions, read_documents
from .settings import FINGERPRINT_SPEC_VERSION, Settings, block_layout
from .status import ExitStatus, SettingsError, SimdedupError
from .store import read_index, write_index
from .verify import VerifyingDeduplicator

__version__ = "0.1.0"

__all__ = [
    "FINGERPRINT_SPEC_VERSION",
    "BlockIndex",
    "Decision",
    "Deduplicator",
    "Document",
    "ExitStatus",
    "FeatureHasher",
    "Problem",
    "ReadOptions",
    "Settings",
    "SettingsError",
    "SimdedupError",
    "VerifyingDeduplicator",
    "__version__",
    "block_layout",
    "calibrate",
    "column_sums",
    "dedup",
    "distance",
    "extract",
    "fingerprint_batch",
    "fingerprint_batches",
    "fingerprint_documents",
    "fingerprint_texts",
    "fingerprints_from_sums",
    "format_fingerprint",
    "near_pairs",
    "normalize",
    "read_documents",
    "read_index",
    "tokenize",
    "write_index",
]
