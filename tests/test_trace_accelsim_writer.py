"""Accel-Sim text that teg writes is what the NVBit tracer writes (issue 25, item 6): general
registers only, at most one destination and four sources per row — the limits Accel-Sim's trace
parser asserts (``trace_parser.h``: MAX_DST 1, MAX_SRC 4; ``sscanf("R%d")`` per register) — and
teg reads back exactly what it wrote."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import teg.trace as tt
from teg.sass import parse_text
from teg.trace import nvbit_view
from teg.trace.model import KernelInfo, KernelTrace, Trace

HERE = Path(__file__).parent
EMU = HERE / "fixtures" / "sass"
ROW = re.compile(r"^[0-9a-f]{4,} [0-9a-f]{8} ")


def parser_view(line: str) -> tuple[str, str, list[str], list[str]]:
    """(pc, opcode, destinations, sources) of an instruction line read the way Accel-Sim's
    ``inst_trace_t::parse_from_string`` reads it (version ≥ 3, no line numbers)."""
    t = line.split()
    nd = int(t[2])
    dst = t[3:3 + nd]
    op = t[3 + nd]
    ns = int(t[4 + nd])
    return t[0], op, dst, t[5 + nd:5 + nd + ns]


def instruction_lines(folder: Path) -> list[str]:
    return [ln for f in sorted(folder.glob("kernel-*.traceg")) for ln in f.read_text().splitlines() if ROW.match(ln)]


def assert_accelsim_parser_accepts(folder: Path) -> None:
    lines = instruction_lines(folder)
    assert lines
    for ln in lines:
        _, _, dst, src = parser_view(ln)
        assert len(dst) <= 1 and len(src) <= 4, ln
        assert all(re.fullmatch(r"R\d+", r) and int(r[1:]) <= 255 for r in dst + src), ln


@pytest.fixture(scope="module")
def emulated():
    from teg.emu import run

    return run(EMU / "kernels.sm_90.cubin", "matmul_abt", "2,2", "16,16",
               ["A=rand:float32:32x32", "B=rand:float32:32x32", "C=zeros:float32:32x32", "n=32"],
               sass=EMU / "kernels.sm_90.sass")


def test_emulated_trace_is_written_as_the_tracer_writes_it(emulated, tmp_path):
    tt.write_accelsim(emulated.trace, tmp_path / "acc")
    assert_accelsim_parser_accepts(tmp_path / "acc")
    first = {}
    for ln in instruction_lines(tmp_path / "acc"):
        first.setdefault(int(ln.split()[0], 16), ln)
    # hand-read from the SASS (tests/fixtures/sass/kernels.sm_90.sass, matmul_abt)
    expect = {
        0x030: "0 ULDC.64 0 0 ",                          # ULDC.64 UR8, c[0x0][0x208]: uniform, nothing
        0x040: "1 R7 HFMA2.MMA 2 R255 R255 0 ",           # HFMA2.MMA R7, -RZ, RZ, 0, 0: RZ as R255
        0x090: "0 ISETP.GE.AND 1 R11 0 ",                 # ISETP P0, PT, R11, 0x10, PT: predicate dest dropped
        0x0d0: "1 R28 IMAD.WIDE 2 R3 R28 0 ",             # IMAD.WIDE R28, R3, 0x4, R28: first register of R28.64
        0x250: "1 R25 LDG.E 1 R2 4 ",                     # LDG.E R25, desc[UR8][R2.64]: address base only
        0x2c0: "0 STS 2 R23 R25 4 ",                      # STS [R23], R25: address then data
        0x2f0: "1 R12 LDS.128 1 R21 16 ",                 # LDS.128 R12, [R21]: R12 only, not R12…R15
    }
    for pc, text in expect.items():
        assert first[pc].split(" ", 2)[2].startswith(text), first[pc]


def test_teg_reads_back_what_it_writes(emulated, tmp_path):
    kt = emulated.kernel_trace
    tt.write_accelsim(emulated.trace, tmp_path / "acc")
    back = tt.load(tmp_path / "acc", cache=tmp_path / "cache").kernels[0]
    for col in ("warp", "block", "pc", "mask", "mem_width", "imm", "addr_start", "addresses", "warp_start",
                "warp_block", "block_xyz"):
        np.testing.assert_array_equal(np.asarray(getattr(back, col)), np.asarray(getattr(kt, col)), err_msg=col)
    assert [back.opcodes[o] for o in back.opcode] == [kt.opcodes[o] for o in kt.opcode]
    # registers: the tracer view of each row's instruction, RZ (R255) read as -1
    pcs, regs = kt.extras[nvbit_view.EXTRA_PC], kt.extras[nvbit_view.EXTRA_REGS]
    view = regs[np.searchsorted(pcs, np.asarray(kt.pc))].astype(np.int64)
    view[view == nvbit_view.RZ_ID] = -1
    np.testing.assert_array_equal(np.asarray(back.dst)[:, 0], view[:, 0])
    assert (np.asarray(back.dst)[:, 1:] == -1).all()
    np.testing.assert_array_equal(np.asarray(back.src)[:, :4], view[:, 1:])
    assert (np.asarray(back.src)[:, 4:] == -1).all()


def test_saved_native_trace_converts_to_the_same_text(emulated, tmp_path):
    tt.write_accelsim(emulated.trace, tmp_path / "direct")
    native = tt.save(emulated.trace, tmp_path / "t.npz")
    tt.convert(native, tmp_path / "converted")
    assert ((tmp_path / "converted" / "kernel-1.traceg").read_bytes()
            == (tmp_path / "direct" / "kernel-1.traceg").read_bytes())


def test_instruction_registers_follow_the_tracer_rules():
    text = """\tcode for sm_90
\t\tFunction : k
        /*0000*/                   ISETP.GE.AND P0, PT, R11, 0x10, PT ;
        /*0010*/                   STG.E.64 desc[UR8][R28.64], R6 ;
        /*0020*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
        /*0030*/                   SHFL.IDX PT, R5, R4, R3, R2 ;
        /*0040*/                   UIADD3 UR5, UR4, 0x400, URZ ;
        /*0050*/                   IADD3 R2, P0, R2, R9, RZ ;
        /*0060*/                   IMAD.MOV.U32 R4, RZ, RZ, c[0x0][0x160] ;
        /*0070*/                   LDS.U.128 R12, [R21+UR4+0x10] ;
        /*0080*/                   IADD3 R1, R2, R3, R4 ;
        /*0090*/                   @P1 EXIT ;
"""
    (p,) = parse_text(text, demangle=False)
    got = [nvbit_view.instruction_registers(i) for i in p.instructions]
    assert got == [(-1, (11,)),              # predicate destination: none
                   (-1, (28, 6)),            # store: address base, then data
                   (4, (8, 12, 4)),          # MMA fragments: first register of each
                   (-1, (5, 4, 3, 2)),       # operand 0 is PT: every register a source (tracer: SHFL.IDX 4 …)
                   (-1, ()),                 # uniform datapath: nothing
                   (2, (2, 9, 255)),         # carry-out predicate dropped, RZ as R255
                   (4, (255, 255)),          # constant dropped (tracer sample: IMAD.MOV.U32 2 R255 R255)
                   (12, (21,)),              # uniform part of the address dropped
                   (1, (2, 3, 4)),
                   (-1, ())]                 # guard predicate never listed
    pcs, regs = nvbit_view.program_table(p)
    assert pcs.tolist() == list(range(0, 0xa0, 0x10)) and regs.shape == (10, 5)
    assert regs[3].tolist() == [-1, 5, 4, 3, 2] and regs[1].tolist() == [-1, 28, 6, -1, -1]


def _hand_trace(dst: list[list[int]], src: list[list[int]]) -> Trace:
    n = len(dst)
    kt = KernelTrace(
        info=KernelInfo(name="k", grid=(1, 1, 1), block=(32, 1, 1), binary_version=90, tracer_version=5),
        opcodes=["OP"], warp=np.zeros(n, np.int32), block=np.zeros(n, np.int32),
        pc=np.arange(n, dtype=np.int64) * 16, opcode=np.zeros(n, np.int32), mask=np.full(n, 0xFFFFFFFF, np.uint32),
        dst=np.array([d + [-1] * (4 - len(d)) for d in dst], np.int16),
        src=np.array([s + [-1] * (8 - len(s)) for s in src], np.int16),
        mem_width=np.zeros(n, np.int16), imm=np.zeros(n, np.int64), addr_start=np.zeros(n + 1, np.int64),
        addresses=np.zeros(0, np.uint64), warp_start=np.array([0, n], np.int64), warp_block=np.zeros(1, np.int32),
        block_xyz=np.zeros((1, 3), np.int32))
    return Trace([kt])


def test_flat_register_lists_are_reduced_to_what_the_parser_accepts(tmp_path):
    """A trace without the per-instruction view (Accel-Sim version 6 input, an older teg trace):
    each row's own lists, general registers only, one destination, four sources."""
    P0, UR4, UP1 = 256, 268, 329
    tr = _hand_trace(dst=[[P0, 3], [UR4], [5, 6, 7, 8], [-1]],
                     src=[[UR4, 1, P0, 2], [1, 2, 3, 4, 5, 6], [-1, 9, UP1], [UR4, UR4 + 1]])
    tt.write_accelsim(tr, tmp_path / "acc")
    lines = instruction_lines(tmp_path / "acc")
    assert [ln.split(" ", 2)[2] for ln in lines] == [
        "1 R3 OP 2 R1 R2 0 0 ",          # P0 and UR4 left out
        "0 OP 4 R1 R2 R3 R4 0 0 ",       # uniform destination: none; six sources: the first four
        "1 R5 OP 2 R255 R9 0 0 ",        # first destination only; a zero register inside the list stays R255
        "0 OP 0 0 0 ",                   # RZ destination and uniform-only sources: nothing
    ]
    assert_accelsim_parser_accepts(tmp_path / "acc")
