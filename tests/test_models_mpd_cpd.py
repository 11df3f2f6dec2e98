"""Luo & Suda MPD/CPD — hand-computed MPD (eqs. 1–2), CPD (eqs. 3–5) and the four calculate-period
types (eqs. 6–13)."""

import math

import pytest

from teg.models.mpd_cpd import cpd, mpd, mpd_cpd, period_time
from teg.models.params import ModelParams
from teg.models.profile import KernelProfile, Period

GTX260 = {"luo_a": 3, "luo_b": 11, "luo_c": 0.5, "luo_d": 80, "luo_t_mem": 200, "luo_cost_fp32": 65,
          "luo_cost_default": 65}


def test_cpd1_is_the_minimum():
    # P 0.3, N 20: CPD1 = 0.2·9 + 3 = 4.8; CPD2 = 80·0.04/31·√(31² − 12²) + 3 ≈ 5.95.
    value, c1, c2 = cpd(0.3, 20, a=3, b=11, c=0.5, d=80, m=32)
    assert c1 == pytest.approx(4.8)
    assert c2 == pytest.approx(3.2 / 31 * math.sqrt(817) + 3)
    assert value == pytest.approx(4.8)


def test_cpd2_is_the_minimum():
    # P 0.45, N 32 = m: CPD1 = 0.05·21 + 3 = 4.05; CPD2 = 80·0.0025/31·31 + 3 = 3.2.
    value, c1, c2 = cpd(0.45, 32, a=3, b=11, c=0.5, d=80, m=32)
    assert c1 == pytest.approx(4.05) and c2 == pytest.approx(3.2)
    assert value == pytest.approx(3.2)


def test_cpd_never_below_one():
    value, c1, _ = cpd(0.9, 32, a=3, b=11, c=0.5, d=80, m=32)
    assert c1 == pytest.approx(-5.4) and value == 1.0


def test_mpd_bandwidth_and_warp_bounds():
    # Warp_bwt = 32·4/(1·200) = 0.64 B/cycle; 45 B/cycle / (16·1·0.64) = 4.39 → 4.
    assert mpd(16, 1, 4.0, 1.0, 200, 45.0) == 4
    assert mpd(16, 1, 4.0, 1.0, 200, 1e6) == 16          # bounded by N_act
    assert mpd(16, 30, 4.0, 1.0, 200, 45.0) == 1         # floor 0 kept at 1
    # more transactions per instruction lower Warp_bwt (eq. 1): 2 → 0.32 → 8.79 → 8
    assert mpd(16, 1, 4.0, 2.0, 200, 45.0) == 8


@pytest.mark.parametrize("c,m,c_prev,m_prev,kind,t", [
    (260, 200, None, None, 1, math.ceil(16 * 260 / 3)),                    # eq. 6
    (65, 1200, 260, 200, 2, math.ceil(16 * 65 / 3) + (1200 - 15 * 65)),    # eqs. 7–8
    (650, 200, 130, 4000, 3, math.ceil(16 * 650 / 3) + (4000 * 3 - 15 * 650)),   # eqs. 9–10
    (130, 4000, 65, 1200, 4, math.ceil(16 * 130 / 3) + (1200 * 3 - 15 * 130) + (4000 - (15 * 130 + 1650))),  # 11–13
])
def test_period_types(c, m, c_prev, m_prev, kind, t):
    r = period_time(c, m, c_prev, m_prev, mpd_prev=4, n_act=16, cpd_=3)
    assert r.type == kind
    assert r.t == t


def test_type2_waiting_hidden_by_other_warps():
    r = period_time(65, 400, 260, 200, mpd_prev=4, n_act=16, cpd_=3)
    assert r.type == 2 and r.t_c == 0          # 400 − 15·65 < 0


def test_whole_kernel_by_hand():
    # Costs: c = 260, 65, 130, 650, 325; m = 200, 1200, 4000, 200, 0; N_act 16, b = 16 → CPD = a = 3;
    # MPD = ⌊45 / (16·0.64)⌋ = 4 for every task. Periods are types 1, 2, 4, 3, 1:
    # 1387 + (347 + 225) + (694 + 1650 + 400) + (3467 + 2250) + 1734 = 12154.
    periods = (Period({"fp32": 4}, 1), Period({"fp32": 1}, 6), Period({"fp32": 2}, 20),
               Period({"fp32": 10}, 1), Period({"fp32": 5}, 0))
    prof = KernelProfile(threads_per_block=512, blocks=1, active_blocks_per_sm=1, active_sms=1,
                         comp_insts=22, mem_insts=28, coal_mem_insts=28, periods=periods)
    params = ModelParams(machine="hand", clock_mhz=1000.0, num_sms=1, bandwidth_gbs=45.0,
                         max_warps_per_sm=32, values={**GTX260, "luo_b": 16})
    r = mpd_cpd(prof, params)
    assert r.p == pytest.approx(1430 / 7030)
    assert r.cpd == 3 and r.cpd1 == 3
    assert [p.type for p in r.periods] == [1, 2, 4, 3, 1]
    assert [p.t for p in r.periods] == [1387, 572, 2744, 5717, 1734]
    assert r.cycles == 12154
    assert r.type_counts == {"type1": 2, "type2": 1, "type3": 1, "type4": 1}


def test_rep_scales_and_class_costs_apply():
    periods = (Period({"fp32": 2, "sfu": 1}, 1),)
    prof = KernelProfile(threads_per_block=32, blocks=4, active_blocks_per_sm=1, active_sms=2,
                         comp_insts=3, mem_insts=1, coal_mem_insts=1, periods=periods)
    params = ModelParams(machine="hand", clock_mhz=1000.0, num_sms=2, bandwidth_gbs=1000.0,
                         values={**GTX260, "luo_cost_sfu": 783})
    r = mpd_cpd(prof, params)
    c = 2 * 65 + 783                              # 913 ≥ m = 200 → type 1
    assert r.periods[0].c == c and r.periods[0].type == 1
    assert r.rep == 2
    assert r.cycles == 2 * math.ceil(1 * c / r.cpd)


def test_profile_without_periods_is_rejected():
    from teg.models.profile import ProfileError

    prof = KernelProfile(threads_per_block=32, blocks=1, active_blocks_per_sm=1, active_sms=1, comp_insts=3,
                         mem_insts=0)
    params = ModelParams(machine="hand", clock_mhz=1000.0, num_sms=1, bandwidth_gbs=10.0, values=GTX260)
    with pytest.raises(ProfileError, match="calculate periods"):
        mpd_cpd(prof, params)
