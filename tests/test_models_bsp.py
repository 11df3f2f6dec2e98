"""Amarís et al. BSP model — hand-computed eqs. (3)–(5)."""

import pytest

from teg.models.bsp import bsp
from teg.models.params import ModelParams
from teg.models.profile import KernelProfile

KEPLER = {"bsp_g_sm": 5, "bsp_g_gm": 500, "bsp_g_l1": 5, "bsp_g_l2": 250, "bsp_lambda": 2,
          "bsp_cores_per_sm": 192}


def prof(**kw):
    base = dict(threads_per_block=256, blocks=4, active_blocks_per_sm=1, active_sms=4, comp_insts=0,
                mem_insts=0, thread_comp=100, thread_ld_global=10, thread_st_global=1,
                thread_ld_shared=20, thread_st_shared=10)
    base.update(kw)
    return KernelProfile(**base)


def params(**values):
    return ModelParams(machine="k", clock_mhz=1006.0, num_sms=8, bandwidth_gbs=192.2, values={**KEPLER, **values})


def test_user_hit_rates():
    # L1 = 0.5·10 = 5, L2 = 0.5·(10 − 5) = 2.5; Comm_SM = 30·5 = 150;
    # Comm_GM = (11 − 7.5)·500 + 5·5 + 2.5·250 = 2400; T·R = 1024·2650/(1536·2).
    r = bsp(prof(), params(bsp_l1_hit_rate=0.5, bsp_l2_hit_rate=0.5))
    assert (r.l1_hits, r.l2_hits, r.comm_sm, r.comm_gm) == (5, 2.5, 150, 2400)
    assert r.cores == 1536 and r.threads == 1024
    assert r.cycles == pytest.approx(1024 * 2650 / (1536 * 2))
    assert r.seconds == pytest.approx(r.cycles / 1006e6)
    assert r.hit_rate_source == "user"


def test_cache_model_rates_when_user_gives_none():
    r = bsp(prof(l1_hit_rate=0.2, l2_hit_rate=0.25), params())
    assert r.hit_rate_source == "cache model"
    assert r.l1_hits == pytest.approx(2) and r.l2_hits == pytest.approx(2)
    assert r.comm_gm == pytest.approx(7 * 500 + 2 * 5 + 2 * 250)


def test_no_caches():
    r = bsp(prof(), params())
    assert r.hit_rate_source == "none"
    assert r.comm_gm == 11 * 500
    assert r.cycles == pytest.approx(1024 * (100 + 5500 + 150) / (1536 * 2))


def test_lambda_divides_time():
    a = bsp(prof(), params(bsp_lambda=1)).cycles
    b = bsp(prof(), params(bsp_lambda=4)).cycles
    assert a == pytest.approx(4 * b)
