"""Hong & Kim MWP-CWP (ISCA'09) — the paper's worked example (Table 2) and hand-computed cases for
every branch of equations (5)–(27)."""

import math

import pytest

from teg.models.mwp_cwp import execution_cycles, mwp_cwp, synch_cost
from teg.models.params import ModelParameterError, ModelParams
from teg.models.profile import KernelProfile, ProfileError


def hk_params(**kw):
    base = dict(machine="hand", clock_mhz=1000.0, num_sms=16, bandwidth_gbs=80.0,
                values={"mem_ld": 420, "departure_del_uncoal": 10, "departure_del_coal": 4,
                        "issue_cycles": 4})
    base.update(kw)
    return ModelParams(**base)


def table2_profile():
    """Hong & Kim Table 2: MatrixMulKernel<<<80, 128>>>, 5 blocks/SM, 27 comp + 6 uncoalesced mem
    insts, 6 synch insts, #Uncoal_per_mw 32, 128 B per warp."""
    return KernelProfile(threads_per_block=128, blocks=80, active_blocks_per_sm=5, active_sms=16,
                         comp_insts=27, mem_insts=6, uncoal_mem_insts=6, coal_mem_insts=0,
                         uncoal_per_mw=32, synch_insts=6, load_bytes_per_warp=128)


def test_table2_intermediates_match_the_paper():
    r = mwp_cwp(table2_profile(), hk_params())
    assert r.departure_delay == 320                       # 32 × 10
    assert r.mem_l == 730                                 # 420 + 31 × 10
    assert round(r.mwp_without_bw_full, 2) == 2.28        # 730 / 320
    assert round(r.bw_per_warp_gbs, 3) == 0.175           # 1 GHz × 128 B / 730
    assert r.mwp_peak_bw == pytest.approx(80 / (128 / 730 * 16))   # paper: 28.57 with BW rounded to 0.175
    assert round(r.mwp, 2) == 2.28
    assert r.comp_cycles == 132                           # 4 × (27 + 6)
    assert r.mem_cycles == 4380                           # 730 × 6
    assert round(r.cwp_full, 2) == 34.18
    assert r.cwp == 20 and r.n == 20 and r.rep == 1
    assert r.case == "eq23"


def test_table2_totals_to_the_papers_rounding():
    # The paper evaluates eqs. (23) and (26) with MWP rounded to 2.28.
    exec_app, case = execution_cycles(4380, 132, 6, 730, 2.28, 20, 20, 1)
    assert case == "eq23"
    assert abs(exec_app - 38450) < 1.0
    assert synch_cost(320, 2.28, 6, 5, 1) == pytest.approx(12288)
    assert abs(exec_app + synch_cost(320, 2.28, 6, 5, 1) - 50738) < 1.0
    # With the unrounded MWP = 2.28125 the totals stay within 0.1 % of the paper's.
    r = mwp_cwp(table2_profile(), hk_params())
    assert r.exec_cycles_app == pytest.approx(4380 * 20 / 2.28125 + 22 * 1.28125)
    assert r.exec_cycles_app == pytest.approx(38450, rel=1e-3)
    assert r.synch_cost == pytest.approx(12288, rel=1e-3)
    assert r.cycles == pytest.approx(50738, rel=1e-3)
    assert r.cycles == r.exec_cycles_app + r.synch_cost


def small(threads, blocks=1, active_blocks=1, active_sms=1, **kw):
    return KernelProfile(threads_per_block=threads, blocks=blocks, active_blocks_per_sm=active_blocks,
                         active_sms=active_sms, **kw)


def test_eq22_mwp_and_cwp_equal_n():
    # N = 2; Mem_L 100, departure 10 → MWP_wo_BW_full 10 → MWP = N = 2; Comp 4 × 10 = 40,
    # Mem 100, CWP_full 3.5 → CWP = 2: (100 + 40 + 40/1 × (2 − 1)) × 1 = 180.
    p = small(64, comp_insts=9, mem_insts=1, coal_mem_insts=1)
    r = mwp_cwp(p, hk_params(bandwidth_gbs=1000.0, values={"mem_ld": 100, "departure_del_uncoal": 50,
                                                            "departure_del_coal": 10, "issue_cycles": 4}))
    assert (r.mwp, r.cwp, r.case) == (2, 2, "eq22")
    assert r.cycles == pytest.approx(180)


def test_eq23_through_comp_cycles_above_mem_cycles():
    # N = 8, MWP = 8, Comp 200 > Mem 100, CWP_full 1.5: eq. (23) listed before (24) applies:
    # 100 × 8/8 + 200/1 × 7 = 1500.
    p = small(256, comp_insts=49, mem_insts=1, coal_mem_insts=1)
    r = mwp_cwp(p, hk_params(bandwidth_gbs=1000.0, values={"mem_ld": 100, "departure_del_uncoal": 50,
                                                            "departure_del_coal": 10, "issue_cycles": 4}))
    assert r.mwp == 8 and r.cwp == pytest.approx(1.5)
    assert r.case == "eq23"
    assert r.cycles == pytest.approx(1500)


def test_eq24_mwp_above_cwp_with_rep_and_synch():
    # N = 8, MWP = 8 (Mem_L 400 / 10 = 40 → N), Comp 80 < Mem 400, CWP 6 < MWP:
    # (400 + 80 × 8) × #Rep 2 = 2080; Synch_cost = 10 × 7 × 2 × 1 × 2 = 280.
    p = small(256, blocks=2, comp_insts=19, mem_insts=1, coal_mem_insts=1, synch_insts=2)
    r = mwp_cwp(p, hk_params(bandwidth_gbs=1000.0, values={"mem_ld": 400, "departure_del_uncoal": 50,
                                                            "departure_del_coal": 10, "issue_cycles": 4}))
    assert r.rep == 2 and r.cwp == pytest.approx(6)
    assert r.case == "eq24"
    assert r.exec_cycles_app == pytest.approx(2080)
    assert r.synch_cost == pytest.approx(280)
    assert r.cycles == pytest.approx(2360)


def test_bandwidth_bound_mwp():
    # Table 2 at 5 GB/s: MWP_peak_BW = 5 / (128/730 GB/s × 16) = 1.7822 < 2.28.
    r = mwp_cwp(table2_profile(), hk_params(bandwidth_gbs=5.0))
    assert r.mwp == r.mwp_peak_bw == pytest.approx(5 * 730 / (128 * 16))


def test_mixed_coalesced_weights():
    # 2 coal + 2 uncoal, 4 transactions per uncoalesced warp, Mem_LD 100, del 10 / 5:
    # Mem_L_Uncoal 130, Mem_L 115, Departure_delay 10·4·0.5 + 5·0.5 = 22.5, Mem_cycles 460.
    p = small(1024, comp_insts=10, mem_insts=4, coal_mem_insts=2, uncoal_mem_insts=2, uncoal_per_mw=4)
    r = mwp_cwp(p, hk_params(values={"mem_ld": 100, "departure_del_uncoal": 10,
                                     "departure_del_coal": 5, "issue_cycles": 4}))
    assert (r.mem_l_uncoal, r.mem_l, r.departure_delay, r.mem_cycles) == (130, 115, 22.5, 460)
    assert r.mwp_without_bw_full == pytest.approx(115 / 22.5)


def test_fixed_uncoal_per_mw_parameter_wins():
    # Compute capability 1.0/1.1: an uncoalesced warp is always 32 transactions (Table 3).
    prof = table2_profile()
    prof = KernelProfile(**{**prof.__dict__, "uncoal_per_mw": 7})
    r = mwp_cwp(prof, hk_params(values={**hk_params().values, "uncoal_per_mw": 32}))
    assert r.mem_l == 730 and r.uncoal_per_mw == 32


def test_kernel_without_memory_is_compute_only():
    p = small(128, comp_insts=10, mem_insts=0)
    r = mwp_cwp(p, hk_params())
    assert r.mwp == 4 and r.cwp == 1 and r.case == "eq24"
    assert r.cycles == pytest.approx(4 * 10 * 4)      # Comp_cycles × N
    assert math.isinf(r.mwp_peak_bw)


def test_missing_parameter_is_reported_by_name():
    with pytest.raises(ModelParameterError, match="mem_ld"):
        mwp_cwp(table2_profile(), hk_params(values={}))


def test_inconsistent_profile_rejected():
    with pytest.raises(ProfileError, match="mem_insts"):
        small(32, comp_insts=1, mem_insts=3, coal_mem_insts=1)


def test_metrics_are_json_ready():
    import json

    r = mwp_cwp(small(128, comp_insts=10, mem_insts=0), hk_params())
    text = json.dumps(r.metrics())
    assert '"mwp_peak_bw": null' in text and '"case": "eq24"' in text
