"""``memory.l1_caches_global_loads``: machines whose L1 does not cache ordinary global loads
(Maxwell/Pascal; CUDA Programming Guide 5.x/6.x "Global Memory", Accel-Sim ``-gmem_skip_L1D 1``).

The schema accepts the flag (bare under a sourced section, or as a value leaf), rejects a
non-boolean and an unsourced value; ``sm_61`` sets it false, the sm_70+ tables leave the default
true. Through the engine, hand-built one-warp chains of dependent loads of one address (the
scheme of ``test_engine_cachepolicy``: each gap between issues is one load's latency) show a
plain ``LDG.E`` costing ``l2.latency`` on every repeat on sm_61 but ``l1.latency`` on sm_70,
while ``LDG.E.CI`` (``__ldg``) still hits the sm_61 L1/texture cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from teg.engine import Options, lower
from teg.machine import MachineTableError
from teg.machine import load as load_machine
from teg.machine.model import GlobalMemory
from teg.memory.cachepolicy import bypasses_l1, load_requests_l1
from teg.trace import load as load_trace
from test_engine_cachepolicy import chase, one_warp_trace, run_rows

TRACES = Path(__file__).parent / "data" / "traces" / "microgpusim"
SM61 = load_machine("sm_61")
SM70 = load_machine("sm_70")
N = 5


def user_table(tmp_path: Path, memory_yaml: str) -> Path:
    """A table extending the shipped sm_70 with ``memory:`` overrides (indented YAML lines)."""
    p = tmp_path / "mine.yaml"
    p.write_text("extends: sm_70\ndescription: \"test table\"\nmemory:\n" + memory_yaml)
    return p


# ------------------------------------------------------------------------------------ schema


@pytest.mark.parametrize("memory_yaml", [
    "  l1_caches_global_loads: {value: false, source: \"CUDA-PG 6.x global memory\"}\n",
    "  source: \"CUDA-PG 6.x global memory\"\n  l1_caches_global_loads: false\n",
])
def test_schema_accepts_a_sourced_flag(tmp_path, memory_yaml):
    m = load_machine(user_table(tmp_path, memory_yaml))
    assert m.memory.l1_caches_global_loads is False
    assert m.memory.l1 == SM70.memory.l1            # the rest of memory: still inherited


@pytest.mark.parametrize("value", ["\"no\"", "0", "1", "null", "[false]"])
def test_schema_rejects_a_non_boolean(tmp_path, value):
    p = user_table(tmp_path, f"  l1_caches_global_loads: {{value: {value}, source: \"x\"}}\n")
    with pytest.raises(MachineTableError) as e:
        load_machine(p)
    msg = str(e.value)
    assert f"{p}:4: memory.l1_caches_global_loads.value: wrong type: expected true/false" in msg


def test_schema_rejects_a_bare_non_boolean(tmp_path):
    p = user_table(tmp_path, "  source: \"x\"\n  l1_caches_global_loads: yes please\n")
    with pytest.raises(MachineTableError, match=r"mine\.yaml:5: memory\.l1_caches_global_loads: "
                                                r"wrong type: expected true/false, got string"):
        load_machine(p)


def test_schema_requires_a_source(tmp_path):
    p = user_table(tmp_path, "  l1_caches_global_loads: false\n")
    with pytest.raises(MachineTableError, match=r"mine\.yaml:4: memory\.l1_caches_global_loads: "
                                                r"flag without a source"):
        load_machine(p)


def test_schema_rejects_unknown_keys_in_the_leaf(tmp_path):
    p = user_table(tmp_path, "  l1_caches_global_loads: {value: false, source: \"x\", why: 1}\n")
    with pytest.raises(MachineTableError, match=r"memory\.l1_caches_global_loads\.why: unknown key"):
        load_machine(p)


# ------------------------------------------------------------------------------------ tables


def test_shipped_tables():
    assert SM61.memory.l1_caches_global_loads is False
    assert "gmem_skip_L1D" in SM61.raw["memory"]["l1_caches_global_loads"]["source"]
    assert "not expressible" not in SM61.raw["memory"]["l1"]["source"]
    for name in ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "gt200"):
        m = load_machine(name)
        assert m.memory.l1_caches_global_loads is True, name
        assert "l1_caches_global_loads" not in m.raw["memory"], name   # the default, not written


def test_dataclass_default_is_backward_compatible():
    gm = GlobalMemory(coalescing="sector", segment_bytes=(32,), dram_latency=400, channels=8,
                      interleave_bytes=256, channel_hash="linear", bandwidth_gbs=900,
                      max_outstanding=64, sms_per_pipeline=1)
    assert gm.l1_caches_global_loads is True


# ------------------------------------------------------------------------------------ policy

# (opcode, kind, space, bypasses with the default, bypasses with l1_caches_global_loads false)
POLICY = [
    ("LDG.E", "load", "global", False, True),             # plain ld.global (sm_61 traces)
    ("LDG.E.64", "load", "global", False, True),
    ("LD.E", "load", "generic", False, True),             # generic load of global data
    ("LDG.E.CS", "load", "global", False, True),          # .cs: evict-first, no L1 request
    ("LDG.E.CG", "load", "global", True, True),           # ld.global.cg: L2-only everywhere
    ("LDG.E.CV", "load", "global", True, True),
    ("LDG.E.CI", "load", "global", False, False),         # __ldg / ld.global.nc on sm_5x/6x
    ("LDG.E.CI.128", "load", "global", False, False),
    ("LDG.E.64.CONSTANT", "load", "global", False, False),  # ld.global.nc on sm_70+
    ("LDG.E.CA", "load", "global", False, False),         # explicit cache-all (-dlcm=ca)
    ("LDL", "load", "local", False, False),               # local memory: not a global load
    ("TLD.B.LZ", "load", "texture", False, False),
    ("STG.E", "store", "global", True, True),
    ("ATOM.E.ADD", "atomic", "global", True, True),
]


@pytest.mark.parametrize("op,kind,space,default,skip", POLICY, ids=[p[0] for p in POLICY])
def test_bypass_rule(op, kind, space, default, skip):
    assert bypasses_l1(op, kind, space) is default
    assert bypasses_l1(op, kind, space, True) is default
    assert bypasses_l1(op, kind, space, False) is skip


def test_l1_request_is_a_whole_modifier():
    assert load_requests_l1("LDG.E.CI") and load_requests_l1("LDG.E.CONSTANT.SYS")
    assert not load_requests_l1("LDG.E.CIX") and not load_requests_l1("CI.E") and not load_requests_l1("LDG.E")


# ------------------------------------------------------------------------------------ engine


def test_plain_ldg_on_sm61_costs_l2_latency_every_time():
    """Pascal: repeated plain LDG.E of one address — DRAM once, then L2 hits; L1 never looked up."""
    gm = SM61.memory
    r, gaps = run_rows(chase("LDG.E", N, width=4), SM61)
    assert gaps[0] == gm.dram_latency
    assert list(gaps[1:N]) == [gm.l2.latency] * (N - 1)
    c = r.counters
    assert (c["l1_hits"], c["l1_misses"], c["l2_hits"], c["l2_misses"]) == (0, 0, N - 1, 1)


def test_plain_ldg_on_sm70_hits_l1_after_the_first():
    gm = SM70.memory
    r, gaps = run_rows(chase("LDG.E", N, width=4), SM70)
    assert gaps[0] == gm.dram_latency + gm.tlb.walk_latency     # the kernel's first page: a cold TLB
    assert list(gaps[1:N]) == [gm.l1.latency] * (N - 1)
    c = r.counters
    assert (c["l1_hits"], c["l1_misses"], c["l2_hits"], c["l2_misses"]) == (N - 1, 1, 0, 1)


def test_ldg_ci_on_sm61_uses_the_l1_texture_cache():
    """__ldg (LDG.E.CI) asks for the unified L1/texture cache: L1 hits after the first on sm_61."""
    gm = SM61.memory
    r, gaps = run_rows(chase("LDG.E.CI", N, width=4), SM61)
    assert gaps[0] == gm.dram_latency
    assert list(gaps[1:N]) == [gm.l1.latency] * (N - 1)
    c = r.counters
    assert (c["l1_hits"], c["l1_misses"]) == (N - 1, 1)


def test_sm61_lowering_marks_plain_loads_l2_only():
    opcodes = ["LDG.E", "LDG.E.CG", "LDG.E.CI", "LDG.E.64", "LDL", "STG.E", "FFMA"]
    rows = [(op, [], [], 0x10000 if op != "FFMA" else None, 4) for op in opcodes]
    # s_store: 1 = bypasses L1, 2 = a write (bypasses L1 too)
    for machine, want in ((SM61, [1, 1, 0, 1, 0, 2, 0]), (SM70, [0, 1, 0, 0, 0, 2, 0])):
        inp = lower(None, one_warp_trace(rows, binary_version=machine.sm), machine, Options())
        got = dict(zip(inp.setup.opcodes, inp.static.s_store.tolist()))
        assert got == dict(zip(opcodes, want)), machine.name


def test_real_pascal_traces_plain_and_cg_loads_bypass_l1():
    """The Accel-Sim sm_61 traces' global loads (``LDG.E`` in matrixmul, ``LDG.E.CG`` in vectoradd)
    are all L2-only on sm_61; their shared loads are not global-path accesses."""
    seen = set()
    for name in ("matrixmul-32-32-trace", "vectoradd-100-32-trace"):
        kt = load_trace(TRACES / name).kernels[0]
        inp = lower(None, kt, SM61, Options())
        for op, flag in zip(inp.setup.opcodes, inp.static.s_store.tolist()):
            info = SM61.classify(op)
            if info.kind == "load" and info.space == "global":
                assert flag == 1, op
                seen.add(op)
            elif info.kind == "load":
                assert flag == 0, op
    assert seen == {"LDG.E", "LDG.E.CG"}
