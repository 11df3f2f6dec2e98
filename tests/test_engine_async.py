"""cp.async groups and counted dependency barriers (docs/model.md §2): hand-computed cases, and the
multi-stage pipeline kernel of tests/fixtures/emu/kernels.cu (nvcc 13 SASS, emulated trace)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from teg.emu import emulate, load_kernel
from teg.engine import Options, lower, run
from teg.engine.handmade import make_input
from teg.engine.codes import DEP_BASE, DEP_GLOBAL, UNIT_CLASSES
from teg.engine.lowered import with_switches
from teg.machine import load

FIX = Path(__file__).parent / "fixtures" / "emu"
SYNC = DEP_BASE + UNIT_CLASSES.index("sync")
COPY_LAT = 100


def pipeline(groups, depbar_n, controlcodes, copy_gap=0):
    """One warp: ``groups`` × (copy with latency COPY_LAT, commit), then ``DEPBAR.LE SB0, N`` and a
    consumer. Every instruction takes one issue cycle (same-warp latency 1), so copy g issues at
    2g (``copy_gap`` idle instructions in front of each copy shift that) and its group is ready at
    2g + COPY_LAT."""
    lat, asy, dep, dep_n, cause = [], [], [], [], []
    for _ in range(groups):
        lat += [1] * copy_gap + [COPY_LAT, 1]
        asy += [0] * copy_gap + [1, 2]
        cause += [SYNC] * copy_gap + [DEP_GLOBAL, SYNC]
    lat += [1, 1]
    asy += [0, 0]
    cause += [SYNC, SYNC]
    n = len(lat)
    dep = [-1] * (n - 2) + [0, -1]
    dep_n = [0] * (n - 2) + [depbar_n, 0]
    ctrl = {"depbar": dep, "depbar_n": dep_n, "async": asy}
    if controlcodes:
        ctrl.update(ctrl=[1] * n, stall=[1] * n, wbar=[0 if a == 2 else 7 for a in asy], rbar=[7] * n,
                    wait=[0] * n, **{"yield": [1] * n})
    return make_input(lat_exec=lat, lat_multi=[1] * n, lat_same=[1] * n, depcause=cause, ctrl=ctrl,
                      dependency_model="controlcodes" if controlcodes else "scoreboard", record_timeline=True)


@pytest.mark.parametrize("controlcodes", [False, True])
@pytest.mark.parametrize("n, depbar_at", [(0, 102), (1, 100), (2, 4)])
def test_depbar_le_counts_committed_groups(controlcodes, n, depbar_at):
    """Two groups, ready at 100 and 102. DEPBAR.LE SB0, N issues when at most N are in flight:
    N = 0 at 102 (both), N = 1 at 100 (the older one), N = 2 at once (cycle 4, nothing to wait for);
    the consumer follows a cycle later."""
    r = run(pipeline(2, n, controlcodes))
    assert list(r.timeline[:4]) == [0, 1, 2, 3]
    assert r.timeline[4] == depbar_at and r.timeline[5] == depbar_at + 1
    if depbar_at > 4:       # the wait is charged to the copies' memory class
        assert r.stalls["dep_global"] == depbar_at - 4


@pytest.mark.parametrize("controlcodes", [False, True])
def test_depbar_ring_wraps(controlcodes):
    """Ten groups (more than the 8 results a barrier remembers), each copy 2 cycles after the
    previous one, ready in issue order at 100 + 2g: DEPBAR.LE SB0, 3 waits for the 4th latest,
    group 6 (ready at 112); N = 9 has nothing to wait for beyond what is remembered."""
    assert run(pipeline(10, 3, controlcodes)).timeline[20] == COPY_LAT + 12
    assert run(pipeline(10, 0, controlcodes)).timeline[20] == COPY_LAT + 18


def test_commit_waits_for_its_own_copies_only():
    """A copy issued after the commit belongs to the next group: with a 5-cycle gap before each
    copy, group 0 (copy at 5) is ready at 105, group 1 (copy at 12) at 112; N = 1 waits for 105."""
    r = run(pipeline(2, 1, False, copy_gap=5))
    assert r.timeline[5] == 5 and r.timeline[12] == 12
    assert r.timeline[14] == 105


def test_ideal_dependencies_remove_the_group_wait():
    inp = pipeline(2, 0, True)
    assert run(inp).timeline[4] == 102
    assert run(with_switches(inp, dependencies=False)).timeline[4] == 4


# ---------------------------------------------------------------- the pipeline kernel, real SASS

def _pipeline_input(arch, tiles, options=None, trace_only=False):
    prog, image = load_kernel(FIX / f"kernels.{arch}.cubin", "cp_async_pipeline")
    x = np.random.default_rng(1).random(2 * tiles * 256, dtype=np.float32)
    r = emulate(prog, image, 2, 256, [("in", x), ("out", np.zeros(512, np.float32)), f"tiles={tiles}"])
    ref = np.zeros((2, 256), np.float32)
    for k in range(tiles):
        ref = ref * np.float32(0.5) + x.reshape(2, tiles, 256)[:, k]
    np.testing.assert_allclose(r.outputs["out"], ref.reshape(-1), rtol=1e-6)
    machine = load(arch)
    return lower(None if trace_only else prog, r.trace.kernels[0], machine, options or Options()), machine, prog


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("deps", ["controlcodes", "scoreboard"])
def test_pipeline_kernel_waits_for_its_tiles(arch, deps):
    """``__pipeline_wait_prior(2)`` with three stages: each warp consumes 24 tiles, none of them
    cached, and at most three are in flight, so it cannot finish before 24 / 3 DRAM round trips.
    Turning the SASS's ``DEPBAR.LE SB0, 0x2`` into ``0x0`` (wait for every group) costs cycles."""
    tiles = 24
    inp, machine, prog = _pipeline_input(arch, tiles, Options(dependency_model=deps))
    assert any(ins.opcode == "DEPBAR.LE" and "0x2" in ins.text for ins in prog.instructions)
    depbar = np.asarray(inp.static.s_depbar)
    assert set(depbar[depbar >= 0].tolist()) == {0 + 8 * 2}
    r = run(inp)
    assert r.cycles >= tiles // 3 * machine.memory.dram_latency
    drained = run(replace(inp, static=inp.static._replace(s_depbar=np.where(depbar >= 0, 0, -1).astype(np.int32))))
    assert drained.cycles > r.cycles


def test_pipeline_kernel_trace_only_drains_every_group():
    """Without SASS the DEPBAR's count is unknown: it waits for every committed group, which is
    never faster than the SASS's count of two."""
    with_sass = run(_pipeline_input("sm_90", 12)[0]).cycles
    trace_only = run(_pipeline_input("sm_90", 12, trace_only=True)[0]).cycles
    assert trace_only > with_sass
