"""Lowering real inputs (nvcc-compiled SASS, the bundled trace, the TEG Listing 3 text) and
running them end to end."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from teg.engine import LoweringError, Options, estimate, load_inputs, lower, occupancy, run
from teg.machine import load as load_machine
from teg.resources import traces_dir

FIX = Path(__file__).parent / "fixtures" / "sass"
EX_SASS = traces_dir() / "matmul_abt.sm_90.sass"
EX_TRACE = traces_dir() / "matmul_abt.sm_90.trace.npz"


@pytest.fixture(scope="module")
def example():
    return load_inputs(sass=EX_SASS, trace=EX_TRACE)


def test_listing3_clock_benchmark_on_gt200_within_2_percent():
    """TEG Listing 3: S2R (clock), SHL, 21 dependent FADD32, S2R (clock), SHL; measured 514
    cycles on a GTX 280. The measured interval is from the first S2R's clock read (its issue)
    to the second S2R's read (its issue); the SHLs double the half-rate counter, so the interval
    is in shader cycles. Model: SHL waits for S2R (execution latency), the first FADD32 waits the
    SHL's same-warp issue latency, each further FADD32 waits for the previous one, the second
    S2R waits the last FADD32's same-warp issue latency (its write of R4 lands after the FADD's)."""
    m = load_machine("gt200")
    prog = load_inputs(sass=FIX / "teg_listing3.sass", machine=m, kernel="fadd_latency").program
    r = run(lower(prog, None, m, Options(record_timeline=True)))
    s2r = [i for i, ins in enumerate(prog.instructions) if ins.base == "S2R"]
    assert len(s2r) == 2 and sum(ins.base == "FADD32" for ins in prog.instructions) == 21
    interval = int(r.timeline[s2r[1]] - r.timeline[s2r[0]])
    lat = m.latencies
    cls = {op: m.classify(op).latency for op in ("S2R", "SHL", "FADD32")}
    derived = (lat[cls["S2R"]].execution + lat[cls["SHL"]].issue_same + 20 * lat[cls["FADD32"]].execution
               + lat[cls["FADD32"]].issue_same)
    assert interval == derived
    assert abs(interval - 514) / 514 <= 0.02


def test_bundled_example_end_to_end(example):
    r = run(lower(example.program, example.kernel_trace, example.machine, Options()))
    assert sum(r.stalls.values()) == r.cycles
    assert r.setup.dependency_model == "controlcodes"
    # the kernel's Bs[tx][k] LDS.128 reads stride 64 B: a bank conflict the model must see
    assert r.counters["shared_wavefronts"] > r.counters["shared_wavefronts_min"]
    assert r.stalls["bank_conflict"] > 0
    # every SM simulated: the grid's 4 blocks of 8 warps go one to each of 4 SMs; sampling SM 0
    # alone (--sms 1) runs its one block
    assert r.counters["blocks"] == 4 and r.instructions == int(np.diff(example.kernel_trace.warp_start).sum())
    assert sorted(r.outcome.sm_blocks, reverse=True)[:5] == [1, 1, 1, 1, 0]
    r1 = run(lower(example.program, example.kernel_trace, example.machine, Options(sms=1)))
    assert r1.counters["blocks"] == 1 and r1.instructions == int(np.diff(example.kernel_trace.warp_start)[:8].sum())
    r2 = run(lower(example.program, example.kernel_trace, example.machine, Options()))
    assert r2.cycles == r.cycles and r2.stalls == r.stalls


def test_example_scoreboard_model_and_lrr(example):
    for opt in (Options(dependency_model="scoreboard"), Options(policy="lrr")):
        r = run(lower(example.program, example.kernel_trace, example.machine, opt))
        assert sum(r.stalls.values()) == r.cycles > 0


def test_policy_defaults_to_the_machine_tables(example):
    """No policy in the options: the table's ``scheduler_policy`` (sm_90: greedy-then-oldest);
    a policy named in the options wins; a table naming another policy schedules with it."""
    import dataclasses

    m = example.machine
    assert m.scheduler_policy == "gto"
    r = run(lower(example.program, example.kernel_trace, m, Options()))
    assert r.setup.policy == "gto"
    r_gto = run(lower(example.program, example.kernel_trace, m, Options(policy="gto")))
    assert (r.cycles, r.stalls) == (r_gto.cycles, r_gto.stalls)
    r_gty = run(lower(example.program, example.kernel_trace, m, Options(policy="gty")))
    assert r_gty.setup.policy == "gty"
    other = dataclasses.replace(m, scheduler_policy="gty")
    r_other = run(lower(example.program, example.kernel_trace, other, Options()))
    assert r_other.setup.policy == "gty" and (r_other.cycles, r_other.stalls) == (r_gty.cycles, r_gty.stalls)
    # the example's 32 warps reach their loads in another order: the two orders must differ here,
    # or this test would not show which one ran
    assert (r_gty.cycles, r_gty.stalls) != (r_gto.cycles, r_gto.stalls)


def test_trace_alone_uses_trace_registers(example):
    r = estimate(trace=EX_TRACE)
    assert r.setup.dependency_model == "scoreboard"
    assert any("no control codes" in n for n in r.setup.notes)
    assert r.instructions == run(lower(example.program, example.kernel_trace, example.machine)).instructions


def test_sms_option_simulates_more_blocks(example):
    r = run(lower(example.program, example.kernel_trace, example.machine, Options(sms=4)))
    assert r.counters["blocks"] == 4 and r.setup.sms == 4
    # the SMs' work ends at the last SM's; the kernel adds its launch and drain beyond that
    assert len(r.sm_cycles) == 4 and r.cycles == max(r.sm_cycles) + r.outcome.kernel_launch_cycles
    assert r.outcome.kernel_launch_cycles == example.machine.kernel_launch_cycles > 0


def test_waves_when_fewer_blocks_fit(example):
    """Four blocks on one SM: all resident at once, or one at a time (waves)."""
    together = run(lower(example.program, example.kernel_trace, example.machine, Options(blocks=4)))
    inp = lower(example.program, example.kernel_trace, example.machine,
                Options(blocks=4, blocks_per_sm=1, record_timeline=True))
    waves = run(inp)
    assert together.counters["blocks"] == waves.counters["blocks"] == 4
    assert waves.cycles > together.cycles
    # block k+1 starts only after the last instruction of block k
    for b in range(3):
        c0, c1 = inp.grid.b_ctx_start[b], inp.grid.b_ctx_start[b + 1]
        last = waves.timeline[inp.grid.c_start[c0]:inp.grid.c_end[c1 - 1]].max()
        nxt = waves.timeline[inp.grid.c_start[c1]:inp.grid.c_end[inp.grid.b_ctx_start[b + 2] - 1]].min()
        assert nxt > last


def test_sass_alone_with_control_flow_needs_a_trace(example):
    with pytest.raises(LoweringError, match="needs a trace"):
        lower(example.program, None, example.machine)


def test_sass_alone_straight_line_code():
    from teg.sass import parse_file
    prog = [p for p in parse_file(FIX / "teg_listing3.sass") if p.name == "_Z12fadd_latencyPfPj"][0]
    r = run(lower(prog, None, load_machine("gt200"), Options(warps=2)))
    assert r.instructions == 2 * len(prog.instructions)


def test_unknown_opcodes_are_reported_not_guessed(example):
    kt = example.kernel_trace
    import copy
    bad = copy.copy(kt)
    bad.opcodes = [("FOOBAR" if op == "FFMA" else op) for op in kt.opcodes]
    with pytest.raises(LoweringError, match="FOOBAR"):
        lower(None, bad, example.machine)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = run(lower(None, bad, example.machine, Options(unknown="alu")))
    assert any("FOOBAR" in str(x.message) for x in w)
    assert r.cycles > 0


def test_controlcodes_need_control_codes(example):
    with pytest.raises(LoweringError, match="control codes"):
        lower(None, example.kernel_trace, example.machine, Options(dependency_model="controlcodes"))


def test_occupancy_hand_computed():
    m = load_machine("sm_90")
    # 256 threads, 30 regs: warp allocation ceil(30*32/256)*256 = 1024 → 64 warps → 8 blocks;
    # warps 64/8 = 8, threads 2048/256 = 8; shared 233472 // (2048 + the driver's 1024 per block) = 76
    o = occupancy(m, 256, 30, 2048)
    assert o.blocks == 8 and o.by_limit["registers"] == 8 and o.by_limit["shared_memory"] == 76
    # 64 regs: 2048 per warp → 32 warps → 4 blocks of 8 warps
    assert occupancy(m, 256, 64, 0).blocks == 4
    assert occupancy(m, 256, 64, 0).limiter == "registers"
    # 100 KB of shared memory per block: 233472 // 102400 = 2 blocks
    assert occupancy(m, 128, 0, 100 * 1024).blocks == 2
