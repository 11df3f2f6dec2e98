"""The *no channel skew* what-if (``Options(channel_skew=False)``, docs/model.md §4/§5): every DRAM
transaction keeps its address's channel and FIFO place; a channel loaded above the mean serves
with its service time scaled by ``mean_load / load[c]`` (:func:`teg.memory.channels.balance_scale`)."""

from __future__ import annotations

import numpy as np

from teg.analysis.whatif import whatif
from teg.engine import run
from teg.engine.handmade import make_input
from teg.engine.codes import DEP_GLOBAL, MEM_GLOBAL
from teg.engine.lowered import with_record_order, with_replay, with_switches
from teg.memory.channels import balance_scale

DRAM_LAT = 100.0
SPB = 1.0          # service cycles per byte → 32 cycles per 32-byte transaction


def one_load(chans, channels=4):
    """One warp issuing one global load at cycle 0 whose 32-byte transactions go to ``chans``."""
    return make_input(lat_exec=[0], lat_multi=[1], lat_same=[1], dst=[[8]], mem=[MEM_GLOBAL], mem_lat=[0],
                      depcause=[DEP_GLOBAL], tx=[[(k * 32, 32, c) for k, c in enumerate(chans)]],
                      dram_latency=DRAM_LAT, channels=channels, service_per_byte=SPB)


def test_balance_scale_definition():
    assert np.allclose(balance_scale(np.zeros(8, np.int32), 4), [0.25, 1, 1, 1])
    assert np.allclose(balance_scale(np.array([0, 0, 0, 0, 1, 1, 2, 2], np.int32), 4), [0.5, 1, 1, 1])
    assert np.allclose(balance_scale(np.array([0, 1, 2, 3, 3, 2, 1, 0], np.int32), 4), [1, 1, 1, 1])
    assert np.allclose(balance_scale(np.zeros(0, np.int32), 4), [1, 1, 1, 1])
    assert np.allclose(balance_scale(np.zeros(3, np.int32), 1), [1])


def test_camped_channel_hand_computed():
    """8 transactions on channel 0 of 4, issued at once. Baseline: served back to back, 32 cycles
    each; the last starts at 7·32 = 224 and is back at 224 + 100 = 324. Without skew: mean load
    8/4 = 2, scale 2/8 = 0.25 → 8 cycles each; the last starts at 56 and is back at 156."""
    inp = one_load([0] * 8)
    assert np.allclose(inp.chan_scale, [0.25, 1, 1, 1])
    base = run(inp)
    assert base.cycles == 7 * 32 + DRAM_LAT
    noskew = run(with_switches(inp, channel_skew=False))
    assert noskew.cycles == 7 * 8 + DRAM_LAT
    assert sum(noskew.stalls.values()) == noskew.cycles
    assert noskew.counters["dram_transactions"] == base.counters["dram_transactions"] == 8
    replay = run(with_replay(with_switches(inp, channel_skew=False), run(with_record_order(inp)).order))
    assert replay.cycles == noskew.cycles
    by = {r.mechanism: r for r in whatif(inp)}
    assert by["channel_skew"].cycles == 156 and by["channel_skew"].saved == 324 - 156


def test_partly_skewed_channel_hand_computed():
    """Loads [4, 2, 2, 0]: mean 2, channel 0 scaled by 0.5 (16 cycles per transaction), the others
    unchanged. Baseline: channel 0's 4th transaction starts at 96 → 196. Without skew: channel 0
    ends its 4th at start 48 → 148; channels 1, 2 start their 2nd at 32 → 132; kernel 148."""
    inp = one_load([0, 0, 0, 0, 1, 1, 2, 2])
    assert run(inp).cycles == 3 * 32 + DRAM_LAT
    assert run(with_switches(inp, channel_skew=False)).cycles == 3 * 16 + DRAM_LAT


def test_balanced_pattern_is_unchanged():
    """Already spread evenly: every scale is 1, so removing channel skew changes nothing."""
    inp = one_load([0, 1, 2, 3, 3, 2, 1, 0])
    base = run(inp)
    noskew = run(with_switches(inp, channel_skew=False))
    assert noskew.cycles == base.cycles == 32 + DRAM_LAT
    assert noskew.stalls == base.stalls and noskew.counters == base.counters
    by = {r.mechanism: r for r in whatif(inp)}
    assert by["channel_skew"].saved == 0 and not by["channel_skew"].anomaly


def test_spread_multi_warp_replay_never_exceeds_baseline():
    """Four warps, two loads each, on an uneven but spread pattern over 4 channels; the replay of
    the baseline order without skew, and the what-if row, never exceed the baseline."""
    chans = [[0, 1, 2, 3], [0, 0, 1, 2], [3, 3, 3, 0], [1, 2, 0, 0], [2, 2, 1, 3], [0, 3, 0, 1],
             [1, 1, 1, 2], [0, 2, 3, 3]]
    tx = [[(64 * k + 32 * i, 32, c) for i, c in enumerate(cs)] for k, cs in enumerate(chans)]
    inp = make_input(lat_exec=[0, 4], lat_multi=[1, 1], lat_same=[2, 2], dst=[[8], [9]], src=[[], [8]],
                     mem=[MEM_GLOBAL, 0], mem_lat=[0, 0], depcause=[DEP_GLOBAL, 1],
                     rows_per_warp=[[0, 1, 0]] * 4, schedulers=2,
                     tx=[t for w in range(4) for t in (tx[2 * w], [], tx[2 * w + 1])],
                     dram_latency=DRAM_LAT, channels=4, service_per_byte=SPB)
    base = run(with_record_order(inp))
    replay = run(with_replay(with_switches(inp, channel_skew=False), base.order))
    assert replay.cycles <= base.cycles
    by = {r.mechanism: r for r in whatif(inp)}
    assert by["channel_skew"].cycles <= base.cycles and not by["channel_skew"].anomaly
