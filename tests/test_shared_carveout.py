"""The unified L1/shared array's split (docs/model.md §3, "Shared-memory carveout"): the driver
reserves ``shared.reserved_per_block`` for every block, gives the kernel the smallest supported
carveout (``memory.l1.shared_carveouts_kb``) that holds the shared memory of as many blocks as the
other limits let reside, and the L1 keeps the rest. Each expected size is computed by hand from
the tables' numbers; the engine test checks that the smaller L1 of a small-block kernel loses hits
that the larger one keeps."""

from __future__ import annotations

import numpy as np
import pytest

from teg.engine import Options, lower, occupancy, run
from teg.engine.occupancy import OccupancyError, l1_data_bytes, preferred_carveout, shared_per_block
from teg.machine import MachineTableError
from teg.machine import load as load_machine
from teg.trace import KernelInfo, KernelTrace
from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

KB = 1024


@pytest.mark.parametrize("table,threads,regs,shmem,l1_kb", [
    # sm_80 (192 KB unified, 1 KB reserved per block): 64-thread blocks -> 32 blocks (block limit)
    # x 1 KB = 32 KB -> carveout 32, L1 160
    ("sm_80", 64, 0, 0, 192 - 32),
    # 256 threads -> 8 blocks (warps) x 1 KB = 8 KB -> carveout 8, L1 184
    ("sm_80", 256, 0, 0, 192 - 8),
    # 128 registers: 4096 per warp -> 16 warps -> 2 blocks x 1 KB -> carveout 8
    ("sm_80", 256, 128, 0, 192 - 8),
    # 10,000 B shared: ceil(10000 / 128) * 128 = 10112 + 1024 = 11136 B x 8 blocks = 87 KB -> 100
    ("sm_80", 256, 0, 10000, 192 - 100),
    # 40,000 B x 8 blocks exceeds 164 KB: the largest carveout (shared memory then limits occupancy)
    ("sm_80", 256, 0, 40000, 192 - 164),
    # sm_90 (256 KB): 64-thread blocks -> 32 KB carveout, L1 224
    ("sm_90", 64, 0, 0, 256 - 32),
    # sm_70 reserves nothing: no shared memory -> carveout 0, the whole 128 KB
    ("sm_70", 64, 0, 0, 128),
    # sm_75 offers only 32 and 64 KB: at least 32 KB goes to shared memory
    ("sm_75", 256, 0, 0, 96 - 32),
])
def test_carveout_hand_computed(table, threads, regs, shmem, l1_kb):
    m = load_machine(table)
    resident = occupancy(m, threads, regs, shmem).blocks
    assert l1_data_bytes(m, threads, regs, shmem, resident) == l1_kb * KB


def test_occupancy_counts_the_driver_reservation():
    """sm_80: 40,000 B of shared memory per block -> 40064 + 1024 per block; 167936 // 41088 = 4."""
    m = load_machine("sm_80")
    assert shared_per_block(m, 40000) == 40064 + 1024
    assert occupancy(m, 256, 0, 40000).by_limit["shared_memory"] == 4


def test_tables_without_carveouts_keep_the_old_rule():
    """Pascal's L1 is not shared with shared memory: no carveouts, the L1 loses only what the
    resident blocks allocate (none here)."""
    m = load_machine("sm_61")
    assert not m.memory.l1.shared_carveouts
    assert l1_data_bytes(m, 256, 0, 0, 8) == m.memory.l1.size_bytes


def test_largest_carveout_must_be_the_shared_capacity(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("extends: sm_80\nmemory:\n  l1:\n    shared_carveouts_kb: {value: [0, 8, 100], source: test}\n")
    with pytest.raises(MachineTableError, match="shared_carveouts_kb.*size_per_sm"):
        load_machine(p)


def chase_trace(threads: int, lines: int, passes: int) -> KernelTrace:
    """Warp 0 of a ``threads``-thread block (one block) walks ``lines`` distinct 128 B lines,
    ``passes`` times in the same order, each load reading the register the previous one wrote."""
    n = lines * passes + 1
    opcodes = ["IADD3", "LDG.E.64"]
    dst = np.full((n, MAX_TRACE_DST), -1, np.int16)
    src = np.full((n, MAX_TRACE_SRC), -1, np.int16)
    dst[:, 0], src[:, 0] = 2, 2
    order = np.random.default_rng(7).permutation(lines)
    addrs = np.tile(order, passes).astype(np.uint64) * 128 + (1 << 32)
    addr_start = np.zeros(n + 1, np.int64)
    addr_start[1:n] = np.arange(1, n)
    addr_start[n] = n - 1
    op = np.ones(n, np.int32)
    op[-1] = 0
    return KernelTrace(
        info=KernelInfo(name="chase", grid=(1, 1, 1), block=(threads, 1, 1), binary_version=80),
        opcodes=opcodes, warp=np.zeros(n, np.int32), block=np.zeros(n, np.int32),
        pc=np.where(op == 1, 0, 16).astype(np.int64), opcode=op, mask=np.ones(n, np.uint32), dst=dst, src=src,
        mem_width=np.where(op == 1, 8, 0).astype(np.int16), imm=np.zeros(n, np.int64), addr_start=addr_start,
        addresses=addrs, warp_start=np.array([0, n], np.int64), warp_block=np.zeros(1, np.int32),
        block_xyz=np.zeros((1, 3), np.int32))


def test_small_blocks_leave_a_smaller_l1():
    """A 170 kB chain (1360 lines) walked twice on sm_80. 256-thread blocks: a 184 KB L1 of 368
    sets x 4 ways; the XOR index spreads the contiguous lines at most 4 per set, so the whole
    second walk hits. 64-thread blocks: a 160 KB L1 of 320 sets holds 1280 of them; a fifth line
    lands in 80 sets, and LRU misses all 5 lines of such a set on every walk (400 misses)."""
    m = load_machine("sm_80")
    lines = 170 * KB // 128
    hits = {}
    for threads, l1_kb in ((64, 160), (256, 184)):
        inp = lower(None, chase_trace(threads, lines, 2), m, Options(sms=1))
        sets, ways, line, _ = inp.scalars.l1
        assert sets * ways * line == l1_kb * KB
        hits[threads] = run(inp).counters["l1_hits"]
    assert hits[256] == lines
    assert hits[64] <= lines - 400


def test_the_report_names_the_l1_the_kernel_gets():
    """The bundled example on sm_90: the report's L1 line and the JSON fields give the size
    l1_data_bytes computes for its launch, and the carveout is the rest of the 256 KB array."""
    from teg.engine import load_inputs
    from teg.report.summary import summary_data, summary_text
    from teg.resources import traces_dir

    ex = load_inputs(sass=traces_dir() / "matmul_abt.sm_90.sass",
                     trace=traces_dir() / "matmul_abt.sm_90.trace.npz")
    prog, kt, m = ex.program, ex.kernel_trace, ex.machine
    assert m.name == "sm_90"
    info = kt.info
    expect = l1_data_bytes(m, info.threads_per_block, info.nregs, info.shmem,
                           occupancy(m, info.threads_per_block, info.nregs, info.shmem).blocks)
    r = run(lower(prog, kt, m, Options()))
    d = summary_data(r)
    assert d["l1_bytes"] == expect and d["shared_carveout_bytes"] == m.memory.l1.size_bytes - expect
    assert f"L1          {expect // KB} KB per SM (the driver's {(256 * KB - expect) // KB} KB" in summary_text(r)


@pytest.mark.parametrize("table,pct,carve_kb,blocks", [
    # gpu-stream (te42kyfo/gpu-benches cdcc732): a 6 KB shared array per block, + the 1 KB reserved.
    # 4 %: 0.04 x 164 = 6.6 KB -> nearest 8 KB -> 8 // 7 = 1 block; 9 %: 14.8 KB -> 16 -> 2 blocks
    ("sm_80", 4, 8, 1), ("sm_80", 9, 16, 2),
    # H100: 9 % of 228 = 20.5 KB -> nearest 16 (not 32, which would hold 4 blocks) -> 2 blocks
    ("sm_90", 9, 16, 2),
    # 0 % (cudaSharedmemCarveoutMaxL1) is raised to the smallest carveout that holds one block
    ("sm_80", 0, 8, 1),
    # 100 % (MaxShared): 164 KB -> 164 // 7 = 23, but 8 blocks by warps
    ("sm_80", 100, 164, 8),
])
def test_preferred_carveout_hand_computed(table, pct, carve_kb, blocks):
    m = load_machine(table)
    c = preferred_carveout(m, pct, 6 * KB)
    assert c == carve_kb * KB
    o = occupancy(m, 256, 0, 6 * KB, c)
    assert o.blocks == blocks
    assert l1_data_bytes(m, 256, 0, 6 * KB, o.blocks, c) == m.memory.l1.size_bytes - c


def test_preferred_carveout_limits_blocks_without_shared_memory():
    """The 1 KB reservation counts against an 8 KB carveout even with no shared array: 8 blocks."""
    m = load_machine("sm_80")
    c = preferred_carveout(m, 0, 0)
    assert c == 8 * KB and occupancy(m, 64, 0, 0, c).blocks == 8


def test_preferred_carveout_needs_a_unified_array():
    with pytest.raises(OccupancyError, match="sm_61"):
        preferred_carveout(load_machine("sm_61"), 50, 0)


def test_cli_shared_carveout(tmp_path):
    """The bundled example with --shared-carveout 100: the whole 228 KB goes to shared memory, the
    L1 keeps 28 KB; a machine without a unified array is a clear error (exit 2)."""
    from click.testing import CliRunner

    from teg.cli import main

    r = CliRunner().invoke(main, ["estimate", "--shared-carveout", "100"])
    assert r.exit_code == 0, r.output
    assert "L1          28 KB per SM (the driver's 228 KB" in r.output
    r = CliRunner().invoke(main, ["estimate", "--machine", "sm_61", "--unknown", "alu", "--shared-carveout", "50"])
    assert r.exit_code == 2 and "no configurable L1/shared split" in r.output
