"""Stage 3: weighted features -> SimHash fingerprints, a batch at a time.

Each feature's hash adds its weight to column i where bit i is 1 and subtracts it
where bit i is 0; bit i of the fingerprint is 1 when column i's exact sum is > 0.
Bit i of a fingerprint is `(fp >> i) & 1`. Pure functions over batches: a document's
fingerprint never depends on the batch it is in. Never prints, never reads files.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, islice
from typing import Any

import numpy as np
import xxhash

from .features import (
    Features,
    ascii_word_spans,
    has_chinese,
    jieba_word_pool,
    normalized_many,
    tokens_of_normalized,
    weigh,
    words,
)
from .read import AsciiLines
from .settings import HEAD_TOKENS, Settings
from .xxh3 import hash_spans, hash_spans128

try:
    from .compiled_text import ascii_batch, core_spans, span_fingerprints, text_spans
except ImportError:  # installed where no C compiler was found (setup.py): the numpy path does all text
    ascii_batch = core_spans = text_spans = span_fingerprints = None  # type: ignore[assignment]

#: feature -> unsigned hash with at least `bits` bits; bit i of the result feeds column i.
HashFunc = Callable[[str], int]

_MASK64 = (1 << 64) - 1
#: Documents fingerprinted together: large enough for numpy, small enough for pipelines.
BATCH_SIZE = 256
#: Some texts of a batch as runs of their \w+ words' xxh3-64 hashes: (the texts' rows in
#: the batch, the hashes, one run per text in that order, and each run's length).
WordRuns = tuple[list[int], np.ndarray, np.ndarray]


class FeatureHasher:
    """xxh3 (64 or 128 bits) of a feature's UTF-8 bytes, with a bounded cache.

    Feature frequencies follow Zipf's law, so most lookups hit the cache. The cache
    is dropped when pickled (for process pools and Dask) and when it is full.
    """

    def __init__(self, bits: int = 64, seed: int = 0, cache_size: int = 1 << 20) -> None:
        if bits not in (64, 128):
            raise ValueError("xxh3 feature hashes are 64 or 128 bits")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 1 << 64:
            # xxh3 took -1 as 2 ** 64 - 1 and 2 ** 64 as 0, where Settings refuses them (a trial)
            raise ValueError(f"seed must be 0 .. 2 ** 64 - 1, not {seed!r}")
        self.bits = bits
        self.seed = int(seed)
        self.cache_size = cache_size
        self._digest = xxhash.xxh3_64_intdigest if bits == 64 else xxhash.xxh3_128_intdigest
        self._cache: dict[str, int] = {}

    def __call__(self, feature: str) -> int:
        return self.many([feature])[0]

    def many(self, features: list[str]) -> list[int]:
        """The hashes of a batch's features: one C-level pass over the cache (map), and
        on a miss, the batch's new features (a set difference) hashed and cached first.
        No Python bytecode runs per feature that is already cached."""
        cache = self._cache
        try:
            return list(map(cache.__getitem__, features))
        except KeyError:
            pass
        new = set(features).difference(cache)
        if len(cache) + len(new) > self.cache_size:
            cache.clear()
            new = set(features)  # the cached ones were dropped with the rest
        digest, seed = self._digest, self.seed
        fresh = {f: digest(f.encode("utf-8"), seed) for f in new}
        cache.update(fresh)
        try:
            return list(map(cache.__getitem__, features))
        except KeyError:  # another thread's batch cleared the cache meanwhile (a review)
            return [fresh[f] if f in fresh else digest(f.encode("utf-8"), seed) for f in features]

    def __getstate__(self) -> dict[str, object]:
        return {"bits": self.bits, "seed": self.seed, "cache_size": self.cache_size}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__(state["bits"], state["seed"], state["cache_size"])  # type: ignore[misc]


def hash_bits(hashes: Sequence[int], bits: int) -> np.ndarray:
    """An (n, bits) uint8 matrix of 0/1: row r, column i is bit i of hashes[r]. A hash
    is an int >= 0 of `bits` bits or more (HashFunc); anything else is refused."""
    if not all(issubclass(t, numbers.Integral) and not issubclass(t, bool) for t in set(map(type, hashes))):
        bad = next(h for h in hashes if isinstance(h, bool) or not isinstance(h, numbers.Integral))
        raise ValueError(f"a feature hash is an int >= 0, not {bad!r}")
    if bits <= 64:
        try:
            lanes = np.array(hashes, dtype="<u8")
        except OverflowError:  # a negative hash, or one wider than 64 bits: its low 64 are the bits
            _check_unsigned(hashes)
            lanes = np.array([h & _MASK64 for h in hashes], dtype="<u8")
        lanes = lanes.reshape(len(hashes), 1)
    else:
        _check_unsigned(hashes)
        words = (bits + 63) // 64
        lanes = np.empty((len(hashes), words), dtype="<u8")
        for w in range(words):
            lanes[:, w] = [(h >> (64 * w)) & _MASK64 for h in hashes]
    as_bytes = lanes.view(np.uint8).reshape(len(hashes), 8 * lanes.shape[1])
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :bits]


def _check_unsigned(hashes: Sequence[int]) -> None:
    if hashes and min(hashes) < 0:
        raise ValueError(f"a feature hash is an int >= 0, not {min(hashes)}")


def column_sums(
    batch: Sequence[Mapping[str, float]], bits: int = 64, hashfunc: HashFunc | None = None
) -> np.ndarray:
    """The (n_documents, bits) column sums of each document's weighted feature hashes.

    Each document's rows are summed in its own feature order, so the result does not
    depend on the other documents in the batch.
    """
    hashfunc = hashfunc or FeatureHasher(bits)
    names: list[str] = []
    weights: list[float] = []
    starts = np.empty(len(batch), dtype=np.intp)
    for d, features in enumerate(batch):
        if type(features) is not dict and not isinstance(features, Mapping):
            what = type(features).__name__
            raise TypeError(
                f"document {d} of the batch: its features are a {{feature: weight}} mapping, not {what}"
            )
        starts[d] = len(names)
        names.extend(features)
        weights.extend(features.values())
    if not all(issubclass(t, str) for t in set(map(type, names))):
        at = next(i for i, name in enumerate(names) if not isinstance(name, str))
        raise TypeError(f"{_document_of(starts, at)}: a feature is a str, not {names[at]!r}")
    many = getattr(hashfunc, "many", None)
    hashes = many(names) if many is not None else [hashfunc(f) for f in names]
    sums = np.zeros((len(batch), bits), dtype=np.float64)
    if not hashes:
        return sums
    signed = hash_bits(hashes, bits).astype(np.float64)
    signed *= 2.0
    signed -= 1.0
    # checked by type, once a type: a check a weight cost a third more time (stop 20)
    if not all(issubclass(t, numbers.Real) and not issubclass(t, bool) for t in set(map(type, weights))):
        at = next(i for i, x in enumerate(weights) if isinstance(x, bool) or not isinstance(x, numbers.Real))
        raise ValueError(f"{_document_of(starts, at)}: a weight is a number, not {weights[at]!r}")
    w = np.asarray(weights, dtype=np.float64)
    ends = np.append(starts[1:], len(hashes))
    nonempty = np.flatnonzero(ends > starts)
    # Each document's own: two of 1e308 in one batch, each fine alone, stopped the run.
    with np.errstate(over="ignore"):
        magnitudes = np.add.reduceat(np.abs(w), starts[nonempty])
    if not np.isfinite(magnitudes).all():
        d = int(nonempty[np.flatnonzero(~np.isfinite(magnitudes))[0]])
        raise ValueError(
            f"document {d} of the batch: weights are finite numbers whose magnitudes sum to a finite number"
        )
    signed *= w[:, None]
    sums[nonempty] = np.add.reduceat(signed, starts[nonempty], axis=0)
    if not _sums_are_exact(w):
        _make_signs_exact(sums, signed, w, starts, ends, nonempty)
    return sums


def _document_of(starts: np.ndarray, at: int) -> str:
    """'document D of the batch', D the document whose features hold the `at`-th of the
    batch's (a bad one failed the batch without saying whose it was: a review)."""
    return f"document {int(np.searchsorted(starts, at, side='right')) - 1} of the batch"


def _sums_are_exact(w: np.ndarray) -> bool:
    """Integer weights (tf, binary) add up exactly in float64, in any order."""
    with np.errstate(over="ignore"):  # a batch's may overflow where no document's does
        return bool(np.all(np.floor(w) == w)) and float(np.abs(w).sum()) < 2.0**53


def _make_signs_exact(
    sums: np.ndarray,
    signed: np.ndarray,
    w: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    rows: np.ndarray,
) -> None:
    """Recompute exactly (math.fsum) every column sum whose sign float rounding could decide.

    numpy adds in an order of its own (not left to right), and any order of n terms is
    within (n - 1) * 2**-53 * sum(|w|) of the exact sum. Outside that bound the sign is
    already the exact sum's; inside it, fsum gives the correctly rounded sum. So the
    fingerprint is a function of the exact sums, whatever the batch or the machine.
    """
    totals = np.add.reduceat(np.abs(w), starts[rows])
    bound = 4 * np.finfo(np.float64).eps * (ends[rows] - starts[rows]) * totals
    for r, col in zip(*np.nonzero(np.abs(sums[rows]) <= bound[:, None])):
        d = rows[r]
        sums[d, col] = math.fsum(signed[starts[d] : ends[d], col])


def fingerprints_from_sums(sums: np.ndarray) -> list[int]:
    """Bit i is 1 where column i's sum is > 0 (the seeds' rule), else 0."""
    packed = np.packbits(sums > 0, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def fingerprint_batch(
    batch: Sequence[Mapping[str, float]], bits: int = 64, hashfunc: HashFunc | None = None
) -> list[int | None]:
    """SimHash fingerprints of weighted feature sets; None for a set with no weight at all.

    A document with no features is `empty`: it gets no fingerprint, so it can never
    collide with the all-zero fingerprint of a real document. A FeatureHasher given
    must be of `bits` (one of 64 bits made 128-bit fingerprints whose top half was zero).
    """
    if isinstance(hashfunc, FeatureHasher) and hashfunc.bits != bits:
        raise ValueError(f"a FeatureHasher of {hashfunc.bits} bits, for {bits}-bit fingerprints")
    fps = fingerprints_from_sums(column_sums(batch, bits, hashfunc))
    return [fp if any(features.values()) else None for fp, features in zip(fps, batch)]


def refuse_one_text(texts: object, function: str) -> None:
    """Refuse one str (or bytes) given for a batch of texts: it was taken as one text a
    character."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{function} takes a collection of texts (str), not one: wrap it in a list")


def check_hasher(settings: Settings, hashfunc: HashFunc | None) -> None:
    """Refuse settings that are not a Settings, a hash function that cannot be called,
    and a FeatureHasher whose bits or seed are not the settings' (its fingerprints
    would silently be of other settings); other hash functions are the caller's."""
    if not isinstance(settings, Settings):  # a dict failed later: no attribute 'bits'
        raise TypeError(f"settings are a simdedup.Settings, not {type(settings).__name__}: Settings(**d)")
    if hashfunc is not None and not callable(hashfunc):
        raise TypeError(f"hashfunc is a function of a feature (str) to an int, not {hashfunc!r}")
    if isinstance(hashfunc, FeatureHasher) and (hashfunc.bits, hashfunc.seed) != (
        settings.bits,
        settings.seed,
    ):
        raise ValueError(
            f"a FeatureHasher of {hashfunc.bits} bits, seed {hashfunc.seed}, for settings of "
            f"{settings.bits} bits, seed {settings.seed}"
        )


def fingerprint_texts(
    texts: Iterable[str], settings: Settings | None = None, hashfunc: HashFunc | None = None
) -> list[int | None]:
    """Fingerprints of raw texts under `settings` (the library's one-call entry point).
    `texts` is a collection of strings (one str is refused: it would be one text a
    character); a FeatureHasher given must have the settings' bits and seed."""
    refuse_one_text(texts, "fingerprint_texts")
    settings = Settings() if settings is None else settings
    check_hasher(settings, hashfunc)
    hashfunc = hashfunc or FeatureHasher(settings.bits, settings.seed)
    fps: list[int | None] = []
    it = iter(texts)
    while chunk := list(islice(it, BATCH_SIZE)):  # bounded memory for any number of texts
        if not all(isinstance(t, str) for t in chunk):
            bad = next(t for t in chunk if not isinstance(t, str))
            raise TypeError(f"fingerprint_texts takes texts (str), not {type(bad).__name__}")
        fps += text_batch_fingerprints(chunk, settings, hashfunc, compiled=True)
    return fps


def text_batch_fingerprints(
    texts: Sequence[str], settings: Settings, hashfunc: HashFunc | None = None, compiled: bool = False
) -> list[int | None]:
    """Fingerprints of one batch of raw texts: the same as fingerprint_batch over
    extract(), with the common case (word or jieba tokens, term frequencies, xxh3-64)
    summed per token occurrence in numpy, and ASCII text tokenized and hashed there too,
    without a Python object per token. With `compiled`, texts without Han characters on
    that common path go through the compiled core instead (compiled_core): the same
    fingerprints. A
    FeatureHasher given must have the settings' bits and seed (one of another seed gave
    that seed's fingerprints here: a review)."""
    refuse_one_text(texts, "text_batch_fingerprints")
    check_hasher(settings, hashfunc)
    hashfunc = hashfunc or FeatureHasher(settings.bits, settings.seed)
    core = compiled_core(texts, settings, hashfunc) if compiled else None
    if core is None:
        return normalized_batch_fingerprints(normalized_many(texts, settings), settings, hashfunc)[0]
    rows, fps, _, _ = core
    if len(rows) == len(texts):
        return fps
    others = other_rows(rows, len(texts))
    return placed(rows, fps, others, text_batch_fingerprints([texts[i] for i in others], settings, hashfunc))


#: What the compiled core made of some texts of a batch: (their rows in the batch,
#: fingerprints, head fingerprints, sketches), as compiled_text.text_spans gives them.
CoreResults = tuple[list[int], list["int | None"], list["int | None"], np.ndarray]


def compiled_core(
    texts: Sequence[str],
    settings: Settings,
    hashfunc: HashFunc,
    heads: bool = False,
    sketch_bins: int = 0,
    sketch_bits: int = 2,
    sketch_exact: int = 0,
) -> CoreResults | None:
    """What the compiled core (compiled_text.text_spans) makes of the texts it can do
    (with `heads`, head fingerprints; with sketch_bins > 0, one-permutation sketches of
    that many bins of sketch_bits bits, exact ones of texts of 1 to sketch_exact distinct
    shingles): texts without Han characters (compiled_text.core_spans: ASCII, and other text
    normalized, in UTF-8) on the occurrence path (_occurrence_path), without a word longer
    than xxh3.VECTORIZED_MAX bytes; None where that is none of them (and where simdedup
    was installed without its C core). The same results as the numpy path."""
    if (
        ascii_batch is None
        or text_spans is None
        or settings.bits != 64
        or not _occurrence_path(settings, hashfunc)
    ):
        return None
    if isinstance(texts, AsciiLines):  # read where they are
        read: list[int] = list(range(len(texts)))
        data, starts, ends = texts.data, texts.starts, texts.ends
    else:
        rows, data, starts, ends = core_spans(texts)  # ASCII, and other text without Han
        if not len(rows):
            return None
        read = rows.tolist()
    fps, head_fps, sketches, done = text_spans(
        data, starts, ends, heads, sketch_bins, sketch_bits, sketch_exact
    )
    if done.all():
        return read, fps, head_fps, sketches
    kept = np.flatnonzero(done).tolist()
    return (
        [read[i] for i in kept],
        [fps[i] for i in kept],
        [head_fps[i] for i in kept],
        sketches[kept] if len(sketches) else sketches,
    )


def placed(rows: list[int], values: list[Any], others: list[int], rest: list[Any]) -> list[Any]:
    """values at `rows` and rest at `others`, in one list (rows and others: a partition
    of 0 .. n - 1)."""
    out: list[Any] = [None] * (len(rows) + len(others))
    for i, value in zip(rows + others, values + rest):
        out[i] = value
    return out


def other_rows(rows: list[int], n: int) -> list[int]:
    """0 .. n - 1 without `rows`, ascending."""
    done = set(rows)
    return [i for i in range(n) if i not in done]


def normalized_batch_fingerprints(
    norm: Sequence[str], settings: Settings, hashfunc: HashFunc | None = None, heads: bool = False
) -> tuple[list[int | None], list[WordRuns], list[int | None]]:
    """text_batch_fingerprints() of texts that normalized() already made; the word hashes
    it summed, for the verification sketches (sketch.sketches_of_normalized) to reuse:
    runs for the texts without Han characters, whose tokens are their \\w+ words hashed
    by xxh3-64 (none on the general path: other settings or hash function); and with
    `heads`, each text's head fingerprint: the fingerprint of its head_window() of
    tokens, None for a text of HEAD_TOKENS tokens or fewer (else an empty list)."""
    hashfunc = hashfunc or FeatureHasher(settings.bits, settings.seed)
    if not _occurrence_path(settings, hashfunc):
        fps, head_fps = _feature_fingerprints(norm, settings, hashfunc, heads)
        return fps, [], head_fps
    fps: list[int | None] = [None] * len(norm)
    head_fps = [None] * len(norm) if heads else []
    runs: list[WordRuns] = []

    def put(rows: list[int], hashes: np.ndarray, counts: np.ndarray) -> None:
        for i, fp in zip(rows, occurrence_fingerprints(hashes, counts)):
            fps[i] = fp
        if heads:
            for i, fp in zip(rows, occurrence_head_fingerprints(hashes, counts)):
                head_fps[i] = fp

    ascii_rows = [i for i, t in enumerate(norm) if t.isascii()]
    if len(ascii_rows) < len(norm):
        other = [i for i, t in enumerate(norm) if not t.isascii()]
        if settings.tokenizer == "auto":  # jieba words, or \w+ words where there is no Han
            pool, order, counts = jieba_word_pool([norm[i] for i in other])
            hashes = hash_words(hashfunc.many(pool), settings.bits)[order]  # type: ignore[attr-defined]
        else:
            hashes, counts = word_hashes([norm[i] for i in other], hashfunc)  # type: ignore[arg-type]
        put(other, hashes, counts)
        # Without Han characters both tokenizers ("auto", "words") give the \w+ words.
        wordy = np.array([not has_chinese(norm[i]) for i in other], dtype=bool)
        if wordy.any() and settings.bits == 64:  # the sketches' word hashes are xxh3-64's
            rows = [i for i, w in zip(other, wordy.tolist()) if w]
            runs.append((rows, hashes[np.repeat(wordy, counts)], counts[wordy]))
    if ascii_rows:
        texts = norm if len(ascii_rows) == len(norm) else [norm[i] for i in ascii_rows]
        hashes, counts = ascii_word_hashes(texts, settings.bits)
        put(ascii_rows, hashes, counts)
        if settings.bits == 64:
            runs.append((ascii_rows, hashes, counts))
    return fps, runs, head_fps


def _feature_fingerprints(
    norm: Sequence[str], settings: Settings, hashfunc: HashFunc, heads: bool
) -> tuple[list[int | None], list[int | None]]:
    """normalized_batch_fingerprints' (fingerprints, heads) off the word path: ASCII
    texts' character n-grams or word shingles found and hashed in one buffer where
    ascii_feature_hashes serves, the rest tokenized and weighed a text at a time."""
    served = _ascii_features(settings, hashfunc) and len(norm) >= ASCII_FEATURES_BATCH
    plain = [i for i, t in enumerate(norm) if t.isascii()] if served else []
    if not plain:
        return _tokenized_fingerprints(norm, settings, hashfunc, heads)
    hashes, counts = ascii_feature_hashes([norm[i] for i in plain], settings)
    fps = occurrence_fingerprints(hashes, counts)
    head_fps = occurrence_head_fingerprints(hashes, counts) if heads else []
    if len(plain) == len(norm):
        return fps, head_fps
    others = other_rows(plain, len(norm))
    other_fps, other_heads = _tokenized_fingerprints([norm[i] for i in others], settings, hashfunc, heads)
    return placed(plain, fps, others, other_fps), placed(
        plain, head_fps, others, other_heads
    ) if heads else []


def _tokenized_fingerprints(
    norm: Sequence[str], settings: Settings, hashfunc: HashFunc, heads: bool
) -> tuple[list[int | None], list[int | None]]:
    """_feature_fingerprints of texts tokenized a text at a time."""
    tokens = [tokens_of_normalized(t, settings) for t in norm]
    if _unit_weights(settings, hashfunc):
        fps = feature_occurrence_fingerprints(tokens, settings, hashfunc)  # type: ignore[arg-type]
    else:
        fps = fingerprint_batch([weigh(t, settings) for t in tokens], settings.bits, hashfunc)
    if not heads:
        return fps, []
    long = [i for i, t in enumerate(tokens) if len(t) > HEAD_TOKENS]
    head_fps: list[int | None] = [None] * len(norm)
    windows = [head_window(tokens[i], hashfunc) for i in long]
    if _unit_weights(settings, hashfunc):
        heads_of_long = feature_occurrence_fingerprints(windows, settings, hashfunc)  # type: ignore[arg-type]
    else:
        heads_of_long = fingerprint_batch([weigh(w, settings) for w in windows], settings.bits, hashfunc)
    for i, fp in zip(long, heads_of_long):
        head_fps[i] = fp
    return fps, head_fps


#: The fewest texts that ascii_feature_hashes takes: its numpy calls cost ~0.2 ms a batch,
#: so one text a call (a library loop) took 313 us against 93 with --shingle 3 (a review),
#: and from about 8-16 texts it is the faster.
ASCII_FEATURES_BATCH = 16


def _ascii_features(settings: Settings, hashfunc: HashFunc) -> bool:
    """Whether ascii_feature_hashes serves: character n-grams or word shingles (the word
    path takes single words), term frequencies, 64 bits, the default feature hash
    (xxh3-64, seed 0, which xxh3.hash_spans computes)."""
    return (
        (settings.tokenizer == "chars" or settings.shingle > 1)
        and settings.weights == "tf"
        and settings.top_k == 0
        and _default_hash(settings, hashfunc)
    )


def ascii_feature_hashes(texts: Sequence[str], settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, counts) as ascii_word_hashes gives them, of normalized ASCII texts'
    character n-grams (`--tokenizer chars`) or word shingles (`--shingle N`): both are
    spans of the text's \\w+ words joined by single spaces (features.char_ngrams,
    features.shingles), so the words are joined once, into one buffer, and the spans
    hashed there without a Python object per feature."""
    joined = [" ".join(words(t)) for t in texts]
    lengths = np.fromiter(map(len, joined), np.intp, len(joined))
    doc_starts = np.cumsum(lengths + 1) - lengths - 1  # a newline after each
    data = "\n".join(joined).encode("ascii")
    if settings.tokenizer == "chars":
        n = settings.ngram
        counts = np.where(lengths > n, lengths - n + 1, (lengths > 0).astype(np.intp))
        starts = np.repeat(doc_starts, counts) + _positions(counts)
        ends = starts + np.minimum(np.repeat(lengths, counts), n)
        return _spans_hash(settings.bits)(data, starts, ends), counts
    n = settings.shingle
    word_starts, word_ends = ascii_word_spans(data)
    per_doc = np.diff(np.searchsorted(word_starts, doc_starts), append=len(word_starts))
    counts = np.where(per_doc > n, per_doc - n + 1, (per_doc > 0).astype(np.intp))
    first_word = np.repeat(np.cumsum(per_doc) - per_doc, counts) + _positions(counts)
    last_word = first_word + np.minimum(np.repeat(per_doc, counts), n) - 1
    return _spans_hash(settings.bits)(data, word_starts[first_word], word_ends[last_word]), counts


def _positions(counts: np.ndarray) -> np.ndarray:
    """0 .. c - 1 for each c in counts, one after another."""
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


def head_window(tokens: list[str], hashfunc: HashFunc) -> list[str]:
    """A document's head: the HEAD_TOKENS tokens from the one with the smallest feature
    hash among those with HEAD_TOKENS - 1 tokens after them (ties: the earliest).

    An edit moves the window only if it changes which token that is: a header or footer
    added or removed, or an end cut off, leaves it where it was unless the smallest hash
    is in the part edited, which is about as likely as that part's share of the text."""
    many = getattr(hashfunc, "many", None)
    hashes = many(tokens) if many is not None else [hashfunc(t) for t in tokens]
    starts = range(len(tokens) - HEAD_TOKENS + 1)
    start = min(starts, key=hashes.__getitem__)  # min() keeps the first of equal keys
    return tokens[start : start + HEAD_TOKENS]


def head_starts(hashes: np.ndarray, first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """head_window()'s start in each run of token hashes: runs[i] is hashes[first[i]:
    first[i] + counts[i]], each longer than HEAD_TOKENS; positions into `hashes`. Hashes
    of 128 bits (rows of low and high words) are compared by their rank among them."""
    if hashes.ndim == 2:  # a stable sort: of equal hashes, the earlier ranks lower
        order = np.lexsort((hashes[:, 0], hashes[:, 1]))
        hashes = np.empty(len(order), np.int64)
        hashes[order] = np.arange(len(order))
    span = counts - HEAD_TOKENS + 1  # the starts a window can have in each run
    span_first = np.cumsum(span) - span
    local = np.arange(int(span.sum())) - np.repeat(span_first, span)
    candidates = hashes[np.repeat(first, span) + local]
    smallest = np.repeat(np.minimum.reduceat(candidates, span_first), span)
    at = np.flatnonzero(candidates == smallest)
    # The first candidate equal to its run's smallest: the earliest of equal hashes.
    return first + local[at[np.searchsorted(at, span_first)]]


def occurrence_head_fingerprints(hashes: np.ndarray, counts: np.ndarray) -> list[int | None]:
    """occurrence_fingerprints() of each run's head_window() of hashes; None for a run
    of HEAD_TOKENS or fewer (its head would be the whole document)."""
    long = counts > HEAD_TOKENS
    out: list[int | None] = [None] * len(counts)
    if not long.any():
        return out
    first = head_starts(hashes, (np.cumsum(counts) - counts)[long], counts[long])
    take = (first[:, None] + np.arange(HEAD_TOKENS)).ravel()
    found = occurrence_fingerprints(hashes[take], np.full(len(first), HEAD_TOKENS, np.intp))
    for i, fp in zip(np.flatnonzero(long).tolist(), found):
        out[i] = fp
    return out


def compiled_serves(settings: Settings) -> bool:
    """Whether the compiled core (compiled_core) does text without Han under these settings
    with the default feature hash: it was built, and other tokens, weights, shingles or
    bits take the numpy path."""
    return (
        ascii_batch is not None
        and settings.bits == 64
        and _occurrence_path(settings, FeatureHasher(settings.bits, settings.seed))
    )


def _occurrence_path(settings: Settings, hashfunc: HashFunc) -> bool:
    """Whether a document's column sums are the sums over its token occurrences.

    With `weights="tf"` (and no top-k) weigh() gives each word its count, so summing
    +-1 per occurrence is the same sum, exactly (integers); tests compare the two paths
    on random text, so a change to weigh() that breaks this shows there. Only for the
    default feature hash: xxh3-64 (or xxh3-128 at 128 bits) with seed 0 is what
    xxh3.hash_spans (hash_spans128) computes. The compiled core takes 64 bits only.
    """
    return (
        settings.tokenizer in ("auto", "words")
        and settings.shingle == 1
        and settings.weights == "tf"
        and settings.top_k == 0
        and _default_hash(settings, hashfunc)
    )


def _default_hash(settings: Settings, hashfunc: HashFunc) -> bool:
    """Whether features are hashed as xxh3.hash_spans (64 bits) or hash_spans128 (128)
    hash them: xxh3 of the fingerprint's width with seed 0, by the FeatureHasher itself."""
    return (
        settings.bits in (64, 128)
        and settings.seed == 0
        and type(hashfunc) is FeatureHasher
        and hashfunc.bits == settings.bits
        and hashfunc.seed == 0
    )


def _spans_hash(bits: int) -> Callable[[bytes, np.ndarray, np.ndarray], np.ndarray]:
    """xxh3.hash_spans for 64 bits, hash_spans128 (rows of low and high words) for 128."""
    return hash_spans if bits == 64 else hash_spans128


def _unit_weights(settings: Settings, hashfunc: HashFunc) -> bool:
    """Whether each feature occurrence (tf), or each distinct feature (binary), weighs 1
    under these settings, with a FeatureHasher of the fingerprint's bits: then the column
    sums are the +-1 sums over them, which occurrence_fingerprints counts in byte lanes,
    where fingerprint_batch multiplies a float64 matrix of (features, bits) signs by their
    weights (`--tokenizer chars` of 50,000 English lines: 25 s, where the default words
    take 0.65; most of it that matrix; `fingerprint --bits 128` of 30,000: 3.5-3.9 s,
    1.3 s in lanes)."""
    return (
        settings.weights in ("tf", "binary")
        and settings.top_k == 0
        and isinstance(hashfunc, FeatureHasher)
        and hashfunc.bits == settings.bits
        # at 128 bits FeatureHasher's own hashes only, ints below 2 ** 128 (hash_words);
        # a subclass's go through hash_bits, which checks them (a review)
        and (settings.bits == 64 or type(hashfunc) is FeatureHasher)
    )


def feature_occurrence_fingerprints(
    tokens: list[list[str]], settings: Settings, hashfunc: FeatureHasher
) -> list[int | None]:
    """fingerprint_batch([weigh(t, settings) for t in tokens]) where _unit_weights:
    the same sums, exactly (integers), so the same fingerprints; tests compare the two."""
    if settings.weights == "binary":
        tokens = [list(dict.fromkeys(t)) for t in tokens]  # each distinct feature once
    counts = np.fromiter(map(len, tokens), np.intp, len(tokens))
    return occurrence_fingerprints(
        hash_words(hashfunc.many(list(chain.from_iterable(tokens))), hashfunc.bits), counts
    )


def hash_words(hashes: list[int], bits: int) -> np.ndarray:
    """Feature hashes of `bits` bits (64 or 128) as uint64: shape (n,) for 64 bits, (n, 2)
    for 128 with the low word first."""
    if bits == 64:
        return np.array(hashes, dtype=np.uint64)
    return np.frombuffer(b"".join([h.to_bytes(16, "little") for h in hashes]), "<u8").reshape(-1, 2)


_LANE_MASK = np.uint64(0x0101010101010101)
_LANE_SHIFTS = [np.uint64(j) for j in range(8)]
#: Tokens summed in one byte lane before it could overflow.
_LANE_MAX = 255


def ascii_word_fingerprints(texts: Sequence[str]) -> list[int | None]:
    """64-bit fingerprints of normalized ASCII texts: \\w+ tokens, term-frequency
    weights, xxh3-64; None for a text without a word."""
    return occurrence_fingerprints(*ascii_word_hashes(texts))


def word_hashes(texts: Sequence[str], hasher: FeatureHasher) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, counts): the hashes of texts' \\w+ words, one run per text, and how many
    each text has; for any text (ascii_word_hashes: the same, faster, for ASCII text)."""
    tokens = [words(t) for t in texts]
    counts = np.fromiter(map(len, tokens), np.intp, len(tokens))
    return hash_words(hasher.many(list(chain.from_iterable(tokens))), hasher.bits), counts


def ascii_word_hashes(texts: Sequence[str], bits: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, counts): the xxh3 hashes of ASCII texts' \\w+ words (64 bits; 128: rows of
    low and high words, hash_words), one run per text, and how many each text has. The
    whole batch is one buffer in which numpy finds the words (features.ascii_word_spans)
    and hashes them (xxh3.hash_spans, hash_spans128), without a Python object per word."""
    n = len(texts)
    # A space between documents: no word runs from one into the next.
    data = " ".join(texts).encode("ascii")
    doc_starts = np.zeros(n, dtype=np.intp)
    if n > 1:
        np.cumsum([len(t) + 1 for t in texts[:-1]], out=doc_starts[1:])
    starts, ends = ascii_word_spans(data)
    counts = np.diff(np.searchsorted(starts, doc_starts), append=len(starts))
    return _spans_hash(bits)(data, starts, ends), counts


def occurrence_fingerprints(hashes: np.ndarray, counts: np.ndarray) -> list[int | None]:
    """Fingerprints of documents given as runs of token hashes (uint64, the first
    counts[0] for document 0, and so on), each occurrence weighing 1; None for a
    document without tokens. 64 bits; with hashes of shape (n, 2), the words of 128-bit
    hashes (low word first, hash_words), 128 bits, each word's bits counted alike."""
    fps: list[int | None] = [None] * len(counts)
    present = np.flatnonzero(counts)
    if not len(present):
        return fps
    if hashes.ndim == 1:
        found = _majority_bits(hashes, counts, present)
    else:
        low, high = (_majority_bits(np.ascontiguousarray(hashes[:, w]), counts, present) for w in (0, 1))
        found = [lo | hi << 64 for lo, hi in zip(low, high)]
    for d, fp in zip(present.tolist(), found):
        fps[d] = fp
    return fps


def _majority_bits(hashes: np.ndarray, counts: np.ndarray, present: np.ndarray) -> list[int]:
    """The 64-bit fingerprint of each document of `present` (those with tokens) from its
    run of token hashes (uint64): bit i set where more than half its tokens have it.

    Per document and bit, numpy counts the tokens whose hash has that bit set; bit i is
    1 when more than half of them have it (the +-1 sum is then > 0). The count runs in
    byte lanes: (h >> j) & 0x0101..01 puts bits j, j+8, ..., j+56 in the eight bytes of
    one uint64, so one addition counts eight bits at once, for at most 255 tokens
    before a byte could overflow; longer documents are summed in pieces.
    """
    first = np.cumsum(counts) - counts
    # Pieces of at most _LANE_MAX tokens, each within one document, in token order.
    c = counts[present]
    pieces = (c + _LANE_MAX - 1) // _LANE_MAX
    piece_doc = np.repeat(np.arange(len(present)), pieces)
    piece_no = np.arange(len(piece_doc)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    piece_starts = first[present][piece_doc] + _LANE_MAX * piece_no
    # One lane at a time: 8 bytes of scratch per token, however long the documents.
    sums = np.empty((len(piece_starts), 8), dtype=np.uint64)
    lane = np.empty_like(hashes)
    for j, shift in enumerate(_LANE_SHIFTS):
        np.right_shift(hashes, shift, out=lane)
        lane &= _LANE_MASK
        sums[:, j] = np.add.reduceat(lane, piece_starts)
    sums = sums.view(np.uint8).reshape(-1, 8, 8)
    if len(piece_doc) == len(present):
        ones = sums.astype(np.int64)
    else:
        ones = np.add.reduceat(sums.astype(np.int64), np.cumsum(pieces) - pieces, axis=0)
    # ones[d, j, b] counts bit 8b + j; bit order i = 8b + j is the (b, j) transpose.
    ones = ones.transpose(0, 2, 1).reshape(-1, 64)
    packed = np.packbits(2 * ones > c[:, None], axis=1, bitorder="little")
    return packed.view("<u8").ravel().tolist()  # type: ignore[no-any-return]


def distance(a: int, b: int) -> int:
    """Hamming distance: the number of bits in which two fingerprints (ints >= 0, of any
    width: 2 ** 64 is a 128-bit one) differ."""
    if type(a) is not int or type(b) is not int:  # a float or a string, a bool
        bad = a if type(a) is not int else b
        if isinstance(bad, bool) or not isinstance(bad, numbers.Integral):
            raise ValueError(f"a fingerprint is an int, not {bad!r}")
        a, b = int(a), int(b)  # numpy integers
    if a < 0 or b < 0:
        raise ValueError(f"fingerprints are ints >= 0, not {min(a, b)}")
    return (a ^ b).bit_count()


def format_fingerprint(fp: int, bits: int = 64) -> str:
    """Unsigned, zero-padded lowercase hex: bits / 4 digits (16 for 64 bits, 32 for 128).
    A value outside 0 .. 2 ** bits - 1 is refused (ValueError), not printed longer or signed."""
    # The common case, checked and formatted at once.
    if type(fp) is int and bits == 64 and 0 <= fp <= _MASK64:
        return f"{fp:016x}"
    if isinstance(fp, bool) or not isinstance(fp, numbers.Integral):  # True was 0000000000000001 (a trial)
        raise TypeError(f"a fingerprint is an int, not {type(fp).__name__}")
    fp = int(fp)
    if isinstance(bits, bool) or not isinstance(bits, int) or bits < 64 or bits % 64:
        raise ValueError(f"fingerprints are 64 bits or a multiple of 64, not {bits!r}")
    if not 0 <= fp < 1 << bits:
        raise ValueError(f"not a {bits}-bit fingerprint: {fp!r}")
    return f"{fp:0{bits // 4}x}"


def text_rows(work: Sequence[str | Features]) -> Sequence[int]:
    """The positions of a batch's texts (not its features): all of AsciiLines', whose
    lines are not decoded to tell."""
    if isinstance(work, AsciiLines):
        return range(len(work))
    return [i for i, w in enumerate(work) if isinstance(w, str)]


def fingerprint_work(
    work: Sequence[str | Features], settings: Settings, hasher: HashFunc, compiled: bool = False
) -> list[int | None]:
    """Fingerprints of a batch of texts (through text_batch_fingerprints, `compiled` as
    there) or ready features (through fingerprint_batch), in order; None for empty ones."""
    texts = text_rows(work)
    if len(texts) == len(work):
        return text_batch_fingerprints(work, settings, hasher, compiled)  # type: ignore[arg-type]
    fps: list[int | None] = [None] * len(work)
    given = [i for i, w in enumerate(work) if not isinstance(w, str)]
    for i in given:  # bytes for a text were "features ... not bytes", numbered among the features (a trial)
        if type(work[i]) is not dict and not isinstance(work[i], Mapping):
            what = type(work[i]).__name__
            said = f"a text is a str, features a {{feature: weight}} mapping, not {what}"
            raise TypeError(f"document {i} of the batch: {said}")
    for i, fp in zip(given, fingerprint_batch([work[i] for i in given], settings.bits, hasher)):  # type: ignore[misc]
        fps[i] = fp
    if texts:
        for i, fp in zip(
            texts, text_batch_fingerprints([work[i] for i in texts], settings, hasher, compiled)
        ):  # type: ignore[misc]
            fps[i] = fp
    return fps
