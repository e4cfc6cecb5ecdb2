"""The seeds' worked examples (../shared/reference/seed_vectors.json), reproduced exactly.

Each case injects the seed's hand-written feature hashes in place of xxhash; the
leftmost character of a written bit string is bit 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simdedup import block_layout, column_sums, distance, fingerprint_batch, format_fingerprint
from simdedup.settings import Settings

SEEDS = Path(__file__).resolve().parent / "data" / "seed_vectors.json"
VECTORS = json.loads(SEEDS.read_text(encoding="utf-8"))


def bits_to_int(written: str) -> int:
    """'100101' -> an int whose bit 0 is the leftmost character."""
    return sum(1 << i for i, c in enumerate(written) if c == "1")


def int_to_bits(value: int, width: int) -> str:
    return "".join("1" if value >> i & 1 else "0" for i in range(width))


def case_id(case: dict) -> str:
    return case["source"].split()[0]


@pytest.mark.parametrize("case", VECTORS["simhash_cases"], ids=case_id)
def test_seed_column_sums_match(case: dict) -> None:
    hashes = {f["token"]: bits_to_int(f["hash"]) for f in case["features"]}
    features = {f["token"]: f["weight"] for f in case["features"]}
    sums = column_sums([features], case["bits"], hashfunc=hashes.__getitem__)[0]
    assert sums.tolist() == pytest.approx(case["sums"], abs=1e-9)


@pytest.mark.parametrize("case", VECTORS["simhash_cases"], ids=case_id)
def test_seed_fingerprint_matches(case: dict) -> None:
    hashes = {f["token"]: bits_to_int(f["hash"]) for f in case["features"]}
    features = {f["token"]: f["weight"] for f in case["features"]}
    [fp] = fingerprint_batch([features], case["bits"], hashfunc=hashes.__getitem__)
    assert fp is not None
    assert int_to_bits(fp, case["bits"]) == case["fingerprint"]


def test_a_column_sum_of_exactly_zero_gives_bit_0() -> None:
    # The seeds' text says "> 0 gives 1"; seed 000's code used >= 0. Two features that cancel:
    hashes = {"a": 0b01, "b": 0b10}
    [fp] = fingerprint_batch([{"a": 1.0, "b": 1.0}], 2, hashfunc=hashes.__getitem__)
    assert fp == 0


@pytest.mark.parametrize("case", [c for c in VECTORS["hamming_cases"] if "a" in c], ids=case_id)
def test_seed_hamming_distance(case: dict) -> None:
    assert distance(bits_to_int(case["a"]), bits_to_int(case["b"])) == case["distance"]


def test_seed_pigeonhole_blocks_of_an_8_bit_fingerprint() -> None:
    [case] = [c for c in VECTORS["pigeonhole_cases"] if c["bits"] == 8]
    fp = bits_to_int(case["fingerprint"])
    blocks = [int_to_bits(fp >> start, width) for start, width in block_layout(8, 3)]
    assert blocks == case["blocks"]


def test_seed_candidates_per_block_for_2_to_the_34_fingerprints() -> None:
    [case] = [c for c in VECTORS["pigeonhole_cases"] if c["bits"] == 64]
    widths = {w for _, w in Settings(bits=64, distance=3).blocks}
    assert widths == {case["block_bits"]}
    assert 2**34 >> case["block_bits"] == case["expected_candidates_per_block"]


def test_fingerprints_print_unsigned_with_all_16_digits() -> None:
    # Seed 003 printed uint64 hashes through int64: half of them came out negative.
    assert format_fingerprint(0xFFFF_0000_0000_0001) == "ffff000000000001"
    assert format_fingerprint(1) == "0000000000000001"
    assert format_fingerprint(1 << 127, bits=128) == "8" + "0" * 31


def test_the_copy_of_the_seed_vectors_is_current() -> None:
    shared = Path(__file__).resolve().parents[2] / "shared" / "reference" / "seed_vectors.json"
    if not shared.exists():
        pytest.skip("no shared/ beside the checkout")
    assert json.loads(shared.read_text(encoding="utf-8")) == VECTORS
