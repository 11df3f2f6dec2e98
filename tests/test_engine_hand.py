"""Hand-computed engine cases (EngineInputs built by hand, so the expected cycle counts follow
from the model's equations in docs/model.md, not from any machine table)."""

from __future__ import annotations

import numpy as np
import pytest

from teg.engine import run

from teg.engine.handmade import make_input
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, DEP_SHARED, MEM_GLOBAL, MEM_SHARED, UNIT_CLASSES

FP32 = DEP_BASE + UNIT_CLASSES.index("fp32")


def stalls(r):
    return {k: v for k, v in r.stalls.items() if v}


def test_dependent_fadd_chain():
    """K FADDs, each reading the previous result, latency L: FADD i issues at i*L, the last result
    is ready at K*L; K issue cycles, the rest waits on an fp32 producer."""
    K, L = 7, 4
    inp = make_input(lat_exec=[L] * K, lat_multi=[1] * K, lat_same=[1] * K, dst=[[4]] * K, src=[[4, 2]] * K,
                     depcause=[FP32] * K)
    r = run(inp)
    assert r.cycles == K * L
    assert list(r.timeline) == [i * L for i in range(K)]
    assert stalls(r) == {"issue": K, "dep_fp32": K * L - K}
    assert r.instructions == K


@pytest.mark.parametrize("reads_r0,b_at", [(False, 9), (True, 10)])
def test_write_after_write_waits_unless_the_source_check_already_does(reads_r0, b_at):
    """A (latency 10) writes R0, B (latency 1) writes R0 too. B's result must not land before A's:
    B issues at 10 - 1 = 9 (write-after-write). When B also reads R0, the source check makes it
    wait for A's result itself (10), and the write-after-write check (R0 at 10 - 1) never binds;
    the engine leaves such destinations out of that check."""
    inp = make_input(lat_exec=[10, 1], lat_multi=[1, 1], lat_same=[1, 1], dst=[[0], [0]],
                     src=[[], [0] if reads_r0 else [1]], depcause=[FP32, FP32])
    r = run(inp)
    assert list(r.timeline) == [0, b_at]
    assert r.cycles == b_at + 1
    assert stalls(r) == {"issue": 2, "dep_fp32": b_at - 1}


def test_gt200_like_chain_pays_issue_interval_and_latency():
    """Same chain with GT200 numbers (24 cycles, issue every 2, multi-warp 4, same-warp 8): the
    dependency (24) dominates, so FADD i issues at 24*i."""
    K = 5
    inp = make_input(lat_exec=[24] * K, lat_multi=[4] * K, lat_same=[8] * K, dst=[[4]] * K, src=[[4, 2]] * K,
                     issue_interval=2, depcause=[FP32] * K)
    r = run(inp)
    assert list(r.timeline) == [0, 24, 48, 72, 96]
    assert r.cycles == 120


def test_two_independent_warps_interleave():
    """Two warps of K independent FADDs (distinct registers). Same-warp issue latency 8,
    multi-warp 4: the scheduler alternates A@0, B@4, A@8, B@12 …; the last result (B's) is ready
    at 8(K-1)+4+24."""
    K = 4
    lat = dict(lat_exec=[24] * K, lat_multi=[4] * K, lat_same=[8] * K, dst=[[10 + i] for i in range(K)],
               src=[[2]] * K, issue_interval=2, depcause=[FP32] * K)
    for policy in ("gto", "lrr"):
        r = run(make_input(**lat, rows_per_warp=[list(range(K)), list(range(K))], policy=policy))
        warp_a, warp_b = r.timeline[:K], r.timeline[K:]
        assert list(warp_a) == [8 * i for i in range(K)]
        assert list(warp_b) == [8 * i + 4 for i in range(K)]
        assert r.cycles == 8 * (K - 1) + 4 + 24
        # 2K issue cycles; between issues the scheduler is busy (multi-warp latency 4); the tail
        # waits for the last FADD
        assert r.stalls["issue"] == 2 * K
        assert r.stalls["scheduler"] == 3 * (2 * K - 1)
        assert r.stalls["dep_fp32"] == 23
        assert sum(r.stalls.values()) == r.cycles


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16])
def test_n_way_bank_conflict(n):
    """A shared load with n wavefronts (n-way conflict) then a dependent FADD: the load's result
    is ready at lat + (n-1)*wavefront_cycles; n-1 of those cycles are charged to bank conflicts."""
    from teg.memory import shared_wavefronts

    lanes = np.arange(32, dtype=np.uint64)
    addr = lanes * np.uint64(4 * n)           # word lane*n → bank (lane*n) % 32: n words per bank
    wave, wmin = np.zeros(1, np.int64), np.zeros(1, np.int64)
    shared_wavefronts(np.array([0, 32]), addr, np.array([0xFFFFFFFF], np.uint32), np.array([4]),
                      np.array([True]), 32, 4, 32, 32, wave, wmin)
    assert (wave[0], wmin[0]) == (n, 1)
    lds, wfc = 29, 2
    inp = make_input(lat_exec=[lds, 4], lat_multi=[1, 1], lat_same=[1, 1], dst=[[8], [9]], src=[[1], [8]],
                     mem=[MEM_SHARED, 0], mem_lat=[lds, 0], depcause=[DEP_SHARED, FP32],
                     r_wave=[int(wave[0]), 0], r_wave_min=[int(wmin[0]), 0], wavefront_cycles=wfc)
    r = run(inp)
    ready = lds + (n - 1) * wfc
    assert list(r.timeline) == [0, ready]
    assert r.cycles == ready + 4
    assert r.stalls["bank_conflict"] == (n - 1) * wfc
    assert r.stalls["dep_shared"] == lds - 1
    # removing the mechanism removes exactly those cycles
    r0 = run(make_input(**{**dict(lat_exec=[lds, 4], lat_multi=[1, 1], lat_same=[1, 1], dst=[[8], [9]],
                                  src=[[1], [8]], mem=[MEM_SHARED, 0], mem_lat=[lds, 0],
                                  depcause=[DEP_SHARED, FP32], r_wave=[int(wave[0]), 0],
                                  r_wave_min=[int(wmin[0]), 0], wavefront_cycles=wfc)},
                        switches={"bank_conflicts": False}))
    assert r0.cycles == r.cycles - (n - 1) * wfc


def test_warp_waits_at_barrier():
    """Block of two warps. Warp A: BAR, FADD. Warp B: 3 dependent FADDs (latency 4), BAR, FADD.
    B reaches BAR at 8+4 = 12 (its third FADD issues at 8, BAR waits on nothing but issue order:
    same-warp latency 1 → 9). Release = B's BAR issue + BAR latency 2; both FADDs follow."""
    # static: 0 BAR, 1 FADD r10 (independent), 2 FADD r4 <- r4
    lat_exec, lat_multi, lat_same = [2, 4, 4], [1, 1, 1], [1, 1, 1]
    inp = make_input(lat_exec=lat_exec, lat_multi=lat_multi, lat_same=lat_same, dst=[[], [10], [4]],
                     src=[[], [2], [4]], barrier=[1, 0, 0], depcause=[FP32] * 3,
                     rows_per_warp=[[0, 1], [2, 2, 2, 0, 1]], warps_per_block=2, schedulers=2)
    r = run(inp)
    a, b = r.timeline[:2], r.timeline[2:]
    # warp A (scheduler 0): BAR at 0; warp B (scheduler 1): FADDs at 0, 4, 8; BAR at 9
    assert list(b[:4]) == [0, 4, 8, 9]
    release = 9 + 2
    assert a[0] == 0 and a[1] == release and b[4] == release
    assert r.cycles == release + 4
    assert r.counters["barriers"] == 1
    # free barriers: A's FADD issues right after its BAR
    rf = run(make_input(lat_exec=lat_exec, lat_multi=lat_multi, lat_same=lat_same, dst=[[], [10], [4]],
                        src=[[], [2], [4]], barrier=[1, 0, 0], depcause=[FP32] * 3,
                        rows_per_warp=[[0, 1], [2, 2, 2, 0, 1]], warps_per_block=2, schedulers=2,
                        switches={"barriers": False}))
    assert rf.timeline[1] == 1


def test_load_queued_behind_busy_channel():
    """Two loads of one 32-byte transaction each to the same DRAM channel. Service 32 B × 2.5
    cycles/B = 80 cycles; DRAM latency 400. Load 1 starts at 0 (ready 400); load 2 issues at 1
    but its channel is busy until 80 (ready 480): its consumer waits 79 cycles of channel queue."""
    inp = make_input(lat_exec=[400, 400, 4], lat_multi=[1, 1, 1], lat_same=[1, 1, 1],
                     dst=[[8], [9], [10]], src=[[2], [3], [9]], mem=[MEM_GLOBAL, MEM_GLOBAL, 0],
                     depcause=[DEP_GLOBAL, DEP_GLOBAL, FP32], tx=[[(0, 32, 3)], [(4096, 32, 3)], []],
                     channels=8, dram_latency=400, service_per_byte=2.5)
    r = run(inp)
    assert list(r.timeline) == [0, 1, 480]
    assert r.cycles == 484
    assert r.stalls["channel_queue"] == 79
    assert r.counters["channel_wait_cycles"] == 79
    # different channels: no queue
    r2 = run(make_input(lat_exec=[400, 400, 4], lat_multi=[1, 1, 1], lat_same=[1, 1, 1],
                        dst=[[8], [9], [10]], src=[[2], [3], [9]], mem=[MEM_GLOBAL, MEM_GLOBAL, 0],
                        depcause=[DEP_GLOBAL, DEP_GLOBAL, FP32], tx=[[(0, 32, 3)], [(4096, 32, 4)], []],
                        channels=8, dram_latency=400, service_per_byte=2.5))
    assert list(r2.timeline) == [0, 1, 401]
    assert r2.stalls["channel_queue"] == 0


def test_memory_pipeline_slots_limit_outstanding_transactions():
    """With 2 memory-pipeline slots, the third transaction waits until the first completes."""
    kw = dict(lat_exec=[400] * 3, lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[8], [9], [10]],
              src=[[2]] * 3, mem=[MEM_GLOBAL] * 3, depcause=[DEP_GLOBAL] * 3,
              tx=[[(0, 32, 0)], [(256, 32, 1)], [(512, 32, 2)]], channels=8, dram_latency=400)
    r = run(make_input(**kw, pipe_slots=2))
    # loads 1, 2 issue at 0, 1; load 3 may issue only when a slot frees (400)
    assert list(r.timeline) == [0, 1, 400]
    assert r.cycles == 800
    assert r.stalls["mem_pipe_full"] == 398
    assert run(make_input(**kw)).cycles == 402


def test_exited_warps_do_not_hold_a_barrier():
    """Warp B meets a second BAR after warp A has exited: the barrier releases once the warps
    still alive have arrived (BAR@0 by both → release 0+1; A's FADD@1 is its last instruction,
    B's FADD@1 too; B's second BAR@2 finds A gone and is released at once, done 3)."""
    inp = make_input(lat_exec=[1, 1], lat_multi=[1, 1], lat_same=[1, 1], barrier=[1, 0],
                     rows_per_warp=[[0, 1], [0, 1, 0]], warps_per_block=2, schedulers=2)
    r = run(inp)
    assert r.counters["barriers"] == 2
    assert list(r.timeline) == [0, 1, 0, 1, 2]
    assert r.cycles == 3


def test_warp_ending_on_a_barrier_still_waits_for_the_others():
    """Block of three warps (one per scheduler). Warp A's last instruction is a BAR; B: BAR, FADD;
    C: a FADD of same-warp latency 5, BAR, FADD. A and B arrive at 0, A exits, C arrives at 5: the
    barrier releases only then (5 + BAR latency 1 = 6), one episode. A's exit must not let the
    warps still alive count A's arrival as one of theirs (which released B at 1)."""
    inp = make_input(lat_exec=[1, 1, 1], lat_multi=[1] * 3, lat_same=[1, 1, 5], barrier=[1, 0, 0],
                     dst=[[], [4], [5]], rows_per_warp=[[0], [0, 1], [2, 0, 1]], warps_per_block=3, schedulers=3)
    r = run(inp)
    assert list(r.timeline) == [0, 0, 6, 0, 5, 6]
    assert r.counters["barriers"] == 1
    assert r.cycles == 7


def test_warp_completing_a_barrier_is_charged_for_its_next_instruction():
    """Block of two warps, one per scheduler; A: a 40-cycle FADD into R7, BAR, a consumer of R7;
    B: a 30-cycle FADD into R5, BAR, a consumer of R5. Both BARs (latency 3, scheduler busy 2)
    issue at 1, B's last: release at 4. B's consumer waits for R5 until 30, A's for R7 until 40.
    Every skipped cycle is charged to a register dependency (the binding term: 30 > 4), none to
    the barrier (B's BAR, already issued, must not stand in as its wait)."""
    inp = make_input(lat_exec=[40, 30, 3, 4, 4], lat_multi=[1, 1, 2, 1, 1], lat_same=[1] * 5,
                     barrier=[0, 0, 1, 0, 0], dst=[[7], [5], [], [8], [6]], src=[[], [], [], [7], [5]],
                     depcause=[FP32] * 5, rows_per_warp=[[0, 2, 3], [1, 2, 4]], warps_per_block=2, schedulers=2)
    r = run(inp)
    assert list(r.timeline) == [0, 1, 40, 0, 1, 30]
    assert r.cycles == 44
    # 4 issue cycles (0, 1, 30, 40); 2..29 and 31..39 wait on registers, 41..43 on A's consumer
    assert {k: v for k, v in r.stalls.items() if v} == {"issue": 4, "dep_fp32": 40}


def test_barrier_resolves_at_latest_arrival_plus_its_latency():
    """BARs of different latencies meet (static 0: BAR latency 10, static 2: BAR latency 1). Warp A
    arrives at 0 (0 + 10), warp B at 5 after a same-warp wait (5 + 1): both go on at
    max(10, 6) = 10, not at the last arrival's 6 — so an earlier arrival can never release later."""
    inp = make_input(lat_exec=[10, 1, 1, 1], lat_multi=[1] * 4, lat_same=[1, 5, 1, 1], barrier=[1, 0, 1, 0],
                     rows_per_warp=[[0, 3], [1, 2, 3]], warps_per_block=2, schedulers=2)
    r = run(inp)
    assert list(r.timeline) == [0, 10, 0, 5, 10]
    assert r.counters["barriers"] == 1


def test_gto_warp_launched_into_finished_greedy_slot_is_youngest():
    """GTO, one scheduler, two warp slots, one warp per block, two blocks resident. Warp A: a
    3-cycle producer, then its consumer (ready at 3). Warp B: one independent 2-cycle instruction,
    issued at 1 while A waits; B is greedy when it finishes, and block C launches into B's slot
    when B has retired: at max(1 + launch latency 2, B's result at 3) = 3. At 3 both A and C are
    eligible: the oldest, A, goes first (C, though in the slot of the last greedy warp, is the
    youngest warp); C follows at 4 and 5."""
    inp = make_input(lat_exec=[3, 4, 4, 2], lat_multi=[1] * 4, lat_same=[1] * 4, dst=[[4], [5], [6], [7]],
                     src=[[], [4], [], []], depcause=[FP32] * 4, rows_per_warp=[[0, 1], [3], [2, 2]],
                     warps_per_block=1, slots=2, resident=2, launch_latency=2.0)
    r = run(inp)
    a, b, c = r.timeline[:2], r.timeline[2:3], r.timeline[3:]
    assert list(a) == [0, 3]
    assert list(b) == [1]
    assert list(c) == [4, 5]
    assert r.cycles == 5 + 4
