"""Machine tables: loading, resolution through extends:, validation errors, derived values."""

from __future__ import annotations

import copy
import math
import os
import textwrap

import pytest
import yaml

import teg.machine as tm
from teg import TegError
from teg.machine import MachineTableError

DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SHIPPED = ["gt200", "h100_sxm", "h200", "sm_100", "sm_120", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89",
           "sm_90"]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def per_sm_rate(m, opcode):
    """Warp instructions per cycle per SM the unit of ``opcode`` sustains."""
    info = m.classify(opcode)
    unit = m.units[info.unit]
    copies = unit.count * (m.schedulers if unit.per == "scheduler" else 1)
    return copies / m.occupancy(info)


def resolved_doc(name):
    return copy.deepcopy(tm.load(name).raw)


# ---------------------------------------------------------------------------------------------
# shipped tables


def test_available_lists_shipped_tables():
    names = tm.available()
    assert names == sorted(names) and set(SHIPPED) <= set(names)
    assert "volta_plus" not in names      # common/ fragments are not machines


@pytest.mark.parametrize("name", tm.available())
def test_every_shipped_table_loads_and_is_consistent(name):
    m = tm.load(name)
    assert m.name == name and m.description
    assert m.opcodes, "every table classifies opcodes"
    for key, info in m.opcodes.items():
        assert info.unit in m.units, key
        assert info.latency in m.latencies, key
        assert m.occupancy(info) > 0
        if info.kind in ("load", "store", "atomic"):
            assert info.space != "none" and info.width > 0, key
    for u in m.units.values():
        assert u.per in ("scheduler", "sm") and u.occupancy > 0 and u.count >= 1
    assert m.warp_size % m.shared.phase_lanes == 0
    assert m.memory.max_outstanding >= 1
    assert m.num_sms % m.memory.sms_per_pipeline == 0


@pytest.mark.parametrize("name", [n for n in SHIPPED if n not in ("gt200", "sm_61")])
def test_volta_plus_tables_issue_one_per_cycle_on_four_schedulers(name):
    m = tm.load(name)
    assert (m.schedulers, m.issue_interval, m.dependency_model) == (4, 1, "controlcodes")
    assert (m.shared.banks, m.shared.bank_bytes, m.shared.phase_lanes) == (32, 4, 32)
    assert m.memory.coalescing == "sector" and m.memory.segment_bytes == (32,)
    assert all(lat.issue_multi == 1 for lat in m.latencies.values())


def test_gt200_matches_teg_report():
    m = tm.load("gt200")
    # TEG report Table 1: (execution, issue multi-warp, issue same-warp)
    table1 = {"int_add": (24, 4, 8), "int_mul16": (24, 4, 8), "int_mad16": (24, 4, 8),
              "fp_add": (24, 4, 8), "fp_mul": (24, 2, 8), "fp_mad": (24, 4, 8),
              "dp_add": (48, 32, 32), "dp_mul": (48, 32, 32), "dp_fma": (48, 32, 32)}
    for name, row in table1.items():
        lat = m.latencies[name]
        assert (lat.execution, lat.issue_multi, lat.issue_same) == row, name
    assert (m.schedulers, m.issue_interval, m.num_sms, m.clock_mhz) == (1, 2, 30, 1296)
    assert (m.shared.banks, m.shared.bank_bytes, m.shared.phase_lanes, m.shared.latency) == (16, 4, 16, 38)
    assert (m.memory.channels, m.memory.interleave_bytes, m.memory.sms_per_pipeline) == (8, 256, 3)
    assert m.memory.coalescing == "cc13" and m.memory.segment_bytes == (32, 64, 128)
    assert 436 <= m.memory.dram_latency <= 443
    gld = m.latencies[m.classify("GLD.U32").latency]
    assert (gld.issue_multi, gld.issue_same) == (4, 60)
    assert m.classify("FADD32").latency == "fp_add" and m.classify("FMUL32I").unit == "sp_sfu"
    assert m.memory.l1 is None and m.memory.l2 is None


def test_c_mem_reproduces_teg_section_3_2_4():
    m = tm.load("gt200")
    # hand computation: 141.7e9 B/s * 440 cyc / (10 TPC * 32 * 8 B * 1.296e9 Hz) = 18.79
    assert tm.c_mem(m, 8) == pytest.approx(141.7e9 * 440 / (10 * 32 * 8 * 1.296e9))
    assert math.floor(tm.c_mem(m, 8)) == 18          # "C_mem ≈ 18" for double
    assert m.memory.max_outstanding == 18            # stored as {c_mem_ele_size: 8}
    assert tm.c_mem(m, 4) == pytest.approx(2 * tm.c_mem(m, 8))
    assert tm.c_mem_from(100, 100, 1, 1, 1, 1000) == pytest.approx(10000)
    with pytest.raises(ValueError):
        tm.c_mem_from(0, 100, 1, 1, 1, 1000)


def test_product_variants_override_only_their_numbers():
    base, sxm, h200 = tm.load("sm_90"), tm.load("h100_sxm"), tm.load("h200")
    assert (sxm.num_sms, sxm.clock_mhz, sxm.memory.bandwidth_gbs) == (132, 1980, 3352)
    assert (h200.num_sms, h200.clock_mhz, h200.memory.bandwidth_gbs) == (132, 1980, 4800)
    assert h200.latencies == base.latencies and h200.opcodes == base.opcodes and h200.sm == 90
    assert h200.memory.l2 == base.memory.l2


def test_arch_specific_classification():
    assert tm.load("sm_80").classify("DFMA").variable is True      # ptxas sets a barrier (fixtures)
    assert tm.load("sm_90").classify("DFMA").variable is False
    assert tm.load("sm_70").classify("HMMA.884.F32.F32").variable is True
    sm86 = tm.load("sm_86")
    assert sm86.units["fp64"].per == "sm"
    # FP64 warp instructions per cycle per SM: GA10x's 2 SM-shared lanes are 16x slower than GA100's 32
    assert per_sm_rate(tm.load("sm_80"), "DFMA") == 16 * per_sm_rate(sm86, "DFMA") == 1
    assert sm86.occupancy(sm86.classify("HMMA.16816.F32")) == 2 * sm86.occupancy(sm86.classify("HMMA.16816.F16"))
    assert tm.load("sm_80").classify("IMAD").unit == tm.load("sm_80").classify("FFMA").unit   # GA100 FMA pipe
    assert tm.load("sm_90").classify("IMAD").unit != tm.load("sm_90").classify("FFMA").unit   # FMAheavy vs both
    assert tm.load("sm_90").classify("VIADD") is not None and tm.load("sm_80").classify("VIADD") is None
    assert tm.load("sm_100").classify("LDCU.64").width == 8 and tm.load("sm_90").classify("LDCU") is None
    assert tm.load("sm_100").classify("DFMA").variable is False and tm.load("sm_120").classify("DFMA").variable is True


def test_for_arch():
    assert tm.for_arch(13) == "gt200"
    assert [tm.for_arch(s) for s in (60, 61, 62, 70, 72, 75, 80, 86, 89, 90, 100, 120)] == \
        ["sm_61", "sm_61", "sm_61", "sm_70", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
    assert all(tm.for_arch(s) in tm.available()
               for s in (10, 13, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 120, 121))
    with pytest.raises(MachineTableError, match="sm_35"):
        tm.for_arch(35)
    with pytest.raises(MachineTableError, match="sm_52"):
        tm.for_arch(52)                                 # Maxwell: no related table
    with pytest.raises(MachineTableError):
        tm.for_arch("ninety")


def test_unknown_name_and_missing_path():
    with pytest.raises(MachineTableError, match="unknown machine 'sm_99'.*sm_90"):
        tm.load("sm_99")
    with pytest.raises(MachineTableError, match="not found"):
        tm.load("/nonexistent/table.yaml")
    assert issubclass(MachineTableError, TegError)


# ---------------------------------------------------------------------------------------------
# extends and overrides


def test_user_table_extends_and_overrides(tmp_path):
    p = write(tmp_path, "my_h100.yaml", """\
        extends: sm_90
        description: "my clock-locked H100"
        clock_mhz: {value: 1500, source: "nvidia-smi -lgc 1500"}
        latencies:
          fp32: {execution: 5, source: "my microbenchmark"}
        opcodes:
          map:
            MYOP: int
            FFMA.SAT: {class: fp32, latency: imad}
        """)
    m = tm.load(p)
    base = tm.load("sm_90")
    assert m.name == "my_h100" and m.description == "my clock-locked H100"
    assert m.clock_mhz == 1500 and base.clock_mhz == 1755
    assert m.latencies["fp32"].execution == 5
    assert m.latencies["fp32"].issue_same == base.latencies["fp32"].issue_same     # merged, not replaced
    src = m.raw["latencies"]["fp32"]["source"]
    assert "my microbenchmark" in src and "inherited" in src
    assert m.classify("MYOP.X") == base.classify("IADD3")
    assert m.classify("FFMA.SAT.RZ").latency == "imad" and m.classify("FFMA.RZ").latency == "fp32"
    assert m.num_sms == base.num_sms and m.sm == 90


def test_extends_a_path_relative_to_the_file(tmp_path):
    write(tmp_path, "base.yaml", """\
        extends: sm_80
        description: "base"
        num_sms: {value: 54, source: "half an A100"}
        """)
    sub = tmp_path / "sub"
    sub.mkdir()
    p = write(sub, "derived.yaml", """\
        extends: ../base.yaml
        description: "derived"
        memory:
          bandwidth_gbs: {value: 777, source: "test"}
        """)
    m = tm.load(p)
    assert (m.name, m.num_sms, m.memory.bandwidth_gbs, m.clock_mhz) == ("derived", 54, 777, 1410)


def test_cache_returns_same_object_and_reloads_after_change(tmp_path):
    assert tm.load("sm_90") is tm.load("sm_90")
    p = write(tmp_path, "t.yaml", """\
        extends: sm_90
        description: "t"
        num_sms: {value: 10, source: "test"}
        """)
    first = tm.load(p)
    assert tm.load(str(p)) is first
    p.write_text(p.read_text().replace("value: 10", "value: 12"))
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert tm.load(p).num_sms == 12


def test_resolved_table_round_trips(tmp_path):
    m = tm.load("h200")
    p = tmp_path / "h200.yaml"
    p.write_text(yaml.dump(m.raw, Dumper=DUMPER, sort_keys=False))
    again = tm.load(p)
    for field in ("sm", "clock_mhz", "num_sms", "units", "latencies", "shared", "memory", "limits",
                  "opcodes", "extras", "issue_interval", "schedulers"):
        assert getattr(again, field) == getattr(m, field), field


# ---------------------------------------------------------------------------------------------
# validation errors: each names the file and the key path


def check_error(path, *needles):
    with pytest.raises(MachineTableError) as exc:
        tm.load(path)
    msg = str(exc.value)
    assert str(path) in msg and "\n" not in msg, msg
    for needle in needles:
        assert needle in msg, msg
    return msg


def test_unknown_key(tmp_path):
    p = write(tmp_path, "u.yaml", """\
        extends: sm_90
        description: "x"
        memory:
          bogus: {value: 1, source: "x"}
        """)
    msg = check_error(p, "memory.bogus", "unknown key")
    assert f"{p}:4:" in msg      # line of the offending key


def test_unknown_top_level_key(tmp_path):
    p = write(tmp_path, "u.yaml", """\
        extends: sm_90
        description: "x"
        colour: blue
        """)
    check_error(p, "colour", "unknown key")


def test_missing_key(tmp_path):
    doc = resolved_doc("sm_90")
    del doc["shared"]["banks"]
    p = tmp_path / "m.yaml"
    p.write_text(yaml.dump(doc, Dumper=DUMPER, sort_keys=False))
    check_error(p, "shared.banks", "missing key")


def test_missing_section(tmp_path):
    doc = resolved_doc("sm_80")
    del doc["limits"]
    p = tmp_path / "m.yaml"
    p.write_text(yaml.dump(doc, Dumper=DUMPER, sort_keys=False))
    check_error(p, "limits", "missing key")


@pytest.mark.parametrize("snippet, path, problem", [
    ('clock_mhz: {value: "fast", source: "x"}', "clock_mhz.value", "wrong type"),
    ('num_sms: {value: 13.5, source: "x"}', "num_sms.value", "integer"),
    ('dependency_model: psychic', "dependency_model", "bad value"),
    ('scheduler_policy: {value: oldest, source: "x"}', "scheduler_policy.value", "bad value"),
    ('scheduler_policy: {value: gto}', "scheduler_policy.source", "missing key"),
    ('scheduler_policy: gto', "scheduler_policy", "wrong type"),
    ('units: {fma: {occupancy: 1, per: everywhere, source: "x"}}', "units.fma.per", "bad value"),
    ('shared: [1, 2]', "shared", "wrong type"),
    ('opcodes: {map: {FFMA: {class: fp32, variable: "yes"}}}', "opcodes.map.FFMA.variable", "wrong type"),
    ('opcodes: {map: {"ffma": fp32}}', "opcodes.map.ffma", "bad key"),
    ('analytical: {mem_ld: 450}', "analytical.mem_ld", "wrong type"),
    ('memory: {max_outstanding: {c_mem_ele_size: 0, source: "x"}}', "memory.max_outstanding.c_mem_ele_size", "must be > 0"),
    ('memory: {l1: {line_bytes: 96, source: "x"}}', "memory.l1.line_bytes", "must be a power of two"),
    ('memory: {l2: {sector_bytes: 256, source: "x"}}', "memory.l2.sector_bytes", "must be <= line_bytes 128"),
    ('memory: {l2: {sector_bytes: 4, source: "x"}}', "memory.l2.sector_bytes", "at most 16 sectors per line of 128 B"),
])
def test_wrong_type_or_value(tmp_path, snippet, path, problem):
    p = write(tmp_path, "w.yaml", f'extends: sm_90\ndescription: "x"\n{snippet}\n')
    check_error(p, path, problem)


def test_number_without_source(tmp_path):
    p = write(tmp_path, "n.yaml", """\
        extends: sm_90
        description: "x"
        num_sms: 100
        """)
    check_error(p, "num_sms", "number without a source")


def test_number_sourced_by_enclosing_section(tmp_path):
    p = write(tmp_path, "s.yaml", """\
        extends: sm_90
        description: "x"
        shared:
          source: "my measurement"
          latency: 31
        latencies:
          int: {execution: 3}
        """)
    # shared.latency is sourced by shared.source; latencies.int.execution has none in this file
    check_error(p, "latencies.int.execution", "number without a source")


def test_top_level_sources_bibliography_does_not_source_numbers(tmp_path):
    p = write(tmp_path, "b.yaml", """\
        extends: sm_90
        description: "x"
        sources: {ME: "my lab book"}
        limits: {max_warps: 32}
        """)
    check_error(p, "limits.max_warps", "number without a source")


@pytest.mark.parametrize("ext, needle", [("sm_999", "no shipped table 'sm_999'"),
                                         ("missing.yaml", "missing.yaml not found"),
                                         ("[1]", "wrong type: expected a string")])
def test_bad_extends(tmp_path, ext, needle):
    p = write(tmp_path, "e.yaml", f'extends: {ext}\ndescription: "x"\n')
    check_error(p, "extends", needle)


def test_extends_cycle(tmp_path):
    write(tmp_path, "a.yaml", 'extends: b.yaml\ndescription: "a"\n')
    p = write(tmp_path, "b.yaml", 'extends: a.yaml\ndescription: "b"\n')
    with pytest.raises(MachineTableError, match="cycle"):
        tm.load(p)


def test_opcode_references_checked(tmp_path):
    p = write(tmp_path, "r.yaml", """\
        extends: sm_90
        description: "x"
        opcodes:
          map:
            FOO: no_such_class
        """)
    check_error(p, "opcodes.map.FOO.class", "unknown opcode class")
    p = write(tmp_path, "r2.yaml", """\
        extends: sm_90
        description: "x"
        opcodes:
          classes:
            weird: {unit: warp_drive, latency: int, kind: alu, space: none, variable: false, unit_class: int}
        """)
    check_error(p, "opcodes.classes.weird.unit", "unknown unit 'warp_drive'")


def test_invalid_yaml_names_file_and_line(tmp_path):
    p = write(tmp_path, "bad.yaml", 'extends: sm_90\ndescription: "x\nnum_sms: [\n')
    with pytest.raises(MachineTableError, match=r"bad\.yaml:\d+: invalid YAML"):
        tm.load(p)
    q = write(tmp_path, "list.yaml", "- 1\n- 2\n")
    with pytest.raises(MachineTableError, match="mapping at the top level"):
        tm.load(q)


def test_cross_field_checks(tmp_path):
    p = write(tmp_path, "x.yaml", """\
        extends: gt200
        description: "x"
        num_sms: {value: 31, source: "test"}
        """)
    check_error(p, "memory.sms_per_pipeline", "must divide num_sms 31")


@pytest.mark.parametrize("name, opcode, lanes_per_sm", [
    # lanes (results) per clock per SM: CUDA C++ Programming Guide, "Throughput of Native
    # Arithmetic Instructions" / TEG §2.1
    ("sm_70", "FFMA", 64), ("sm_70", "IADD3", 64), ("sm_70", "DFMA", 32), ("sm_70", "MUFU.EX2", 16),
    ("sm_80", "FFMA", 64), ("sm_80", "IMAD", 64), ("sm_80", "DFMA", 32), ("sm_80", "MUFU.RCP", 16),
    ("sm_86", "FFMA", 128), ("sm_86", "IADD3", 64), ("sm_86", "DFMA", 2), ("sm_86", "MUFU.SIN", 16),
    ("sm_90", "FFMA", 128), ("sm_90", "IADD3", 64), ("sm_90", "DFMA", 64), ("sm_90", "MUFU.RSQ", 16),
    ("gt200", "FADD32", 8), ("gt200", "FMAD", 8), ("gt200", "DFMA", 1),
    # Turing T4: FP32/INT32 64, FP64 2 (CUDA-PG 7.5, Turing whitepaper), SFU 16
    ("sm_75", "FFMA", 64), ("sm_75", "IADD3", 64), ("sm_75", "IMAD", 64), ("sm_75", "DFMA", 2),
    ("sm_75", "MUFU.EX2", 16),
    # Pascal GP102, CUDA-PG throughput table 6.1 (results per clock per SM)
    ("sm_61", "FFMA", 128), ("sm_61", "IADD", 128), ("sm_61", "LOP.AND", 128), ("sm_61", "SHL", 64),
    ("sm_61", "ISETP.GE.AND", 64), ("sm_61", "BFE.U32", 64), ("sm_61", "POPC", 32), ("sm_61", "FLO.U32", 32),
    ("sm_61", "DFMA", 4), ("sm_61", "HFMA2", 1), ("sm_61", "MUFU.RSQ", 32), ("sm_61", "I2F.F32.S32", 32),
    ("sm_61", "F2F.F64.F32", 4), ("sm_61", "SHFL.IDX", 32),
])
def test_unit_rates_match_published_lane_counts(name, opcode, lanes_per_sm):
    m = tm.load(name)
    assert per_sm_rate(m, opcode) * m.warp_size == pytest.approx(lanes_per_sm)


@pytest.mark.parametrize("name, fma_per_clk_per_sm", [("sm_80", 4 * 256), ("sm_90", 4 * 512), ("sm_86", 4 * 128)])
def test_tensor_rates_match_per_core_fma_counts(name, fma_per_clk_per_sm):
    """HMMA.16816 (m16n8k16 = 2048 FMA per warp instruction) at 4 tensor cores per SM (A100, H100 and
    GA102 whitepapers)."""
    m = tm.load(name)
    assert per_sm_rate(m, "HMMA.16816.F16") * 16 * 8 * 16 == pytest.approx(fma_per_clk_per_sm)


@pytest.mark.parametrize("opcode, ops_per_instr, ops_per_clk_per_sm", [
    ("HMMA.1688.F32", 16 * 8 * 8, 8 * 64),      # 8 tensor cores x 64 FP16 FMA/clk (Turing whitepaper)
    ("HMMA.884.F32.F32", 8 * 8 * 4, 8 * 64),
    ("IMMA.8816.S8.S8", 8 * 8 * 16, 1024),       # T4 130 INT8 TOPS = 2 x 65 FP16 TOPS
])
def test_turing_tensor_rates(opcode, ops_per_instr, ops_per_clk_per_sm):
    m = tm.load("sm_75")
    assert per_sm_rate(m, opcode) * ops_per_instr == pytest.approx(ops_per_clk_per_sm)
    # T4 datasheet: 65 FP16 tensor TFLOPS = 40 SMs x 512 FMA x 2 FLOP x 1590 MHz
    assert 40 * 512 * 2 * m.clock_mhz * 1e6 == pytest.approx(65e12, rel=0.01)


# ---------------------------------------------------------------------------------------------
# Turing and Pascal tables against their sources


def test_sm75_is_sm70_with_turing_overrides():
    t, v = tm.load("sm_75"), tm.load("sm_70")
    assert (t.sm, t.num_sms, t.clock_mhz, t.schedulers, t.dependency_model) == (75, 40, 1590, 4, "controlcodes")
    # CUDA-PG 7.5: 32 warps, 16 blocks, 1024 threads, 64K registers, 64 KB shared per SM and block
    lim = t.limits
    assert (lim.max_warps, lim.max_blocks, lim.max_threads, lim.registers) == (32, 16, 1024, 65536)
    assert lim.max_warps * t.warp_size == lim.max_threads
    assert (t.shared.size_per_sm, t.shared.max_per_block) == (64 * 1024, 64 * 1024)
    # Turing whitepaper: 96 KB unified L1/shared; JIA19 T4: L1 32, shared 19, L2 188 cycles, 4 MB L2
    assert t.memory.l1.size_bytes == 96 * 1024 and t.memory.l1.latency == 32 == t.memory.local_latency
    assert t.shared.latency == 19 == t.latencies["shared"].execution
    assert (t.memory.l2.size_bytes, t.memory.l2.latency) == (4 * 1024 * 1024, 188)
    assert (t.memory.bandwidth_gbs, t.memory.channels) == (320, 8)
    # Accel-Sim RTX 2060: DRAM = l2_rop 194 + dram 96
    assert t.memory.dram_latency == 194 + 96 == t.latencies["global"].execution
    # what Turing shares with Volta is inherited unchanged
    assert t.units["fma"] == v.units["fma"] and t.units["alu"] == v.units["alu"] and t.units["xu"] == v.units["xu"]
    assert t.latencies["fp32"] == v.latencies["fp32"] and t.latencies["int"] == v.latencies["int"]
    assert t.memory.l1.line_bytes == v.memory.l1.line_bytes == 128
    assert set(t.opcodes) == set(v.opcodes) | {"HMMA.884"}
    assert all(t.classify(op).unit == v.classify(op).unit for op in ("FFMA", "IMAD.WIDE.U32", "LDG.E.SYS", "UIADD3"))
    # ptxas sm_75 stall counts: IMAD 4, IMAD.WIDE 5 before an ALU consumer
    assert (t.latencies["imad"].execution, t.latencies["imad_wide"].execution) == (4, 5)
    assert t.units["fp64"].per == "sm" and t.classify("DFMA").variable is True


def test_sm61_product_and_memory_numbers():
    p = tm.load("sm_61")
    assert (p.sm, p.num_sms, p.clock_mhz, p.schedulers, p.issue_interval) == (61, 28, 1417, 4, 1)
    lim = p.limits       # CUDA-PG 6.1 = Accel-Sim SM6_TITANX 2048:32, 32 CTAs
    assert (lim.max_warps, lim.max_blocks, lim.max_threads, lim.registers, lim.max_regs_per_thread) == \
        (64, 32, 2048, 65536, 255)
    assert (p.shared.banks, p.shared.size_per_sm, p.shared.max_per_block, p.shared.latency) == (32, 96 * 1024, 48 * 1024, 24)
    # SM6_TITANX: 12 channels x 4 B x 2500 MHz x 4 (QDR) = 480 GB/s; L2 = 24 sub-partitions x 64 sets x 16 x 128 B
    assert p.memory.channels == 12 and p.memory.bandwidth_gbs == pytest.approx(12 * 4 * 2500e6 * 4 / 1e9)
    assert p.memory.l2.size_bytes == 12 * 2 * 64 * 16 * 128 == 3 * 1024 * 1024
    assert (p.memory.l1.size_bytes, p.memory.l1.latency) == (4 * 128 * 96, 82)
    assert p.memory.coalescing == "sector" and p.memory.segment_bytes == (32,)
    # TEG §3.2.4 by hand: 480e9 B/s x 218 cyc / (28 SMs x 32 x 4 B x 1.417e9 Hz) = 20.6
    assert tm.c_mem(p, 4) == pytest.approx(480e9 * 218 / (28 * 32 * 4 * 1.417e9))
    assert p.memory.max_outstanding == 20
    # MAXAS / ARAFA19: 6-cycle ALU pipeline, 13 cycles to a predicate consumer
    assert p.latencies["fp32"].execution == p.latencies["int"].execution == 6
    assert p.latencies["predicate"].execution == 13
    assert "udp" not in p.units and "tensor" not in p.units


def test_sm61_issue_rate_does_not_exceed_dispatch():
    """Each Pascal unit sustains at most one warp instruction per scheduler per cycle, and the
    FP32 cores are the only full-rate pipe (32 lanes per partition)."""
    p = tm.load("sm_61")
    for name, unit in p.units.items():
        copies = unit.count * (p.schedulers if unit.per == "scheduler" else 1)
        assert copies / unit.occupancy <= p.schedulers, name
    assert per_sm_rate(p, "FFMA") == p.schedulers == 4


def test_scheduler_policy_per_table():
    """Every table schedules greedy-then-oldest: the sm_70+ tables say so with their source (Huerta
    et al., MICRO 2025, measured greedy-then-youngest among co-launched warps; the cross-block order
    is unmeasured and the measured families did not support it); tables that say nothing default to it."""
    for name in ("sm_70", "sm_80", "sm_86", "sm_90"):
        raw = tm.load(name).raw["scheduler_policy"]
        assert raw["value"] == "gto" and "HUERTA25" in raw["source"], name
    for name in ("sm_75", "quadro_gv100", "a100_80", "sm_89", "h200", "sm_100", "sm_120", "gt200", "sm_61"):
        assert tm.load(name).scheduler_policy == "gto", name


def test_user_table_sets_its_scheduler_policy(tmp_path):
    p = write(tmp_path, "p.yaml", '''\
        extends: sm_90
        description: "x"
        scheduler_policy: {value: lrr, source: "a what-if"}
        ''')
    assert tm.load(str(p)).scheduler_policy == "lrr"
