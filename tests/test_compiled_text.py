"""The compiled core for ASCII text (compiled_text.py, _textcore.c) gives what the numpy path
gives, and the commands and the library use it from their first document without changing
a byte."""

from __future__ import annotations

import string
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import xxhash
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdedup import Document, Settings, dedup, fingerprint_texts
from simdedup import compiled_text as compiled_text_module
from simdedup import features as features_module
from simdedup import fingerprint as fingerprint_module
from simdedup import parallel as parallel_module
from simdedup import pipeline as pipeline_module
from simdedup import read as read_module
from simdedup import sketch as sketch_module
from simdedup.cli import main
from simdedup.compiled_text import ascii_batch, text_spans
from simdedup.fingerprint import FeatureHasher, text_batch_fingerprints
from simdedup.parallel import chunk_task
from simdedup.sketch import OnePermutation, fingerprints_and_sketches, shingle_hashes
from simdedup.xxh3 import VECTORIZED_MAX

# Words of every xxh3 length class, a few repeating often (so byte lanes fill), in mixed
# case, between punctuation and whitespace that are not \w.
_WORD = st.one_of(
    st.sampled_from(["the", "a", "of", "Data", "x_1", "2026", "_", "Z"]),
    st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=VECTORIZED_MAX + 2),
)
# Words with letters past ASCII: accented, Cyrillic, Greek (final sigma), kana, Hangul,
# capitals that fold to other letters or to two (ẞ, İ, ǅ), a ligature, superscript and
# circled digits and full-width letters that NFKC changes, combining marks (U+0345 folds
# to a letter), astral letters; up to 70 characters, so that some pass 128 bytes of UTF-8.
_LETTERS = "éÉèçÇñÑßẞİıøØåÅабвгдАБВГДёЁαβγσςΣΩάあいうカキ한국어ǅǆﬁ²①Ａｚ\u0301\u0345𝐀𐐀"
_OTHER_WORD = st.text(_LETTERS + "ab_1", min_size=1, max_size=70)
_GAP = st.text(" \t\n.,;:!?-'\"()/\\@#$%^&*+=<>[]{}|~`", min_size=1, max_size=3)


@st.composite
def ascii_text(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORD, max_size=draw(st.sampled_from([3, 40, 300]))))
    gaps = draw(st.lists(_GAP, min_size=len(words) + 1, max_size=len(words) + 1))
    return "".join(g + w for g, w in zip(gaps, words)) + gaps[-1]


# Between ASCII words, characters that are only separators (curly quotes, dashes, a
# no-break space, an ellipsis, an acute accent that NFKC makes a space and a mark), and
# ones that are not: a combining mark, full-width and superscript forms, a ligature and
# a fraction whose NFKC holds word characters, letters; and any character at all.
_OTHER_GAP = st.one_of(
    st.sampled_from(list("’‘“”—–…•\u00a0\u3000\u2028\u200b\x85´¨")),
    st.sampled_from(list("\u0301é²ﬁ½™①Ａ中ß")),
    st.characters(exclude_categories=("Cs",)),
)


@st.composite
def separated_text(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORD | _OTHER_WORD, max_size=draw(st.sampled_from([3, 40, 300]))))
    gaps = draw(st.lists(_GAP | _OTHER_GAP, min_size=len(words) + 1, max_size=len(words) + 1))
    return "".join(g + w for g, w in zip(gaps, words)) + gaps[-1]


_TEXTS = st.lists(
    st.one_of(
        ascii_text(),
        separated_text(),
        st.sampled_from(
            [
                "",
                "   ",
                "Café au lait",
                "中文的文本 and English",
                "naïve words",
                "don’t — ok…",
                "cafe\u0301 au lait, ﬁne",
            ]
        ),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(texts=_TEXTS)
def test_compiled_fingerprints_heads_and_sketches_are_the_numpy_paths(texts: list[str]) -> None:
    s, hasher = Settings(), FeatureHasher(64)
    numpy_fps, numpy_sketches, numpy_heads = fingerprints_and_sketches(texts, s, hasher)
    fps, sketches, heads = fingerprints_and_sketches(texts, s, hasher, compiled=True)
    assert fps == numpy_fps
    assert heads == numpy_heads
    assert np.array_equal(sketches, numpy_sketches)
    assert text_batch_fingerprints(texts, s, hasher, compiled=True) == numpy_fps


# Texts of about 61 distinct shingles (the most an exact sketch holds), or of a few
# repeated many times: a sketch of bins, an exact sketch, or one that only its distinct
# shingles (not its bins) leave a sketch of bins.
_FEW_SHINGLES = st.lists(
    st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]), min_size=55, max_size=75
).map(" ".join) | st.integers(1, 400).map(lambda n: "ab cd " * n)


@settings(max_examples=100, deadline=None)
@given(
    texts=st.lists(ascii_text() | _FEW_SHINGLES, min_size=1, max_size=6),
    bits=st.sampled_from([2, 4, 8]),
    exact=st.sampled_from([0, 1, 40, 61]),
)
def test_compiled_sketches_of_other_codes_are_the_numpy_ones(texts: list[str], bits: int, exact: int) -> None:
    sketcher = OnePermutation(bits=bits, exact=exact)
    _, _, sketches, done = ascii_batch(texts, False, sketcher.bins, bits, exact)
    expected = sketcher.sketch(*shingle_hashes(texts))
    assert np.array_equal(sketches[done], expected[done])


def test_the_c_core_writes_all_of_each_sketch_whatever_its_buffer_held() -> None:
    from simdedup import _textcore

    # Exact sketches (up to 12 shingles) and sketches of bins.
    texts = ["the cat sat on the mat", "a b", "ab cd " * 30, " ".join(f"w{i}" for i in range(40))]
    _, _, expected, _ = ascii_batch(texts, False, 1024, 2, 12)
    data = " ".join(texts).encode()
    lengths = np.array([len(t) for t in texts], np.int64)
    starts = np.cumsum(lengths + 1) - lengths - 1
    n = len(texts)
    sketches = np.full((n, 256), 0xFF, np.uint8)
    outputs = [np.zeros(n, np.uint64), np.zeros(n, bool), np.zeros(n, np.uint64), np.zeros(n, bool)]
    _textcore.text_documents(
        data, starts, starts + lengths, False, 10, 2, 12, *outputs, sketches, np.zeros(n, bool)
    )
    assert np.array_equal(sketches, expected)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), texts=st.lists(ascii_text(), min_size=1, max_size=4), sketches=st.booleans())
def test_spans_cut_anywhere_in_the_bytes_are_read_as_those_bytes_alone(
    data: st.DataObject, texts: list[str], sketches: bool
) -> None:
    # The core finds words 64 bytes at a time over the whole buffer, so a span that
    # starts or ends inside a word, or inside a 64-byte word of bits, must still see
    # only its own bytes: the same as that span given on its own.
    raw = "".join(texts).encode()
    cuts = st.integers(0, len(raw))
    spans = data.draw(st.lists(st.tuples(cuts, cuts).map(sorted), min_size=1, max_size=8))
    starts = np.array([a for a, _ in spans], np.int64)
    ends = np.array([b for _, b in spans], np.int64)
    bins = 1024 if sketches else 0
    got = text_spans(raw, starts, ends, True, bins)
    expected = ascii_batch([raw[a:b].decode() for a, b in spans], True, bins)
    done = expected[3]
    assert got[3].tolist() == done.tolist()
    for g, e in zip(got[:2], expected[:2]):
        assert [x for x, ok in zip(g, done) if ok] == [x for x, ok in zip(e, done) if ok]
    if sketches:
        assert np.array_equal(got[2][done], expected[2][done])


@settings(max_examples=150, deadline=None)
@given(
    texts=_TEXTS,
    end=st.sampled_from(["", "\n", "\r\n"]),
    first=st.sampled_from([1, 7]),
    raw=st.booleans(),
    sketches=st.booleans(),
    longest=st.sampled_from([read_module.MAX_DOC_SIZE, 40]),
    broken=st.booleans(),
)
def test_a_chunk_of_plain_lines_gives_what_reading_it_line_by_line_gives(
    texts: list[str], end: str, first: int, raw: bool, sketches: bool, longest: int, broken: bool
) -> None:
    # The chunk's ASCII bytes go to the core without being decoded, other UTF-8 decoded
    # at once (read.plain_documents); the documents, problems and results are
    # read_chunk's and the numpy path's. A byte that is not UTF-8 leaves it to read_chunk.
    data = ("\n".join(texts) + end).encode() + (b"\ncaf\xe9 au lait" if broken else b"")
    chunk = read_module.Chunk("in.txt", first, data)
    options = read_module.ReadOptions(max_doc_size=longest)
    got = chunk_task(Settings(), options, sketches, raw)(chunk)
    with mock.patch.object(parallel_module, "plain_documents", lambda *_: None):
        expected = chunk_task(Settings(), options, sketches, raw)(chunk)
    assert got[:2] == expected[:2]
    if expected[2] is None:  # no lines
        assert got[2] is None
    elif sketches:
        assert got[2][0] == expected[2][0] and got[2][2] == expected[2][2]
        assert np.array_equal(got[2][1], expected[2][1])
    else:
        assert got[2] == expected[2]


def test_plain_lines_are_the_chunks_bytes_or_its_text_decoded_at_once() -> None:
    options = read_module.ReadOptions(max_doc_size=20)
    docs, lines = read_module.plain_documents(
        read_module.Chunk("a.txt", 5, b"One two\n\nthree"), options, True
    )
    assert docs == [
        Document("a.txt:5", "", b"One two"),
        Document("a.txt:6", "", b""),
        Document("a.txt:7", "", b"three"),
    ]
    assert (list(lines), lines[0], list(lines[1:])) == (["One two", "", "three"], "One two", ["", "three"])
    assert read_module.plain_documents(read_module.Chunk("a.txt", 5, b"x\n"), options, False)[0] == [
        Document("a.txt:5", "", b"")
    ]
    docs, lines = read_module.plain_documents(
        read_module.Chunk("a.txt", 5, b"caf\xc3\xa9\nb\n"), options, True
    )
    assert docs == [Document("a.txt:5", "", b"caf\xc3\xa9"), Document("a.txt:6", "", b"b")]
    assert lines == ["café", "b"]
    for name, first, data in [
        ("a.txt", 1, b"the first lines of a file\n"),  # checked for other formats
        ("a.txt", 5, b"caf\xe9\n"),  # not UTF-8: read_chunk says where
        ("a.txt", 5, b"a line ending in CR LF\r\n"),
        ("a.jsonl", 5, b'{"text": "a record"}\n'),
        ("a.txt", 5, b"a line of over twenty bytes\n"),
    ]:
        assert read_module.plain_documents(read_module.Chunk(name, first, data), options, True) is None


def test_a_word_longer_than_the_vectorized_hash_is_left_to_the_numpy_path() -> None:
    long_word = "w" * (VECTORIZED_MAX + 1)
    fps, heads, _, done = ascii_batch(["short text", f"a {long_word} b", "x" * VECTORIZED_MAX], True, 0)
    assert done.tolist() == [True, False, True]
    assert fps[2] == xxhash.xxh3_64_intdigest(b"x" * VECTORIZED_MAX)  # one word: its own hash
    mixed = ["short text", f"a {long_word} b"]
    assert text_batch_fingerprints(mixed, Settings(), compiled=True) == text_batch_fingerprints(
        mixed, Settings()
    )


def test_other_settings_do_not_use_the_core() -> None:
    texts = ["the same words", "THE SAME WORDS again"]
    for s in (Settings(weights="tfidf"), Settings(shingle=2), Settings(bits=128), Settings(seed=1)):
        assert text_batch_fingerprints(texts, s, compiled=True) == text_batch_fingerprints(texts, s)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_scan_and_fingerprint_write_the_same_bytes_with_the_core(
    tmp_path: Path, jobs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"Line {i} of the file, with words that repeat: the cat sat on mat {i % 7}" for i in range(600)]
    lines += ["A line with one word of " + "x" * 200, "Ünïcode line", ""] + lines[:50]
    # Chunks of text past ASCII too: Cyrillic, emoji, Chinese (jieba's words), ß.
    lines += [f"Привет Мир, это строка {i % 9} 👍 — Straße {i % 4}" for i in range(80)]
    lines += [f"中文的文本 line {i % 5}" for i in range(30)]
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n")
    folder = tmp_path / "docs"  # a directory's files go through fingerprint_batches
    folder.mkdir()
    for i, line in enumerate(lines[::20]):
        (folder / f"{i:03}.txt").write_text(line + " and more words of a page " * 3)
    # Chunks of 1,000 bytes, so that -j 2 hands most of them to its workers.
    monkeypatch.setattr(read_module, "FIRST_CHUNK_BYTES", 100)
    monkeypatch.setattr(read_module, "CHUNK_BYTES", 1000)
    monkeypatch.setattr(pipeline_module, "DECIDED_CHUNK_BYTES", 1000)
    runs = {}
    for core in (True, False):
        if not core:  # as installed without a C compiler; workers (forked from here) too
            monkeypatch.setattr(fingerprint_module, "ascii_batch", None)
            monkeypatch.setattr(fingerprint_module, "text_spans", None)
        outputs = []
        for args in (
            ["scan", str(path), "--format", "tsv"],
            ["scan", str(folder)],
            ["fingerprint", str(path)],
            ["filter", str(path)],
        ):
            result = CliRunner().invoke(main, [*args, "-j", jobs], catch_exceptions=False)
            assert result.exit_code == 0, result.stderr
            outputs.append(result.stdout)
        runs[core] = outputs
    assert runs[True] == runs[False]
    assert runs[True][0].count("\n") > 50 and "duplicate" in runs[True][1]


def test_a_head_starts_at_the_first_of_equal_smallest_hashes() -> None:
    # w5838 has the smallest xxh3 of w0 .. w199999, so the head window starts at one of
    # its two places: the first, which head_window() takes too.
    words = [f"w{i}" for i in range(40)]
    words[3] = words[6] = "w5838"
    text = " ".join(words)
    _, heads, _, _ = ascii_batch([text], heads=True)
    assert heads == fingerprints_and_sketches([text], Settings(), FeatureHasher(64))[2]
    window = ascii_batch([" ".join(words[3:35]), " ".join(words[6:38])], heads=False)[0]
    assert heads == window[:1] != window[1:]


@pytest.mark.parametrize("verify", [0.8, None])
def test_the_library_uses_the_core_from_its_first_document(
    monkeypatch: pytest.MonkeyPatch, verify: float | None
) -> None:
    texts = [f"Document {i}: the same few words, over and over, {i % 50}" for i in range(600)]
    docs = [Document(str(i), t, b"") for i, t in enumerate(texts)]
    runs = {}
    for core in (True, False):
        made = mock.Mock(
            wraps=fingerprint_module.compiled_core, side_effect=None if core else lambda *_: None
        )
        monkeypatch.setattr(fingerprint_module, "compiled_core", made)
        monkeypatch.setattr(sketch_module, "compiled_core", made)
        decisions = [(d.status, d.row, d.fingerprint) for d in dedup(docs[:5], verify=verify)]
        by_dedup = made.call_count
        fps = fingerprint_texts(texts[:5])
        runs[core] = (decisions, fps, [by_dedup, made.call_count - by_dedup])
        monkeypatch.undo()
    assert runs[True][:2] == runs[False][:2]
    assert runs[True][2] == runs[False][2] == [1, 1]  # asked for its first five documents


def test_the_c_core_shares_the_python_modules_constants() -> None:
    from simdedup import _textcore
    from simdedup.fingerprint import _LANE_MAX
    from simdedup.settings import HEAD_TOKENS

    assert (_textcore.HEAD_TOKENS, _textcore.VECTORIZED_MAX) == (HEAD_TOKENS, VECTORIZED_MAX)
    assert (_LANE_MAX, int(sketch_module._EMPTY)) == (_textcore.LANE_MAX, _textcore.EMPTY)
    assert (_textcore.EXACT_MARK, _textcore.EXACT_MOST) == (
        sketch_module.EXACT_MARK,
        sketch_module.EXACT_SHINGLES,
    )
    reads = (
        _textcore.WORD_BYTES,
        _textcore.SEPARATOR,
        _textcore.TO_FOLD,
        _textcore.NOT_READ,
        _textcore.UNSEEN,
    )
    assert reads == (
        features_module.WORD_BYTES,
        features_module.SEPARATOR,
        features_module.TO_FOLD,
        features_module.NOT_READ,
        compiled_text_module._UNSEEN,
    )
    assert _textcore.SEVERAL_MOST == compiled_text_module._SEVERAL_MOST


def test_the_c_core_refuses_bounds_and_outputs_that_do_not_fit() -> None:
    from simdedup import _textcore

    def outputs(n: int) -> list[np.ndarray]:
        return [np.zeros(n, np.uint64), np.zeros(n, bool), np.zeros(n, np.uint64), np.zeros(n, bool)]

    bounds = np.array([0], np.int64), np.array([9], np.int64)
    with pytest.raises(ValueError, match="outside 4 bytes"):
        _textcore.text_documents(
            b"abcd", *bounds, True, 0, 2, 0, *outputs(1), np.zeros(0, np.uint8), np.zeros(1, bool)
        )
    with pytest.raises(ValueError, match="fps"):
        _textcore.text_documents(
            b"abcdefghij", *bounds, True, 0, 2, 0, *outputs(2), np.zeros(0, np.uint8), np.zeros(1, bool)
        )
    with pytest.raises(ValueError, match="sketches"):
        _textcore.text_documents(
            b"abcdefghij", *bounds, True, 4, 2, 0, *outputs(1), np.zeros(3, np.uint8), np.zeros(1, bool)
        )
    for exact, bins in (
        (62, 10),
        (-1, 10),
        (1, 4),
    ):  # more than fit in 256 bytes; in 4 (2 ** 4 bins of 2 bits)
        with pytest.raises(ValueError, match="exact"):
            _textcore.text_documents(
                b"abcdefghij",
                *bounds,
                True,
                bins,
                2,
                exact,
                *outputs(1),
                np.zeros(1 << bins >> 2, np.uint8),
                np.zeros(1, bool),
            )
    with pytest.raises(TypeError):  # read-only outputs
        _textcore.text_documents(
            b"abcdefghij",
            *bounds,
            True,
            0,
            2,
            0,
            b"12345678",
            *outputs(1)[1:],
            np.zeros(0, np.uint8),
            np.zeros(1, bool),
        )


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=3000)
    | st.lists(st.sampled_from([b"\n", b"ab", b"\r\n", b"x" * 70])).map(b"".join)
)
def test_line_ends_by_memchr_are_numpys(data: bytes) -> None:
    # read.plain_lines finds a chunk's lines with the text core's memchr loop; without a
    # C compiler, with numpy.
    got = read_module.line_ends(data)
    with mock.patch.object(read_module, "_c_line_ends", None):
        expected = read_module.line_ends(data)
    assert read_module._c_line_ends is not None and got.dtype == np.int64
    assert np.array_equal(got, expected) and got.flags.writeable


def test_the_core_reads_text_past_ascii_without_han() -> None:
    # Accents, capitals to fold (Ç, П, М, Σ; ẞ into two letters), symbols and emoji
    # between words, full-width punctuation (not NFKC): read by the core, as UTF-8 with a
    # space for each character that is not a word character. Han characters (jieba cuts
    # those; early in a text, late, or made by NFKC: U+2F00) and a lone surrogate (no
    # UTF-8) are left to the numpy path.
    texts = [
        "Ça va, naïve café",
        "Привет Мир ✨👍",
        "ΣΟΦΙΑ σοφία",
        "中文 text",
        "a\ud800b",
        "plain",
        "STRAẞE",
        "Привет！（мир）",
        "é " * 40 + "中文",
        "\u2f00 é",
    ]
    rows, data, starts, ends = compiled_text_module.core_spans(texts)
    assert rows.tolist() == [0, 1, 2, 5, 6, 7]
    read = [data[a:b].decode() for a, b in zip(starts.tolist(), ends.tolist())]
    assert read == [
        "ça va, naïve café",
        "привет мир" + " " * 3,  # a space a character
        "σοφια σοφία",
        "plain",
        "STRAssE",  # ẞ into two letters; the core folds ASCII itself
        "привет!(мир)",
    ]
    core = fingerprint_module.compiled_core(texts, Settings(), FeatureHasher(64))
    assert core is not None and core[0] == [0, 1, 2, 5, 6, 7]
    assert core[1] == text_batch_fingerprints([texts[i] for i in core[0]], Settings())


def test_utf8_forms_refuses_buffers_that_do_not_fit() -> None:
    from simdedup import _textcore

    reads, folds, several = (
        compiled_text_module._READS,
        compiled_text_module._FOLDS,
        compiled_text_module._SEVERAL,
    )
    codes = np.frombuffer("abé".encode("utf-32-le"), "<u4")
    room = 4 * _textcore.SEVERAL_MOST * len(codes)  # a fold may be three code points of 4 bytes

    def call(
        ends: list[int], out: int = room, reads: np.ndarray = reads, several: np.ndarray = several
    ) -> None:
        n = len(ends)
        args = (np.zeros(out, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.uint8))
        _textcore.utf8_forms(codes, np.array(ends, np.int64), reads, folds, several, *args)

    call([1, 3])
    for ends, out, table, rows in (
        ([2, 1], room, reads, several),
        ([4], room, reads, several),
        ([3], room - 1, reads, several),
        ([3], room, reads[:-1], several),
        ([3], room, reads, several.ravel()[:-1]),
    ):
        with pytest.raises(ValueError, match="utf8_forms"):
            call(ends, out, table, rows)


def test_utf8_forms_reads_its_ends_before_it_writes() -> None:
    # `out` over `ends` (a review): its writes moved the ends it read next, past the
    # arrays, and the process crashed. The ends are copied first; what it writes there
    # is meaningless, but nothing outside the buffers is touched.
    from simdedup import _textcore

    tables = (compiled_text_module._READS, compiled_text_module._FOLDS, compiled_text_module._SEVERAL)
    shared = np.zeros(48, np.int64)  # 384 bytes: room for 32 code points
    ends = shared[:16]
    ends[:] = np.arange(1, 17) * 2
    out_ends, flags = np.zeros(16, np.int64), np.zeros(16, np.uint8)
    _textcore.utf8_forms(np.full(32, 0x41, np.uint32), ends, *tables, shared.view(np.uint8), out_ends, flags)
    assert out_ends.tolist() == list(range(2, 33, 2)) and not flags.any()


def test_every_fold_into_several_characters_reads_as_the_numpy_path_reads_it() -> None:
    # ß into ss, İ into i and a combining dot, ΐ into three: the compiled loop writes
    # each piece as it reads it (a separator as a space), from the first batch on.
    several = [chr(c) for c in range(0x110000) if len(chr(c).casefold()) > 1]
    assert len(several) >= 100
    texts = [t for c in several for t in (c, f"a{c}b", f"Word {c}{c} ß {c.upper()} ДОМ {c.lower()}")]
    texts += [" ".join(["alpha", "Beta" + c, "GAMMA", "Ωmega"] * 10) for c in several[::7]]
    s, hasher = Settings(), FeatureHasher(64)
    assert len(compiled_text_module.core_spans(texts)[0]) == len(texts)  # all read by the core
    for size in (len(texts), 7):
        for i in range(0, len(texts), size):
            batch = texts[i : i + size]
            fps, sketches, heads = fingerprints_and_sketches(batch, s, hasher, compiled=True)
            numpy_fps, numpy_sketches, numpy_heads = fingerprints_and_sketches(batch, s, hasher)
            assert (fps, heads) == (numpy_fps, numpy_heads) and np.array_equal(sketches, numpy_sketches)


def test_utf8_forms_does_not_read_a_fold_through_a_row_not_written() -> None:
    # A row of zeros (two threads took one row each and wrote one: a review) left the
    # character out without a word; the text is now left to the numpy path.
    from simdedup import _textcore

    reads, folds = compiled_text_module._READS.copy(), np.zeros(0x110000, np.uint32)
    reads[ord("ß")] = features_module.TO_FOLD
    folds[ord("ß")] = compiled_text_module._SEVERAL_ROW | 5  # a row of zeros
    codes = np.frombuffer("aßb".encode("utf-32-le"), "<u4")
    out, ends, flags = np.zeros(36, np.uint8), np.zeros(1, np.int64), np.zeros(1, np.uint8)
    _textcore.utf8_forms(
        codes, np.array([3], np.int64), reads, folds, np.zeros((8, 3), np.uint32), out, ends, flags
    )
    assert flags.tolist() == [1]
