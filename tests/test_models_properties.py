"""Invariants every analytical model must keep on any profile (hypothesis): the grid is #Rep
repetitions of one SM's active blocks, so doubling the blocks at fixed occupancy doubles the
cycles; the intermediate metrics stay in their defined ranges."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from teg.models import MODELS, KernelProfile, ModelParams, Period, cpa, mpd_cpd, mwp_cwp

VALUES = {"mem_ld": 420, "departure_del_uncoal": 10, "departure_del_coal": 4, "issue_cycles": 4,
          "cpa_base_mem_latency": 450, "cpa_dep_delay_32b": 37, "cpa_dep_delay_64b": 37, "cpa_dep_delay_128b": 58,
          "cpa_dep_delay_vector": 57, "cpa_issue_cycles": 4, "cpa_high_latency_cycles": 16,
          "luo_a": 3, "luo_b": 11, "luo_c": 0.5, "luo_d": 80, "luo_t_mem": 200, "luo_cost_default": 65,
          "bsp_g_sm": 5, "bsp_g_gm": 500, "bsp_g_l1": 5, "bsp_g_l2": 250, "bsp_lambda": 1, "bsp_cores_per_sm": 8}


@st.composite
def profiles(draw):
    warps_per_block = draw(st.integers(1, 16))
    active_blocks = draw(st.integers(1, 8))
    sms = draw(st.integers(1, 30))
    reps = draw(st.integers(1, 4))
    coal = draw(st.integers(0, 20))
    uncoal = draw(st.integers(0, 20))
    periods = tuple(Period({"fp32": draw(st.integers(0, 50))}, draw(st.integers(0, 4)),
                           mem_trans=draw(st.sampled_from([1.0, 2.0, 4.0, 32.0])))
                    for _ in range(draw(st.integers(1, 6))))
    return KernelProfile(
        threads_per_block=32 * warps_per_block, blocks=active_blocks * sms * reps,
        active_blocks_per_sm=active_blocks, active_sms=sms,
        comp_insts=draw(st.integers(1, 500)), mem_insts=coal + uncoal, coal_mem_insts=coal, uncoal_mem_insts=uncoal,
        uncoal_per_mw=draw(st.sampled_from([2.0, 4.0, 8.0, 32.0])), synch_insts=draw(st.integers(0, 4)),
        trans_32=draw(st.integers(0, 40)), trans_64=draw(st.integers(0, 40)), trans_128=draw(st.integers(0, 40)),
        high_latency_insts=0, duplicate_loads=draw(st.sampled_from([1.0, 2.0])),
        independent_loads=draw(st.sampled_from([1.0, 2.0])), thread_comp=draw(st.integers(0, 100)),
        thread_ld_global=draw(st.integers(0, 10)), periods=periods)


def params():
    return ModelParams(machine="prop", clock_mhz=1300.0, num_sms=30, bandwidth_gbs=141.7, values=VALUES)


@settings(max_examples=150, deadline=None)
@given(profiles())
def test_cycles_scale_with_the_number_of_waves(p):
    double = KernelProfile(**{**p.__dict__, "blocks": 2 * p.blocks})
    for name, model in MODELS.items():
        one, two = model(p, params()).cycles, model(double, params()).cycles
        assert one >= 0 and math.isfinite(one), name
        assert math.isclose(two, 2 * one, rel_tol=1e-9, abs_tol=1e-9), name


@settings(max_examples=150, deadline=None)
@given(profiles())
def test_metric_ranges(p):
    n = p.active_warps_per_sm
    hk = mwp_cwp(p, params())
    assert 1 <= hk.cwp <= n and 0 < hk.mwp <= n
    assert hk.case in ("eq22", "eq23", "eq24")
    c = cpa(p, params())
    assert c.mwp > 0 and 1 <= c.cwp <= n
    luo = mpd_cpd(p, params())
    assert luo.cpd >= 1 and 1 <= luo.mpd_min <= n
    assert all(r.t >= math.ceil(n * r.c / luo.cpd) for r in luo.periods)
    assert sum(luo.type_counts.values()) == len(p.periods)
