"""Fingerprint and index settings, and everything derived from them, in one place.

A Settings value fully determines a document's fingerprint; the block layout of the
index follows from `bits` and `distance` and is never asked for separately.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from itertools import combinations
from typing import Literal

from .status import SettingsError

#: Bumped whenever the same text and settings could give a different fingerprint.
FINGERPRINT_SPEC_VERSION = 3

Tokenizer = Literal["auto", "words", "jieba", "chars"]
Weights = Literal["tf", "tfidf", "binary"]

TOKENIZERS: tuple[str, ...] = ("auto", "words", "jieba", "chars")
WEIGHTS: tuple[str, ...] = ("tf", "tfidf", "binary")
BIT_WIDTHS: tuple[int, ...] = (64, 128)
MAX_DISTANCE = 16
#: The default minimum Jaccard similarity (estimated from sketches) of a verified match.
MIN_JACCARD = 0.8
#: Verification's second candidate source: a fingerprint of this many consecutive tokens
#: of each document (its "head"), searched within the same distance. The window starts
#: at the token with the smallest feature hash among those with HEAD_TOKENS - 1 tokens
#: after them (ties: the earliest), so it stays put when the document is cut short or
#: gains or loses a header or a footer, unless the edit holds the start, and it finds
#: such copies, whose whole fingerprints moved (benchmarks/quality.md). Documents with
#: this many tokens or fewer have no head.
HEAD_TOKENS = 32
#: What a head covers, as index files record it (store.py): heads of another kind
#: (files written before the anchored window hold heads of the first 32 tokens) are
#: not read.
HEAD_SPEC = f"{HEAD_TOKENS} tokens from the smallest token hash"
#: A head's candidates are the first this many kept heads within the distance; a head
#: within the distance of more than this many is boilerplate (the navigation every page
#: of a site starts with) and is not kept.
HEAD_CROWD = 64
#: With --crowd N, a document kept while N or more indexed kept documents are within
#: the distance of it (before verification) is stored unindexed (verify.py): later
#: documents find it only as an exact copy (the same fingerprint and sketch). Text of few
#: distinct words, whose fingerprints coincide while their shingles do not verify, makes
#: every document a candidate of every later one, and the work grows with the square of
#: the input (README, Known limits). The default, 0, indexes every kept document: exact,
#: where 4,096 lost 102 of the 89,147 duplicates of 1M generated English lines.
CROWD = 0
#: The --crowd that the CLI suggests where documents meet this many kept ones each, on
#: average (CROWDED_MEAN), after CROWDED_AFTER documents.
SUGGESTED_CROWD = 1024
CROWDED_MEAN = 1000
CROWDED_AFTER = 20_000
#: The default distance k: 4 with verification on (benchmarks/quality.md); 3 finds too
#: few edited copies.
DEFAULT_DISTANCE = 4
#: Up to this distance the index keys its tables on pairs of blocks (see index_layout).
PAIRED_UP_TO = 6
#: The distances at which those pairs are the pairs inside two groups of distance + 3
#: blocks, not every pair of distance + 2 (see index_layout).
GROUPED = frozenset({4})


@dataclass(frozen=True)
class Settings:
    """How documents become fingerprints, and how near two fingerprints must be.

    tokenizer="jieba" is taken as "auto", which makes the same tokens of every text
    (features.tokens_of_normalized): the same settings, the same fast paths.

    >>> Settings(tokenizer="jieba") == Settings()
    True
    >>> Settings(distance=3).blocks
    ((0, 16), (16, 16), (32, 16), (48, 16))
    """

    tokenizer: Tokenizer = "auto"
    ngram: int = 3
    shingle: int = 1
    weights: Weights = "tf"
    top_k: int = 0
    bits: int = 64
    distance: int = DEFAULT_DISTANCE
    seed: int = 0
    #: Fold traditional Chinese to simplified before features are made.
    fold: bool = True

    def __post_init__(self) -> None:
        for name in ("ngram", "shingle", "top_k", "bits", "distance", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise SettingsError(f"{name} must be an integer, not {value!r}")
            object.__setattr__(self, name, int(value))  # a numpy integer becomes an int
        if not isinstance(self.fold, bool):
            raise SettingsError(f"fold must be True or False, not {self.fold!r}")
        if self.tokenizer not in TOKENIZERS:
            raise SettingsError(f"unknown tokenizer {self.tokenizer!r}")
        if self.weights not in WEIGHTS:
            raise SettingsError(f"unknown weighting {self.weights!r}")
        if self.bits not in BIT_WIDTHS:
            raise SettingsError(f"--bits must be one of {BIT_WIDTHS}, not {self.bits}")
        if not 0 <= self.distance <= MAX_DISTANCE:
            raise SettingsError(f"--distance must be 0..{MAX_DISTANCE}, not {self.distance}")
        if self.ngram < 1:
            raise SettingsError("--ngram must be at least 1")
        if self.shingle < 1:
            raise SettingsError("--shingle must be at least 1")
        if self.shingle > 1 and self.tokenizer == "chars":
            raise SettingsError("--shingle joins word tokens; it does not apply to --tokenizer chars")
        if self.top_k < 0:
            raise SettingsError("--top-k must be 0 (all features) or more")
        if not 0 <= self.seed < 1 << 64:  # the feature hash's seed, a 64-bit word: others wrapped
            # Settings(seed=...) only: the command line has no --seed and always uses 0.
            raise SettingsError(f"seed must be 0 .. 2 ** 64 - 1, not {self.seed}")
        if self.tokenizer == "jieba":
            object.__setattr__(self, "tokenizer", "auto")

    @property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        """(first bit, width) of each of the classic distance + 1 blocks (Manku et al.; the
        seed articles' four 16-bit blocks at distance 3). The index splits finer:
        index_layout."""
        return block_layout(self.bits, self.distance)


def block_layout(bits: int, distance: int) -> tuple[tuple[int, int], ...]:
    """Split `bits` into `distance + 1` contiguous blocks, as equal as they can be.

    By the pigeonhole principle two fingerprints within `distance` bits agree on at
    least one whole block. Wider blocks come first.
    """
    count = distance + 1
    if count > bits or count < 1:
        raise SettingsError(f"cannot split {bits} bits into {count} blocks")
    width, extra = divmod(bits, count)
    layout = []
    start = 0
    for i in range(count):
        w = width + (1 if i < extra else 0)
        layout.append((start, w))
        start += w
    return tuple(layout)


Keys = tuple[tuple[int, ...], ...]


def index_layout(bits: int, distance: int) -> tuple[tuple[tuple[int, int], ...], Keys]:
    """The BlockIndex's blocks, and the blocks each table keys on, in the tables' order.

    Up to distance 6: distance + 2 blocks, one table a pair. Two fingerprints within
    `distance` still agree on two whole blocks, and a pair of blocks makes a wider key
    than one block, which common words make hot less often (10 tables at distance 3,
    15 at 4 (now grouped, below), 28 at 6: 3.2 to 5.5 times faster than single blocks on
    benchmarks/layouts.py's corpus, for 3 to 4 times the memory). Beyond that: distance
    + 1 blocks, one each, to bound the memory (45 pair tables at distance 8).

    At the distances GROUPED: distance + 3 blocks in two groups (the first holding the
    smaller half), one table a pair inside a group: two fingerprints within `distance`
    agree on three blocks or more, and two of any three are in one group (9 tables at
    distance 4, against 15; no family of pairs does with fewer, by Turan's theorem;
    benchmarks/key_families.py).
    """
    if distance in GROUPED:
        blocks = block_layout(bits, distance + 2)
        half = len(blocks) // 2
        groups = (range(half), range(half, len(blocks)))
        return blocks, tuple(pair for group in groups for pair in combinations(group, 2))
    if distance <= PAIRED_UP_TO:
        return block_layout(bits, distance + 1), tuple(combinations(range(distance + 2), 2))
    return block_layout(bits, distance), tuple((b,) for b in range(distance + 1))
