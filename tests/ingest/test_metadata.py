"""Which ingest job reads a raw log (collat.ingest.metadata.batch_of)."""

from collections import Counter

from collat.ingest.metadata import batch_of


def test_a_logs_batch_is_its_table_and_its_paths_crc32_modulo_the_batches():
    # CRC-32 of "123456789" is 0xCBF43926 (the standard check value): 3421780262 = 32 * 106930633 + 6
    assert batch_of("123456789", "pt2pt", 32) == "pt2pt/06"
    assert batch_of("123456789", "collective", 1) == "collective/00"
    assert batch_of("123456789", "any", 10 ** 9) == "any/421780262"  # 3421780262 mod 10**9


def test_the_path_alone_fixes_the_batch_and_the_batches_share_the_logs():
    """A new log changes no other log's batch; 2,000 paths of a campaign fill 32 batches evenly."""
    paths = [f"bcast/core/alg{a}/np{p}.txt" for a in range(10) for p in range(2, 202)]
    before = {p: batch_of(p, "collective", 32) for p in paths}
    assert {p: batch_of(p, "collective", 32) for p in paths} == before
    counts = Counter(before.values())
    assert len(counts) == 32 and max(counts.values()) < 2 * len(paths) / 32
