"""``Options(l2_share=…)`` (teg/engine/options.py): the fraction of the L2's capacity the simulated
SMs' data may hold. By default a run of fewer SMs than the busy ones gets their share, right when
every SM has data of its own; the validation suite's SMs all index one buffer, which the GPU's L2
holds once, so its predictions give 1 when the buffer fits (teg/validate/predict.py)."""

from __future__ import annotations

import numpy as np
import pytest

from teg.engine import Options, lower, run
from teg.engine.options import OptionsError
from teg.machine import load as load_machine


def _two_passes(lines: int):
    """One warp reading ``lines`` consecutive 128 B lines (one coalesced float load each), twice."""
    from teg.trace import KernelInfo, KernelTrace
    from teg.trace.model import MAX_TRACE_DST, MAX_TRACE_SRC

    n = 2 * lines
    dst = np.full((n, MAX_TRACE_DST), -1, np.int16)
    dst[:, 0] = 4
    src = np.full((n, MAX_TRACE_SRC), -1, np.int16)
    src[:, 0] = 2
    line = np.tile(np.arange(lines, dtype=np.uint64), 2)
    addresses = (0x10000000 + line[:, None] * 128 + np.arange(32, dtype=np.uint64)[None, :] * 4).ravel()
    return KernelTrace(
        info=KernelInfo(name="passes", grid=(1, 1, 1), block=(32, 1, 1), binary_version=90),
        opcodes=["LDG.E"], warp=np.zeros(n, np.int32), block=np.zeros(n, np.int32),
        pc=np.zeros(n, np.int64), opcode=np.zeros(n, np.int32), mask=np.full(n, 0xFFFFFFFF, np.uint32),
        dst=dst, src=src, mem_width=np.full(n, 4, np.int16), imm=np.zeros(n, np.int64),
        addr_start=np.arange(n + 1, dtype=np.int64) * 32, addresses=addresses,
        warp_start=np.array([0, n], np.int64), warp_block=np.zeros(1, np.int32), block_xyz=np.zeros((1, 3), np.int32))


def test_the_whole_l2_holds_a_second_pass_that_the_default_share_loses():
    """1 MB read twice by one warp on one H200 SM in sweep mode (``blocks=1``: the other 131 SMs
    are busy too). The SM's 256 KB L1 keeps none of a 1 MB LRU stream, so every second-pass access
    reaches the L2. Its default share, 50 MB / 132 = 397 KB, keeps none of it either: 0 L2 hits.
    With ``l2_share=1`` the 50 MB L2 keeps all of it: the second pass hits on each of its
    8192 x 4 = 32768 sectors, the first misses on all of them — and the run is no slower."""
    m = load_machine("h200")
    kt = _two_passes(8192)
    default = run(lower(None, kt, m, Options(blocks=1)))
    whole = run(lower(None, kt, m, Options(blocks=1, l2_share=1.0)))
    assert default.counters.get("l2_hits", 0) == 0
    assert whole.counters["l2_hits"] == 32768 and whole.counters["l2_misses"] == 32768
    assert whole.cycles < default.cycles


@pytest.mark.parametrize("bad", [0, -0.5, 1.5])
def test_l2_share_is_a_fraction(bad):
    with pytest.raises(OptionsError, match="l2_share"):
        Options(l2_share=bad)
