"""Features: normalization, tokenizers, shingles, weights, top-k; jieba loads only when needed."""

from __future__ import annotations

import subprocess
import sys
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdedup import Settings, SettingsError, extract, normalize, tokenize
from simdedup.features import MARK_RUN, distinct


def test_normalize_applies_nfkc_and_case_folding() -> None:
    assert normalize("ＡＢＣ ﬁne Straße") == "abc fine strasse"


def test_normalize_folds_traditional_chinese_to_simplified_with_taiwan_phrasing() -> None:
    assert normalize("我們的軟體在網路上") == "我们的软件在网络上"
    assert normalize("我们的软件在网络上") == "我们的软件在网络上"


def test_normalize_folds_full_width_to_half_width_in_chinese_text() -> None:
    assert normalize("版本２．０，ＡＰＩ") == "版本2.0,api"


def test_no_fold_keeps_traditional_chinese() -> None:
    assert normalize("我們的軟體", fold=False) == "我們的軟體"
    assert tokenize("軟體", Settings(fold=False)) != tokenize("軟體", Settings())


def test_fold_leaves_text_without_chinese_alone() -> None:
    assert normalize("Ｈello Wörld", fold=True) == normalize("Ｈello Wörld", fold=False) == "hello wörld"


def test_traditional_and_simplified_copies_get_the_same_features() -> None:
    traditional = "這個軟體可以在網路上免費下載，支援 Linux 和 macOS。"
    simplified = "这个软件可以在网络上免费下载，支持 Linux 和 macOS。"
    assert extract(traditional, Settings()) == extract(simplified, Settings())
    assert "linux" in extract(traditional, Settings())


def test_words_are_unicode_word_tokens_without_punctuation() -> None:
    assert tokenize("Hello, world! Ça va? 42", Settings(tokenizer="words")) == [
        "hello",
        "world",
        "ça",
        "va",
        "42",
    ]


def test_auto_uses_jieba_for_chinese_and_keeps_english_words() -> None:
    tokens = tokenize("我爱北京天安门 and Python", Settings())
    assert tokens == ["我", "爱", "北京", "天安门", "and", "python"]


def test_mixed_text_cuts_han_runs_with_jieba_and_the_rest_into_unicode_words() -> None:
    # jieba.lcut would give "vimrc", "_", "example" and "3.14"; Latin text between Han
    # runs is cut the way English is, whatever the segmenter does with it.
    tokens = tokenize("编辑vimrc_example，版本3.14 (beta)", Settings())
    assert tokens == ["编辑", "vimrc_example", "版本", "3", "14", "beta"]


# Common characters, so that dictionary words as well as jieba's HMM (for unknown
# words) are exercised.
_COMMON_HAN = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"
    "同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自"
    "二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日"
    "那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变"
    "条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总"
    "次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指"
    "几九区强放决西被干做必战先回则任取据处理府研质"
)


# Characters where NFKC does something: full-width forms and the ideographic space
# (mapped first on the batch path), compatibility ideographs, ligatures, combining
# marks that compose with what precedes them, a lone surrogate (undecodable input),
# whitespace of several kinds.
_NFKC_TRICKY = (
    "ＡＺａｚ０９，．：（）！～\u3000\uff5f\uff00 \u00a0…︰﹔´ﬁ\u0301e\u0308\u212b豈聯我們軟體 a\n\t\u2003"
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=_NFKC_TRICKY + _COMMON_HAN[:40], max_size=30), max_size=6), st.booleans())
def test_normalize_many_gives_normalize_of_each_text(texts: list[str], fold: bool) -> None:
    from simdedup.features import normalize_many

    assert normalize_many(texts, fold) == [normalize(t, fold) for t in texts]
    # and normalize() is what it always was: NFKC, case folding, the Han steps
    for t in texts:
        assert normalize(t, fold=False) == _plain_normalize(t)


def test_normalize_many_keeps_a_lone_surrogate_in_text_without_han() -> None:
    from simdedup.features import normalize_many

    texts = ["ｘ\udcff…", "ok"]
    assert normalize_many(texts) == [normalize(t) for t in texts] == ["x\udcff...", "ok"]


def _plain_normalize(text: str) -> str:
    import re
    import unicodedata

    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(
        "(?<=[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])\\s+(?=[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])",
        "",
        text,
    )


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_COMMON_HAN, min_size=1, max_size=40))
def test_rjieba_cuts_han_text_into_the_same_words_as_jieba(text: str) -> None:
    import jieba

    from simdedup.features import jieba_words

    assert jieba_words(text) == jieba.lcut(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=_COMMON_HAN, min_size=1, max_size=12),
            st.text(alphabet="ab1_ ,.\n\t-", min_size=1, max_size=6),
        ),
        max_size=8,
    )
)
def test_jieba_words_equal_each_han_run_cut_alone_with_words_between(pieces: list[str]) -> None:
    """The one-call cut (runs joined by newlines) gives what cutting run by run gives."""
    import re

    import rjieba

    from simdedup.features import jieba_words

    text = "".join(pieces)
    expected: list[str] = []
    for i, part in enumerate(re.split("([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)", text)):
        expected += rjieba.cut(part) if i % 2 else re.findall(r"\w+", part)
    assert jieba_words(text) == expected


# Han (common, an unassigned compatibility ideograph, extension B), Latin, digits,
# underscores, kana, an accented letter, full-width and ASCII punctuation, whitespace,
# an emoji and a lone surrogate: every kind of boundary jieba_words() draws.
_MIXED = _COMMON_HAN[:20] + "\ufa6e\U00020000ab1_ \u3042\u00e9,\uff0c.\n\t-\U0001f600\udc80"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=_MIXED, max_size=30), max_size=6))
def test_jieba_words_of_a_batch_are_each_texts_jieba_words(texts: list[str]) -> None:
    from simdedup.features import jieba_words, jieba_words_many

    tokens, counts = jieba_words_many(texts)
    each = [jieba_words(t) for t in texts]
    assert counts.tolist() == [len(w) for w in each]
    assert tokens == [w for words in each for w in words]


def test_auto_uses_plain_words_without_chinese() -> None:
    assert tokenize("no chinese here", Settings()) == ["no", "chinese", "here"]


def test_char_ngrams_ignore_whitespace_and_punctuation() -> None:
    s = Settings(tokenizer="chars", ngram=3)
    assert tokenize("ab,  cd", s) == ["ab ", "b c", " cd"]
    assert tokenize("ab cd", s) == tokenize("ab,\n\ncd!", s)


def test_a_text_shorter_than_the_ngram_is_one_feature() -> None:
    assert tokenize("ab", Settings(tokenizer="chars", ngram=5)) == ["ab"]


def test_shingles_join_consecutive_words() -> None:
    assert tokenize("a b c d", Settings(tokenizer="words", shingle=3)) == ["a b c", "b c d"]
    assert tokenize("a b", Settings(tokenizer="words", shingle=3)) == ["a b"]


def test_tf_weights_count_occurrences() -> None:
    assert extract("a b a c a", Settings(weights="tf")) == {"a": 3.0, "b": 1.0, "c": 1.0}


def test_binary_weights_are_one_per_distinct_feature() -> None:
    assert extract("a b a", Settings(weights="binary")) == {"a": 1.0, "b": 1.0}


def test_tfidf_weighs_rare_chinese_words_above_common_ones() -> None:
    weights = extract("我们 的 量子 的 量子", Settings(weights="tfidf"))
    assert weights["量子"] > weights["的"]


def test_top_k_keeps_the_heaviest_features_ties_by_feature() -> None:
    assert extract("c c c b b a d", Settings(top_k=2)) == {"c": 3.0, "b": 2.0}
    assert extract("z y x", Settings(top_k=2)) == {"x": 1.0, "y": 1.0}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bits": 32},
        {"distance": 17},
        {"tokenizer": "spaces"},
        {"weights": "bm25"},
        {"shingle": 2, "tokenizer": "chars"},
    ],
)
def test_settings_that_do_not_fit_are_refused(kwargs: dict) -> None:
    with pytest.raises(SettingsError):
        Settings(**kwargs)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


def test_jieba_is_not_imported_for_documents_without_chinese() -> None:
    result = run_python(
        "import sys; from simdedup import fingerprint_texts as f; f(['plain english']); "
        "print('jieba' in sys.modules, 'rjieba' in sys.modules)"
    )
    assert result.stdout.strip() == "False False"


def test_chinese_documents_load_jieba_only_for_its_idf_table() -> None:
    code = (
        "import sys; from simdedup import Settings, fingerprint_texts as f; f(['北京欢迎你']); "
        "print('jieba' in sys.modules, 'rjieba' in sys.modules); "
        "f(['北京欢迎你'], Settings(weights='tfidf')); print('jieba' in sys.modules)"
    )
    assert run_python(code).stdout.split() == ["False", "True", "True"]


def test_jieba_says_nothing_on_stderr() -> None:
    result = run_python("from simdedup import fingerprint_texts as f; f(['北京欢迎你'], )")
    assert result.stderr == ""


def _longest_mark_run(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if unicodedata.combining(ch) else 0
        longest = max(longest, run)
    return longest


def test_a_long_run_of_combining_marks_is_cut_before_nfkc_orders_it() -> None:
    # NFKC orders a run of marks in time quadratic in its length: one 240 KB line of
    # 'a' and two alternating classes of marks took `fingerprint` 17 s (a review).
    zalgo = "tea " + "a" + "\u0301\u0316" * 20_000 + " pot"
    assert _longest_mark_run(normalize(zalgo)) == MARK_RUN - 1  # the first composed with the a
    assert normalize(zalgo) == normalize("tea " + "a" + "\u0301\u0316" * (MARK_RUN // 2) + " pot")
    assert extract(zalgo, Settings()) == extract("tea a\u0301 pot", Settings())
    # Runs a language writes are left as they are, in either order of their marks.
    viet = "tie\u0302\u0301ng vie\u0323\u0302t"
    nfc = unicodedata.normalize("NFC", viet)
    assert normalize(viet) == unicodedata.normalize("NFKC", viet) == normalize(nfc)
    stacked = "x" * 100 + "\u0316\u0301" * 16  # 32 marks in a run, out of order
    assert normalize(stacked) == unicodedata.normalize("NFKC", stacked)


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=60), st.integers(1, 2**63 - 1))
def test_distinct_is_np_unique(values: list[int], spread: int) -> None:
    a = np.array(values, np.int64) % spread  # repeats as often as the spread is small
    assert distinct(a).dtype == a.dtype
    assert distinct(a).tolist() == np.unique(a).tolist()
    assert distinct(a.astype(np.uint32)).tolist() == np.unique(a.astype(np.uint32)).tolist()
