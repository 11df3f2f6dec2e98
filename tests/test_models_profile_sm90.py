"""Profile of a real nvcc-compiled kernel on a modern machine table: ``matmul_abt`` of
tests/fixtures/sass/kernels.cu (sm_90 cubin, ptxas 13), traced by teg's functional emulator, checked
against counts derived by hand from the CUDA source and the SASS listing.

Launch: n = 32, grid 2 × 2, block 16 × 16 (8 warps, each two rows ty of 16 tx), 32 warps. Per thread:
2 tile iterations, each 2 LDG.E (A, B) + 2 STS + 2 BAR.SYNC + 8 LDS.128 (As[ty][k..k+3] and
Bs[tx][k..k+3]) + 16 FFMA; then one STG.E.
"""

from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "sass"
CUBIN = FIXTURES / "kernels.sm_90.cubin"


@pytest.fixture(scope="module")
def matmul():
    if not CUBIN.is_file():
        pytest.skip("sm_90 cubin fixture missing")
    try:
        from teg.emu.launch import run
    except ImportError:
        pytest.skip("functional emulator not available")
    res = run(CUBIN, "matmul_abt", (2, 2, 1), (16, 16, 1),
              ["A=rand:float32:1024", "B=rand:float32:1024", "C=zeros:float32:1024", "n=32"], arch="sm_90")
    a, b = res.outputs["A"].reshape(32, 32), res.outputs["B"].reshape(32, 32)
    assert np.allclose(res.outputs["C"].reshape(32, 32), a @ b.T, atol=1e-4)
    return res


def test_matmul_abt_counts_by_hand(matmul):
    import teg.machine as tm
    from teg.models import profile_from

    p = profile_from(matmul.program, matmul.kernel_trace, tm.load("sm_90"))
    assert (p.blocks, p.active_sms, p.active_blocks_per_sm, p.active_warps_per_sm, p.rep) == (4, 4, 1, 8, 1)
    assert p.mem_insts == 5 and p.synch_insts == 4 and p.shared_insts == 20
    assert p.class_counts["fp32"] == 32
    # every global request: two rows of 16 floats (64 B each) = 4 sectors, the minimum → coalesced
    assert p.coal_mem_insts == 5 and p.uncoal_mem_insts == 0 and p.trans_32 == 20
    # Bs[tx][k..k+3] as LDS.128: 4 phases of 8 lanes, rows 64 B apart → 4-way per phase: 16 wavefronts
    assert p.shared_conflicted == 8 and p.shared_conflict_latency == 16 * 1
    # both tile loads are in flight before the STS that stores them; no warp repeats another's data
    assert p.independent_loads == 2 and p.duplicate_loads == 1
    assert (p.thread_ld_global, p.thread_st_global, p.thread_ld_shared, p.thread_st_shared) == (4, 1, 16, 4)
    # calculate periods: [setup | LDG LDG] [tile 1 | LDG LDG] [tile 2 | STG] [EXIT]
    assert [x.mem_insts for x in p.periods] == [2, 2, 1, 0]
    # each A (B) sector is read by the two blocks of the same block row (column): half the L2 reads hit
    assert p.l1_hit_rate == 0 and p.l2_hit_rate == 0.5


def test_all_models_on_the_modern_table(matmul):
    import teg.machine as tm
    from teg.analysis.compare import compare

    cmp = compare(matmul.program, matmul.kernel_trace, tm.load("sm_90"), engine=False)
    assert [r.model for r in cmp.rows] == ["mwp_cwp", "cpa", "mpd_cpd", "bsp"]
    assert all(r.cycles and r.cycles > 0 for r in cmp.rows)
