"""Stage 5: decide, in input order, which documents are unique and which duplicate what.

Keep-first semantics: the first of a group of near-duplicates is kept; a later document
within the distance of a kept one is a duplicate of the nearest kept one (ties: the
earliest). Duplicates are not added to the index, so a chain A~B~C with A and C far
apart keeps A and C. Never prints; works a batch of documents at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from .features import extract
from .fingerprint import BATCH_SIZE, FeatureHasher, HashFunc, fingerprint_batch
from .index import BlockIndex
from .read import Document
from .settings import Settings

Status = Literal["unique", "duplicate", "empty"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What became of one document. `row` is the index row it was kept as (unique), or
    the row of the kept document it duplicates (duplicate); None for empty documents."""

    doc: Document
    fingerprint: int | None
    status: Status
    row: int | None = None
    duplicate_of: str | None = None
    distance: int | None = None


def fingerprint_documents(
    docs: Sequence[Document], settings: Settings, hashfunc: HashFunc | None = None
) -> list[int | None]:
    """Fingerprints of a batch of documents (None for empty ones). Pure: a document's
    fingerprint does not depend on the batch, so batches can go to any worker."""
    hashfunc = hashfunc or FeatureHasher(settings.bits, settings.seed)
    batch = [doc.features if doc.features is not None else extract(doc.text, settings) for doc in docs]
    return fingerprint_batch(batch, settings.bits, hashfunc)


class Deduplicator:
    """The kept documents so far: their fingerprints in a BlockIndex, and their ids.

    Feed it batches with `process`; it is the one stateful part of the pipeline.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        hashfunc: HashFunc | None = None,
        index: BlockIndex | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.hashfunc = hashfunc or FeatureHasher(self.settings.bits, self.settings.seed)
        self.index = index or BlockIndex(self.settings.bits, self.settings.distance)
        self.ids: list[str] = []

    def decide(self, doc: Document, fp: int | None) -> Decision:
        if fp is None:
            return Decision(doc, None, "empty")
        near = self.index.nearest(fp)
        if near is not None:
            row, d = near
            return Decision(doc, fp, "duplicate", row, self.ids[row], d)
        row = self.index.add(fp)
        self.ids.append(doc.id)
        return Decision(doc, fp, "unique", row)

    def process(self, docs: Sequence[Document]) -> list[Decision]:
        fps = fingerprint_documents(docs, self.settings, self.hashfunc)
        return [self.decide(doc, fp) for doc, fp in zip(docs, fps)]


def batches(items: Iterable[Document], size: int = BATCH_SIZE) -> Iterator[list[Document]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def dedup(
    documents: Iterable[Document],
    settings: Settings | None = None,
    *,
    hashfunc: HashFunc | None = None,
    deduplicator: Deduplicator | None = None,
    batch_size: int = BATCH_SIZE,
) -> Iterator[Decision]:
    """A Decision for every document, in input order.

    >>> from simdedup.read import Document
    >>> docs = [Document(str(i), t, b"") for i, t in enumerate(["a b c d", "a b c d", ""])]
    >>> [d.status for d in dedup(docs)]
    ['unique', 'duplicate', 'empty']
    """
    dd = deduplicator or Deduplicator(settings, hashfunc)
    for batch in batches(documents, batch_size):
        yield from dd.process(batch)
