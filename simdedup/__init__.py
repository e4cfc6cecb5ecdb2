"""simdedup: find near-duplicate text with SimHash fingerprints and a block index.

The library works without the command line: read documents, fingerprint them in
batches, look them up in an exact block index, and decide what duplicates what.

The names below load their module on first use, so `import simdedup` costs nothing
until then, and the command line (__main__) can set up the process before numpy loads.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_WHERE = {
    "LabelledPair": ".calibrate",
    "calibrate": ".calibrate",
    "Decision": ".dedup",
    "Deduplicator": ".dedup",
    "dedup": ".dedup",
    "fingerprint_documents": ".dedup",
    "extract": ".features",
    "normalize": ".features",
    "tokenize": ".features",
    "FeatureHasher": ".fingerprint",
    "column_sums": ".fingerprint",
    "distance": ".fingerprint",
    "fingerprint_batch": ".fingerprint",
    "fingerprint_texts": ".fingerprint",
    "fingerprints_from_sums": ".fingerprint",
    "format_fingerprint": ".fingerprint",
    "BlockIndex": ".index",
    "near_pairs": ".index",
    "fingerprint_batches": ".parallel",
    "Document": ".read",
    "Problem": ".read",
    "ReadOptions": ".read",
    "read_documents": ".read",
    "FINGERPRINT_SPEC_VERSION": ".settings",
    "Settings": ".settings",
    "block_layout": ".settings",
    "ExitStatus": ".status",
    "IndexCorruptError": ".status",
    "IndexFileError": ".status",
    "IndexLockedError": ".status",
    "IndexSettingsError": ".status",
    "SettingsError": ".status",
    "SimdedupError": ".status",
    "IndexSession": ".store",
    "read_index": ".store",
    "write_index": ".store",
    "VerifyingDeduplicator": ".verify",
}

__all__ = sorted([*_WHERE, "__version__"])


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # found here from now on, without this function
    return value


def __dir__() -> list[str]:
    return __all__


class _Package(types.ModuleType):
    """This package, whose functions dedup and calibrate share their modules' names.

    Loading a submodule sets it as the package's attribute of that name; here the
    function of that name is set instead, as an import of every name at once did."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _WHERE.get(name) == "." + name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # the names for type checkers, which do not run __getattr__
    from .calibrate import LabelledPair, calibrate  # noqa: F401
    from .dedup import Decision, Deduplicator, dedup, fingerprint_documents  # noqa: F401
    from .features import extract, normalize, tokenize  # noqa: F401
    from .fingerprint import (  # noqa: F401
        FeatureHasher,
        column_sums,
        distance,
        fingerprint_batch,
        fingerprint_texts,
        fingerprints_from_sums,
        format_fingerprint,
    )
    from .index import BlockIndex, near_pairs  # noqa: F401
    from .parallel import fingerprint_batches  # noqa: F401
    from .read import Document, Problem, ReadOptions, read_documents  # noqa: F401
    from .settings import FINGERPRINT_SPEC_VERSION, Settings, block_layout  # noqa: F401
    from .status import (  # noqa: F401
        ExitStatus,
        IndexCorruptError,
        IndexFileError,
        IndexLockedError,
        IndexSettingsError,
        SettingsError,
        SimdedupError,
    )
    from .store import IndexSession, read_index, write_index  # noqa: F401
    from .verify import VerifyingDeduplicator  # noqa: F401
