"""SASS listings → Program: the nvcc-compiled fixtures, the GT200 listing, and bad input."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from teg import TegError
from teg.sass import Program, SassParseError, parse_file, parse_text
from teg.sass.registers import UR_BASE

UR4 = UR_BASE + 4

FIXTURES = Path(__file__).parent / "fixtures" / "sass"
ARCHS = (75, 80, 86, 89, 90, 100, 120)
ALL_LISTINGS = sorted(FIXTURES.glob("kernels.sm_*.sass"))
CUOBJDUMP_LISTINGS = sorted(FIXTURES.glob("kernels.sm_*[0-9].sass"))
ADDR_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/", re.M)
KERNELS = {"matmul_abt", "matmul_abt_padded", "atomics", "shuffles_votes", "dstencil", "half2_axpy",
           "wmma_gemm", "local_spill", "cp_async_copy", "divergent_loop", "int_div_sqrt", "transpose_naive",
           "transpose_shared", "saxpy", "vec4_ldg", "_Z10reduce_sumIfEvPKT_PS0_i", "_Z10reduce_sumIiEvPKT_PS0_i"}


@pytest.fixture(scope="module")
def parsed() -> dict[str, list[Program]]:
    return {p.name: parse_text(p.read_text(), str(p), demangle=False) for p in ALL_LISTINGS}


def test_every_arch_has_all_three_listing_kinds():
    names = {p.name for p in ALL_LISTINGS}
    for arch in ARCHS:
        assert f"kernels.sm_{arch}.sass" in names and f"kernels.sm_{arch}.nvdisasm.sass" in names
    assert {"kernels.sm_75.nvdisasm_hex.sass", "kernels.sm_90.nvdisasm_hex.sass"} <= names


@pytest.mark.parametrize("path", ALL_LISTINGS, ids=lambda p: p.name)
def test_instruction_count_equals_address_lines(path, parsed):
    """Acceptance: every /*addr*/ instruction line becomes exactly one instruction."""
    programs = parsed[path.name]
    assert {p.name for p in programs} == KERNELS
    assert sum(len(p) for p in programs) == len(ADDR_LINE.findall(path.read_text()))
    arch = "sm_" + re.search(r"sm_(\d+)", path.name).group(1)
    assert {p.arch for p in programs} == {arch}
    for p in programs:
        assert [i.index for i in p.instructions] == list(range(len(p)))
        addrs = [i.address for i in p.instructions]
        assert addrs == sorted(addrs) and len(set(addrs)) == len(addrs)
        assert addrs[0] == 0


@pytest.mark.parametrize("path", ALL_LISTINGS, ids=lambda p: p.name)
def test_branch_targets_resolve(path, parsed):
    for p in parsed[path.name]:
        for ins in p.instructions:
            if ins.base in ("BRA", "BSSY", "CALL"):
                assert ins.branch_target is not None, ins.text
                assert 0 <= ins.branch_target < len(p)
            elif ins.base not in ("RET",):
                assert ins.branch_target is None


@pytest.mark.parametrize("arch", ARCHS)
def test_cuobjdump_and_nvdisasm_agree(arch, parsed):
    """The same cubin disassembled two ways gives the same instructions, registers and branch
    targets (hex addresses vs .L_x_N labels)."""
    a = {p.name: p for p in parsed[f"kernels.sm_{arch}.sass"]}
    b = {p.name: p for p in parsed[f"kernels.sm_{arch}.nvdisasm.sass"]}
    assert a.keys() == b.keys()
    for name, p in a.items():
        q = b[name]
        assert [(i.address, i.opcode, i.guard, i.dst_regs, i.src_regs, i.branch_target, i.mem_width)
                for i in p.instructions] == \
               [(i.address, i.opcode, i.guard, i.dst_regs, i.src_regs, i.branch_target, i.mem_width)
                for i in q.instructions]
        assert all(i.control is not None for i in p.instructions)
        assert all(i.control is None for i in q.instructions)


@pytest.mark.parametrize("arch", (75, 90))
def test_nvdisasm_hex_controls_equal_cuobjdump(arch, parsed):
    a = {p.name: p for p in parsed[f"kernels.sm_{arch}.sass"]}
    for q in parsed[f"kernels.sm_{arch}.nvdisasm_hex.sass"]:
        assert [i.control for i in q.instructions] == [i.control for i in a[q.name].instructions]
        assert q.labels, "nvdisasm prints .L_x_N labels"


def test_nvdisasm_labels_and_subroutines(parsed):
    (p,) = [p for p in parsed["kernels.sm_90.nvdisasm.sass"] if p.name == "int_div_sqrt"]
    assert p.labels["int_div_sqrt"] == 0
    sub = p.labels["$__internal_0_$__cuda_sm20_sqrt_rn_f32_slowpath"]
    calls = [i for i in p.instructions if i.base == "CALL"]
    assert any(i.branch_target == sub for i in calls)
    first = p.instructions[sub]
    assert first.text.startswith("LOP3.LUT P0, RZ, R2, 0x7fffffff")


def test_hand_checked_instruction(parsed):
    """/*00b0*/ @!P0 LDG.E R4, desc[UR6][R2.64] in _Z10reduce_sumIiEvPKT_PS0_i (sm_90)."""
    (p,) = [p for p in parsed["kernels.sm_90.sass"] if p.name == "_Z10reduce_sumIiEvPKT_PS0_i"]
    ins = p.instructions[p.pc_index()[0xB0]]
    assert ins.opcode == "LDG.E" and ins.base == "LDG" and ins.modifiers == ("E",)
    assert ins.guard == "!P0" and ins.guard_reg == 256
    assert ins.dst_regs == (4,)
    assert set(ins.src_regs) == {256, 264 + 6, 264 + 7, 2, 3}
    assert ins.mem_width == 4 and ins.operands[1].space == "global"
    # hi word 0x000ea2000c1e1900: bits 41-61 = 0x000ea2 >> 1 = 0x751 = 0b111_010_1_0001
    # → stall 1, yield 1, write barrier 2, read barrier 7 (none), wait 0
    c = ins.control
    assert (c.stall, c.yield_, c.wbar, c.rbar, c.wait) == (1, 1, 2, 7, 0)
    bra = p.instructions[p.pc_index()[0x150]]      # @!P1 BRA 0x210
    assert bra.branch_target == p.pc_index()[0x210]
    assert bra.operands[0].kind == "label" and bra.operands[0].value == 0x210


def test_table_arrays(parsed):
    (p,) = [p for p in parsed["kernels.sm_90.sass"] if p.name == "saxpy"]
    t = p.table()
    assert t["dst"].shape[0] == len(p) and int(t["has_ctrl"].sum()) == len(p)
    assert (t["stall"] == [i.control.stall for i in p.instructions]).all()


def test_gt200_listing3():
    programs = parse_file(FIXTURES / "teg_listing3.sass")
    assert [p.arch for p in programs] == ["sm_13", "sm_13"]
    bench, shared = programs
    ops = [i.opcode for i in bench.instructions]
    assert ops == ["S2R", "SHL"] + ["FADD32"] * 21 + ["S2R", "SHL"]
    assert bench.instructions[0].operands[1].kind == "sreg" and bench.instructions[0].dst_regs == (3,)
    fadd = bench.instructions[2]
    assert fadd.dst_regs == (4,) and fadd.src_regs == (4, 2) and fadd.control is None
    gld = shared.instructions[2]
    assert gld.opcode == "GLD.U32" and gld.dst_regs == (2,) and gld.src_regs == (1,) and gld.mem_width == 4
    fs = shared.instructions[3]
    g = fs.operands[1]
    assert fs.text == "FADD32 R2, g[A1+0xb], R2"
    assert (g.kind, g.space, g.offset) == ("mem", "shared", 0xB)
    assert fs.src_regs == (337, 2) and fs.mem_width == 4


def test_gt200_layout_with_encoding_before_the_text():
    text = """\tcode for sm_13
\t\tFunction : _Z6kernelPf
\t/*0000*/     /*0x10004205023fc780*/ \tMOV.U16 R0H, g [0x1].U16;
\t/*0008*/     /*0x40010c1d00000780*/ \tIMUL.U16.U16 R7, R0L, R4H;
\t/*0010*/     /*0x2000020504000780*/ \tIADD32 R5, s[0x0018], R0;
\t/*0018*/     /*0xd00e0205a0c00781*/ \tGST.U32 global14 [R2], R1;
"""
    (p,) = parse_text(text, demangle=False)
    mov, imul, iadd, gst = p.instructions
    assert p.arch == "sm_13" and [i.address for i in p.instructions] == [0, 8, 0x10, 0x18]
    assert mov.dst_regs == (0,) and mov.operands[0].select == "H"
    assert (mov.operands[1].space, mov.operands[1].offset, mov.operands[1].select, mov.mem_width) == \
        ("shared", 1, "U16", 2)
    assert imul.src_regs == (0, 4)
    assert iadd.operands[1].space == "shared" and iadd.operands[1].offset == 0x18
    assert gst.dst_regs == () and gst.src_regs == (2, 1) and gst.operands[0].space == "global"
    assert all(i.control is None for i in p.instructions)


def test_u32_index_beside_a_uniform_base_stays_32_bit():
    """``LDG.E.SYS R0, [R0.U32+UR4]`` (nvcc 13, sm_75: a __device__ table indexed by the thread):
    the 64-bit base is UR4:UR5 and R0 a 32-bit unsigned offset; ``[R6+UR4]`` widens R6 as before."""
    text = """\tcode for sm_75
\t\tFunction : k
        /*0000*/                   LDG.E.SYS R0, [R0.U32+UR4] ;             /* 0x0000000400007381 */
                                                                            /* 0x000ea200001ee900 */
        /*0010*/                   LDG.E.SYS R2, [R6+UR4] ;                 /* 0x0000000406027381 */
                                                                            /* 0x000ea200001ee900 */
"""
    (p,) = parse_text(text, demangle=False)
    a, b = (i.operands[1] for i in p.instructions)
    assert (a.reg, a.wide, a.regs) == (0, 1, (0, UR4, UR4 + 1))
    assert (b.reg, b.wide, b.regs) == (6, 2, (6, 7, UR4))


def test_executable_style_listing_with_two_arches():
    text = """
Fatbin elf code:
================
arch = sm_80
code version = [1,8]
host = linux
compile_size = 64bit

\tcode for sm_80
\t\tFunction : _Z1kPf
\t.headerflags\t@"EF_CUDA_SM80 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM80)"
        /*0000*/                   MOV R1, c[0x0][0x28] ;                             /* 0x00000a0000017a02 */
                                                                                      /* 0x000fe40000000f00 */
        /*0010*/                   EXIT ;                                             /* 0x000000000000794d */
                                                                                      /* 0x000fea0003800000 */
        /*0020*/                   BRA 0x20;                                          /* 0xfffffff000007947 */
                                                                                      /* 0x000fc0000383ffff */
\t\t..........



Fatbin ptx code:
================
arch = sm_90
code version = [9,0]
host = linux
compile_size = 64bit
compressed
ptxasOptions =

Fatbin elf code:
================
arch = sm_90
code version = [1,8]
host = linux
compile_size = 64bit

\tcode for sm_90
\t\tFunction : _Z1kPf
        /*0000*/                   EXIT ;                                             /* 0x000000000000794d */
                                                                                      /* 0x000fea0003800000 */
"""
    a, b = parse_text(text, "exe", demangle=False)
    assert (a.name, a.arch, len(a), b.arch, len(b)) == ("_Z1kPf", "sm_80", 3, "sm_90", 1)
    assert a.instructions[2].branch_target == 2
    assert a.instructions[2].control.stall == 0 and a.instructions[1].control.stall == 5


def test_headerflags_give_the_arch_when_nothing_else_does():
    text = """\t\tFunction : k
\t.headerflags\t@"EF_CUDA_SM86 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM86)"
        /*0000*/                   EXIT ;
"""
    (p,) = parse_text(text, demangle=False)
    assert p.arch == "sm_86" and p.sm == 86


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt not on PATH")
def test_demangling():
    programs = parse_file(FIXTURES / "kernels.sm_90.sass")
    by_name = {p.name: p for p in programs}
    assert by_name["_Z10reduce_sumIfEvPKT_PS0_i"].demangled == "void reduce_sum<float>(float const*, float*, int)"
    assert by_name["saxpy"].demangled is None


# ---------------------------------------------------------------------------------------------- errors

GOOD_HEAD = "\tcode for sm_90\n\t\tFunction : k\n"


@pytest.mark.parametrize("body,problem", [
    ("        /*0000*/   IADD3 R1, R2, R3, R999 ;\n", "out of range"),
    ("        /*0000*/   iadd3 R1, R2 ;\n", "bad opcode"),
    ("        /*00zz*/   EXIT ;\n", "address"),
    ("        /*0000*/   @Q0 EXIT ;\n", "guard"),
    ("        /*0000*/   MOV R1, c[0x0] ;\n", "constant"),
    ("        /*0000*/   EXIT ; EXIT ;\n", "malformed"),
    ("this is not sass\n", "unrecognized line"),
    ("                   /* 0x000fe20000000f00 */\n", "without an instruction"),
    ("        /*0000*/   EXIT ;   /* 0xZZ */\n", "encoding"),
])
def test_malformed_line_raises_with_file_line_text(body, problem):
    text = GOOD_HEAD + body
    with pytest.raises(SassParseError) as info:
        parse_text(text, source="bad.sass", demangle=False)
    err = info.value
    assert isinstance(err, TegError)
    assert err.source == "bad.sass" and err.line == 3 and err.text == body.rstrip("\n")
    assert problem in str(err) and "bad.sass:3" in str(err)
    assert "\n" not in str(err)


def test_instruction_outside_a_kernel():
    with pytest.raises(SassParseError, match="outside a kernel"):
        parse_text("        /*0000*/   EXIT ;\n", demangle=False)


def test_empty_text_has_no_kernels():
    assert parse_text("", demangle=False) == []
    assert parse_text("\n// only a comment\n", demangle=False) == []


def test_parse_file_reads_stdin(monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(GOOD_HEAD + "        /*0000*/   EXIT ;\n"))
    (p,) = parse_file("-")
    assert p.source == "<stdin>" and p.instructions[0].opcode == "EXIT"


def test_braced_operand_group_and_dual_issue_braces():
    text = GOOD_HEAD + """        /*0000*/                   DEPBAR.LE SB0, 0x1, {5,4} ;     /* 0x000000000000791a */
                                                                   /* 0x000fc00000000000 */
        /*0010*/         {         EXIT ;                          /* 0x000000000000794d */
                                                                   /* 0x000fea0003800000 */
"""
    (p,) = parse_text(text, demangle=False)
    dep, ex = p.instructions
    assert [o.kind for o in dep.operands] == ["other", "imm", "other"] and dep.operands[2].text == "{5,4}"
    assert dep.control.stall == 0 and ex.control.stall == 5


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_executable_with_sass_and_ptx_images(tmp_path):
    """An nvcc-built executable (sm_80 SASS + sm_90 SASS + compute_90 PTX): teg runs cuobjdump."""
    import subprocess

    from teg.sass.binaries import find_tool
    from teg.sass.errors import ToolNotFoundError

    try:
        find_tool("cuobjdump")
    except ToolNotFoundError:
        pytest.skip("cuobjdump not installed")
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float *x) { x[threadIdx.x] += 1.f; }\n"
                   "int main() { k<<<1, 32>>>(0); return 0; }\n")
    exe = tmp_path / "k"
    subprocess.run(["nvcc", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                    "arch=compute_90,code=[sm_90,compute_90]", "-o", str(exe), str(src)],
                   check=True, capture_output=True, timeout=300)
    programs = [p for p in parse_file(exe) if p.name == "_Z1kPf"]
    assert sorted(p.arch for p in programs) == ["sm_80", "sm_90"]
    for p in programs:
        assert p.instructions[0].opcode in ("MOV", "LDC", "IMAD.MOV.U32")
        assert any(i.base == "EXIT" for i in p.instructions)
