"""DRAM channel of a transaction address (TEG §3.3.5 channel skew; nvidia_timing_facts.md §4.3).

The address is cut into ``interleave``-byte chunks ``g = addr // interleave``; the chunk is mapped
to one of ``channels`` channels by

* ``linear`` — ``g mod channels`` (GT200: 8 channels × 256 B, TEG §3.3.5);
* ``xor`` — ``(g ⊕ (g >> b) ⊕ (g >> 2b)) mod channels`` with ``b = ceil(log2 channels)``, folding
  higher address bits into the channel index;
* ``ipoly`` — the remainder of ``g`` read as a polynomial over GF(2) modulo an irreducible
  polynomial of degree ``b`` (Rau's pseudo-random interleave, conflict-free for power-of-two
  strides), then ``mod channels`` when ``channels`` is not a power of two.

NVIDIA does not publish the real hash; the table chooses one of these (a fitted assumption).
"""

from __future__ import annotations

import numpy as np

# Irreducible polynomials over GF(2) by degree (bit i = coefficient of x^i): x+1, x^2+x+1,
# x^3+x+1, x^4+x+1, x^5+x^2+1, x^6+x+1, x^7+x+1, x^8+x^4+x^3+x^2+1.
_IRREDUCIBLE = {1: 0b11, 2: 0b111, 3: 0b1011, 4: 0b10011, 5: 0b100101, 6: 0b1000011,
                7: 0b10000011, 8: 0b100011101}


def _bits(channels: int) -> int:
    return max(1, int(np.ceil(np.log2(channels)))) if channels > 1 else 1


def channel_of(addr: np.ndarray, channels: int, interleave: int, hash_name: str = "linear") -> np.ndarray:
    """Channel index (int32) of every byte address in ``addr`` (vectorized)."""
    a = np.asarray(addr, np.int64)
    if channels <= 1:
        return np.zeros(a.shape, np.int32)
    g = (a // int(interleave)).astype(np.uint64)
    ch = np.uint64(channels)
    if hash_name == "linear":
        out = g % ch
    elif hash_name == "xor":
        b = np.uint64(_bits(channels))
        out = (g ^ (g >> b) ^ (g >> (b * np.uint64(2)))) % ch
    elif hash_name == "ipoly":
        deg = _bits(channels)
        if deg not in _IRREDUCIBLE:
            raise ValueError(f"ipoly hash supports up to 256 channels, got {channels}")
        poly = np.uint64(_IRREDUCIBLE[deg])
        rem = g.copy()
        for bit in range(63, deg - 1, -1):
            hit = (rem >> np.uint64(bit)) & np.uint64(1)
            rem ^= hit * (poly << np.uint64(bit - deg))
        out = rem % ch
    else:
        raise ValueError(f"unknown channel hash {hash_name!r} (linear, xor, ipoly)")
    return out.astype(np.int32)
