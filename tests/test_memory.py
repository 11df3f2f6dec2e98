"""Memory mechanisms as pure functions: coalescing rules, bank conflicts, channel mapping, caches.
Expected values follow from the rules' definitions (CUDA Programming Guide compute 1.3 and 5.x+
global-memory sections; TEG §3.3.3–§3.3.5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teg.memory import (cache_access, cache_geometry, cache_new, cache_shape, cc13_transactions, channel_of, sector_transactions,
                        shared_wavefronts)

FULL = np.array([0xFFFFFFFF], np.uint32)


def one_row(addrs, width, mask=FULL):
    a = np.asarray(addrs, np.uint64)
    return np.array([0, a.shape[0]]), a, mask, np.array([width]), np.array([True])


def segs(addrs, width, mask=FULL):
    start, addr, nb, mc, mb = cc13_transactions(*one_row(addrs, width, mask))
    return sorted(zip(addr.tolist(), nb.tolist())), int(mc[0]), int(mb[0])


def test_cc13_contiguous_words_one_64_byte_segment_per_half_warp():
    got, mc, mb = segs(np.arange(32) * 4, 4)
    assert got == [(0, 64), (64, 64)] and (mc, mb) == (2, 128)


def test_cc13_permuted_lanes_still_coalesce():
    perm = np.array([(i * 7) % 16 for i in range(16)] + [16 + (i * 5) % 16 for i in range(16)])
    got, _, _ = segs(perm * 4, 4)
    assert got == [(0, 64), (64, 64)]


def test_cc13_stride_128_bytes_sixteen_32_byte_transactions_per_half_warp():
    got, mc, mb = segs(np.arange(32) * 128, 4)
    assert len(got) == 32 and all(n == 32 for _, n in got)
    assert (mc, mb) == (2, 128)


def test_cc13_wide_words():
    assert segs(np.arange(32) * 8, 8)[0] == [(0, 128), (128, 128)]
    assert segs(np.arange(32) * 16, 16)[0] == [(0, 128), (128, 128), (256, 128), (384, 128)]


def test_cc13_only_active_lanes_count():
    mask = np.array([0x00010001], np.uint32)          # lanes 0 and 16
    got, mc, mb = segs([0, 4096], 4, mask)
    assert got == [(0, 32), (4096, 32)] and (mc, mb) == (2, 64)


def test_cc13_broadcast_minimum_is_capped_by_the_rule():
    """All lanes read one word: one 32-byte segment per half-warp; packing 16 × 4 bytes would need
    64 bytes, so the perfect-coalescing minimum stays at the rule's 2 × 32 bytes."""
    got, mc, mb = segs(np.zeros(32, np.int64), 4)
    assert got == [(0, 32), (0, 32)] and (mc, mb) == (2, 64)


def sectors(addrs, width, mask=FULL):
    start, addr, nb, mc, mb = sector_transactions(*one_row(addrs, width, mask), 32)
    return addr.tolist(), int(mc[0])


def test_sector_rule():
    assert sectors(np.arange(32) * 4, 4) == ([0, 32, 64, 96], 4)
    assert sectors(16 + np.arange(32) * 4, 4) == ([0, 32, 64, 96, 128], 4)     # misaligned: 5 sectors
    got, mc = sectors(np.arange(32) * 32, 4)
    assert len(got) == 32 and mc == 4
    assert sectors(np.zeros(32, np.int64), 4) == ([0], 1)         # broadcast: the minimum is never above the rule
    assert sectors(np.arange(32) * 16, 16)[0] == [32 * i for i in range(16)]


def waves(addrs, width, banks=32, phase=32, mask=FULL):
    w, wm = np.zeros(1, np.int64), np.zeros(1, np.int64)
    start, a, m, wd, sel = one_row(addrs, width, mask)
    shared_wavefronts(start, a, m, wd, sel, banks, 4, phase, 32, w, wm)
    return int(w[0]), int(wm[0])


def test_shared_bank_rules():
    assert waves(np.arange(32) * 4, 4) == (1, 1)                 # conflict-free
    assert waves(np.zeros(32, np.int64), 4) == (1, 1)            # broadcast
    assert waves(np.arange(32) * 8, 4) == (2, 1)                 # stride 2 words: 2-way
    assert waves(np.arange(32) * 128, 4) == (32, 1)              # all in bank 0
    assert waves(np.arange(32) * 16, 16) == (4, 4)               # LDS.128 contiguous: 4 quarter-warp phases
    assert waves(np.arange(32) * 8, 8) == (2, 2)                 # LDS.64 contiguous: 2 half-warp phases


def test_shared_matmul_abt_pattern():
    """Bs[tx][k] with LDS.128: lanes tx = 0..15 (twice, ty = 0, 1) read Bs + 64*tx; each quarter-warp
    phase of 8 lanes hits banks 0-3 and 16-19 with 4 distinct rows each: 4 wavefronts per phase."""
    tx = np.arange(32) % 16
    assert waves(0x800 + 64 * tx, 16) == (16, 4)


def test_gt200_half_warp_banks():
    assert waves(np.arange(32) * 4, 4, banks=16, phase=16) == (2, 2)
    assert waves(np.arange(32) * 64, 4, banks=16, phase=16) == (32, 2)   # 16-way per half-warp


def test_channels():
    a = np.arange(16) * 256
    assert channel_of(a, 8, 256, "linear").tolist() == [i % 8 for i in range(16)]
    camp = np.arange(8) * 2048                       # stride = channels × interleave: partition camping
    assert set(channel_of(camp, 8, 256, "linear").tolist()) == {0}
    assert sorted(channel_of(camp, 8, 256, "ipoly").tolist()) == list(range(8))
    assert len(set(channel_of(camp, 8, 256, "xor").tolist())) == 8
    assert channel_of(np.arange(1000) * 256, 40, 256, "ipoly").max() < 40
    with pytest.raises(ValueError):
        channel_of(a, 8, 256, "bogus")


def test_sectored_lru_cache():
    sets, assoc, line, sector = cache_geometry(2 * 128 * 2, 128, 32, 2)    # 2 sets × 2 ways
    assert (sets, assoc) == (2, 2)
    shape = cache_shape(sets, assoc, line, sector)
    state = cache_new(1, shape)

    def acc(addr):
        return cache_access(state, 0, shape, addr)

    assert not acc(0) and acc(0) and acc(31)          # miss, hit, same sector
    assert not acc(32) and acc(32)                    # sector miss in a present line, then hit
    assert not acc(256) and not acc(512)              # lines 2, 4 map to set 0: evicts line 0 (LRU)
    assert not acc(0)                                 # line 0 was evicted
    assert acc(512) and not acc(256)                  # line 4 stayed (recent); line 2 was evicted by 0


def test_a_partition_of_the_l2_indexes_its_sets_without_the_home_bits():
    """One partition of a 2-partition L2 whose home partition alternates every line (skip_at 0,
    skip_bits 1): its home lines 1, 3, 5, 7 are all odd. Indexed by line mod 4 they would share sets
    1 and 3 of a 4-set direct-mapped cache and evict each other; with the home bit left out they
    take sets 0-3 and all four stay. Lines 2 and 3 then share set 1 but keep their own tags."""
    for skip, second_pass_hits in ((0, 0), (1, 4)):
        shape = cache_shape(4, 1, 128, 128, 0, skip)
        state = cache_new(1, shape)
        for ln in (1, 3, 5, 7):
            assert not cache_access(state, 0, shape, ln * 128)
        assert sum(cache_access(state, 0, shape, ln * 128) for ln in (1, 3, 5, 7)) == second_pass_hits
    shape = cache_shape(4, 1, 128, 128, 0, 1)
    state = cache_new(1, shape)
    assert not cache_access(state, 0, shape, 2 * 128) and not cache_access(state, 0, shape, 3 * 128)
    assert not cache_access(state, 0, shape, 2 * 128)     # line 3 replaced line 2 in set 1


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.sampled_from([1, 2, 4]), st.sampled_from([(128, 32), (64, 64), (32, 8)]),
       st.lists(st.integers(0, 1 << 20), min_size=1, max_size=80), st.sampled_from([(0, 0), (0, 1), (1, 1), (3, 2)]),
       st.booleans())
def test_cache_matches_reference_lru(sets, assoc, geometry, addrs, skip, hashed):
    """Shift/mask indexing (power-of-two set counts) and the division path (any other count) behave
    as a plain per-set LRU list of lines, each with its set of valid sectors; with ``skip`` = (at,
    bits) the set is the line number with those bits taken out, mod the set count; ``hashed``
    first XORs every higher ⌊log2 sets⌋-bit field of that number into its lowest field (a power of
    two set count), or adds the XOR of the quotient's fields to the remainder, mod the set count
    (any other)."""
    line, sector = geometry
    at, bits = skip
    s, a, ln, sc = cache_geometry(sets * assoc * line, line, sector, assoc)
    assert (s, a) == (sets, assoc)
    shape = cache_shape(s, a, ln, sc, at, bits, hashed)
    fold = sets.bit_length() - 1 if hashed else 0

    def xor_fields(x):
        h = 0
        while x:
            h ^= x % 2 ** fold
            x >>= fold
        return h

    def set_of(lno):
        idx = lno % 2 ** at + lno // 2 ** (at + bits) * 2 ** at
        if fold and sets & (sets - 1) == 0:
            return (idx ^ xor_fields(idx >> fold)) % sets
        if fold:
            return (idx % sets + xor_fields(idx // sets)) % sets
        return idx % sets

    assert (shape[4] >= 0) == (sets & (sets - 1) == 0)
    state = cache_new(2, shape)                    # two caches in one table: use cache 1
    ref = [{} for _ in range(sets)]                # per set: line -> valid sectors, oldest first
    for x in addrs:
        lno, sec = x // line, (x % line) // sector
        lru = ref[set_of(lno)]
        want = sec in lru.get(lno, ())
        if lno in lru:
            secs = lru.pop(lno)
        else:
            if len(lru) == assoc:
                lru.pop(next(iter(lru)))           # evict the least recently used line
            secs = set()
        lru[lno] = secs | {sec}
        assert cache_access(state, 1, shape, x) == want
    assert (state[:s] == 0).all()                  # cache 0 untouched (0: an empty way)


def test_xor_placement_spreads_a_power_of_two_stride_and_keeps_runs_whole():
    """4 direct-mapped sets: lines 0, 4, 8, 12 (stride = the set count) all index set 0 mod 4 and
    evict each other; XOR-folded they take sets 0, 1, 2, 3 and all stay. A run of consecutive
    lines as long as the set count, aligned to it, still fills every set once (the fold XORs such
    a run with one value)."""
    for hashed, second_pass_hits in ((False, 0), (True, 4)):
        shape = cache_shape(4, 1, 128, 128, 0, 0, hashed)
        state = cache_new(1, shape)
        for ln in (0, 4, 8, 12):
            assert not cache_access(state, 0, shape, ln * 128)
        assert sum(cache_access(state, 0, shape, ln * 128) for ln in (0, 4, 8, 12)) == second_pass_hits
    shape = cache_shape(4, 1, 128, 128, 0, 0, True)
    state = cache_new(1, shape)
    for ln in range(20, 24):
        cache_access(state, 0, shape, ln * 128)
    assert all(cache_access(state, 0, shape, ln * 128) for ln in range(20, 24))


def test_xor_placement_with_a_set_count_that_is_no_power_of_two_rotates_each_run():
    """5 direct-mapped sets (fold 2 bits): line n goes to (n mod 5 + XOR of the 2-bit fields of
    n // 5) mod 5 — lines 0-4 to sets 0-4, lines 5-9 (quotient 1) to 1, 2, 3, 4, 0; lines 0, 5,
    10, 15 (a stride of the set count, all set 0 modulo 5) to sets 0, 1, 2, 3, so all four stay."""
    shape = cache_shape(5, 1, 128, 128, 0, 0, True)
    state = cache_new(1, shape)
    for ln in (0, 5, 10, 15):
        assert not cache_access(state, 0, shape, ln * 128)
    assert all(cache_access(state, 0, shape, ln * 128) for ln in (0, 5, 10, 15))
    assert not cache_access(state, 0, shape, 9 * 128)         # line 9 -> set 0: evicts line 0
    assert not cache_access(state, 0, shape, 0)


def test_cache_geometry_needs_powers_of_two():
    with pytest.raises(ValueError, match="powers of two"):
        cache_geometry(4096, 96, 32, 4)
    with pytest.raises(ValueError, match="powers of two"):
        cache_geometry(4096, 128, 24, 4)
    with pytest.raises(ValueError, match="sector <= line"):
        cache_geometry(4096, 64, 128, 4)
    with pytest.raises(ValueError, match="at most 16 sectors per line"):
        cache_geometry(4096, 1024, 32, 4)


def test_ipoly_polynomials_are_irreducible():
    """Every polynomial of the ipoly table has no factor of degree 1 … deg/2 (GF(2) division)."""
    from teg.memory.channels import _IRREDUCIBLE

    def mod(a, b):
        db = b.bit_length() - 1
        while a and a.bit_length() - 1 >= db:
            a ^= b << (a.bit_length() - 1 - db)
        return a

    for deg, p in _IRREDUCIBLE.items():
        assert p.bit_length() - 1 == deg
        for q in range(2, 1 << (deg // 2 + 1)):
            if 1 <= q.bit_length() - 1 <= deg // 2:
                assert mod(p, q) != 0, (deg, bin(p), bin(q))


@pytest.mark.parametrize("channels", [12, 40, 80])
def test_ipoly_spreads_a_stream_evenly_over_a_non_power_of_two_channel_count(channels):
    """A sequential stream over 40 channels: each channel within 1 % of the mean (reducing the 64
    remainders of a degree-6 polynomial mod 40 would give 24 channels twice the others' share);
    a 16 KB stride (a matrix row pitch) is spread too."""
    seq = np.bincount(channel_of(np.arange(0, 64 << 20, 32, dtype=np.int64), channels, 256, "ipoly"),
                      minlength=channels)
    assert seq.max() / seq.mean() < 1.01
    rows = np.bincount(channel_of(np.arange(4096, dtype=np.int64) * 16384, channels, 256, "ipoly"),
                       minlength=channels)
    assert rows.max() / rows.mean() < 1.1
