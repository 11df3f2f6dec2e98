"""DRAM channel of a transaction address (TEG §3.3.5 channel skew; the hashed maps after
GPGPU-Sim's ``src/gpgpu-sim/addrdec.cc`` and ``hashing.cc``).

The address is cut into ``interleave``-byte chunks ``g = addr // interleave``; the chunk is mapped
to one of ``channels`` channels by

* ``linear`` — ``g mod channels`` (GT200: 8 channels × 256 B, TEG §3.3.5);
* ``xor`` — ``(g ⊕ (g >> b) ⊕ (g >> 2b)) mod channels`` with ``b = ceil(log2 channels)``, folding
  higher address bits into the channel index;
* ``ipoly`` — the remainder of ``g`` read as a polynomial over GF(2) modulo an irreducible
  polynomial of degree ``b`` (Rau's pseudo-random interleave, conflict-free for power-of-two
  strides). When ``channels`` is not a power of two the remainder is taken modulo a polynomial of
  degree ``b + IPOLY_EXTRA_BITS`` and then ``mod channels`` (GPGPU-Sim's "IPOLY modulo for non-2^k
  partition counts"): reducing the ``2^b`` remainders of degree ``b`` mod 40 would give 24 of 40
  channels twice the share of the others (a 1.25x hot spot that caps streaming bandwidth at 80 %),
  while ``2^(b+6)`` remainders mod 40 are even to within 1 in 100.

NVIDIA does not publish the real hash; the table chooses one of these (a fitted assumption).
"""

from __future__ import annotations

import numpy as np

from teg.jit import njit

# Irreducible polynomials over GF(2) by degree (bit i = coefficient of x^i): x+1, x^2+x+1,
# x^3+x+1, x^4+x+1, x^5+x^2+1, x^6+x+1, x^7+x+1, x^8+x^4+x^3+x^2+1, x^9+x^4+1, x^10+x^3+1,
# x^11+x^2+1, x^12+x^6+x^4+x+1, x^13+x^4+x^3+x+1, x^14+x^10+x^6+x+1 (primitive polynomials, as
# listed for maximal-length LFSRs; tests/test_memory.py checks that each is irreducible).
_IRREDUCIBLE = {1: 0b11, 2: 0b111, 3: 0b1011, 4: 0b10011, 5: 0b100101, 6: 0b1000011,
                7: 0b10000011, 8: 0b100011101, 9: 0x211, 10: 0x409, 11: 0x805, 12: 0x1053,
                13: 0x201B, 14: 0x4443}
# extra remainder bits of the ipoly hash for a channel count that is not a power of two
IPOLY_EXTRA_BITS = 6


def _bits(channels: int) -> int:
    return max(1, int(np.ceil(np.log2(channels)))) if channels > 1 else 1


def channel_of(addr: np.ndarray, channels: int, interleave: int, hash_name: str = "linear") -> np.ndarray:
    """Channel index (int32) of every byte address in ``addr`` (one jitted pass)."""
    a = np.asarray(addr, np.int64)
    if channels <= 1:
        return np.zeros(a.shape, np.int32)
    if hash_name == "linear":
        mode, b, deg, poly = 0, 0, 0, 0
    elif hash_name == "xor":
        mode, b, deg, poly = 1, _bits(channels), 0, 0
    elif hash_name == "ipoly":
        deg = _bits(channels)
        if channels & (channels - 1):
            deg += IPOLY_EXTRA_BITS
        if deg not in _IRREDUCIBLE:
            raise ValueError(f"ipoly hash supports up to 256 channels, got {channels}")
        mode, b, poly = 2, 0, _IRREDUCIBLE[deg]
    else:
        raise ValueError(f"unknown channel hash {hash_name!r} (linear, xor, ipoly)")
    out = np.empty(a.shape, np.int32)
    _channels(a.ravel(), np.int64(interleave), np.uint64(channels), mode, np.uint64(b), np.int64(deg),
              np.uint64(poly), out.reshape(-1))
    return out


@njit(cache=True)
def _channels(a, interleave, ch, mode, b, deg, poly, out):
    """``g = addr // interleave`` (as uint64), then ``g mod ch`` (linear), ``(g ^ g >> b ^ g >> 2b)
    mod ch`` (xor) or the GF(2) remainder of ``g`` modulo ``poly`` (degree ``deg``) ``mod ch`` (ipoly)."""
    one = np.uint64(1)
    for i in range(a.shape[0]):
        g = np.uint64(a[i] // interleave)
        if mode == 1:
            g = g ^ (g >> b) ^ (g >> (b * np.uint64(2)))
        elif mode == 2:
            for bit in range(63, deg - 1, -1):
                if (g >> np.uint64(bit)) & one:
                    g ^= poly << np.uint64(bit - deg)
        out[i] = np.int32(g % ch)


@njit(cache=True)
def balance_scale(tx_chan, channels):
    """Per-channel DRAM service-time scale of the *no channel skew* what-if (``Options(channel_skew=False)``).

    ``load[c]`` counts the transactions in ``tx_chan`` mapped to channel ``c`` and
    ``mean = sum(load) / channels``; ``scale[c] = min(1, mean / load[c])`` (1 for an idle channel).
    Every transaction stays on its own channel, in the same FIFO order; an overloaded channel
    serves each byte ``scale[c]`` times as long, i.e. in the time it would need if it carried only
    the average load, and channels at or under the mean are unchanged. All global-memory
    transactions count as load: which of them hit L1/L2 is only known while simulating, so the
    global-path transactions stand in for the DRAM-bound ones. Service times only shrink, so a
    replay of a fixed issue order can only finish earlier (docs/model.md, "channel skew").
    Returns float64 ``[max(channels, 1)]``."""
    n = max(channels, 1)
    load = np.zeros(n, np.float64)
    for j in range(tx_chan.shape[0]):
        c = tx_chan[j]
        if c >= 0 and c < n:
            load[c] += 1.0
    total = 0.0
    for c in range(n):
        total += load[c]
    mean = total / n
    scale = np.ones(n, np.float64)
    for c in range(n):
        if load[c] > mean:
            scale[c] = mean / load[c]
    return scale
