"""Stage 5: decide, in input order, which documents are unique and which duplicate what.

Keep-first semantics: the first of a group of near-duplicates is kept; a later document
within the distance of a kept one is a duplicate of the nearest kept one (ties: the
earliest). Duplicates are not added to the index, so a chain A~B~C with A and C far
apart keeps A and C. Never prints; works a batch of documents at a time. This module's
Deduplicator decides on fingerprints alone; dedup() and the CLI use verify.py's, which
also checks each candidate's shingles and keeps the most similar verified one.
"""

from __future__ import annotations

import functools
import numbers
import operator
import threading
from array import array
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Literal, NamedTuple

import numpy as np
import xxhash

from .fingerprint import BATCH_SIZE, FeatureHasher, HashFunc, check_hasher, fingerprint_work
from .index import BlockIndex, fingerprint_array, fingerprint_ints, near_pair_arrays
from .read import Document
from .settings import MIN_JACCARD, Settings

Status = Literal["unique", "duplicate", "empty"]


def _one_thread(method: Callable[..., Any]) -> Callable[..., Any]:
    """A Deduplicator method that refuses to run while another thread runs one: shared
    by a thread pool (`pool.map(dd.process, parts)`, Dask's threaded scheduler), batches
    interleaved and a few hundred rows of 4,000 got another document's id, with no
    error (a review). Decisions depend on the order of the batches, so a lock that let
    them take turns would still decide differently from run to run."""

    @functools.wraps(method)
    def guarded(self: Deduplicator, *args: Any, **kwargs: Any) -> Any:
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(
                f"{type(self).__name__}.{method.__name__}: another thread is using this "
                "deduplicator. Its decisions depend on the order of the batches, so give it "
                "batches from one thread (or give each thread its own)"
            )
        try:
            return method(self, *args, **kwargs)
        finally:
            self._busy.release()

    return guarded


class Decision(NamedTuple):
    """What became of one document. `row` is the index row it was kept as (unique), or
    the row of the kept document it duplicates (duplicate); None for empty documents.
    A NamedTuple, like Document: one is made per document."""

    doc: Document
    fingerprint: int | None
    status: Status
    row: int | None = None
    duplicate_of: str | None = None
    distance: int | None = None


def _indexed_flags(indexed: np.ndarray | None, n: int) -> np.ndarray | None:
    """extend's `indexed`, checked: a bool per row, or None (every row indexed)."""
    if indexed is None:
        return None
    flags = np.asarray(indexed)
    if flags.dtype != bool or flags.shape != (n,):
        raise ValueError(f"{n} rows but indexed flags of {flags.dtype}, shape {flags.shape}: a bool a row")
    return flags


def _as_fingerprint_array(fps: np.ndarray | Iterable[int], bits: int) -> np.ndarray:
    if isinstance(fps, np.ndarray):
        return fps
    return fingerprint_array(list(fps), bits)


def fingerprint_documents(
    docs: Iterable[Document], settings: Settings, hashfunc: HashFunc | None = None, compiled: bool = False
) -> list[int | None]:
    """Fingerprints of a batch of documents (None for empty ones). Pure: a document's
    fingerprint does not depend on the batch, so batches can go to any worker.
    `compiled`: texts without Han through the compiled core (fingerprint.compiled_core), the
    same fingerprints. A FeatureHasher given must have the settings' bits and seed. An
    iterator of documents is read into a list first."""
    if not isinstance(docs, Sequence):  # used up by the check, it gave [] (a trial)
        docs = list(docs)
    checked_documents(docs)
    check_hasher(settings, hashfunc)
    hashfunc = hashfunc or FeatureHasher(settings.bits, settings.seed)
    return fingerprint_work(
        [doc.text if doc.features is None else doc.features for doc in docs], settings, hashfunc, compiled
    )


class Ids(Sequence[str]):
    """The ids of kept documents, row by row, packed: UTF-8 bytes in one buffer plus an
    8-byte end offset each (a list of str would cost ~50 bytes more per id)."""

    #: Whether a Deduplicator holds these as its ids (and so adds to them).
    held = False

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("Q")

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, row: int) -> str:  # type: ignore[override]
        if row < 0:
            row += len(self._ends)
            if row < 0:  # past the first: it wrapped to an id from the end (a review)
                raise IndexError("Ids index out of range")
        start = self._ends[row - 1] if row else 0
        return self._blob[start : self._ends[row]].decode("utf-8", "surrogateescape")

    def append(self, doc_id: str) -> None:
        self._blob += doc_id.encode("utf-8", "surrogateescape")
        self._ends.append(len(self._blob))

    def extend(self, ids: Iterable[str]) -> None:
        if isinstance(ids, Ids):  # packed already: join the buffers
            base = len(self._blob)
            self._blob += ids._blob
            self._ends.frombytes((np.frombuffer(ids._ends, np.uint64) + np.uint64(base)).tobytes())
            return
        ids = ids if isinstance(ids, list) else list(ids)
        joined = "".join(ids)
        if joined.isascii():  # a byte a character: the ends without encoding each id
            self._blob += joined.encode("ascii")
            ends = np.cumsum(np.fromiter(map(len, ids), np.uint64, len(ids)), dtype=np.uint64)
            self._ends.frombytes((ends + np.uint64(len(self._blob) - len(joined))).tobytes())
            return
        for doc_id in ids:
            self.append(doc_id)

    def nbytes(self) -> int:
        return len(self._blob) + 8 * len(self._ends)

    def digest(self, rows: int) -> str:
        """A digest of the first `rows` ids (xxh3), to tell these ids from others."""
        end = self._ends[rows - 1] if rows else 0
        digest = xxhash.xxh3_64()
        with memoryview(self._blob) as blob, memoryview(self._ends) as ends:
            digest.update(blob[:end])
            digest.update(ends[:rows].cast("B"))
        return digest.hexdigest()

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(UTF-8 bytes of all ids as uint8, each id's end offset as uint64), copies."""
        return np.frombuffer(bytes(self._blob), np.uint8), np.array(self._ends, np.uint64)

    @classmethod
    def from_arrays(cls, blob: np.ndarray, ends: np.ndarray) -> Ids:
        if len(ends) and (int(ends[-1]) != len(blob) or np.any(np.diff(ends.astype(np.int64)) < 0)):
            raise ValueError("id offsets do not match the id bytes")
        ids = cls()
        ids._blob = bytearray(memoryview(np.ascontiguousarray(blob, np.uint8)))
        ids._ends.frombytes(np.ascontiguousarray(ends, np.uint64).tobytes())
        return ids


class Deduplicator:
    """The kept documents so far: their fingerprints in a BlockIndex, and their ids.

    Feed it batches with `process` (or `decide_many`, given fingerprints made elsewhere,
    e.g. by worker processes); it is the one stateful part of the pipeline.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        hashfunc: HashFunc | None = None,
        index: BlockIndex | None = None,
    ) -> None:
        self.settings = Settings() if settings is None else settings
        check_hasher(self.settings, hashfunc)
        self.hashfunc = hashfunc or FeatureHasher(self.settings.bits, self.settings.seed)
        if index is not None and (index.bits, index.distance) != (self.settings.bits, self.settings.distance):
            raise ValueError(
                f"an index of {index.bits} bits, distance {index.distance}, for settings of "
                f"{self.settings.bits} bits, distance {self.settings.distance}"
            )
        if index is not None and len(index):
            # its rows would have no ids: a later duplicate of row 0 was said to duplicate
            # the first document kept after them (a review)
            raise ValueError(
                f"an index of {len(index)} fingerprints without their ids: "
                "give them to Deduplicator.extend(fps, ids) instead"
            )
        self.index = index if index is not None else BlockIndex(self.settings.bits, self.settings.distance)
        self.ids = Ids()
        self.ids.held = True
        # Twins kept in earlier batches (_decide_with_twins): twin key -> (row, id).
        self._kept_twins: OrderedDict[Any, tuple[int, str]] = OrderedDict()
        # Held by the thread in decide_many, extend or match_many (_one_thread).
        self._busy = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_busy"]  # a lock does not pickle
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._busy = threading.RLock()

    @_one_thread
    def extend(
        self, fps: np.ndarray | Iterable[int], ids: Ids | Iterable[str], indexed: np.ndarray | None = None
    ) -> None:
        """Preload kept documents (e.g. from a stored index): they get the next rows.

        `fps` as BlockIndex.fingerprint_array() gives them, or any iterable of ints. An
        Ids given to an empty Deduplicator is taken over, not copied (it may hold
        gigabytes): it then grows with the rows kept later; another Deduplicator's ids
        are copied (taken over, each one's rows were added to both, and duplicates named
        the other's documents: a trial). `indexed` (a bool per row,
        default all True): False stores the row unindexed (BlockIndex.add_many), as a
        VerifyingDeduplicator left it (BlockIndex.unindexed_array)."""
        if isinstance(ids, (str, bytes)):
            raise TypeError("ids are a collection of str, not one str")
        fps = _as_fingerprint_array(fps, self.settings.bits)
        indexed = _indexed_flags(indexed, len(fps))
        if not isinstance(ids, Ids) or ids.held:
            packed = Ids()
            packed.extend(ids)
            ids = packed
        if len(fps) != len(ids):
            raise ValueError(f"{len(fps)} fingerprints but {len(ids)} ids")
        self.index.add_many(fps, indexed)
        if len(self.ids):
            self.ids.extend(ids)
        else:
            self.ids = ids
            ids.held = True

    def decide(self, doc: Document, fp: int | None) -> Decision:
        return self.decide_many([doc], [fp])[0]

    @_one_thread
    def decide_many(self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any) -> list[Decision]:
        """Decisions for a batch, in order, as if each document were decided in turn
        (`given`: what a subclass takes beside the fingerprints, row by row).

        Copies within the batch (twins: documents that every decision treats alike, such
        as repeated lines) would be compared with each other, pair by pair: n copies,
        n ** 2 / 2 pairs. The batch is decided in stretches without two twins instead,
        and a twin whose earlier twin was kept, or was decided with nothing kept since, is
        decided as that twin says (_decide_with_twins): the same decisions."""
        fps = checked_fingerprints(docs, fps, self.settings.bits)
        given = self._given(docs, fps, *given)
        keys = self._twin_keys(docs, fps, *given)
        if keys is None or _twin_pairs(keys) <= TWIN_PAIRS_PER_DOCUMENT * len(docs):
            return self._decide_batch(docs, fps, *given)  # a few copies: compared, as cheap
        return _decide_with_twins(self, docs, fps, given, keys)

    def _given(self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any) -> tuple[Any, ...]:
        """decide_many's extra arguments, made where the caller left them out."""
        return given

    def _twin_keys(
        self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any
    ) -> list[Any] | None:
        """For each document, what makes it a twin (equal keys: decided alike), or None
        where it has none in the batch; None when no document has one. Here: the
        fingerprint, all that a decision on fingerprints reads."""
        return _repeated(fps, fps)

    def _twin_key(
        self, docs: Sequence[Document], fps: Sequence[int | None], given: tuple[Any, ...], i: int
    ) -> Any:
        """_twin_keys' key of document i, whether or not it has a twin in its batch (None:
        it can have none)."""
        return fps[i]

    def _take(self, given: tuple[Any, ...], rows: list[int]) -> tuple[Any, ...]:
        """decide_many's extra arguments for some of the batch's documents."""
        return ()

    def _decide_batch(
        self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any
    ) -> list[Decision]:
        """decide_many's decisions, the batch looked up in the index in one numpy search
        and against itself with near_pair_arrays; only the keep-first walk over the
        batch is a Python loop."""
        present = [i for i, fp in enumerate(fps) if fp is not None]
        decisions: list[Decision] = [Decision(doc, None, "empty") for doc in docs]
        if not present:
            return decisions
        bits, k = self.settings.bits, self.index.distance
        words = fingerprint_array([fps[i] for i in present], bits)
        pairs = near_pair_arrays(words, bits, k, compiled=self.index.compiled)
        if crowded_batch(len(pairs[0]), len(present)):
            return split_batch(self, docs, fps, given)
        stored_rows, stored_ds = self.index.nearest_many(words)
        kept = stored_rows < 0
        # A document with an earlier near one in this batch depends on whether that one
        # was kept; those few are walked in order, everything else is decided above.
        # Ties between a stored row and a batch row go to the stored (earlier) one.
        target = np.full(len(present), -1, dtype=np.int64)  # batch position duplicated
        target_d = np.zeros(len(present), dtype=np.int64)
        earlier: dict[int, list[tuple[int, int]]] = {}
        for i, j, d in zip(*(a.tolist() for a in pairs)):
            earlier.setdefault(j, []).append((i, d))
        for j in sorted(earlier):
            best = (int(stored_ds[j]), 0, int(stored_rows[j])) if stored_rows[j] >= 0 else None
            for i, d in earlier[j]:
                if kept[i] and (best is None or (d, 1, i) < best):
                    best = (d, 1, i)
            if best is not None and best[1] == 1:
                kept[j] = False
                target[j], target_d[j] = best[2], best[0]
        new_rows = len(self.index) + np.cumsum(kept) - 1
        self.ids.extend(docs[present[pos]].id for pos in np.flatnonzero(kept).tolist())
        for pos, (i, is_kept, srow, sd, t) in enumerate(
            zip(present, kept.tolist(), stored_rows.tolist(), stored_ds.tolist(), target.tolist())
        ):
            doc, fp = docs[i], fps[i]
            if is_kept:
                decisions[i] = Decision(doc, fp, "unique", int(new_rows[pos]))
            elif t >= 0:
                row = int(new_rows[t])
                decisions[i] = Decision(doc, fp, "duplicate", row, docs[present[t]].id, int(target_d[pos]))
            else:
                decisions[i] = Decision(doc, fp, "duplicate", srow, self.ids[srow], sd)
        self.index.add_many(words[kept])
        return decisions

    @_one_thread
    def match_many(
        self, docs: Sequence[Document], fps: Sequence[int | None], sketches: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """For each document, the kept row it would duplicate and the distance, or -1 and
        -1 (none, or no fingerprint); nothing is kept. Here: the nearest row within the
        distance (ties: the earliest). `sketches` is for subclasses that verify."""
        return self._match_in_pieces(docs, fps)

    def _match_in_pieces(
        self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """match_many's answers (`given`: what a subclass takes beside the fingerprints,
        row by row, as decide_many takes it). A batch whose documents meet many kept rows
        (BlockIndex.candidates) is matched in pieces of at most MATCH_CANDIDATES: whole, a
        search held every pair of the batch, and 4,096 CSV rows against 50,000 kept ones
        took 5-10 GB (`index query`, a review), where `scan` splits such a batch
        (split_batch)."""
        fps = checked_fingerprints(docs, fps, self.settings.bits)
        given = self._given(docs, fps, *given)
        cuts = _cuts(self._candidates(fps, *given), MATCH_CANDIDATES)
        if len(cuts) == 2:
            return self._match_many(docs, fps, *given)
        found = [
            self._match_many(docs[lo:hi], fps[lo:hi], *(None if g is None else g[lo:hi] for g in given))
            for lo, hi in zip(cuts[:-1], cuts[1:])
        ]
        return np.concatenate([rows for rows, _ in found]), np.concatenate([ds for _, ds in found])

    def _candidates(self, fps: Sequence[int | None], *given: Any) -> np.ndarray:
        """For each document, the kept rows its search compares it with
        (BlockIndex.candidates; 0 without a fingerprint)."""
        return candidates_of(self.index, fps, self.settings.bits)

    def _match_many(
        self, docs: Sequence[Document], fps: Sequence[int | None], *given: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        rows = np.full(len(fps), -1, dtype=np.int64)
        dists = np.full(len(fps), -1, dtype=np.int64)
        present = [i for i, fp in enumerate(fps) if fp is not None]
        if present:
            fparray = fingerprint_array([fps[i] for i in present], self.settings.bits)
            rows[present], dists[present] = self.index.nearest_many(fparray)
        return rows, dists

    def process(self, docs: Sequence[Document]) -> list[Decision]:
        fps = fingerprint_documents(docs, self.settings, self.hashfunc, compiled=True)
        return self.decide_many(docs, fps)


#: A batch whose documents are near each other more than this many times a document
#: (templated pages: boilerplate with a few words changed) is decided in halves, one
#: after the other: the same decisions, as if each document were decided in turn. Each
#: pair within a batch became a candidate in Python: 4,096 such pages, 8.4M pairs, took
#: 35 s and 9 GB (a review); the half after the first meets only what the first kept.
CROWDED_PAIRS_PER_DOCUMENT = 16
#: The smallest batch that is split.
SPLIT_ROWS = 64


def crowded_batch(pairs: int, documents: int) -> bool:
    """Whether a batch of `documents` with `pairs` near pairs within it is decided in halves."""
    return documents >= SPLIT_ROWS and pairs > CROWDED_PAIRS_PER_DOCUMENT * documents


def split_batch(
    dd: Deduplicator, docs: Sequence[Document], fps: Sequence[int | None], given: tuple[Any, ...]
) -> list[Decision]:
    """_decide_batch of a crowded batch (crowded_batch): its first half, then its second."""
    half = len(docs) // 2
    parts = (list(range(half)), list(range(half, len(docs))))
    decisions: list[Decision] = []
    for rows in parts:
        decisions += dd._decide_batch([docs[i] for i in rows], [fps[i] for i in rows], *dd._take(given, rows))
    return decisions


#: match_many's pieces: at most this many candidates (kept rows compared) a piece, so
#: the pairs found at once stay within ~100 MB (24 bytes a pair).
MATCH_CANDIDATES = 1 << 22


def candidates_of(index: BlockIndex, fps: Sequence[int | None], bits: int) -> np.ndarray:
    """BlockIndex.candidates of each fingerprint, 0 for None."""
    counts = np.zeros(len(fps), np.int64)
    present = [i for i, fp in enumerate(fps) if fp is not None]
    if present:
        counts[present] = index.candidates(fingerprint_array([fps[i] for i in present], bits))
    return counts


def _cuts(counts: np.ndarray, most: int) -> list[int]:
    """Where to cut a batch into pieces of consecutive rows whose counts add up to at
    most `most` (a row above it alone): [0, ..., len(counts)]."""
    cuts, total = [0], 0
    for i, count in enumerate(counts.tolist()):
        if total and total + count > most:
            cuts.append(i)
            total = 0
        total += count
    return cuts + [len(counts)]


#: Twins are decided apart (_decide_with_twins) once they make more pairs than this many
#: per document of the batch; fewer pairs cost less than the stretches would (a crawl's
#: copies come two or three at a time), and either way decides the same.
TWIN_PAIRS_PER_DOCUMENT = 1


def _twin_pairs(keys: list[Any]) -> int:
    return sum(count * (count - 1) // 2 for count in Counter(k for k in keys if k is not None).values())


def _repeated(fps: Sequence[int | None], keys: Sequence[Any]) -> list[Any] | None:
    """keys[i] where fps[i] is another document's too (a twin can only share a
    fingerprint), else None; None when no fingerprint repeats."""
    present = [fp for fp in fps if fp is not None]
    if len(set(present)) == len(present):
        return None
    counts = Counter(present)
    return [key if fp is not None and counts[fp] > 1 else None for fp, key in zip(fps, keys)]


def _decide_with_twins(
    dd: Deduplicator,
    docs: Sequence[Document],
    fps: Sequence[int | None],
    given: tuple[Any, ...],
    keys: list[Any],
) -> list[Decision]:
    """decide_many for a batch with twins. A document goes into the stretch being
    gathered, which is decided (dd._decide_batch) before a twin of one in it joins; or
    it is decided as its last decided twin was, without a search:

    - that twin was kept: a duplicate of it at distance 0. Any candidate better than
      the kept twin would have been a candidate of the twin too.
    - that twin was a duplicate, and no document was kept since (nor is one waiting in
      the stretch): the same decision. Its candidates are the twin's, and so are its
      head's crowd and its verification."""
    decisions: list[Decision] = [None] * len(docs)  # type: ignore[list-item]
    stretch: list[int] = []
    in_stretch: set[Any] = set()
    followers: list[tuple[int, int]] = []  # (i, the twin in the stretch it follows)
    last: dict[Any, tuple[Decision, int]] = {}  # key -> its last decided twin, the kept count then
    kept = 0

    def decide_stretch() -> None:
        nonlocal kept
        part = dd._decide_batch(
            [docs[i] for i in stretch], [fps[i] for i in stretch], *dd._take(given, stretch)
        )
        for i, decision in zip(stretch, part):
            decisions[i] = decision
            kept += decision.status == "unique"
            if keys[i] is not None:
                last[keys[i]] = (decision, kept)
            if decision.status == "unique":
                # Without a twin in this batch too: its copies in later batches are its
                # twins. Only those kept as twins were remembered, so where the first of
                # a line's copies came alone, each later batch's copies broke it into
                # stretches again: 90% exact copies of 1,000 lines took 2.5x as long as
                # none (a trial).
                key = keys[i] if keys[i] is not None else dd._twin_key(docs, fps, given, i)
                if key is not None:
                    dd._kept_twins[key] = (decision.row, decision.doc.id)
        for i, twin in followers:  # only twins of it came between: nothing was kept there
            decisions[i] = _as_twin(decisions[twin], docs[i], fps[i])
        while len(dd._kept_twins) > KEPT_TWINS:
            dd._kept_twins.popitem(last=False)
        stretch.clear()
        in_stretch.clear()
        followers.clear()

    for i, key in enumerate(keys):
        if key is not None:
            if (seen := dd._kept_twins.get(key)) is not None:  # kept in an earlier batch
                dd._kept_twins.move_to_end(key)
                decisions[i] = Decision(docs[i], fps[i], "duplicate", seen[0], seen[1], 0)
                continue
            if key in in_stretch:
                if keys[stretch[-1]] == key:  # right after its twin: decided as that twin is
                    followers.append((i, stretch[-1]))
                    continue
                decide_stretch()
            twin, kept_then = last.get(key, (None, -1))
            if twin is not None and (twin.status == "unique" or kept_then == kept and not stretch):
                decisions[i] = _as_twin(twin, docs[i], fps[i])
                continue
            in_stretch.add(key)
        stretch.append(i)
    if stretch:
        decide_stretch()
    return decisions


#: Twins kept in earlier batches that a Deduplicator remembers (the most recently met):
#: a footer line after every line was a twin of its first copy in each batch, and broke
#: each into stretches of two or three documents, 8 to 30 times slower (a review).
KEPT_TWINS = 4096


def _as_twin(twin: Decision, doc: Document, fp: int | None) -> Decision:
    """The decision of a document whose twin was decided as `twin`, with no document
    kept between them: a duplicate of a kept twin at distance 0 (any better candidate
    would have been the twin's), or the twin's own decision (its candidates are the
    twin's, and so are its head's crowd and its verification)."""
    if twin.status == "unique":
        return Decision(doc, fp, "duplicate", twin.row, twin.doc.id, 0)
    return twin._replace(doc=doc, fingerprint=fp)


def checked_documents(docs: Sequence[Document]) -> None:
    """Refuse a batch that holds anything but Documents with a str id (that Ids can
    store) and a str text (or features), before anything is decided: an int id found
    halfway left a VerifyingDeduplicator's ids a row ahead of its index, and later
    duplicates named the wrong kept document (a trial). NaN, pandas' missing value, is
    named as such."""
    # The common case, at C speed (~20 ns a document); not for an iterator, used up here.
    if isinstance(docs, (list, tuple)) and set(map(type, docs)) <= {Document}:
        ids, texts = list(map(_ID, docs)), list(map(_TEXT, docs))
        if set(map(type, ids)) <= {str} and set(map(type, texts)) <= {str} and "".join(ids).isascii():
            return
    for n, doc in enumerate(docs):
        if (
            type(doc) is Document
            and type(doc.id) is str
            and (type(doc.text) is str or doc.features is not None)
            and (doc.id.isascii() or _storable(doc.id))
        ):
            continue
        if not isinstance(doc, Document):
            raise TypeError(f"documents are simdedup.Document(id, text, raw), not {type(doc).__name__}")
        if type(doc.id) is str and not _storable(doc.id):
            raise ValueError(
                f"document {n} of the batch: its id {doc.id!r} holds a lone surrogate, "
                "which no file can store"
            )
        for field, value in (("id", doc.id), ("text", doc.text)):
            if not isinstance(value, str) and (field == "id" or doc.features is None):
                raise TypeError(
                    f"document {n} of the batch: its {field} is {value!r} ({type(value).__name__}), not a str"
                )


_ID, _TEXT = operator.itemgetter(0), operator.itemgetter(1)  # Document's fields


def _storable(doc_id: str) -> bool:
    """Whether Ids can store an id: UTF-8, with undecodable bytes as surrogateescape
    gives them. A lone surrogate from JSON ("\\ud800") is neither: found while the ids
    of a batch were stored, it left them a row ahead of the index (a review)."""
    try:
        doc_id.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def checked_fingerprints(
    docs: Sequence[Document], fps: Sequence[int | None], bits: int
) -> Sequence[int | None]:
    """A batch's fingerprints, one per document, as ints (a numpy array's values would
    otherwise reach each Decision as numpy integers), all checked before anything is
    decided: a bad one found in a later stretch of twins (_decide_with_twins) refused
    the batch after an earlier stretch was kept. An array is read as `bits` wide
    (fingerprint_array): a 128-bit deduplicator took a 64-bit array's values as
    fingerprints of its own (a review)."""
    checked_documents(docs)
    if len(fps) != len(docs):
        raise ValueError(f"{len(docs)} documents but {len(fps)} fingerprints")
    if isinstance(fps, np.ndarray):  # int64 read as its bits, floats refused
        if fps.dtype != object:
            return fingerprint_ints(fingerprint_array(fps, bits))
        fps = fps.tolist()  # Python ints (wide ones too) and None
    types = set(map(type, fps))
    if not types <= {int, type(None)}:
        fps = [int(fp) if isinstance(fp, np.integer) else fp for fp in fps]
    # Refuses what is no fingerprint. A list of its own: a pandas Series has no truth value.
    fingerprint_array(list(fps) if type(None) not in types else [fp for fp in fps if fp is not None], bits)
    return fps


def batches(
    items: Iterable[Document],
    size: int = BATCH_SIZE,
    flush: Callable[[], bool] | None = None,
    chars: int | None = None,
) -> Iterator[list[Document]]:
    """Lists of `size` items, the last maybe shorter; with `flush`, a batch also ends
    early after any item where flush() is true (read.Lines.waiting: the input is
    waiting on its writer, so what has come is decided now); with `chars`, once its
    documents' texts hold that many characters (long documents: a batch of 4,096 files
    of a directory held them all, and what fingerprinting makes of them, at once)."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"a batch size must be a positive integer, not {size!r}")
    return _batches(iter(items), int(size), flush, chars)


def _batches(
    it: Iterator[Document], size: int, flush: Callable[[], bool] | None, chars: int | None
) -> Iterator[list[Document]]:
    if flush is None and chars is None:
        while batch := list(islice(it, size)):
            yield batch
        return
    batch: list[Document] = []
    held = 0
    for item in it:
        batch.append(item)
        held += len(getattr(item, "text", ""))
        if len(batch) >= size or (chars is not None and held >= chars) or (flush is not None and flush()):
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


#: Documents decided together, by dedup() and the commands (pipeline.PIPELINE_BATCH):
#: big enough that the index's batch search and the workers' pipes cost little per
#: document (1,024 against 256: 45k against 37k docs/s for `filter` on 100k generated
#: documents, one job), and that the rows a batch keeps go into the index as one run
#: (4,096 against 1,024, `scan -j1` of generated documents, the same output: 1M in
#: 42.6-43.8 s against 53.1 s, 300k in 9.2-9.6 s against 10.0-12.2 s, 20k in 0.73 s
#: against 0.80-0.84 s). dedup() went 256 at a time: 100,000 generated English lines
#: took 2.7-4.4 s against 0.9-1.7 s. From stdin a batch also ends where the pipe's
#: writer goes quiet (read.Lines, read.TRICKLE_WAIT), so a trickle is answered as it
#: comes.
DECIDE_BATCH = 4096


def dedup(
    documents: Iterable[Document],
    settings: Settings | None = None,
    *,
    hashfunc: HashFunc | None = None,
    deduplicator: Deduplicator | None = None,
    batch_size: int = DECIDE_BATCH,
    verify: float | None = MIN_JACCARD,
) -> Iterator[Decision]:
    """A Decision for every document, in input order, as `simdedup scan` decides: a
    match within the distance is verified at Jaccard >= `verify` (None: not verified).
    A given `deduplicator` decides as it was made to. Bad arguments are refused here,
    before the first document is read; documents that are not Documents, when they
    come (TypeError).

    >>> from simdedup.read import Document
    >>> docs = [Document(str(i), t, b"") for i, t in enumerate(["a b c d", "a b c d", ""])]
    >>> [d.status for d in dedup(docs)]
    ['unique', 'duplicate', 'empty']
    """
    if deduplicator is not None:
        if not isinstance(deduplicator, Deduplicator):  # it failed at the first document (a trial)
            raise TypeError(f"deduplicator is a Deduplicator, not {deduplicator!r}")
        dd = deduplicator
    elif verify is None:
        dd = Deduplicator(settings, hashfunc)
    else:
        from .verify import VerifyingDeduplicator  # it builds on this module

        dd = VerifyingDeduplicator(settings, hashfunc, min_jaccard=verify)
    if isinstance(documents, (str, bytes)):
        raise TypeError("dedup takes Documents (simdedup.Document(id, text, raw)), not a str")
    return _decided(dd, batches(documents, batch_size))


def _decided(dd: Deduplicator, batched: Iterator[list[Document]]) -> Iterator[Decision]:
    for batch in batched:
        yield from dd.process(batch)
