"""Trace invariants of emulated launches, error reports, the CLI, round trips through the trace
formats, and the emulator's trace feeding ``teg estimate``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import teg.trace as tt
from teg.cli import main
from teg.emu import EmulatorError, MemoryFault, UnsupportedInstruction, emulate, load_kernel
from teg.emu.memory import DEVICE_BASE

FIX = Path(__file__).parent / "fixtures"
EMU = FIX / "emu"
ARCHS = ["sm_80", "sm_90"]


def run(arch, kernel, grid, block, args, cubin=None):
    prog, image = load_kernel(cubin or EMU / f"kernels.{arch}.cubin", kernel)
    return prog, image, emulate(prog, image, grid, block, args)


def lanes(mask):
    return np.unpackbits(np.asarray(mask, np.uint32).view(np.uint8), bitorder="little").reshape(-1, 32).astype(bool)


def space_of(opcode: str) -> str | None:
    base = opcode.split(".")[0]
    if base in ("LDG", "STG", "ATOMG", "RED", "REDG", "LDGSTS") or (base == "ATOM"):
        return "global"
    if base in ("LDS", "STS", "ATOMS"):
        return "shared"
    if base in ("LDL", "STL"):
        return "local"
    return None


def check_structure(kt, buffers, shared_size, local_size):
    """Rows grouped by warp, one address per active lane of memory rows and none elsewhere, every
    address inside a buffer / the shared window / the local window."""
    n = kt.num_rows
    assert np.all(np.diff(kt.warp) >= 0)
    assert kt.warp_start[-1] == n
    for w in range(kt.num_warps):
        assert np.all(kt.warp[kt.warp_rows(w)] == w)
    counts = np.diff(kt.addr_start)
    act = lanes(kt.mask).sum(1)
    spaces = [space_of(kt.opcodes[o]) for o in range(len(kt.opcodes))]
    is_mem = np.array([spaces[o] is not None for o in kt.opcode])
    np.testing.assert_array_equal(counts[is_mem], act[is_mem])
    assert np.all(counts[~is_mem] == 0)
    for i in np.nonzero(is_mem & (counts > 0))[0]:
        a = kt.row_addresses(i).astype(np.int64)
        width = int(kt.mem_width[i])
        sp = spaces[kt.opcode[i]]
        if sp == "global":
            ok = np.zeros(len(a), bool)
            for lo, size in buffers:
                ok |= (a >= lo) & (a + width <= lo + size)
            assert ok.all(), (kt.opcodes[kt.opcode[i]], hex(int(a[~ok][0])))
        elif sp == "shared":
            assert np.all((a >= 0) & (a + width <= shared_size))
        else:
            assert np.all((a >= 0) & (a + width <= local_size))


SUITE = [
    ("saxpy", 3, 128, lambda: ["n=300", "a=2.0", "x=rand:float32:300", "y=ones:float32:300"]),
    ("matmul_abt", (2, 2), (16, 16), lambda: ["A=rand:float32:32x32", "B=rand:float32:32x32", "C=zeros:float32:32x32", "n=32"]),
    ("histogram", 2, 256, lambda: ["d=arange:uint32:700", "h=zeros:uint32:256", "e=zeros:int32:3", "n=700"]),
    ("local_spill", 1, 64, lambda: ["i=arange:int32:64", "o=zeros:float32:64", "n=64"]),
    ("cp_async_copy", 1, 256, lambda: ["i=rand:float32:256", "o=zeros:float32:256"]),
    ("divergent_loop", 1, 64, lambda: ["c=arange:int32:64", "o=zeros:float32:64"]),
]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel,grid,block,args", SUITE, ids=[s[0] for s in SUITE])
def test_trace_structure(arch, kernel, grid, block, args):
    prog, image, r = run(arch, kernel, grid, block, args())
    kt = r.kernel_trace
    bufs = [(a, size) for a, size in r.trace.memcpy]
    local = max((image.local_frame + 15) // 16 * 16, 16)
    check_structure(kt, bufs, image.shared_static, local)
    assert kt.info.grid == (grid if isinstance(grid, tuple) else (grid,)) + (1,) * (3 - (len(grid) if isinstance(grid, tuple) else 1))
    assert all(a >= DEVICE_BASE for a, _ in r.trace.memcpy)
    # every PC joins the static program, with the same opcode text
    idx = tt.join(kt, prog)
    assert all(prog.instructions[j].opcode == kt.opcodes[o] for j, o in zip(idx[:2000], kt.opcode[:2000]))


@pytest.mark.parametrize("arch", ARCHS)
def test_loop_body_runs_count_times_per_thread(arch):
    """count_loop: the loop body executes count[i] times for thread i; the active mask shrinks as
    threads leave the loop, and lanes that skipped the loop are never in the body's mask."""
    count = np.array([(i * 7) % 5 for i in range(64)], np.int32)
    prog, _, r = run(arch, "count_loop", 2, 32, [("count", count), ("out", np.zeros(64, np.int32))])
    kt = r.kernel_trace
    viadd = [i.address for i in prog.instructions if i.base in ("VIADD", "IADD3")
             and any(o.text == "0x1" for o in i.operands)]
    loop_pc = next(i.address for i in prog.instructions if i.base == "BRA" and i.guard)
    body = [a for a in viadd if a < loop_pc][-1]
    for w in range(kt.num_warps):
        rows = kt.warp_rows(w)
        sel = np.asarray(kt.pc[rows]) == body
        executed = lanes(kt.mask[rows][sel]).sum(0)
        np.testing.assert_array_equal(executed, count[w * 32:(w + 1) * 32])
        masks = kt.mask[rows][sel].astype(np.int64)
        assert np.all((masks[1:] & ~masks[:-1]) == 0)     # never grows back inside the loop


@pytest.mark.parametrize("arch", ARCHS)
def test_divergent_branches_reconverge(arch):
    """divergent_loop: rows of the odd-lane loop (MUFU.SIN) carry only odd lanes, rows of the even
    loop (MUFU.EX2) only even lanes, and the final store runs once with the whole warp."""
    count = np.full(64, 4, np.int32)
    prog, _, r = run(arch, "divergent_loop", 1, 64, [("count", count), ("out", np.zeros(64, np.float32))])
    kt = r.kernel_trace
    names = np.array(kt.opcodes)[kt.opcode]
    odd, even = 0xAAAAAAAA, 0x55555555
    sin = kt.mask[names == "MUFU.SIN"].astype(np.int64)
    ex2 = kt.mask[names == "MUFU.EX2"].astype(np.int64)
    assert len(sin) and np.all(sin & ~odd == 0) and np.all(sin == odd)
    assert len(ex2) and np.all(ex2 & ~even == 0)
    stores = kt.mask[np.char.startswith(names.astype(str), "STG")]
    assert list(stores) == [0xFFFFFFFF, 0xFFFFFFFF]
    # 4 iterations of an unrolled-by-4 loop: the odd lanes run MUFU.SIN 4 times per warp
    assert len(sin) == 4 * kt.num_warps


@pytest.mark.parametrize("arch", ARCHS)
def test_predicated_off_rows_are_recorded_with_their_mask(arch):
    """saxpy with n inside the last warp: the guard EXIT retires the out-of-range lanes; the later
    rows of that warp carry only the in-range lanes; a fully predicated-off row has mask 0."""
    prog, _, r = run(arch, "saxpy", 1, 64, ["n=40", "a=1.0", "x=ones:float32:64", "y=zeros:float32:64"])
    kt = r.kernel_trace
    names = np.array(kt.opcodes)[kt.opcode]
    stg = kt.mask[np.char.startswith(names.astype(str), "STG")]
    assert list(stg) == [0xFFFFFFFF, 0xFF]
    np.testing.assert_array_equal(r.outputs["y"], np.r_[np.ones(40), np.zeros(24)].astype(np.float32))


TINY = """
\tcode for sm_90
\t\tFunction : tiny
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   ISETP.GE.AND P0, PT, R0, 0x40, PT ;
        /*0030*/               @P0 BRA 0x50 ;
        /*0040*/                   EXIT ;
        /*0050*/                   MATCH.ANY R2, R0 ;
        /*0060*/                   EXIT ;
"""


def test_unsupported_instruction_names_opcode_pc_and_kernel():
    """MATCH is not emulated: a launch whose threads never reach it runs (threads 64+ branch to it);
    one that reaches it stops with the opcode, PC, kernel and listing line."""
    from teg.emu.cubin import KernelImage
    from teg.sass import parse_text

    prog = parse_text(TINY, source="tiny.sass")[0]
    r = emulate(prog, KernelImage("tiny"), 1, 64, [])
    assert r.kernel_trace.num_rows == 2 * 5
    with pytest.raises(UnsupportedInstruction, match=r"tiny.sass:10: kernel tiny: instruction MATCH.ANY at PC 0x0050"):
        emulate(prog, KernelImage("tiny"), 1, 96, [])


@pytest.mark.parametrize("arch", ARCHS)
def test_out_of_bounds_global_access_reports_thread_and_address(arch):
    prog, image = load_kernel(EMU / f"kernels.{arch}.cubin", "saxpy")
    with pytest.raises(MemoryFault, match=r"thread \(0,0,0\) of block \(2,0,0\): out-of-bounds global access "
                                           r"at address 0x7f0000000200"):
        emulate(prog, image, 3, 64, ["n=192", "a=1.0", "x=ones:float32:128", "y=zeros:float32:192"])


def test_argument_errors():
    prog, image = load_kernel(EMU / "kernels.sm_90.cubin", "saxpy")
    with pytest.raises(EmulatorError, match="takes 4 arguments, 3 given"):
        emulate(prog, image, 1, 32, ["n=1", "a=1.0", "x=ones:float32:4"])
    with pytest.raises(EmulatorError, match="a buffer needs a pointer parameter"):
        emulate(prog, image, 1, 32, ["n=zeros:float32:4", "a=1.0", "x=ones:float32:4", "y=ones:float32:4"])
    with pytest.raises(EmulatorError, match="bad buffer spec"):
        emulate(prog, image, 1, 32, ["n=1", "a=1.0", "x=rand:float32", "y=ones:float32:4"])
    with pytest.raises(EmulatorError, match="no kernel 'nope'"):
        load_kernel(EMU / "kernels.sm_90.cubin", "nope")


def test_scalar_layout_in_constant_bank():
    """Scalars land at the cubin's parameter offsets: float a=0.5, int n: y = 0.5*x + y for i < n."""
    prog, image = load_kernel(EMU / "kernels.sm_80.cubin", "saxpy")
    r = emulate(prog, image, 1, 32, ["n=int32:20", "a=float32:0.5", "x=arange:float32:32", "y=ones:float32:32"])
    ref = np.ones(32, np.float32)
    ref[:20] += 0.5 * np.arange(20)
    np.testing.assert_array_equal(r.outputs["y"], ref)


def test_native_and_accelsim_round_trip(tmp_path):
    _, _, r = run("sm_90", "matmul_abt", (2, 2), (16, 16),
                  ["A=rand:float32:32x32", "B=rand:float32:32x32", "C=zeros:float32:32x32", "n=32"])
    kt = r.kernel_trace
    tt.save(r.trace, tmp_path / "t.npz")
    tt.write_accelsim(r.trace, tmp_path / "acc")
    for path in (tmp_path / "t.npz", tmp_path / "acc" / "kernelslist.g"):
        back = tt.load(path, cache=tmp_path / "cache").kernels[0]
        for col in ("warp", "pc", "mask", "mem_width", "addr_start", "addresses", "warp_start"):
            np.testing.assert_array_equal(np.asarray(getattr(back, col)), np.asarray(getattr(kt, col)), err_msg=col)


@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_cli_trace_run_then_estimate(tmp_path, arch):
    """Emulate, then time with the table the trace's binary version names (sm_120: Blackwell)."""
    runner = CliRunner()
    out = tmp_path / "mm.trace"
    res = runner.invoke(main, ["trace", "run", str(EMU / f"kernels.{arch}.cubin"), "--kernel", "matmul_abt",
                               "--grid", "2,2", "--block", "16,16", "--arg", "A=rand:float32:32x32",
                               "--arg", "B=rand:float32:32x32", "--arg", "C=zeros:float32:32x32", "--arg", "n=32",
                               "-o", str(out)])
    assert res.exit_code == 0, res.output
    a, b, c = (np.load(tmp_path / "mm.trace.outputs" / f"{k}.npy") for k in "ABC")
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)
    est = runner.invoke(main, ["estimate", "--sass", str(EMU / f"kernels.{arch}.sass"), "--trace", str(out),
                               "--kernel", "matmul_abt", "--json"])
    assert est.exit_code == 0, est.output
    import json
    result = json.loads(est.output)
    assert result["cycles"] > 0 and result["machine"] == arch


def test_cli_reports_errors_in_one_line(tmp_path):
    res = CliRunner().invoke(main, ["trace", "run", str(EMU / "kernels.sm_90.cubin"), "--kernel", "saxpy",
                                    "--block", "32", "--arg", "n=1", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert res.output.strip().startswith("teg: error:") and "takes 4 arguments" in res.output


def test_runaway_loop_stops_with_an_error():
    prog, image = load_kernel(EMU / "kernels.sm_90.cubin", "count_loop")
    count = np.full(32, 2**30, np.int32)
    with pytest.raises(EmulatorError, match="more than 100,000 warp instructions"):
        emulate(prog, image, 1, 32, [("count", count), ("out", np.zeros(32, np.int32))], max_rows=100_000)


def _have(tool):
    from teg.sass.binaries import find_tool

    try:
        find_tool(tool)
        return True
    except Exception:
        return False


@pytest.mark.skipif(not (_have("nvcc") and _have("cuobjdump")), reason="needs nvcc and cuobjdump")
def test_cli_compiles_a_cu_file(tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text('extern "C" __global__ void scale(float *x, float s, int n) {\n'
                   '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
                   '    if (i < n) x[i] *= s;\n}\n')
    res = CliRunner().invoke(main, ["trace", "run", str(src), "--arch", "sm_80", "--grid", "2", "--block", "64",
                                    "--arg", "x=arange:float32:100", "--arg", "s=3.0", "--arg", "n=100",
                                    "--format", "accelsim", "-o", str(tmp_path / "acc")])
    assert res.exit_code == 0, res.output
    np.testing.assert_array_equal(np.load(tmp_path / "acc.outputs" / "x.npy"), 3 * np.arange(100, dtype=np.float32))
    back = tt.load(tmp_path / "acc" / "kernelslist.g", cache=tmp_path / "cache").kernels[0]
    assert back.info.binary_version == 80 and back.num_warps == 4


@pytest.mark.skipif(not (_have("nvcc") and _have("cuobjdump")), reason="needs nvcc and cuobjdump")
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_division_of_zero_takes_the_slow_path(tmp_path, arch):
    """IEEE division (div.rn.f32): FCHK sends a zero numerator to the slow path, which keeps the sign of
    the zero quotient (the fast path's a * rcp(b) + RZ would return +0 for 0 / -2). Warp 0 divides
    only normal numbers: no CALL; warp 1's lanes 0-2 divide zeros: one CALL row with exactly them.
    Lane 5's 1 / 0x3effffff = 0x40000001 needs the fast path's fused multiply-adds rounded once."""
    src = tmp_path / "quotient.cu"
    src.write_text('extern "C" __global__ void quotient(const float *a, const float *b, float *q) {\n'
                   '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
                   '    q[i] = a[i] / b[i];\n}\n')
    a = np.linspace(0.25, 8.0, 64).astype(np.float32)
    b = np.linspace(-3.0, 5.0, 64).astype(np.float32)
    b[b == 0] = 1.5
    a[32:35] = [0.0, -0.0, 0.0]
    b[32:35] = [-2.0, 2.0, 2.0]
    a[5], b[5] = 1.0, np.uint32(0x3EFFFFFF).view(np.float32)   # 2 + 2^-23 + ...: a near-tie quotient
    prog, image = load_kernel(src, "quotient", arch, work_dir=tmp_path)
    r = emulate(prog, image, 1, 64, [("a", a), ("b", b), ("q", np.zeros(64, np.float32))])
    want = a / b
    assert np.array_equal(r.outputs["q"].view(np.uint32), want.view(np.uint32))
    assert np.signbit(r.outputs["q"][32]) and np.signbit(r.outputs["q"][33]) and not np.signbit(r.outputs["q"][34])
    kt = r.kernel_trace
    calls = np.array([kt.opcodes[o].startswith("CALL") for o in kt.opcode])
    assert calls.sum() == 1
    row = int(np.flatnonzero(calls)[0])
    assert int(kt.warp[row]) == 1 and int(kt.mask[row]) == 0b111


def test_cli_trace_run_streams_the_trace_emulate_builds(tmp_path):
    """The native trace ``teg trace run`` streams to its files (chunks of whole blocks) holds every
    column of the trace :func:`emulate` builds in memory, and the same buffer ranges."""
    args = ["A=rand:float32:64x64", "B=rand:float32:64x64", "C=zeros:float32:64x64", "n=64"]
    out = tmp_path / "mm.trace"
    res = CliRunner().invoke(main, ["trace", "run", str(EMU / "kernels.sm_90.cubin"), "--kernel", "matmul_ab",
                                    "--grid", "4,4", "--block", "16,16", *[f"--arg={a}" for a in args], "-o", str(out)])
    assert res.exit_code == 0, res.output
    _, _, r = run("sm_90", "matmul_ab", (4, 4), (16, 16), args)
    back = tt.load(out)
    assert back.memcpy == r.trace.memcpy and back.source == r.trace.source
    a, b = back.kernels[0], r.kernel_trace
    assert a.info == b.info and list(a.opcodes) == list(b.opcodes) and a.num_rows == b.num_rows > 0
    for col in ("warp", "block", "pc", "opcode", "mask", "dst", "src", "mem_width", "imm", "addr_start", "addresses",
                "warp_start", "warp_block", "block_xyz"):
        np.testing.assert_array_equal(np.asarray(getattr(a, col)), np.asarray(getattr(b, col)), err_msg=col)
    np.testing.assert_array_equal(np.load(tmp_path / "mm.trace.outputs" / "C.npy"), r.outputs["C"])
