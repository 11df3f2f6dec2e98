"""Shared-memory wavefronts of 32-, 64- and 128-bit accesses (``teg.memory.shared``), computed by hand.

The rule under test (docs/model.md §3, "Shared memory"), with the sm_70+ table values (32 banks of
4 B, ``phase_lanes`` 32):

* a warp splits into phases of ``min(phase_lanes, banks·bank_bytes / width)`` *consecutive* lanes —
  32 lanes for 32-bit, 16 (half-warps) for 64-bit, 8 (quarter-warps) for 128-bit accesses;
* lane *i*'s access covers ``width / 4`` consecutive 4-byte words, word ``w`` in bank ``w % 32``;
* a phase takes ``max over banks of |distinct words of the phase in that bank|`` wavefronts (lanes
  reading the same word share it: broadcast); a phase with no active lane takes none;
* the conflict-free minimum ``wave_min`` is the number of phases with an active lane.

Every expected value below is worked out in its comment from those four lines only. Paired loads
(``shared_wavefronts_paired``, tables with ``shared.paired_loads``): a 64/128-bit *load* whose active
lanes pair up (T(n) == T(n^1), or T(n) == T(n^2)) is served in phases of twice the lanes (NVIDIA
forum t/77228 for cc 7.x, Nsight Compute counts in t/373160 for cc 8.6/9.0); the plain
``shared_wavefronts`` (stores, tables without the flag) never pairs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teg.memory import shared_wavefronts
from teg.memory.shared import shared_wavefronts_paired

BANKS, BANK_BYTES, PHASE_LANES, WARP = 32, 4, 32, 32      # isa_tables/sm_70.yaml … sm_90.yaml
LANES = np.arange(32, dtype=np.int64)
FULL = 0xFFFFFFFF


def waves(addrs, width, mask=FULL, banks=BANKS, phase=PHASE_LANES):
    """(wavefronts, conflict-free wavefronts) of one shared access. ``addrs`` has one byte address
    per lane (32 entries); like a trace row, only the active lanes' addresses are passed on."""
    addrs = np.asarray(addrs, np.int64)
    active = [(mask >> lane) & 1 for lane in range(WARP)]
    a = np.array([addrs[lane] for lane in range(WARP) if active[lane]], np.uint64)
    w, wm = np.zeros(1, np.int64), np.zeros(1, np.int64)
    shared_wavefronts(np.array([0, a.shape[0]], np.int64), a, np.array([mask], np.uint32),
                      np.array([width], np.int64), np.array([True]), banks, BANK_BYTES, phase, WARP, w, wm)
    return int(w[0]), int(wm[0])


def waves_paired(addrs, width, mask=FULL):
    """:func:`waves` for a load on a machine with ``shared.paired_loads``."""
    addrs = np.asarray(addrs, np.int64)
    a = np.array([addrs[lane] for lane in range(WARP) if (mask >> lane) & 1], np.uint64)
    w, wm = np.zeros(1, np.int64), np.zeros(1, np.int64)
    shared_wavefronts_paired(np.array([0, a.shape[0]], np.int64), a, np.array([mask], np.uint32),
                             np.array([width], np.int64), np.array([True]), np.array([True]), BANKS, BANK_BYTES,
                             PHASE_LANES, WARP, w, wm)
    return int(w[0]), int(wm[0])


def column(pitch_floats, col_floats=0):
    """Lane i reads row i, column ``col_floats`` of a row-major float tile with the given row pitch."""
    return (LANES * pitch_floats + col_floats) * 4


# --------------------------------------------------------------------------------------------- 32-bit
# one phase of 32 lanes, one word per lane: the ordinary CUDA Programming Guide (cc 5.x+) rule.

def test_32_contiguous_and_broadcast():
    assert waves(LANES * 4, 4) == (1, 1)            # words 0..31 → banks 0..31, one word each
    assert waves(np.zeros(32), 4) == (1, 1)         # one word for everybody: broadcast
    assert waves(LANES % 4 * 4, 4) == (1, 1)        # 4 words, each shared by 8 lanes


@pytest.mark.parametrize("stride_words, expect", [
    (2, 2),     # word 2i → bank 2i % 32: lanes i, i+16 share a bank with different words → 2-way
    (4, 4),     # bank 4i % 32: 8 banks, 4 lanes (4 distinct words) each → 4-way
    (8, 8),     # bank 8i % 32: 4 banks × 8 words → 8-way
    (3, 1),     # odd stride: 3i % 32 is a permutation of the banks → conflict-free
])
def test_32_strides(stride_words, expect):
    assert waves(LANES * stride_words * 4, 4) == (expect, 1)


def test_32_column_of_tile_unpadded_vs_padded():
    # pitch 64 floats = 256 B = 2 rows of banks: every lane in bank 0, 32 distinct words → 32-way
    assert waves(column(64), 4) == (32, 1)
    # pitch 65: word 65i, bank (65i) % 32 = i → conflict-free (the classic +1 padding)
    assert waves(column(65), 4) == (1, 1)
    # pitch 68: bank 4i % 32 → 8 banks × 4 lanes → 4-way (a float4-friendly pad is bad for scalars)
    assert waves(column(68), 4) == (4, 1)


def test_32_inactive_lanes():
    assert waves(column(64), 4, mask=0x0000FFFF) == (16, 1)      # 16 active lanes, all in bank 0
    assert waves(column(64), 4, mask=0x00000001) == (1, 1)
    assert waves(column(64), 4, mask=0) == (0, 0)                # predicated off: no wavefront


# --------------------------------------------------------------------------------------------- 64-bit
# phases of 128 B / 8 B = 16 lanes (half-warps 0-15, 16-31); lane i covers words a/4, a/4 + 1.

def test_64_contiguous_and_broadcast():
    # lanes 0..15 read bytes 0..127 = words 0..31, one per bank; likewise lanes 16..31 → 1 + 1
    assert waves(LANES * 8, 8) == (2, 2)
    # all lanes read words 0, 1: one wavefront per half-warp, never below the phase count
    assert waves(np.zeros(32), 8) == (2, 2)


@pytest.mark.parametrize("stride_bytes, expect", [
    (16, 4),    # lane i: words 4i, 4i+1; in a half-warp lanes i, i+8 share banks (4i % 32) → 2 per phase
    (32, 8),    # words 8i, 8i+1: banks {0,8,16,24}(+1), 4 lanes each per half-warp → 4 per phase
    (24, 2),    # words 6i, 6i+1: for i = 0..15, 6i % 32 = 0,6,..,30,4,..,26 (16 even banks) → 1 per phase
])
def test_64_strides(stride_bytes, expect):
    assert waves(LANES * stride_bytes, 8) == (expect, 2)


def test_64_column_of_tile_unpadded_vs_padded():
    # pitch 64 floats: every lane in banks 0, 1; 16 distinct double-words per half-warp → 16 + 16
    assert waves(column(64), 8) == (32, 2)
    # pitch 66: word 66i, bank 2i % 32 → a half-warp covers banks 0..31 exactly once → 1 + 1
    assert waves(column(66), 8) == (2, 2)
    # pitch 68: bank 4i % 32 → lanes i, i+8 of a half-warp collide → 2 + 2
    assert waves(column(68), 8) == (4, 2)


def test_64_inactive_lanes():
    assert waves(LANES * 8, 8, mask=0x0000FFFF) == (1, 1)        # second half-warp idle: its phase is skipped
    assert waves(LANES * 8, 8, mask=0x80000001) == (2, 2)        # one lane in each half-warp
    assert waves(column(64), 8, mask=0x000000FF) == (8, 1)       # 8 lanes of half-warp 0 in banks 0, 1


# -------------------------------------------------------------------------------------------- 128-bit
# phases of 128 B / 16 B = 8 lanes (quarter-warps 0-7, 8-15, 16-23, 24-31); lane i covers 4 words.

def test_128_contiguous_and_broadcast():
    # lanes 0..7 read bytes 0..127 = words 0..31, one per bank → 1 per quarter-warp → 4
    assert waves(LANES * 16, 16) == (4, 4)
    # all lanes read bytes 0..15: 1 per quarter-warp → 4 (the 4-phase floor)
    assert waves(np.zeros(32), 16) == (4, 4)


def test_128_forum_tid_mod_4_pattern():
    """NVIDIA forum "Unexpected shared memory bank conflict" (t/77228): byte offset tid % 4 · 16
    with LDS.U.128 on an RTX (cc 7.5) GPU measured 4 requests per instruction. teg: each
    quarter-warp reads 4 distinct 16-B chunks (banks 0..15, one word each), lanes 4..7 repeating
    lanes 0..3 (broadcast) → 1 wavefront per phase → 4."""
    assert waves(LANES % 4 * 16, 16) == (4, 4)


def test_pairwise_uniform_128_store_is_not_packed():
    """The plain rule (a store, or a table without ``paired_loads``): lanes 2k, 2k+1 read chunk k,
    each quarter-warp reads 4 distinct chunks (banks 0..15 or 16..31) → 1 per phase → 4."""
    assert waves(LANES // 2 * 16, 16) == (4, 4)


# ------------------------------------------------------------------------------------- paired loads

def test_paired_128_forum_pattern_2_two_wavefronts():
    """Forum t/373160, access pattern 2 (Nsight Compute on cc 8.6 and 9.0: 2 wavefronts): lanes
    0-15 read bytes 0..15, lanes 16-31 bytes 32..47. T(n) == T(n^1) for every lane → phases of 16
    lanes: each half-warp reads one 16-B chunk (4 words, 4 banks) → 1 wavefront each → 2.
    Unpaired it is 4 quarter-warps × 1 = 4. This is lud_internal's LDS.128 (a row of the tile per
    half-warp)."""
    a = np.where(LANES < 16, 0, 32)
    assert waves_paired(a, 16) == (2, 2)
    assert waves(a, 16) == (4, 4)


def test_paired_128_forum_pattern_1_does_not_pair():
    """Forum t/373160, access pattern 1 (measured 8 wavefronts): lane n and lane n+16 read byte
    32·(n mod 16); neighbouring lanes differ, so neither T(n^1) nor T(n^2) holds and the quarter-warp
    phases stay: lanes 0..7 read words 8i..8i+3, banks 0,8,16,24,0,8,16,24 → 2 distinct words per
    bank → 2 per phase → 8."""
    a = LANES % 16 * 32
    assert waves_paired(a, 16) == (8, 4)


def test_paired_broadcasts():
    """A warp-wide broadcast pairs (the forum: 'these encompass the case where all active threads
    have the same address'): LDS.128 → 2 half-warp phases of one chunk → 2 (was the 4-phase floor);
    LDS.64 → one phase of 32 lanes → 1 (was 2)."""
    assert waves_paired(np.zeros(32), 16) == (2, 2)
    assert waves_paired(np.zeros(32), 8) == (1, 1)
    assert waves(np.zeros(32), 8) == (2, 2)


def test_paired_by_n_xor_2():
    """T(n) == T(n^2) (lanes 4k, 4k+2 share, 4k+1, 4k+3 share; chunk j = (n // 4)·2 + n % 2): a
    half-warp (16 lanes) reads 8 distinct 16-B chunks = words 0..31 once → 1 per half-warp → 2."""
    a = ((LANES // 4) * 2 + LANES % 2) * 16
    assert waves_paired(a, 16) == (2, 2)


def test_paired_with_conflicts_and_inactive_partners():
    """Lanes 2k, 2k+1 read chunk k at a pitch of 64 B (bytes 64k): paired → half-warp phases of 8
    chunks at words 16k..16k+3, banks 0..3 or 16..19 → 4 distinct words per bank → 4 per phase → 8
    (unpaired: quarter-warps of 4 chunks, 2 per bank → 2 × 4 = 8 too — the conflict is in the data).
    With only lane 0 of each pair active (mask 0x55555555) no lane has an active partner, the rule
    holds vacuously and the 16 active lanes split into 2 half-warp phases of 8 lanes reading 8
    distinct chunks each (banks as above, 4 per bank) → 8; an odd lane that disagrees with its
    active partner breaks the pairing (lane 1 reads chunk 5 → quarter-warps again)."""
    a = LANES // 2 * 64
    assert waves_paired(a, 16) == (8, 2)
    assert waves(a, 16) == (8, 4)
    assert waves_paired(a, 16, mask=0x55555555) == (8, 2)
    b = a.copy()
    b[1] = 5 * 64
    assert waves_paired(b, 16) == waves(b, 16)


def test_paired_32bit_rows_are_unchanged():
    """32-bit loads already take the whole warp in one phase: pairing changes nothing."""
    assert waves_paired(LANES // 2 * 4, 4) == waves(LANES // 2 * 4, 4) == (1, 1)


@pytest.mark.parametrize("stride_bytes, expect", [
    (32, 8),    # lane i: words 8i..8i+3; banks 8i % 32 → lanes i, i+4 of a quarter-warp collide → 2 per phase
    (64, 16),   # banks 16i % 32 → 4 lanes per bank group → 4 per phase
    (128, 32),  # every lane in banks 0..3 → 8 per phase
    (48, 4),    # words 12i: 12i % 32 = 0,12,24,4,16,28,8,20 for i = 0..7 → disjoint 4-bank groups → 1 per phase
])
def test_128_strides(stride_bytes, expect):
    assert waves(LANES * stride_bytes, 16) == (expect, 4)


def test_128_column_of_tile_unpadded_vs_padded():
    """A warp reads one float4 per row, rows 0..31 of a row-major float tile (LDS.128, lane i → row i).

    pitch 64 floats (256 B): lane i covers words 64i + c .. 64i + c + 3, banks c..c+3 for every
    lane; each quarter-warp holds 8 distinct words per bank → 8 wavefronts × 4 phases = 32
    (an 8-way conflict: 28 extra wavefronts).
    pitch 68 floats (272 B, the usual float4 pad): word 68i + c, bank (4i + c) % 32 → the 8 lanes of
    a quarter-warp cover banks 0..31 once → 1 × 4 = 4 (conflict-free).
    pitch 65 floats (260 B): odd rows are not 16-B aligned, so a real LDS.128 faults (misaligned
    address); the model still answers: lane i covers banks (i + c)..(i + c + 3) % 32, so the 8
    lanes of a quarter-warp overlap at most 4 deep → 4 × 4 = 16. Accel-Sim, looking only at the
    first word of each lane, would call pitch 65 conflict-free (banks i, all distinct)."""
    for c in (0, 4, 8):
        assert waves(column(64, c), 16) == (32, 4)
        assert waves(column(68, c), 16) == (4, 4)
        assert waves(column(65, c), 16) == (16, 4)


def test_128_matmul_bs_tile_unpadded_vs_padded():
    """Bs[tx][k] read with LDS.128 by a warp of 16 tx × 2 ty (lane = 16·ty + tx), row pitch P floats.

    P = 16 (64 B): lane tx → word 16·tx, bank 16·tx % 32 ∈ {0, 16}; a quarter-warp (tx = 0..7 or
    8..15) puts 4 distinct rows on banks 0..3 and 4 on banks 16..19 → 4 per phase → 16.
    P = 20 (80 B): bank 20·tx % 32 = 0,20,8,28,16,4,24,12 for tx = 0..7 (and the same for 8..15) →
    disjoint 4-bank groups → 1 per phase → 4."""
    tx = LANES % 16
    assert waves(tx * 16 * 4, 16) == (16, 4)
    assert waves(tx * 20 * 4, 16) == (4, 4)


def test_128_inactive_lanes():
    assert waves(LANES * 16, 16, mask=0x0000FF00) == (1, 1)     # only quarter-warp 1 active
    assert waves(LANES * 16, 16, mask=0x80000001) == (2, 2)     # one lane in quarter-warps 0 and 3
    assert waves(column(64), 16, mask=0x0000000F) == (4, 1)     # lanes 0..3: 4 distinct words in banks 0..3
    assert waves(column(64), 16, mask=0) == (0, 0)


# ----------------------------------------------------------------------------------- several rows at once

def test_rows_without_addresses_and_untouched_rows():
    """Rows: [32-bit column (pitch 64), 128-bit with no addresses (SASS-only), not shared, 64-bit off].
    The no-address row gets the conflict-free contiguous pattern (4 / 4); the non-shared row keeps
    its value."""
    a = column(64).astype(np.uint64)
    start = np.array([0, 32, 32, 32, 32], np.int64)
    mask = np.array([FULL, FULL, FULL, 0], np.uint32)
    width = np.array([4, 16, 4, 8], np.int64)
    sel = np.array([True, True, False, True])
    w = np.full(4, -7, np.int64)
    wm = np.full(4, -7, np.int64)
    shared_wavefronts(start, a, mask, width, sel, BANKS, BANK_BYTES, PHASE_LANES, WARP, w, wm)
    assert w.tolist() == [32, 4, -7, 0] and wm.tolist() == [1, 4, -7, 0]


def test_gt200_wide_accesses_use_16_bank_rows():
    """GT200 (16 banks, half-warp phases): 64 B of banks per phase → 64-bit phases of 8 lanes and
    128-bit phases of 4 lanes; contiguous accesses are conflict-free but take 4 / 8 phases."""
    assert waves(LANES * 8, 8, banks=16, phase=16) == (4, 4)
    assert waves(LANES * 16, 16, banks=16, phase=16) == (8, 8)


# ------------------------------------------------------------------------------------------- properties

def reference(addrs, width, mask, banks=BANKS, phase_lanes=PHASE_LANES):
    """The rule written out directly (sets and dicts, no sorting tricks)."""
    lpp = max(1, min(phase_lanes, banks * BANK_BYTES // width))
    nwords = -(-width // BANK_BYTES)
    phases: dict[int, set[int]] = {}
    for lane in range(WARP):
        if (mask >> lane) & 1:
            base = int(addrs[lane]) // BANK_BYTES
            phases.setdefault(lane // lpp, set()).update(base + q for q in range(nwords))
    total = 0
    for words in phases.values():
        per_bank: dict[int, int] = {}
        for wd in words:
            per_bank[wd % banks] = per_bank.get(wd % banks, 0) + 1
        total += max(per_bank.values())
    return total, len(phases)


@settings(max_examples=300, deadline=None)
@given(width=st.sampled_from([1, 2, 4, 8, 16]),
       mask=st.integers(0, FULL),
       rows=st.lists(st.integers(0, 63), min_size=32, max_size=32),
       cols=st.lists(st.integers(0, 31), min_size=32, max_size=32),
       pitch=st.sampled_from([1, 2, 4, 16, 32, 33, 64, 65, 68, 128]))
def test_wavefront_bounds_and_reference(width, mask, rows, cols, pitch):
    # aligned addresses (as the hardware requires) drawn from a tile of 64 rows with the given pitch
    addrs = (np.array(rows, np.int64) * pitch * 4 + np.array(cols, np.int64) * 4) // width * width
    w, wm = waves(addrs, width, mask)
    nwords = -(-width // BANK_BYTES)
    lpp = min(PHASE_LANES, BANKS * BANK_BYTES // width)
    active = bin(mask).count("1")
    active_phases = len({lane // lpp for lane in range(WARP) if (mask >> lane) & 1})
    assert w >= wm == active_phases
    assert w <= active * nwords
    assert (w == 0) == (active == 0)
    assert (w, wm) == reference(addrs, width, mask)
    # a shift by whole rows of banks (128 B) moves nothing between banks
    assert waves(addrs + 128 * 7, width, mask) == (w, wm)
