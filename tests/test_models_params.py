"""Model parameters: the analytical: section, overlays and their precedence, and the seed GPUs'
machine tables carrying the values their papers give."""

from dataclasses import replace
from types import SimpleNamespace

import pytest

import teg.machine as tm
from teg.models import MODELS, KernelProfile, ModelParameterError, mwp_cwp, params_for
from teg.models.params import parse_section


def fake_machine(name="m", sm=90, analytical=None):
    return SimpleNamespace(name=name, sm=sm, clock_mhz=1000.0, num_sms=4, warp_size=32, source_path=f"{name}.yaml",
                           memory=SimpleNamespace(bandwidth_gbs=100.0), limits=SimpleNamespace(max_warps=48),
                           raw={"analytical": analytical} if analytical is not None else {}, extras={})


def write_overlay(root, name, body):
    d = root / "analytical"
    d.mkdir(exist_ok=True)
    (d / f"{name}.yaml").write_text(body)


def test_precedence_overlay_table_override(tmp_path):
    write_overlay(tmp_path, "m", "analytical:\n  mem_ld: {value: 1, source: overlay}\n  issue_cycles: {value: 2, source: overlay}\n")
    m = fake_machine(analytical={"mem_ld": {"value": 10, "source": "table"}})
    p = params_for(m, tables_dir=tmp_path)
    assert p["mem_ld"] == 10 and p.sources["mem_ld"] == "table"
    assert p["issue_cycles"] == 2 and p.sources["issue_cycles"] == "overlay"
    p = params_for(m, {"issue_cycles": 0.5}, tables_dir=tmp_path)
    assert p["issue_cycles"] == 0.5 and p.sources["issue_cycles"] == "override"
    assert (p.clock_mhz, p.num_sms, p.bandwidth_gbs, p.max_warps_per_sm) == (1000.0, 4, 100.0, 48)


def test_overlay_of_the_suggested_arch_table(tmp_path):
    write_overlay(tmp_path, "sm_90", "analytical:\n  mem_ld: {value: 479, source: sm_90 overlay}\n")
    p = params_for(fake_machine(name="h999", sm=90), tables_dir=tmp_path)
    assert p["mem_ld"] == 479
    assert params_for(fake_machine(name="k", sm=35), tables_dir=tmp_path).values == {}


def test_bad_sections_are_reported_with_their_file(tmp_path):
    with pytest.raises(ModelParameterError, match="x.yaml.*'mem_ld' must be a finite number"):
        parse_section({"mem_ld": {"value": "fast", "source": "s"}}, "x.yaml")
    with pytest.raises(ModelParameterError, match=r"'mem_ld' must be \{value: number, source: text\}"):
        parse_section({"mem_ld": {"source": "s"}}, "x.yaml")
    with pytest.raises(ModelParameterError, match="'mem_ld' has no source"):
        parse_section({"mem_ld": {"value": 3}}, "x.yaml")
    with pytest.raises(ModelParameterError, match="must be"):
        parse_section({"mem_ld": 3}, "x.yaml")
    write_overlay(tmp_path, "m", "analytical: [1, 2\n")
    with pytest.raises(ModelParameterError, match=r"m\.yaml:\d+: invalid YAML"):
        params_for(fake_machine(), tables_dir=tmp_path)
    with pytest.raises(ModelParameterError, match="must be a finite number"):
        params_for(fake_machine(), {"mem_ld": float("nan")}, tables_dir=tmp_path / "none")


HK_TABLES = {   # Hong & Kim Table 3 (#SM, processor clock, bandwidth, computing version) and Table 6
    "8800gtx": (16, 1350, 86.4, 10, 420, 10, 4),
    "quadro_fx5600": (16, 1350, 76.8, 10, 420, 10, 4),
    "8800gt": (14, 1500, 57.6, 11, 420, 10, 4),
    "gtx280_hk": (30, 1300, 141.7, 13, 450, 40, 4),
}


@pytest.mark.parametrize("name", list(HK_TABLES))
def test_hong_kim_tables(name):
    sms, clock, bw, sm, mem_ld, uncoal, coal = HK_TABLES[name]
    m = tm.load(name)
    p = params_for(m)
    assert (m.num_sms, m.clock_mhz, m.memory.bandwidth_gbs, m.sm) == (sms, clock, bw, sm)
    assert (p["mem_ld"], p["departure_del_uncoal"], p["departure_del_coal"], p["issue_cycles"]) == (mem_ld, uncoal, coal, 4)
    if sm < 12:
        assert p["uncoal_per_mw"] == 32
        assert (m.limits.max_warps, m.limits.max_threads, m.limits.registers) == (24, 768, 8192)


def test_table2_example_on_the_fx5600_parameters():
    # Hong & Kim §3.6: an 80 GB/s, 1 GHz, 16-SM system with the FX5600 memory parameters.
    p = replace(params_for(tm.load("quadro_fx5600")), clock_mhz=1000.0, bandwidth_gbs=80.0)
    prof = KernelProfile(threads_per_block=128, blocks=80, active_blocks_per_sm=5, active_sms=16, comp_insts=27,
                         mem_insts=6, uncoal_mem_insts=6, synch_insts=6, uncoal_per_mw=32)
    r = mwp_cwp(prof, p)
    assert round(r.mwp, 2) == 2.28 and r.cwp == 20 and r.mem_l == 730
    assert r.cycles == pytest.approx(50738, rel=1e-3)


def test_luo_suda_gtx260():
    m = tm.load("gtx260_luo")
    p = params_for(m)
    assert (m.num_sms, m.clock_mhz, m.memory.bandwidth_gbs) == (24, 1242, 111.9)
    assert (p["luo_a"], p["luo_b"], p["luo_c"], p["luo_d"], p["luo_t_mem"], p["luo_max_warps"]) == (3, 11, 0.5, 80, 200, 32)
    assert (p["luo_cost_int"], p["luo_cost_fp32"], p["luo_cost_sfu"]) == (65, 65, 783)


def test_dasgupta_c1060():
    m = tm.load("tesla_c1060_cpa")
    p = params_for(m)
    assert m.clock_mhz == 1296 and p["cpa_freq_mhz"] == 1312 and p["cpa_base_mem_latency"] == 450
    assert (p["cpa_dep_delay_32b"], p["cpa_dep_delay_64b"], p["cpa_dep_delay_128b"], p["cpa_dep_delay_vector"]) == (37, 37, 58, 57)


BSP_BOARDS = {  # Amarís et al. Table I: C.C., BW, SMs/cores, clock
    "gt630": (21, 21.3, 2, 96, 1620), "gtx660": (30, 144.2, 5, 960, 1058), "gtx680": (30, 192.2, 8, 1536, 1006),
    "gtx_titan": (35, 288.3, 14, 2688, 876), "tesla_k20": (35, 208, 13, 2496, 706), "tesla_k40": (35, 276.5, 15, 2880, 745),
}


@pytest.mark.parametrize("name", list(BSP_BOARDS))
def test_bsp_boards(name):
    cc, bw, sms, cores, clock = BSP_BOARDS[name]
    m = tm.load(name)
    p = params_for(m)
    assert (m.sm, m.memory.bandwidth_gbs, m.num_sms, m.clock_mhz) == (cc, bw, sms, clock)
    assert p["bsp_cores_per_sm"] * sms == cores
    assert (p["bsp_g_sm"], p["bsp_g_gm"], p["bsp_g_l1"], p["bsp_g_l2"]) == (5, 500, 5, 250)
    assert (m.memory.l1 is not None) == (name == "gt630")     # Kepler caches global loads in L2 only


def simple_profile():
    from teg.models.profile import Period

    return KernelProfile(threads_per_block=256, blocks=64, active_blocks_per_sm=2, active_sms=16, comp_insts=40,
                         mem_insts=4, coal_mem_insts=2, uncoal_mem_insts=2, uncoal_per_mw=8, trans_32=10, trans_128=2,
                         thread_comp=40, thread_ld_global=3, thread_st_global=1,
                         periods=(Period({"fp32": 20}, 2), Period({"int": 20}, 2)))


MODERN = ["sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "h100_sxm", "h200"]
GT200_FAMILY = ["gt200", "gtx280_hk", "gtx260_luo", "tesla_c1060_cpa", "8800gtx", "quadro_fx5600", "8800gt"]


@pytest.mark.parametrize("name", MODERN + GT200_FAMILY)
def test_every_model_has_its_parameters(name):
    m = tm.load(name)
    p = params_for(m)
    for model in MODELS.values():
        r = model(simple_profile(), p)
        assert r.cycles > 0
    assert all(p.sources[k] for k in p.values)


@pytest.mark.parametrize("name", MODERN)
def test_modern_overlays_follow_their_machine_table(name):
    # The derived departure delays must track the table they were derived from (stale overlay = fail).
    m = tm.load(name)
    p = params_for(m)
    share = m.memory.bandwidth_gbs * 1e9 / (m.num_sms * m.clock_mhz * 1e6)
    assert p["departure_del_uncoal"] == pytest.approx(32 / share, abs=0.006)
    assert p["cpa_dep_delay_128b"] == pytest.approx(128 / share, abs=0.006)
    assert p["mem_ld"] == m.memory.dram_latency == p["bsp_g_gm"]
    assert p["bsp_g_l1"] == m.memory.l1.latency and p["bsp_g_l2"] == m.memory.l2.latency
    assert p["luo_cost_sfu"] == m.latencies["sfu"].execution
    fp = m.units.get("fma") or m.units["core"]
    assert p["issue_cycles"] == pytest.approx(fp.occupancy / m.schedulers, abs=0.006)
    assert p["bsp_cores_per_sm"] == pytest.approx(m.schedulers * m.warp_size / fp.occupancy)


def test_kepler_boards_only_have_bsp():
    p = params_for(tm.load("gtx680"))
    with pytest.raises(ModelParameterError, match="gtx680.*mem_ld"):
        mwp_cwp(simple_profile(), p)


def test_extras_without_raw_document(tmp_path):
    m = fake_machine()
    m.extras = {"mem_ld": 333}
    p = params_for(m, tables_dir=tmp_path)
    assert p["mem_ld"] == 333 and p.sources["mem_ld"] == "m.yaml"
