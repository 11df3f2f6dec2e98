"""Instruction fetch (docs/model.md §2, "Instruction fetch"): every SM starts a kernel with a cold
instruction cache; a missing line comes from DRAM on the GPU's first fetch of it, from L2 after;
the sequential prefetch runs P lines ahead. Hand-built inputs: each expected cycle follows from
those rules with DRAM latency 300 and L2 latency 100."""

from __future__ import annotations

import numpy as np
import pytest

from teg.engine import Options, lower, run

from teg.engine.handmade import make_input
from teg.engine.lowered import with_switches
from teg.engine.lower import _icache_lines, _prefetch_lines
from teg.machine import load as load_machine

L2 = (1, 1, 128, 32, 100.0)      # sets, ways, line, sector, hit latency (the fetch uses the latency)


def straight(lines, prefetch, **kw):
    """One warp running one 1-cycle instruction per entry of ``lines`` (its code line)."""
    n = len(lines)
    return make_input(lat_exec=[1] * n, lat_multi=[1] * n, lat_same=[1] * n, iline=lines, l2=L2,
                      dram_latency=300.0, fetch_prefetch=prefetch, **kw)


@pytest.mark.parametrize("prefetch, issues", [
    # no prefetch: each line is requested when the warp reaches it: 0 → 300, 1 at 301 → 601, ...
    (0, [300, 601, 902, 1203]),
    # one line ahead: lines 0-1 at 0 (→ 300); reaching line 1 at 301 asks for line 2 (→ 601);
    # line 2 becomes current at 302 and asks for line 3 (→ 602)
    (1, [300, 301, 601, 602]),
    # three lines ahead: all four lines requested at 0, one DRAM round trip
    (3, [300, 301, 302, 303]),
])
def test_a_cold_sm_fetches_its_lines_from_dram(prefetch, issues):
    r = run(straight([0, 1, 2, 3], prefetch))
    assert r.timeline.tolist() == issues
    assert r.cycles == issues[-1] + 1
    assert r.stalls["instruction_fetch"] == r.cycles - 4 and sum(r.stalls.values()) == r.cycles


def test_a_loop_fetches_its_lines_once():
    """A loop over lines 0-1 run 3 times: only the first pass waits (lines 0-1 at 0 → 300)."""
    r = run(straight([0, 1] * 3, 1))
    assert r.timeline.tolist() == [300, 301, 302, 303, 304, 305]


def two_sms(k):
    """SM 0 runs s0 (line 0) then s1 (line 5); SM 1 runs s0 k times, then s1. No prefetch."""
    return make_input(lat_exec=[1, 1], lat_multi=[1, 1], lat_same=[1, 1], iline=[0, 5], l2=L2,
                      dram_latency=300.0, fetch_prefetch=0, rows_per_warp=[[0, 1], [0] * k + [1]],
                      warps_per_block=1, sms=2, resident=1, deal=True)


def test_a_line_another_sm_fetched_comes_from_l2():
    """Both SMs request line 0 at 0: SM 1's request merges with SM 0's DRAM fetch (300, not 100).
    SM 0 reaches line 5 at 301 (DRAM: 601). SM 1 reaches it at 300 + 400 = 700, after it arrived
    on chip: an L2 round trip, 800; the kernel ends at 801."""
    r = run(two_sms(400))
    assert r.timeline.tolist()[:2] == [300, 601]
    assert r.timeline.tolist()[2] == 300 and r.timeline.tolist()[-1] == 800
    assert r.cycles == 801


def test_a_request_before_the_first_fetch_arrives_waits_for_it():
    """SM 1 reaches line 5 at 310, while SM 0's DRAM fetch of it (601) is under way: it gets the
    line then, not at 310 + 100."""
    r = run(two_sms(10))
    assert r.timeline.tolist()[-1] == 601 and r.cycles == 602


@pytest.mark.parametrize("k", [10, 400])
def test_a_perfect_instruction_cache_is_the_what_if(k):
    """Switched off, nothing waits for code: SM 1's k + 1 instructions issue at 0..k."""
    on = run(two_sms(k))
    off = run(with_switches(two_sms(k), instruction_fetch=False))
    assert off.cycles == k + 1 and off.stalls["instruction_fetch"] == 0
    assert off.cycles <= on.cycles


def test_without_lines_nothing_is_fetched():
    """make_input's default (no ``iline``): a perfect instruction cache."""
    r = run(make_input(lat_exec=[1] * 3, lat_multi=[1] * 3, lat_same=[1] * 3, l2=L2, dram_latency=300.0))
    assert r.cycles == 3


def test_lines_count_from_the_kernels_first_line():
    assert _icache_lines([0x0, 0x70, 0x80, 0x1f0], 128).tolist() == [0, 0, 1, 3]
    assert _icache_lines([0x1000, 0x1080], 128).tolist() == [0, 1]
    assert _icache_lines([0x0, 0x80], None).tolist() == [-1, -1]


def test_the_prefetch_covers_one_l2_latency_at_one_instruction_per_cycle():
    """sm_80: 128 B lines of 8 instructions, L2 hit 200 cycles → 25 lines ahead; GT200 has no
    instruction-fetch model."""
    m = load_machine("sm_80")
    assert _prefetch_lines(m) == int(np.ceil(m.memory.l2.latency / 8))
    assert _prefetch_lines(load_machine("gt200")) == 0


def test_lowering_gives_every_instruction_its_line(tmp_path):
    """A lowered SASS program: lines follow the PCs (16 B instructions, 8 per line)."""
    from teg.sass import parse_text

    body = "\n".join(f"        /*{16 * i:04x}*/                   IADD3 R{i % 8}, R1, R2, RZ ;" for i in range(20))
    prog = parse_text("\t\tFunction : k\n" + body + "\n        /*0140*/                   EXIT ;\n")[0]
    inp = lower(prog, None, load_machine("sm_80"), Options(warps=1))
    assert inp.static.s_iline.tolist() == [i // 8 for i in range(21)]
    assert inp.scalars.fetch_prefetch == 25
    inp = lower(prog, None, load_machine("sm_80"), Options(warps=1, instruction_fetch=False))
    assert run(inp).stalls["instruction_fetch"] == 0


# ---- constant cache (docs/model.md §2, "Constant cache") -----------------------------------------

def const_reads(sms=1, switches=None):
    """Each SM runs one warp: s0 reads constant line 0, s1 none, s2 line 0 again, s3 line 1."""
    return make_input(lat_exec=[1] * 4, lat_multi=[1] * 4, lat_same=[1] * 4, cline=[0, -1, 0, 1], l2=L2,
                      dram_latency=300.0, rows_per_warp=[[0, 1, 2, 3]] * sms, warps_per_block=1, sms=sms,
                      resident=1, deal=True, switches=switches)


@pytest.mark.parametrize("sms", [1, 2])
def test_a_cold_constant_line_takes_an_l2_round_trip_per_sm(sms):
    """s0 waits for line 0 (0 + 100), s1 and s2 follow (line 0 is there), s3 waits for line 1,
    requested when it became current (103 + 100). Every SM reads its own copy: the second SM
    waits just as long."""
    r = run(const_reads(sms))
    assert r.timeline.tolist() == [100, 101, 102, 203] * sms
    assert r.cycles == 204
    assert r.stalls["constant_miss"] == 200 and sum(r.stalls.values()) == r.cycles


def test_a_perfect_constant_cache_is_the_what_if():
    assert run(const_reads(1, {"constant_cache": False})).cycles == 4


def test_lowering_numbers_the_constant_lines_a_kernel_reads():
    """c[0x0][0x28] and c[0x0][0x0] share line 0 of bank 0; c[0x0][0x160] is in line 2 (128 B
    lines), c[0x3][0x0] in another bank: three lines, numbered 0, 1, 2 in bank/offset order."""
    from teg.sass import parse_text

    text = "\t\tFunction : k\n" + "\n".join(
        f"        /*{16 * i:04x}*/                   {ins} ;" for i, ins in enumerate(
            ["MOV R1, c[0x0][0x28]", "IADD3 R2, R1, c[0x0][0x160], RZ", "IMAD R3, R2, c[0x0][0x0], R1",
             "FADD R4, R3, c[0x3][0x0]", "IADD3 R5, R4, R3, RZ", "EXIT"]))
    inp = lower(parse_text(text)[0], None, load_machine("sm_80"), Options(warps=1))
    assert inp.static.s_cline.tolist() == [0, 1, 0, 2, -1, -1]
    assert run(inp).stalls["constant_miss"] > 0
    assert run(lower(parse_text(text)[0], None, load_machine("sm_80"),
                     Options(warps=1, constant_cache=False))).stalls["constant_miss"] == 0
