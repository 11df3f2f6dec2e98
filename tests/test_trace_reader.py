"""Accel-Sim reader: the real samples in tests/data/traces (against their stats.csv and hand-read
lines) and synthesized traces for what the samples lack (address modes 0/2, line numbers, v5
immediates, v6 cluster/register extensions, tracer 1.2 prefixes, .xz)."""

from __future__ import annotations

import csv
import lzma
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import teg.trace as tt
from teg.trace.accelsim import _Scan, convert_traceg, opcode_width
from teg.trace.native import TraceWriter, load_native
from test_trace_synth import ALU_OPS, MEM_WIDTH, Block, Row, assert_matches, expected, kernel_text

DATA = Path(__file__).parent / "data" / "traces"
SAMPLES = [DATA / "microgpusim" / "vectoradd-100-32-trace", DATA / "microgpusim" / "matrixmul-32-32-trace",
           DATA / "dp-performance-accel-sim" / "simpletorch"]


def read(path, tmp_path, name="t"):
    return tt.load(path, cache=tmp_path / f"cache-{name}")


def read_text(text: str, tmp_path: Path, name="kernel-1.traceg", **kw):
    p = tmp_path / name
    p.write_text(text)
    return tt.load(p, cache=tmp_path / "cache"), p


def stats_rows(folder: Path) -> dict[str, list[str]]:
    with open(folder / "stats.csv") as fh:
        rows = list(csv.reader(fh))
    return {r[0].strip().replace(".trace", ".traceg"): [c.strip() for c in r] for r in rows[1:]}


def insts_lines(path: Path) -> list[int]:
    """The ``insts = N`` values of a .traceg, read with a regex (independent of the scanner)."""
    return [int(m) for m in re.findall(r"^insts = (\d+)$", path.read_text(), re.M)]


# ---- real samples -----------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", SAMPLES, ids=lambda p: p.name)
def test_real_samples_match_stats_csv(folder, tmp_path):
    trace = read(folder / "kernelslist.g", tmp_path)
    stats = stats_rows(folder)
    listed = [ln.strip() for ln in (folder / "kernelslist.g").read_text().splitlines() if ln.startswith("kernel")]
    assert len(trace) == len(listed) == len(stats)
    for kt, fname in zip(trace, listed):
        s = stats[fname]
        assert kt.info.name == s[1]
        assert kt.info.grid == tuple(int(x) for x in s[2:5])
        assert kt.info.block == tuple(int(x) for x in s[6:9])
        assert kt.num_rows == int(s[11])                     # total_reported_insts
        per_warp = np.diff(np.asarray(kt.warp_start)).tolist()
        assert per_warp == insts_lines(folder / fname)       # every warp's insts = N
        assert kt.num_warps == kt.block_xyz.shape[0] * kt.info.warps_per_block
        # rows are grouped by warp and carry that warp's id
        for w in range(kt.num_warps):
            assert np.all(np.asarray(kt.warp)[kt.warp_rows(w)] == w)


def test_vectoradd_header_and_memcpy(tmp_path):
    trace = read(SAMPLES[0], tmp_path)
    kt = trace.kernels[0]
    i = kt.info
    assert (i.kernel_id, i.shmem, i.nregs, i.binary_version, i.stream) == (1, 0, 8, 61, 0)
    assert (i.shmem_base, i.local_base) == (0x7F2B5A000000, 0x7F2B58000000)
    assert (i.tracer_version, i.nvbit_version, i.lineinfo) == (4, "1.5.5", False)
    assert trace.memcpy == [(0x7F2B2D500000, 400), (0x7F2B2D500200, 400), (0x7F2B2D500400, 400)]


def by_id(trace, kid):
    (kt,) = [k for k in trace if k.info.kernel_id == kid]
    return kt


def _row_at(kt, warp: int, pc: int) -> int:
    rows = np.arange(*kt.warp_rows(warp).indices(kt.num_rows))
    hit = rows[np.asarray(kt.pc)[rows] == pc]
    assert hit.shape[0] == 1
    return int(hit[0])


def test_hand_checked_mode1_addresses(tmp_path):
    kt = read(SAMPLES[0], tmp_path).kernels[0]
    # line 39: "0098 ffffffff 1 R4 LDG.E.CG 1 R4 4 1 0x7f2b2d500000 4" (warp 0)
    r = _row_at(kt, 0, 0x98)
    assert kt.opcodes[kt.opcode[r]] == "LDG.E.CG" and kt.mask[r] == 0xFFFFFFFF
    assert kt.dst[r].tolist() == [4, -1, -1, -1] and kt.src[r].tolist()[:2] == [4, -1]
    assert kt.mem_width[r] == 4
    assert kt.row_addresses(r).tolist() == [0x7F2B2D500000 + 4 * k for k in range(32)]
    # line 119: "00b0 0000000f 1 R2 LDG.E.CG 1 R2 4 1 0x7f2b2d500380 4" (warp 3, 4 active lanes)
    r = _row_at(kt, 3, 0xB0)
    assert kt.mask[r] == 0xF
    assert kt.row_addresses(r).tolist() == [0x7F2B2D500380, 0x7F2B2D500384, 0x7F2B2D500388, 0x7F2B2D50038C]
    # a non-memory row has no addresses and width 0
    r = _row_at(kt, 0, 0x68)
    assert kt.mem_width[r] == 0 and kt.row_addresses(r).shape[0] == 0


def test_hand_checked_broadcast_and_mode2_lines(tmp_path):
    mm = read(SAMPLES[1], tmp_path, "mm").kernels[0]
    # "0278 ffffffff 1 R12 LDS.U.128 1 R2 16 1 0x0 0": stride 0 → all 32 lanes read offset 0, 16 B each
    r = _row_at(mm, 0, 0x278)
    assert mm.mem_width[r] == 16 and mm.row_addresses(r).tolist() == [0] * 32
    dp = read(SAMPLES[2], tmp_path, "dp")
    k6 = by_id(dp, 6)
    # kernel-6.traceg line 40: "01a0 00000001 0 STG.E.SYS 2 R2 R11 4 2 0x7fb01fe00c00" (mode 2, one lane, no deltas)
    rows = np.flatnonzero(np.asarray(k6.pc) == 0x1A0)
    assert rows.shape[0] == 1
    r = int(rows[0])
    assert k6.dst[r].tolist() == [-1] * 4 and k6.src[r].tolist()[:3] == [2, 11, -1]
    assert k6.row_addresses(r).tolist() == [0x7FB01FE00C00]


def test_rz_and_predicated_off_lines(tmp_path):
    k5 = by_id(read(SAMPLES[2], tmp_path), 5)
    # kernel-5.traceg: "0010 00000000 0 SHFL.IDX 4 R255 R255 R255 R255 0" — RZ sources, guard false in all lanes
    r = _row_at(k5, 0, 0x10)
    assert k5.opcodes[k5.opcode[r]] == "SHFL.IDX" and k5.mask[r] == 0
    assert k5.src[r].tolist() == [-1] * 8
    # "0d30 000000ff 1 R255 BMOV.32.CLEAR 0 0": destination RZ
    r = _row_at(k5, 0, 0xD30)
    assert k5.dst[r].tolist() == [-1] * 4


# ---- synthesized features -------------------------------------------------------------------------

def _mem(pc, mask, op, addrs, mode, **kw):
    return Row(pc, mask, op, ["R8"], ["R2"], mem=True, mode=mode, addrs=addrs, **kw)


def test_mode0_list_and_mode2_deltas(tmp_path):
    rows = [
        _mem(0x10, 0b1011, "LDG.E.64", [0x7F0000001000, 0x7F0000000FF0, 0x7F00DEAD0000], 0),
        _mem(0x20, 0xF0000001, "LDG.E.128.SYS", [0x7F0000002000, 0x7F0000002010, 0x7F0000001F00, 0x7F0000001F00,
                                                 0x7F0000FFFFF0], 2),
        _mem(0x30, 0xFFFFFFFF, "STG.E.SYS", [0x1000 + 4 * i for i in range(32)], 2),
        _mem(0x40, 0, "LD.E.64", [], 1),          # mask 0: "1 0x0 0", no addresses (issue #152)
        _mem(0x50, 0, "LDS.U.16", [], 0),
        _mem(0x60, 0x00FF0000, "LDS.U.32", [0x100 - 4 * i for i in range(8)], 1),   # negative stride
    ]
    blocks = [Block((0, 0, 0), [rows, []])]
    kt = read_text(kernel_text(blocks), tmp_path)[0].kernels[0]
    assert_matches(kt, expected(blocks))
    assert kt.row_addresses(1).tolist() == [0x7F0000002000, 0x7F0000002010, 0x7F0000001F00, 0x7F0000001F00, 0x7F0000FFFFF0]


def test_mode2_reads_popcount_minus_one_deltas_then_the_immediate(tmp_path):
    # v5: the DEV reader bug would swallow the immediate 77 as a fourth delta
    blocks = [Block((0, 0, 0), [[_mem(0x10, 0xF, "LDG.E.64", [100, 108, 116, 92], 2, imm=77)], []])]
    text = kernel_text(blocks, version=5)
    assert "8 2 0x64 8 8 -24 77 " in text
    kt = read_text(text, tmp_path)[0].kernels[0]
    assert kt.row_addresses(0).tolist() == [100, 108, 116, 92] and kt.imm[0] == 77


def test_line_numbers_and_immediates(tmp_path):
    rows = [Row(0x10, 0xFFFFFFFF, "BRA", imm=528, line_num=41), Row(0x20, 0xFFFF, "IMAD.MOV.U32", ["R3"], ["R255", "R4"],
                                                                    imm=-7, line_num=42),
            _mem(0x30, 0x3, "LDG.E.U8", [5, 6], 1, imm=0, line_num=43)]
    blocks = [Block((1, 1, 0), [[], rows])]
    kt = read_text(kernel_text(blocks, version=5, lineinfo=True), tmp_path)[0].kernels[0]
    assert kt.info.lineinfo and kt.info.tracer_version == 5
    assert_matches(kt, expected(blocks), line_num=True)
    assert kt.line_num.tolist() == [41, 42, 43] and kt.imm.tolist() == [528, -7, 0]
    assert kt.block.tolist() == [4 + 1] * 3 and kt.warp.tolist() == [1] * 3


def test_v6_cluster_lines_uniform_registers_and_values(tmp_path):
    r1 = Row(0x10, 0xFFFFFFFF, "UIADD3", ["UR4"], ["UR63", "UR5"], imm=0, imm2=3, values=True)
    r2 = Row(0x20, 0xFFFFFFFF, "ISETP.GE.AND", ["P0", "P7"], ["R0", "UP1"], imm=0, values=False)
    r3 = Row(0x30, 0xFFFFFFFF, "HGMMA.64x128x16.F32", ["R24"], ["UR8", "UR12"], imm=1)
    r4 = _mem(0x40, 0x1, "STS.128", [0x40], 2, imm=0, values=True)
    blocks = [Block((0, 1, 0), [[r1, r2], [r3, r4]], cluster=((0, 0, 0), (0, 1, 0), 2)),
              Block((3, 1, 0), [[r2], []], cluster=((1, 0, 0), (1, 1, 0), 3))]
    kt = read_text(kernel_text(blocks, version=6), tmp_path)[0].kernels[0]
    assert_matches(kt, expected(blocks))
    assert kt.dst[0, 0] == 264 + 4 and kt.src[0, :2].tolist() == [-1, 264 + 5]
    assert kt.dst[1, :2].tolist() == [256, -1] and kt.src[1, :2].tolist() == [0, 329]
    assert kt.extras["cluster_id"].tolist() == [[0, 0, 0], [1, 0, 0]]
    assert kt.extras["cluster_cta"].tolist() == [[0, 1, 0], [1, 1, 0]]
    assert kt.extras["cluster_rank"].tolist() == [2, 3]


def test_tracer_12_lines_carry_block_and_warp_prefix(tmp_path):
    rows = [Row(0x8, 0xFFFFFFFF, "S2R", ["R0"]), _mem(0x18, 0x3, "STG.E.SYS", [64, 68], 1)]
    blocks = [Block((2, 0, 0), [[], rows])]
    text = kernel_text(blocks, version=1, tracer_text="1.2")
    assert "\n2 0 0 1 0008 ffffffff 1 R0 S2R 0 0 \n" in text
    kt = read_text(text, tmp_path)[0].kernels[0]
    assert kt.info.tracer_version == 1
    assert_matches(kt, expected(blocks))


def test_five_sources_and_full_register_range(tmp_path):
    rows = [Row(0x10, 0xFFFFFFFF, "FFMA", ["R254"], ["R0", "R1", "R2", "R3", "R255"])]
    kt = read_text(kernel_text([Block((0, 0, 0), [rows, []])]), tmp_path)[0].kernels[0]
    assert kt.dst[0].tolist() == [254, -1, -1, -1] and kt.src[0].tolist() == [0, 1, 2, 3, -1, -1, -1, -1]


def test_xz_compressed_trace_and_kernelslist(tmp_path):
    blocks = [Block((0, 0, 0), [[_mem(0x10, 0x3, "LDG.E.64", [8, 24], 2)], [Row(0x20, 1, "EXIT")]])]
    (tmp_path / "kernel-3.traceg.xz").write_bytes(lzma.compress(kernel_text(blocks, kid=3).encode()))
    (tmp_path / "kernelslist.g").write_text("MemcpyHtoD,0x00007f0000001000,256\nkernel-3.traceg.xz\n")
    trace = tt.load(tmp_path, cache=tmp_path / "cache")
    assert trace.memcpy == [(0x7F0000001000, 256)]
    assert_matches(trace.kernels[0], expected(blocks))


def test_empty_warps_and_omitted_blocks(tmp_path):
    # blocks (1,0,0) and (0,1,0) only; warp 0 of the first is empty
    blocks = [Block((1, 0, 0), [[], [Row(0x10, 1, "EXIT")]]), Block((0, 1, 0), [[Row(0x10, 3, "EXIT")], []])]
    kt = read_text(kernel_text(blocks), tmp_path)[0].kernels[0]
    assert_matches(kt, expected(blocks))
    assert kt.warp_block.tolist() == [1, 1, 4, 4] and kt.warp_start.tolist() == [0, 0, 1, 2, 2]


def test_kernel_without_blocks(tmp_path):
    kt = read_text(kernel_text([]), tmp_path)[0].kernels[0]
    assert kt.num_rows == 0 and kt.num_warps == 0 and kt.block_xyz.shape == (0, 3)
    assert kt.warp_start.tolist() == [0] and kt.addr_start.tolist() == [0]


def test_crlf_and_tabs(tmp_path):
    blocks = [Block((0, 0, 0), [[_mem(0x10, 0x3, "LDG.E.64", [8, 24], 2)], [Row(0x20, 1, "EXIT")]])]
    text = kernel_text(blocks).replace(" 0x", "\t0x").replace("\n", "\r\n")
    assert_matches(read_text(text, tmp_path)[0].kernels[0], expected(blocks))


def test_opcode_width_rule():
    assert [opcode_width(o) for o in MEM_WIDTH] == list(MEM_WIDTH.values())
    assert opcode_width("LDSM.16.M88.4") == 2 and opcode_width("LDG.E") == 4


def test_resumable_scanner_gives_the_same_arrays(tmp_path):
    """Tiny text blocks and output capacities force many scanner calls; the result must not change."""
    rows = [_mem(0x10 * i, (1 << (i % 32 + 1)) - 1, "LDG.E.64", [64 * i + 8 * k for k in range(i % 32 + 1)], 1 + i % 2)
            for i in range(1, 40)]
    blocks = [Block((x, 0, 0), [rows[: 10 + x], rows[x:]]) for x in range(4)]
    p = tmp_path / "k.traceg"
    p.write_text(kernel_text(blocks))
    with TraceWriter(tmp_path / "small.native") as tw:
        sc = _Scan(row_cap=3, addr_cap=40)
        sc.wrec = sc.wrec[:2]
        sc.brec = sc.brec[:1]
        tw.add(convert_traceg(p, tw, chunk=61, scan=sc))
        tw.commit()
    assert_matches(load_native(tmp_path / "small.native").kernels[0], expected(blocks))


# ---- hypothesis: random traces read back exactly, and survive write → read -------------------------

LANES = st.integers(0, 2**32 - 1)


@st.composite
def rows_strategy(draw, version):
    n = draw(st.integers(0, 6))
    out = []
    for i in range(n):
        mask = draw(st.sampled_from([0, 0xFFFFFFFF, 1, 0x80000000])) if draw(st.booleans()) else draw(LANES)
        imm = draw(st.integers(-2**31, 2**31 - 1)) if version >= 5 else None
        if draw(st.booleans()):
            op = draw(st.sampled_from(sorted(MEM_WIDTH)))
            k = bin(mask).count("1")
            mode = draw(st.sampled_from([0, 2] + ([1] if k <= 1 else [])))
            addrs = draw(st.lists(st.integers(0, 2**48), min_size=k, max_size=k))
            if draw(st.booleans()) and k > 1 and mask == ((1 << k) - 1) << (mask & -mask).bit_length() - 1:
                base, stride = draw(st.integers(2**20, 2**40)), draw(st.integers(-2**15, 2**15))
                addrs, mode = [base + j * stride for j in range(k)], 1
            out.append(Row(0x10 * (i + 1), mask, op, draw(st.lists(st.sampled_from(["R0", "R7", "R255"]), max_size=1)),
                           draw(st.lists(st.sampled_from(["R2", "R254", "R255"]), max_size=5)), True, mode, addrs, imm))
        else:
            out.append(Row(0x10 * (i + 1), mask, draw(st.sampled_from(ALU_OPS)),
                           draw(st.lists(st.sampled_from(["R1", "R200", "R255"]), max_size=1)),
                           draw(st.lists(st.sampled_from(["R3", "R9", "R255"]), max_size=5)), imm=imm))
    return out


@st.composite
def kernel_strategy(draw):
    version = draw(st.sampled_from([1, 3, 4, 5, 6]))
    xs = draw(st.lists(st.integers(0, 3), min_size=0, max_size=4, unique=True))
    blocks = [Block((x, 0, 0), [draw(rows_strategy(version)), draw(rows_strategy(version))]) for x in sorted(xs)]
    return version, draw(st.booleans()), blocks


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kernel_strategy())
def test_random_traces_read_exactly_and_round_trip(tmp_path_factory, case):
    version, lineinfo, blocks = case
    tmp = tmp_path_factory.mktemp("hyp")
    text = kernel_text(blocks, version=version, lineinfo=lineinfo, grid=(4, 1, 1))
    kt = read_text(text, tmp)[0].kernels[0]
    assert_matches(kt, expected(blocks, grid=(4, 1, 1)), line_num=lineinfo)
    tt.write_accelsim(tt.Trace([kt]), tmp / "back")
    again = tt.load(tmp / "back", cache=tmp / "cache2").kernels[0]
    # written as the tracer writes for Accel-Sim's parser: at most 4 sources (MAX_SRC), the rest as read
    as_written = [Block(b.xyz, [[replace(r, src=r.src[:4]) for r in w] for w in b.warps], b.cluster) for b in blocks]
    assert_matches(again, expected(as_written, grid=(4, 1, 1)), line_num=lineinfo)
    assert again.info == kt.info
