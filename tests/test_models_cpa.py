"""Dasgupta's CUDA Performance Analyzer — hand-computed cases of eqs. (16)–(30) with the Tesla C1060
tuned values (1312 MHz, 450 cycles, departure delays 37/37/58, vector 57)."""

import pytest

from teg.models.cpa import cpa
from teg.models.params import ModelParams
from teg.models.profile import KernelProfile

C1060 = {"cpa_base_mem_latency": 450, "cpa_dep_delay_32b": 37, "cpa_dep_delay_64b": 37,
         "cpa_dep_delay_128b": 58, "cpa_dep_delay_vector": 57, "cpa_freq_mhz": 1312,
         "cpa_issue_cycles": 4, "cpa_high_latency_cycles": 16}


def params(**values):
    return ModelParams(machine="c1060", clock_mhz=1296.0, num_sms=30, bandwidth_gbs=102.4,
                       values={**C1060, **values})


def prof(**kw):
    base = dict(threads_per_block=256, blocks=60, active_blocks_per_sm=2, active_sms=30)
    base.update(kw)
    return KernelProfile(**base)


def test_size_weighted_departure_delay_and_compute_bound_case():
    # 4 requests, 4 × 32 B + 4 × 64 B transactions: weights ½/½ → avg delay 37; 2 transactions per
    # request → latency 450 + 37 = 487, delay per request 74, MWP_wo_BW 487/74;
    # Data_per_request 96 B; bandwidth per warp 1.312 GHz × 96 / 487.
    # Compute: 100 insts, 4 SFU (16 cycles), 2 conflicted shared (8 cycles):
    # 4·94 + 16·4 + 8·2 = 456; Mem 487·4 = 1948; CWP_full 2404/456 = 5.27 < MWP 6.58 → eq. 24:
    # 487 + 456·16 = 7783 model cycles at 1312 MHz.
    p = prof(comp_insts=96, mem_insts=4, coal_mem_insts=4, trans_32=4, trans_64=4,
             high_latency_insts=4, shared_insts=10, shared_conflicted=2, shared_conflict_latency=8)
    r = cpa(p, params())
    assert (r.weight_32b, r.weight_64b, r.weight_128b) == (0.5, 0.5, 0.0)
    assert r.avg_dep_delay_per_tran == 37
    assert r.num_trans_per_request == 2 and r.data_per_request == 96
    assert r.mem_latency_final == 487 and r.dep_delay_per_request == 74
    assert r.mwp_without_bw_full == pytest.approx(487 / 74)
    assert r.bandwidth_per_warp_gbs == pytest.approx(1.312 * 96 / 487)
    assert r.mwp_peak_bw == pytest.approx(102.4 / (1.312 * 96 / 487 * 30))
    assert r.mwp == pytest.approx(487 / 74)
    assert r.comp_cycles == 456 and r.mem_cycles == 1948
    assert r.case == "eq24"
    assert r.model_cycles == pytest.approx(7783)
    assert r.cycles == pytest.approx(7783 * 1296 / 1312)       # at the machine clock
    assert r.seconds == pytest.approx(7783 / 1312e6)


def test_vector_delay_duplicate_merging_and_independent_loads():
    # 8 scalar 32 B transactions merged by duplicate_loads 2 → 4; 4 vector transactions (32 B, no
    # merging): avg delay ½·37 + ½·57 = 47, 2 transactions/request → latency 497, delay/request 94.
    # Active_warps_for_MWP = 16 · 3 / 2 = 24. Compute 4·24 = 96, Mem 497·4 = 1988, CWP = N = 16 ≥ MWP
    # → eq. 23: 1988·16/MWP + 96/4·(MWP − 1).
    p = prof(comp_insts=20, mem_insts=4, coal_mem_insts=4, trans_32=8, trans_vector=4, vector_bytes=128,
             duplicate_loads=2, independent_loads=3)
    r = cpa(p, params())
    assert r.weight_32b == 0.5 and r.weight_vector == 0.5
    assert r.avg_dep_delay_per_tran == 47
    assert r.data_per_request == 64
    assert r.mem_latency_final == 497
    assert r.active_warps_for_mwp == 24
    mwp = 497 / 94
    assert r.mwp == pytest.approx(mwp)
    assert r.case == "eq23"
    assert r.model_cycles == pytest.approx(1988 * 16 / mwp + 24 * (mwp - 1))


def test_active_warps_for_mwp_bounds_mwp():
    # Duplicate loads 4 on N = 16 warps → Active_warps_for_MWP = 4 below MWP_wo_BW = 487/74.
    p = prof(comp_insts=96, mem_insts=4, coal_mem_insts=4, trans_32=4, trans_64=4, duplicate_loads=4)
    r = cpa(p, params())
    assert r.active_warps_for_mwp == 4 and r.mwp == 4
    # merged: 1 + 1 transactions over 4 requests → no departure term (max(0.5 − 1, 0))
    assert r.num_trans_per_request == 0.5 and r.mem_latency_final == 450


def test_bandwidth_bounds_mwp_and_128b_delay():
    # 1 request of 4 × 128 B: latency 450 + 3·58 = 624, 512 B per request; at 10 GB/s:
    # MWP_peak = 10 / (1.312·512/624 · 30) < MWP_wo_BW = 624 / 232.
    p = prof(comp_insts=10, mem_insts=1, uncoal_mem_insts=1, trans_128=4)
    r = cpa(p, ModelParams(machine="c1060", clock_mhz=1296.0, num_sms=30, bandwidth_gbs=10.0, values=C1060))
    assert r.mem_latency_final == 624 and r.dep_delay_per_request == 232
    assert r.mwp == r.mwp_peak_bw == pytest.approx(10 / (1.312 * 512 / 624 * 30))


def test_synch_cost_uses_request_departure_delay():
    p = prof(comp_insts=96, mem_insts=4, coal_mem_insts=4, trans_32=4, trans_64=4, synch_insts=3)
    r = cpa(p, params())
    assert r.synch_cost == pytest.approx(74 * (r.mwp - 1) * 3 * 2 * 1)
    assert r.model_cycles == pytest.approx(r.exec_cycles_app + r.synch_cost)


def test_tuned_frequency_defaults_to_machine_clock():
    p = prof(comp_insts=10, mem_insts=0)
    values = {k: v for k, v in C1060.items() if k != "cpa_freq_mhz"}
    r = cpa(p, ModelParams(machine="m", clock_mhz=1296.0, num_sms=30, bandwidth_gbs=102.4, values=values))
    assert r.freq_mhz == 1296.0 and r.cycles == pytest.approx(r.model_cycles)
    assert r.model_cycles == 4 * 10 * 16         # no memory: Comp_cycles × N (eq. 24)
