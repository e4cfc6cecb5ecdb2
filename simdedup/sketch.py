"""Fixed-size sketches of documents' verification shingles, and Jaccard estimates from them.

The shingles are 3-shingles of units after features.normalize(): a unit is a \\w+ word,
but a Han character is a unit of its own, and so is each character of a word within 8
word characters of a Han one (SHINGLES_SPEC; the README's verification paragraph).
A sketch is SKETCH_BYTES (256) bytes whatever the text's length: one-permutation
hashing, 1,024 bins of 2 bits, picked on benchmarks/quality.py against exact Jaccard:
with head candidates (verify.py), pair F1 0.013 and 0.003 below exact Jaccard's, where
512 bins (128 bytes) lost 0.022 and 0.008 (on the set as this machine read it then;
stop 41: 1,024 bins cost 0.014 English before exact sketches, 0.010 with them). A text
of at most EXACT_SHINGLES distinct shingles is held exactly instead (the top 32 bits of
each, sorted), and two such texts are compared by their exact Jaccard (OnePermutation).
Pure functions over batches: a document's sketch never depends on the batch it is in.
fingerprints_and_sketches() makes a batch's fingerprints and sketches in one pass over
its texts. Never prints, never reads files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .features import (
    Features,
    distinct,
    han_word_units,
    has_chinese,
    normalize_many,
    normalized_many,
    runs_index,
)
from .fingerprint import (
    FeatureHasher,
    HashFunc,
    WordRuns,
    ascii_word_hashes,
    check_hasher,
    compiled_core,
    fingerprint_work,
    normalized_batch_fingerprints,
    other_rows,
    placed,
    refuse_one_text,
    text_rows,
    word_hashes,
)
from .settings import Settings

#: Shingle length for verification, in units: words, and each Han character alone.
SHINGLE = 3
#: One-permutation hashing: bins per sketch, and the bits kept of each bin's minimum.
BINS = 1024
BITS = 2
#: Bytes per document's sketch.
SKETCH_BYTES = BINS * BITS // 8
#: A document of at most this many distinct shingles gets a sketch that holds them
#: exactly (as many as fit in SKETCH_BYTES beside the mark and the count).
EXACT_SHINGLES = 61
#: Names the shingles and their hashes: change it when either changes, so stored
#: sketches of another kind are not compared with new ones.
SHINGLES_SPEC = "units3-words-han1-xxh3-fmix64"
#: Stored sketches of these kinds are read as this one (store.read_index): their
#: shingles differ only for text with Han characters in it, which spec share20 cut by
#: characters throughout where they were a fifth of its word characters or more, and by
#: words below. Dropping them would leave every stored row unverified.
ALIKE_SKETCH_SPECS = frozenset({"words3-han3-share20-xxh3-fmix64/oph-1024x2-min16"})
#: Stored sketches of these kinds are read as this one without a word: every one of
#: them is a sketch of bins, which this version compares as it did (only documents of
#: few shingles, sketched since, hold them exactly).
EARLIER_SKETCH_SPECS = frozenset({f"{SHINGLES_SPEC}/oph-1024x2-min16"})

_WORD_HASHES = FeatureHasher(64)  # non-ASCII words repeat (Zipf): their hashes are cached
# Odd multipliers that mix three word hashes into one shingle hash (wrapping uint64).
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))
_FMIX = (np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53))
_U = {n: np.uint64(n) for n in (21, 32, 33, 42)}
_EMPTY = np.uint16(0xFFFF)  # a bin without shingles
#: An exact sketch's first 8 bytes (little-endian; every 2-bit code in them is non-zero,
#: so a sketch of bins reads so only with 32 given codes in its first 32 bins: 3 ** -32).
#: Then the count of its shingles (uint32) and their top 32 bits (uint32, ascending).
#: The C loops (_indexcore.c, _textcore.c) hold the same mark.
EXACT_MARK = 0xAB5DFA9B6D7EAD76
_HELD = 3  # uint32 words before the shingles: the mark's two and the count
_ROW = 128  # shingles a document may have to be sorted in a row of a matrix (_hold_exactly)
_CHECKED = 1 << 14  # exact sketches OnePermutation.check reads at a time


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, in place: a bijection in which every output bit
    depends on every input bit."""
    h ^= h >> _U[33]
    h *= _FMIX[0]
    h ^= h >> _U[33]
    h *= _FMIX[1]
    h ^= h >> _U[33]
    return h


def _units(norm: Sequence[str], known: Sequence[WordRuns] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(units, counts, han): every normalized text's shingle units one run after another
    (features.han_word_units: xxh3-64 of each word, the code point of each Han
    character), how many each text has, and which texts have Han characters. The texts
    in `known` (without Han characters) have their word hashes there already.

    Mixed text was once cut one way throughout, by characters where Han characters
    were 20% of it or more, by words below: an English page and its copy with a
    Chinese paragraph on either side of 20% shared no shingle (Jaccard 0, a miss)."""
    n = len(norm)
    counts = np.zeros(n, np.intp)
    han = np.zeros(n, bool)
    parts: list[tuple[list[int], np.ndarray]] = []
    todo = np.ones(n, bool)
    for rows, hashes, run_counts in known:
        counts[rows] = run_counts
        todo[rows] = False
        parts.append((rows, hashes))
    rest = np.flatnonzero(todo).tolist() if known else range(n)
    ascii_rows = [i for i in rest if norm[i].isascii()]
    if ascii_rows:
        hashes, counts[ascii_rows] = ascii_word_hashes([norm[i] for i in ascii_rows])
        parts.append((ascii_rows, hashes))
    other = [i for i in rest if not norm[i].isascii()]
    han[[i for i in other if has_chinese(norm[i])]] = True
    words_rows = [i for i in other if not han[i]]
    if words_rows:
        hashes, counts[words_rows] = word_hashes([norm[i] for i in words_rows], _WORD_HASHES)
        parts.append((words_rows, hashes))
    han_rows = np.flatnonzero(han).tolist()
    if han_rows:
        units, counts[han_rows] = han_word_units([norm[i] for i in han_rows], _WORD_HASHES.many)
        parts.append((han_rows, units))
    if len(parts) == 1 and len(parts[0][0]) == n:
        return parts[0][1], counts, han
    first = np.cumsum(counts) - counts
    units = np.empty(int(counts.sum()), np.uint64)
    for rows, values in parts:
        units[runs_index(first[rows], counts[rows])] = values
    return units, counts, han


def shingle_hashes(texts: Sequence[str], fold: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, counts): the 64-bit hashes of every text's verification shingles, one
    run per text (not distinct, in text order), and how many each text has.

    Chinese: three code points packed into 63 bits (exact). Words: the xxh3 hashes of
    three words mixed by multiply-add. Either is then finalized (fmix64), so the bits
    are uniform for sketching. A text shorter than a shingle is one shingle.
    """
    return shingles_of_units(*_units(normalize_many(texts, fold)))


def sketches_of_normalized(norm: Sequence[str], known: Sequence[WordRuns] = ()) -> np.ndarray:
    """text_sketches() of texts that normalize() already made, reusing the word hashes
    fingerprinting gave for some of them (fingerprint.normalized_batch_fingerprints)."""
    return SKETCH.sketch(*shingles_of_units(*_units(norm, known)))


#: Documents sketched at a time by fingerprints_and_sketches: its arrays then stay
#: within ~20 MB.
SKETCH_SLICE = 4096


def fingerprints_and_sketches(
    work: Sequence[str | Features], settings: Settings, hashfunc: HashFunc, compiled: bool = False
) -> tuple[list[int | None], np.ndarray, list[int | None]]:
    """What verification needs of a batch, from one pass over each text (normalized
    once, its words found and hashed once): fingerprint_work(), text_sketches() of its
    texts (zeros for documents given as features), and each text's head fingerprint
    (fingerprint.normalized_batch_fingerprints; None for short texts and features).

    A sketch is made in 1,024 bins of 2-byte minima first (2 KB a document, however
    short): a batch of more than SKETCH_SLICE documents (a 256 KiB chunk of one-word
    or empty lines holds up to 262,144) is done a slice at a time.

    With `compiled`, texts without Han on the common path (fingerprint.compiled_core) go
    through the compiled core: the same results. A FeatureHasher given must have the
    settings' bits and seed."""
    refuse_one_text(work, "fingerprints_and_sketches")
    check_hasher(settings, hashfunc)
    if len(work) > SKETCH_SLICE:
        parts = [
            fingerprints_and_sketches(work[lo : lo + SKETCH_SLICE], settings, hashfunc, compiled)
            for lo in range(0, len(work), SKETCH_SLICE)
        ]
        return (
            [fp for fps, _, _ in parts for fp in fps],
            np.concatenate([sketches for _, sketches, _ in parts]),
            [head for _, _, heads in parts for head in heads],
        )
    texts = text_rows(work)
    core = None
    if compiled and len(texts) == len(work):
        core = compiled_core(work, settings, hashfunc, True, SKETCH.bins, SKETCH.bits, SKETCH.exact)  # type: ignore[arg-type]
    if core is not None:
        rows, fps, heads, sketches = core
        if len(rows) == len(work):
            return fps, sketches, heads
        others = other_rows(rows, len(work))
        other_fps, other_sketches, other_heads = fingerprints_and_sketches(
            [work[i] for i in others], settings, hashfunc
        )
        out = np.empty((len(work), SKETCH_BYTES), np.uint8)
        out[rows], out[others] = sketches, other_sketches
        return placed(rows, fps, others, other_fps), out, placed(rows, heads, others, other_heads)
    if len(texts) == len(work):
        norm = normalized_many(work, settings)  # type: ignore[arg-type]
        fps, known, heads = normalized_batch_fingerprints(norm, settings, hashfunc, heads=True)
        return fps, sketches_of_normalized(norm, known), heads
    # Rare: documents given as features beside texts. The texts are filled in below.
    sketches = np.zeros((len(work), SKETCH_BYTES), np.uint8)
    heads: list[int | None] = [None] * len(work)
    fps = fingerprint_work([{} if isinstance(w, str) else w for w in work], settings, hashfunc)
    if texts:
        text_fps, sketches[texts], text_heads = fingerprints_and_sketches(
            [work[i] for i in texts], settings, hashfunc
        )
        for i, fp, head in zip(texts, text_fps, text_heads):
            fps[i], heads[i] = fp, head
    return fps, sketches, heads


def shingles_of_units(
    units: np.ndarray, counts: np.ndarray, han: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """shingle_hashes() of texts given as their units, one run per text (counts[i] for
    text i): xxh3-64 of each word (the fingerprints' word-token hashes), and in a text
    where han[i], the code point of each Han character. For a caller that has hashed
    the words already."""
    shingles = np.where(counts > 0, np.maximum(counts - (SHINGLE - 1), 1), 0)
    first = np.cumsum(counts) - counts
    # Every run of three consecutive units, then the runs that start a shingle.
    a = np.append(units, np.zeros(SHINGLE - 1, np.uint64))
    b, c = a[1 : len(units) + 1], a[2:]
    a = a[: len(units)]
    # A text shorter than a shingle is padded with 0, not continued by the next text.
    short = np.flatnonzero((counts > 0) & (counts < SHINGLE))
    if len(short):
        b, c = b.copy(), c.copy()
        c[first[short]] = 0
        b[first[short][counts[short] == 1]] = 0
    with np.errstate(over="ignore"):
        runs = a * _MIX[0] + b * _MIX[1] + c
        if han.any():  # three Han characters: packed, exactly; a word among them: mixed
            chars = np.repeat(han, counts) & ((a | b | c) < _CODE_POINTS)
            runs[chars] = (a[chars] << _U[42]) | (b[chars] << _U[21]) | c[chars]
        return _fmix64(runs[runs_index(first, shingles)]), shingles


#: Units below this are code points (21 bits: three pack into 63 bits, exactly); a
#: word's xxh3-64 is one with a chance of 2 ** -43.
_CODE_POINTS = np.uint64(1 << 21)


class Sketcher(Protocol):
    """A fixed-size sketch of a set of shingle hashes, and Jaccard estimates from two."""

    @property
    def nbytes(self) -> int: ...

    @property
    def spec(self) -> str: ...

    def sketch(self, hashes: np.ndarray, counts: np.ndarray) -> np.ndarray: ...

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...

    def bins_in_either(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...

    def exact_rows(self, sketches: np.ndarray) -> np.ndarray: ...

    def as_bins(self, sketches: np.ndarray) -> np.ndarray: ...

    def check(self, sketches: np.ndarray) -> None: ...

    def exact_values(self, sketches: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]: ...

    def exact_most(self) -> int: ...


@dataclass(frozen=True)
class OnePermutation:
    """One-permutation hashing with b-bit minima (Li, Owen & Zhang 2012; Li & König 2010).

    A shingle hash's top log2(bins) bits pick its bin; each bin keeps the minimum of the
    next 16 bits, reduced to a code in 1 .. 2**bits - 1 (0: the bin is empty). Two
    sketches agree in a bin when the union's minimum there is shared (probability J)
    or, when both bins hold different minima, by chance (r = 1 / (2**bits - 1)); the
    estimate removes the chance agreements. Bins empty in both are left out, so a
    document with fewer shingles than bins is compared almost exactly.

    Almost: two different shingles in one bin whose codes agree (1 in 3,072 at 1,024
    bins of 2 bits) look like a shared one. Where the two sketches hold a dozen bins,
    two such bins lift a pair of log lines of one template, each with its own id
    (Jaccard 10/16), to 0.857; among the ~1,000 lines each meets, 313 of 50,000 were
    taken for duplicates. So with `exact` > 0 a document of at most `exact` distinct
    shingles is held exactly: EXACT_MARK, their count, and the top 32 bits of each,
    ascending. Two such sketches are compared by their exact Jaccard (of those 32-bit
    values); one beside a sketch of bins is first turned into the bins it stands for
    (the top 26 bits of a shingle pick its bin and its minimum), so it compares as the
    document's sketch of bins would.
    """

    bins: int = BINS
    bits: int = BITS
    exact: int = 0

    def __post_init__(self) -> None:
        if self.bins & (self.bins - 1) or not 64 <= self.bins <= 1 << 16:
            raise ValueError("bins must be a power of two in 64 .. 65536")
        if self.bits not in (2, 4, 8):
            raise ValueError("bits must be 2, 4 or 8")
        if not 0 <= self.exact <= self.nbytes // 4 - _HELD:
            raise ValueError(f"exact: 0 to {self.nbytes // 4 - _HELD} shingles, as many as fit")

    @property
    def nbytes(self) -> int:
        return self.bins * self.bits // 8

    @property
    def spec(self) -> str:
        """The kind of sketch, for a stored index: only sketches of one spec compare."""
        held = f"-exact{self.exact}" if self.exact else ""
        return f"{SHINGLES_SPEC}/oph-{self.bins}x{self.bits}-min16{held}"

    def sketch(self, hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """(n, nbytes) uint8 sketches of n documents' shingle hashes (runs of counts)."""
        minima = self._minima(hashes, counts)
        out = self._packed(minima, len(counts))
        if self.exact:
            self._hold_exactly(out, hashes, counts, minima)
        return out

    def _minima(self, hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """(n * bins) uint16: each bin's least 16-bit value, _EMPTY where it has none."""
        n, bins, log2 = len(counts), self.bins, self.bins.bit_length() - 1
        slot = np.repeat(np.arange(0, n * bins, bins, dtype=np.intp), counts)
        slot += (hashes >> np.uint64(64 - log2)).astype(np.intp)
        # The 16 bits below the bin's, the largest value left for "empty": a tie between
        # two shingles of one bin picks the same code either way.
        values = np.minimum((hashes >> np.uint64(48 - log2)).astype(np.uint16), _EMPTY - 1)
        minima = np.full(n * bins, _EMPTY, np.uint16)
        np.minimum.at(minima, slot, values)
        return minima

    def _packed(self, minima: np.ndarray, n: int) -> np.ndarray:
        """(n, nbytes) uint8: the bins' minima as codes, `bits` bits each."""
        # Multiply-shift maps the low 8 bits onto 1 .. 2**bits - 1; empty bins get 0.
        codes = ((minima & np.uint16(0xFF)) * np.uint16((1 << self.bits) - 1) >> np.uint16(8)) + np.uint16(1)
        codes *= minima != _EMPTY
        codes = codes.astype(np.uint8).reshape(n * self.nbytes, 8 // self.bits)
        packed = codes[:, 0].copy()
        for j in range(1, codes.shape[1]):
            packed |= codes[:, j] << np.uint8(j * self.bits)
        return packed.reshape(n, self.nbytes)

    def _hold_exactly(
        self, out: np.ndarray, hashes: np.ndarray, counts: np.ndarray, minima: np.ndarray
    ) -> None:
        """Rewrites as exact sketches the rows of `out` whose documents have 1 to `exact`
        distinct shingles (their top 32 bits). Each document of at most _ROW shingles has
        its values sorted in a row of a matrix (numpy sorts many short rows at once 30x
        faster than one long array); a longer one is looked at alone, where it has at
        most `exact` occupied bins (two shingles in different bins differ there)."""
        first = np.cumsum(counts) - counts
        narrow = np.flatnonzero((counts > 0) & (counts <= _ROW))
        parts = [self._distinct(narrow, hashes[runs_index(first[narrow], counts[narrow])], counts[narrow])]
        wide = np.flatnonzero(counts > _ROW)
        occupied = np.count_nonzero(minima.reshape(len(counts), self.bins)[wide] != _EMPTY, axis=1)
        for row in wide[occupied <= self.exact].tolist():
            shingles = distinct(hashes[first[row] : first[row] + counts[row]] >> _U[32]).astype(np.uint32)
            if len(shingles) <= self.exact:
                parts.append((np.array([row]), np.array([len(shingles)]), shingles))
        held, held_counts, values = (np.concatenate(part) for part in zip(*parts))
        if len(held):
            out[held] = self._exact_sketches(values, held_counts)

    def _distinct(
        self, rows: np.ndarray, hashes: np.ndarray, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, counts, values) of the documents `rows` (runs of `counts` <= _ROW
        hashes) that have at most `exact` distinct top 32 bits: how many, and those
        bits, ascending, a document after another."""
        width = 1 << int(counts.max(initial=1) - 1).bit_length()  # a power of two from 1 to _ROW
        top = np.full((len(rows), width), 0xFFFFFFFF, np.uint32)  # after every value, or equal
        places = runs_index(np.zeros(len(counts), np.intp), counts)  # each hash's place in its run
        top[np.repeat(np.arange(len(rows)), counts), places] = hashes >> _U[32]
        top.sort(axis=1)
        keep = np.arange(width) < counts[:, None]
        keep[:, 1:] &= top[:, 1:] != top[:, :-1]
        distinct = np.count_nonzero(keep, axis=1)
        held = distinct <= self.exact
        return rows[held], distinct[held], top[held][keep[held]]

    def _exact_sketches(self, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """(len(counts), nbytes) uint8 exact sketches of documents of `counts` values
        each (uint32, distinct and ascending, a document after another)."""
        words = np.zeros((len(counts), self.nbytes // 4), "<u4")
        words[:, 0], words[:, 1] = EXACT_MARK & 0xFFFFFFFF, EXACT_MARK >> 32
        words[:, 2] = counts
        places = runs_index(np.full(len(counts), _HELD, np.intp), counts)
        words[np.repeat(np.arange(len(counts)), counts), places] = values
        return words.view(np.uint8)

    def exact_rows(self, sketches: np.ndarray) -> np.ndarray:
        """Whether each row of an (m, nbytes) array is an exact sketch (bool)."""
        if not self.exact:
            return np.zeros(len(sketches), bool)
        words = _words(sketches)
        count = words[:, 1] & np.uint64(0xFFFFFFFF)
        return (words[:, 0] == np.uint64(EXACT_MARK)) & (count >= 1) & (count <= self.exact)

    def check(self, sketches: np.ndarray) -> None:
        """Refuses exact sketches whose values do not ascend (ValueError): made by hand,
        they compared otherwise in numpy and in the compiled loops (a review)."""
        exact = np.flatnonzero(self.exact_rows(sketches))
        for lo in range(0, len(exact), _CHECKED):  # a slice at a time: an index loads them all
            rows = exact[lo : lo + _CHECKED]
            words = np.ascontiguousarray(sketches[rows]).view("<u4")
            values = words[:, _HELD:]
            inside = np.arange(1, values.shape[1]) < words[:, 2:3]
            bad = np.flatnonzero(((values[:, 1:] <= values[:, :-1]) & inside).any(axis=1))
            if len(bad):
                raise ValueError(f"sketch {int(rows[bad[0]])}: an exact sketch's values do not ascend")

    def exact_values(self, sketches: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
        """(counts, values) of exact sketches: how many values each holds (int64), and its
        first `most` values, ascending (uint32, (m, most); past a count, zeros). Copies
        those bytes only, not whole sketches."""
        words = np.ascontiguousarray(sketches[:, : 4 * (_HELD + most)]).view("<u4")
        return words[:, 2].astype(np.int64), words[:, _HELD:]

    def exact_most(self) -> int:
        """The most values an exact sketch holds."""
        return self.exact

    def _held(self, sketches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(values, counts) of exact sketches: their shingles' top 32 bits, a run a row."""
        counts, first = self.exact_values(sketches, self.exact)
        return first[np.arange(self.exact) < counts[:, None]], counts

    def _as_bins(self, sketches: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """`sketches`, with its exact sketches at `rows` turned into the sketches of bins
        of the same shingles (a copy where there are any)."""
        if not len(rows):
            return sketches
        values, counts = self._held(sketches[rows])
        out = sketches.copy()
        out[rows] = self._packed(self._minima(values.astype(np.uint64) << _U[32], counts), len(rows))
        return out

    def as_bins(self, sketches: np.ndarray) -> np.ndarray:
        """The sketches with each exact one turned into the sketch of bins of the same
        shingles: what an earlier simdedup made of the same text (the array itself
        where none is exact)."""
        return self._as_bins(sketches, np.flatnonzero(self.exact_rows(sketches)))

    def _exact_similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Jaccard of each row pair of two arrays of exact sketches: shared values over
        values in either (each sketch's values are distinct)."""
        (va, na), (vb, nb) = self._held(a), self._held(b)
        pairs = np.arange(len(a), dtype=np.uint64) << _U[32]
        # b's keys ascend already (pair by pair, values ascending): a's are looked up in
        # them (a sort of both was 5x slower than the estimate, a review)
        a_keys, b_keys = np.repeat(pairs, na) | va, np.repeat(pairs, nb) | vb
        at = np.minimum(b_keys.searchsorted(a_keys), max(len(b_keys) - 1, 0))
        found = b_keys[at] == a_keys if len(b_keys) else np.zeros(len(a_keys), bool)
        shared = np.bincount((a_keys[found] >> _U[32]).astype(np.intp), minlength=len(a))
        return shared / (na + nb - shared)  # type: ignore[no-any-return]

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Estimated Jaccard of each row pair of two (m, nbytes) arrays (1.0 for two empty
        documents; exact where both rows are exact sketches)."""
        exact_a, exact_b = self.exact_rows(a), self.exact_rows(b)
        both = exact_a & exact_b
        out = self._estimate(
            self._as_bins(a, np.flatnonzero(exact_a & ~both)),
            self._as_bins(b, np.flatnonzero(exact_b & ~both)),
        )
        if both.any():
            out[both] = self._exact_similarity(a[both], b[both])
        return out

    def _estimate(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """similarity() of two arrays of sketches of bins."""
        a, b = _words(a), _words(b)
        nonzero_a, nonzero_b = _occupied(a, self.bits), _occupied(b, self.bits)
        equal = ~_occupied(a ^ b, self.bits)  # on the lanes: codes that agree
        agree, both, either = (
            np.bitwise_count(x).sum(axis=1, dtype=np.int64)
            for x in (equal & nonzero_a, nonzero_a & nonzero_b, nonzero_a | nonzero_b)
        )
        # (agree - r * both) / (either * (1 - r)) with r = 1 / codes, in integers until the
        # division, so identical sketches give exactly 1.0.
        codes = (1 << self.bits) - 1
        estimate = (codes * agree - both) / np.maximum(either * (codes - 1), 1)
        return np.where(either > 0, np.clip(estimate, 0.0, 1.0), 1.0)

    def bins_in_either(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """How many bins hold a shingle in either sketch, for each row pair of two (m,
        nbytes) arrays (int64): the union that similarity() divides by, about the
        number of distinct shingles of the two when that is well under `bins`. An exact
        sketch counts the bins it stands for."""
        a, b = self.as_bins(a), self.as_bins(b)
        either = _occupied(_words(a) | _words(b), self.bits)
        return np.bitwise_count(either).sum(axis=1, dtype=np.int64)

    def pair_similarity(
        self, a: np.ndarray, a_rows: np.ndarray, b: np.ndarray, b_rows: np.ndarray, at_least: float = 0.0
    ) -> np.ndarray:
        """similarity(a[a_rows], b[b_rows]), the same floats, by a compiled loop that reads
        the rows where they are instead of gathering them (for many pairs). With
        `at_least` > 0, a pair whose estimate is certainly below it gets -1.0, often
        after reading a part of its sketches (compiled.pair_similarity). `a` should be
        the smaller array. Many pairs are visited by groups of b's rows (ROW_GROUP), so
        that a large b is read nearly in order: the same floats, in the pairs' order."""
        from .compiled import pair_similarity

        b_rows = np.asarray(b_rows, np.int64)
        visit = by_row_group(b_rows) if len(b_rows) >= VISIT_BY_ROW else np.arange(len(b_rows))
        return pair_similarity(  # type: ignore[no-any-return]
            _words(a),
            np.asarray(a_rows, np.int64),
            _words(b),
            b_rows,
            self.bits,
            self.exact,
            _LANES[self.bits],
            float(at_least),
            visit,
            AHEAD,
        )

    def verified_pairs(
        self,
        a: np.ndarray,
        a_has: np.ndarray,
        b: np.ndarray,
        b_has: np.ndarray,
        pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
        at_least: float,
    ) -> tuple[np.ndarray, ...]:
        """Of pairs (q, rows, d), the (q, rows, d, sims) where pair_similarity(a, q, b,
        rows, at_least) reaches `at_least`, or is NaN where a[q] or b[row] has no sketch
        (a_has, b_has): the same floats, by one compiled loop, in no set order
        (compiled.verified_pairs)."""
        from .compiled import verified_pairs

        q, rows, d = pairs
        return verified_pairs(  # type: ignore[no-any-return]
            q,
            rows,
            d,
            _words(a),
            a_has,
            _words(b),
            b_has,
            self.bits,
            self.exact,
            _LANES[self.bits],
            float(at_least),
            ROW_GROUP.bit_length() - 1,
            VISIT_BY_ROW,
            CACHED_SKETCHES,
            AHEAD,
        )


#: pair_similarity visits this many pairs or more by groups of ROW_GROUP rows of the
#: larger side (a power of two): a large index's candidate pairs point all over its
#: sketches, and read in the order found, each costs a cache miss or two (8M rows of
#: random sketches: 290-340 ns a pair; visited by groups of 64 rows, 16 KB: 100-120).
VISIT_BY_ROW = 1 << 14
ROW_GROUP = 64
#: verified_pairs reads its pairs by groups of rows only where the rows they meet hold
#: more than this many bytes of sketches: fewer stay in the CPU's caches (this machine's
#: last level: 32 MB), where the order a search finds them in is faster (a crawl's pages
#: of one site, 160,000 pages: 9% less CPU), and larger ones do not (4M pairs among
#: 430,000 rows: 55 ns a pair by groups, 90 in the search's order).
CACHED_SKETCHES = 16 << 20
#: Both ask for the first cache lines of a pair's sketches this many pairs before they
#: compare it, so that the reads from memory overlap: benchmarks/large_index.py times
#: it against 0 (random sketches of 8M rows, by groups of rows: 53 ns a pair against 68).
AHEAD = 16


def by_row_group(rows: np.ndarray) -> np.ndarray:
    """The positions of `rows` (int64, >= 0) by groups of ROW_GROUP rows, ascending, and
    in their own order within a group: the index's counting sort (compiled.build_table)
    with the groups for buckets."""
    from .compiled import build_table

    groups = rows >> (ROW_GROUP.bit_length() - 1)
    order = np.empty(len(rows), np.uint32)
    build_table(groups, order, np.zeros(int(groups.max(initial=0)) + 2, np.uint32))
    return order


#: The lowest bit of every 2-, 4- or 8-bit code in a 64-bit word.
_LANES = {bits: np.uint64(sum(1 << i for i in range(0, 64, bits))) for bits in (2, 4, 8)}


def _occupied(words: np.ndarray, bits: int) -> np.ndarray:
    """The lowest bit of every `bits`-bit code of `words` that is not 0, alone: each
    code's bits folded onto it."""
    folded = words
    for i in range(1, bits):
        folded = folded | (words >> np.uint64(i))
    return folded & _LANES[bits]


def _words(sketches: np.ndarray) -> np.ndarray:
    """(m, nbytes) uint8 as (m, nbytes / 8) uint64, a view where the layout allows."""
    return np.ascontiguousarray(sketches).view(np.uint64)


#: The sketch verification uses (measured on benchmarks/quality.py; see its docstring).
SKETCH = OnePermutation(exact=EXACT_SHINGLES)
SKETCH_SPEC = SKETCH.spec


def text_sketches(texts: Sequence[str], fold: bool = True) -> np.ndarray:
    """(len(texts), SKETCH_BYTES) uint8: each text's sketch, independent of the batch."""
    return SKETCH.sketch(*shingle_hashes(texts, fold))


def similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Estimated Jaccard of each row pair of two (m, SKETCH_BYTES) sketch arrays."""
    return SKETCH.similarity(a, b)
