"""Warp-scheduling policies on hand-built inputs: the issue order of a few warps follows from the
policy's rule alone (docs/model.md §2, "Policy"), so each expected timeline is worked out by hand
below, cycle by cycle.

The kernel (after Huerta et al., MICRO 2025, Figure 4b): one scheduler, three warps A, B, C launched
in that order (A the oldest), each running four independent single-cycle instructions; the second
one holds its warp for 4 cycles (same-warp latency 4: the warp's third instruction issues at
least 4 cycles after its second), every other one for 1. The scheduler may issue every cycle."""

from __future__ import annotations

import pytest

from teg.engine import run
from teg.engine.codes import DEP_BASE, UNIT_CLASSES
from teg.engine.handmade import make_input
from teg.engine.options import Options, OptionsError

FP32 = DEP_BASE + UNIT_CLASSES.index("fp32")
K = 4


def _kernel(policy: str, warps: int = 3, **kw):
    return make_input(lat_exec=[1] * K, lat_multi=[1] * K, lat_same=[1, 4, 1, 1],
                      dst=[[10 + i] for i in range(K)], src=[[2]] * K, depcause=[FP32] * K,
                      rows_per_warp=[list(range(K))] * warps, policy=policy, **kw)


def _timelines(r, warps: int = 3):
    tl = [int(x) for x in r.timeline]
    return [tl[w * K:(w + 1) * K] for w in range(warps)]


def test_gto_greedy_then_oldest():
    """t0: no greedy warp yet, the oldest eligible: A0; t1: A1 (greedy; A's next at 5). t2: A not
    ready, the oldest eligible: B0; t3: B1 (B's next at 7). t4: C0; t5: C1 — greedy C is eligible
    again, so it keeps the slot although A (older) is eligible since 5 (C's next at 9). t6: C not
    ready, the oldest eligible: A2, t7: A3 (A done). t8: B2, t9: B3. t10: C2, t11: C3. The last
    result is ready at 12."""
    r = run(_kernel("gto"))
    assert _timelines(r) == [[0, 1, 6, 7], [2, 3, 8, 9], [4, 5, 10, 11]]
    assert r.cycles == 12


def test_gty_greedy_then_youngest():
    """The mirror image: t0: the youngest eligible: C0, t1: C1 (C's next at 5). t2: B0, t3: B1 (next
    at 7). t4: A0; t5: A1 — greedy A keeps the slot although C (younger) is eligible since 5: this
    is what separates greedy-then-youngest from youngest-first (A's next at 9). t6: the youngest
    eligible: C2, t7: C3. t8: B2 (ready since 7), t9: B3. t10: A2, t11: A3. Ends at 12."""
    r = run(_kernel("gty"))
    assert _timelines(r) == [[4, 5, 10, 11], [2, 3, 8, 9], [0, 1, 6, 7]]
    assert r.cycles == 12


def test_lrr_round_robin():
    """Each scan starts after the warp issued last: t0 A0, t1 B0, t2 C0, t3 A1 (A's next at 7), t4
    B1 (next at 8), t5 C1 (next at 9). t6: nobody is ready. t7 A2, t8 B2, t9 C2, t10 A3, t11 B3,
    t12 C3: one cycle lost to the lockstep, the last result at 13."""
    r = run(_kernel("lrr"))
    assert _timelines(r) == [[0, 3, 7, 10], [1, 4, 8, 11], [2, 5, 9, 12]]
    assert r.cycles == 13
    assert r.stalls["same_warp"] == 1


def test_gty_yield_gives_up_the_greedy_place():
    """Control codes, each warp's first instruction with its yield bit cleared (teg: the greedy
    warp is not preferred for its next issue; it competes in the scan like any other warp), stall
    counts 1, 4, 1, 1. t0: C0 (youngest). t1: C yields, but the youngest eligible is C itself: C1
    (next at 5). t2: B0, t3: B1 likewise (next at 7). t4: A0 (yield). t5: A1 is ready, but A gave
    up its place and the scan takes the youngest eligible: C2; t6: C3 (greedy, C done). t7: no
    greedy warp; B2 (ready at 7) is younger than A (ready since 5): B2, t8: B3. t9: A1 (next at 13),
    t13: A2, t14: A3 — the yield moved A's work behind the younger warps: 15 cycles instead of 12."""
    ctrl = {"ctrl": [1] * K, "stall": [1, 4, 1, 1], "yield": [0, 1, 1, 1], "wbar": [7] * K,
            "rbar": [7] * K, "wait": [0] * K}
    r = run(_kernel("gty", ctrl=ctrl, dependency_model="controlcodes"))
    assert _timelines(r) == [[4, 9, 13, 14], [2, 3, 7, 8], [0, 1, 5, 6]]
    assert r.cycles == 15


@pytest.mark.parametrize("policy", ["gto", "gty", "lrr"])
def test_one_warp_is_the_same_under_every_policy(policy):
    """A single warp has nobody to yield to: A0 0, A1 1, A2 5 (same-warp latency 4), A3 6."""
    r = run(_kernel(policy, warps=1))
    assert _timelines(r, 1) == [[0, 1, 5, 6]]
    assert r.cycles == 7


def test_policy_option_is_checked():
    assert Options(policy="gty").policy == "gty"
    with pytest.raises(OptionsError, match="expected one of lrr, gto, gty"):
        Options(policy="youngest")
