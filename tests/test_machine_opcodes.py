"""Opcode classification: specificity of modifier keys and coverage of real nvcc 13 output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import teg.machine as tm

FIXTURES = Path(__file__).parent / "fixtures" / "sass"
ARCHS = (75, 80, 86, 89, 90, 100, 120)
# "/*0a40*/   @!P0 IMAD.WIDE.U32 R2, ..." → the full opcode with modifiers
INSTR = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)", re.M)


SASS_FILES = sorted(FIXTURES.glob("kernels.sm_*.sass"))

# Real Pascal traces (romnn/microgpusim, Accel-Sim tracer v4, binary version 61; tests/data SOURCES).
PASCAL_TRACES = [Path(__file__).parent / "data" / "traces" / "microgpusim" / name / "kernel-1.traceg"
                 for name in ("vectoradd-100-32-trace", "matrixmul-32-32-trace")]
# "0098 ffffffff 1 R2 IADD 2 R0 R6 0" → dest count, then dest registers, then the opcode
TRACE_ROW = re.compile(r"^[0-9a-f]+ [0-9a-f]{8} (\d+) (.*)$", re.M)


def trace_opcodes(text: str) -> set[str]:
    """Full opcodes of the instruction rows of an Accel-Sim ``.traceg`` text (the token after
    the ``dest_num`` destination registers)."""
    ops = set()
    for m in TRACE_ROW.finditer(text):
        tokens = m.group(2).split()
        ops.add(tokens[int(m.group(1))])
    return ops


def test_every_arch_has_fixtures():
    assert {int(re.search(r"sm_(\d+)", p.name).group(1)) for p in SASS_FILES} == set(ARCHS)


@pytest.mark.parametrize("path", SASS_FILES, ids=lambda p: p.name)
def test_no_unknown_opcodes_in_fixtures(path):
    """Acceptance: zero unknown opcodes over every cuobjdump/nvdisasm fixture, each classified
    with the table for_arch suggests for its SM version."""
    arch = int(re.search(r"sm_(\d+)", path.name).group(1))
    ops = set(INSTR.findall(path.read_text()))
    assert len(ops) > 80, "the fixture regex must see the disassembly"
    machine = tm.load(tm.for_arch(arch))
    unknown = sorted(op for op in ops if machine.classify(op) is None)
    assert unknown == [], f"sm_{arch} ({machine.name}): unknown opcodes {unknown}"


def test_sm75_fixture_classifies_on_the_turing_table():
    """The sm_75 fixture through the Turing table itself (zero unknown)."""
    assert tm.for_arch(75) == "sm_75"
    machine = tm.load("sm_75")
    ops = set(INSTR.findall((FIXTURES / "kernels.sm_75.sass").read_text()))
    assert len(ops) > 80 and "IMAD.WIDE" in ops
    assert sorted(op for op in ops if machine.classify(op) is None) == []


@pytest.mark.parametrize("path", PASCAL_TRACES, ids=lambda p: p.parent.name)
def test_pascal_trace_opcodes_classify_on_sm61(path):
    """Acceptance: every opcode the Pascal traces print classifies on the table for_arch
    suggests for their binary version (61), with zero unknown."""
    if not path.exists():
        pytest.skip(f"{path} not present")
    text = path.read_text()
    assert "-binary version = 61" in text
    ops = trace_opcodes(text)
    assert {"EXIT", "MOV", "S2R"} <= ops and all(re.fullmatch(r"[A-Z][A-Z0-9_.]*", op) for op in ops)
    machine = tm.load(tm.for_arch(61))
    assert machine.name == "sm_61"
    unknown = sorted(op for op in ops if machine.classify(op) is None)
    assert unknown == [], f"sm_61: unknown opcodes {unknown}"


def test_pascal_trace_opcode_extraction():
    """The regex reads the opcode after the destination registers (hand-read rows)."""
    text = ("0068 ffffffff 1 R0 XMAD 3 R3 R17 R0 0 \n"
            "0090 ffffffff 0 BAR.SYNC 0 0 \n"
            "00b8 0000000f 2 R4 R5 LDS.U.128 1 R2 16 1 0x0 \n"
            "thread block = 0,0,0\n")
    assert trace_opcodes(text) == {"XMAD", "BAR.SYNC", "LDS.U.128"}


def test_pascal_dialect():
    m = tm.load("sm_61")
    assert m.classify("XMAD.PSL.CBCC").unit == "core" and m.classify("XMAD.MRG").unit_class == "int"
    assert m.classify("LDS.U.32").width == 4 and m.classify("LDS.U.128").width == 16
    assert m.classify("LDG.E.CG").space == "global" and m.classify("STS").kind == "store"
    assert m.classify("TEXS.NODEP.P").space == "texture"
    for op in ("SSY", "SYNC", "PBK", "BRK", "PCNT", "CONT"):
        assert m.classify(op).kind == "sync", op
    assert m.classify("BRA.U").kind == "branch" and m.classify("EXIT").kind == "exit"
    assert m.classify("BAR.SYNC").kind == "barrier" and m.classify("MEMBAR.CTA").kind == "membar"
    assert m.classify("DEPBAR.LE").kind == "depbar" and m.classify("CAL").kind == "call"
    assert m.classify("F2F.F64.F32").unit == m.classify("DFMA").unit == "fp64"
    assert m.classify("F2F.F32.F16").unit == "xu" and m.classify("MUFU.EX2").unit == "xu"
    assert m.classify("SHFL.BFLY").latency == "shfl" and m.classify("S2R").variable is True
    assert m.classify("IADD.X").latency == "int" and m.classify("ISETP.GT.AND").latency == "predicate"
    # no uniform datapath, no Volta+ convergence or async copies on Pascal
    for op in ("UIADD3", "ULDC", "BSSY", "BSYNC", "LDGSTS", "HMMA.884", "IMMA.8816"):
        assert m.classify(op) is None, op
    assert m.match_key("IMAD.WIDE.U32") == "IMAD"           # base IMAD exists on Pascal


def test_parsed_fixture_programs_classify():
    """The same acceptance through the real parser: every instruction of every Program parsed
    from the fixtures classifies on the table for_arch suggests for Program.arch."""
    sass = pytest.importorskip("teg.sass")
    if not hasattr(sass, "parse_file"):
        pytest.skip("teg.sass.parse_file not available")
    seen = 0
    for path in SASS_FILES:
        for prog in sass.parse_file(path):
            machine = tm.load(tm.for_arch(int(prog.arch.removeprefix("sm_"))))
            unknown = {ins.opcode for ins in prog.instructions if machine.classify(ins.opcode) is None}
            assert not unknown, f"{path.name} {prog.name}: {sorted(unknown)}"
            seen += len(prog.instructions)
    assert seen > 10000


@pytest.mark.parametrize("name", ["sm_70", "sm_80", "sm_86", "sm_90", "sm_100"])
def test_accelsim_opcode_list_is_covered(name):
    """Every base opcode Accel-Sim lists for Ampere/Hopper (data/accelsim/opcode_categories.csv,
    provenance in data/accelsim/SOURCES.md) classifies on the Volta+ tables (the Hopper-only ones
    on sm_90+)."""
    csv = Path(__file__).parent / "data" / "accelsim" / "opcode_categories.csv"
    machine = tm.load(name)
    rows = [line.split(",") for line in csv.read_text().splitlines()[1:]]
    wanted = {r[2] for r in rows if r[1] == "80;86" or (machine.sm >= 90 and r[1] == "90")}
    missing = sorted(op for op in wanted if machine.classify(op) is None)
    assert missing == []


@pytest.mark.parametrize("arch", ARCHS)
def test_variable_flags_agree_with_ptxas_write_barriers(arch):
    """ptxas sets a write barrier (bits 110-112 != 7) only on variable-latency producers: no
    instruction the table calls fixed-latency may carry one in the fixture of its arch."""
    machine = tm.load(tm.for_arch(arch))
    lines = (FIXTURES / f"kernels.sm_{arch}.sass").read_text().splitlines()
    checked = 0
    for i, line in enumerate(lines):
        m = INSTR.match(line)
        if not m:
            continue
        hi = int(re.search(r"/\* (0x[0-9a-f]{16}) \*/", lines[i + 1]).group(1), 16)
        info = machine.classify(m.group(1))
        if not info.variable and info.kind not in ("depbar", "sync"):
            assert (hi >> 46) & 7 == 7, f"{m.group(1)} sets a write barrier but is classified fixed"
            checked += 1
    assert checked > 300


def test_classify_specificity():
    m = tm.load("sm_90")
    assert m.classify("IMAD").latency == "imad"
    assert m.classify("IMAD.MOV.U32").latency == "imad"
    assert m.classify("IMAD.WIDE").latency == "imad_wide"
    assert m.classify("IMAD.WIDE.U32").latency == "imad_wide"
    assert m.classify("MUFU.RSQ").latency == "sfu"
    assert m.classify("MUFU.RSQ64H").latency == "sfu_dp"       # a different modifier, not a prefix
    assert m.classify("LDS").width == 4
    assert m.classify("LDS.128").width == 16
    assert m.classify("LDS.U.128").width == 16                 # extra modifiers do not matter
    assert m.classify("LDG.E.64.SYS").width == 8
    assert m.classify("STG.E.U8").width == 1
    assert m.classify("LDSM.16.M88.4").space == "shared"        # LDSM is its own base, not LDS
    assert m.classify("FFMA").kind == "alu" and m.classify("BRA.U").kind == "branch"
    assert m.classify("BAR.SYNC.DEFER_BLOCKING").kind == "barrier"
    assert m.classify("EXIT").kind == "exit" and m.classify("CALL.REL.NOINC").kind == "call"
    assert m.classify("RET.REL.NODEC").kind == "ret" and m.classify("DEPBAR.LE").kind == "depbar"
    assert m.classify("ATOMS.POPC.INC.32").space == "shared"
    assert m.classify("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU").kind == "atomic"
    assert m.classify("LDGSTS.E.BYPASS.128").width == 16
    assert m.classify("NOTANOPCODE") is None
    assert m.classify("FFMAX") is None                         # bases match whole words only


def test_classify_ties_prefer_most_modifiers():
    m = tm.load("sm_86")
    plain, f32 = m.classify("HMMA.16816.F16"), m.classify("HMMA.16816.F32")
    assert plain.unit == f32.unit == "tensor"
    assert m.occupancy(plain) == m.units["tensor"].occupancy and m.occupancy(f32) == 2 * m.occupancy(plain)


def test_gt200_dialect():
    m = tm.load("gt200")
    expect = {"FADD32": "fp_add", "FMUL32I": "fp_mul", "FMAD": "fp_mad", "IADD": "int_add",
              "IMUL32.U16.U16": "int_mul16", "IMAD.U16": "int_mad16", "DFMA": "dp_fma",
              "GLD.U32": "global", "S2R": "s2r", "SHL": "int_add"}
    for op, lat in expect.items():
        assert m.classify(op).latency == lat, op
    assert m.classify("GLD.S64").width == 8 and m.classify("GST.U8").width == 1
    assert m.classify("F2F.F64.F32").unit == "dp" and m.classify("F2F.F32.F16").unit == "sp"
    assert m.classify("BAR.ARV.WAIT").kind == "barrier"


def test_match_key_names_the_winning_entry():
    m = tm.load("sm_90")
    assert m.match_key("IMAD.WIDE.U32") == "IMAD.WIDE"
    assert m.match_key("LDS.U.128") == "LDS.128"
    assert m.match_key("LDS") == "LDS"
    assert m.match_key("NOPE.X") is None
