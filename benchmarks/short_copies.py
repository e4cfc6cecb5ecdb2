"""How many near copies of short documents are found, and how many false ones, by k.

Takes the first lines of bench.py's generated English corpus, cuts each to 12-60 words,
and gives it one copy with one edit (a word replaced, inserted or deleted, a word
appended, a typo), then shuffles originals and copies together and scans them with the
library at each -k (verified, the defaults otherwise). An original-copy pair is a near
copy when the exact Jaccard of their verification shingles (every shingle hash) is 0.8
or more, and found when the two end in one group. A reported duplicate whose exact
Jaccard with the document it duplicates is below 0.8 is a false one.

A document of 12-32 words is short (no head fingerprint: 32 tokens or fewer), one of
33-60 words longer; every one of them holds at most 61 distinct shingles, so its
sketch is exact (sketch.OnePermutation) and verification never errs on these pairs:
what k changes is only which pairs become candidates.

Run: .venv/bin/python benchmarks/short_copies.py --docs 6000 --k 4 5 6 8
(about 15 s; the English file is benchmarks/.data/english-1000000.txt, which
`make bench` writes).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter

from crowds import english_lines

from simdedup import Document, Settings
from simdedup.sketch import shingle_hashes
from simdedup.verify import VerifyingDeduplicator

EDITS = ("replace", "insert", "delete", "append", "typo")


def edited(words: list[str], rng: random.Random) -> tuple[str, list[str]]:
    kind, copy, i = rng.choice(EDITS), list(words), rng.randrange(len(words))
    if kind == "replace":
        copy[i] = "harbour"
    elif kind == "insert":
        copy.insert(i, "indeed")
    elif kind == "delete":
        del copy[i]
    elif kind == "append":
        copy.append("today")
    else:
        copy[i] = copy[i][:-1] + "x"
    return kind, copy


def jaccard(a: str, b: str) -> float:
    (ha, hb) = (set(shingle_hashes([t])[0].tolist()) for t in (a, b))
    return len(ha & hb) / len(ha | hb)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=6000, help="originals, each with one copy")
    ap.add_argument("--k", type=int, nargs="+", default=[4, 5, 6, 8])
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    texts: list[str] = []
    pairs = []  # (original, copy, edit, short)
    for line in english_lines(args.docs * 2):
        words = line.split()[: rng.randint(12, 60)]
        if len(words) < 12 or len(pairs) == args.docs:
            continue
        kind, copy = edited(words, rng)
        texts += [" ".join(words), " ".join(copy)]
        pairs.append((len(texts) - 2, len(texts) - 1, kind, len(words) <= 32))
    order = list(range(len(texts)))
    rng.shuffle(order)
    near = [p for p in pairs if jaccard(texts[p[0]], texts[p[1]]) >= 0.8]
    print(
        f"{len(pairs):,} originals of 12-60 words with one edited copy each;"
        f" {len(near):,} copies at Jaccard >= 0.8"
    )
    print("k  short (12-32 words) found  longer (33-60) found  false duplicates")
    for k in args.k:
        dd = VerifyingDeduplicator(Settings(distance=k))
        root: dict[int, int] = {}
        false = 0
        docs = [Document(str(i), texts[i], b"") for i in order]
        for lo in range(0, len(docs), 4096):
            for d in dd.process(docs[lo : lo + 4096]):
                me = int(d.doc.id)
                if d.status == "duplicate":
                    kept = int(dd.ids[d.row])
                    root[me] = root[kept]
                    false += jaccard(texts[me], texts[kept]) < 0.8
                else:
                    root[me] = me
        found, total = Counter(), Counter()
        for a, b, _, short in near:
            total[short] += 1
            found[short] += root[a] == root[b]
        shown = [f"{found[s]:,}/{total[s]:,} ({found[s] / max(total[s], 1):.3f})" for s in (True, False)]
        print(f"{k:<2} {shown[0]:<26} {shown[1]:<21} {false}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
