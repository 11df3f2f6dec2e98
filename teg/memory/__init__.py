"""teg.memory — the memory-system mechanisms as pure functions over flat arrays (numba-jitted):

* :mod:`teg.memory.shared` — shared-memory bank-conflict degree (wavefronts per access);
* :mod:`teg.memory.coalesce` — global-memory coalescing into transactions (GT200 compute-1.3
  segments per half-warp, or 32-byte sectors of 128-byte lines on sm_70+);
* :mod:`teg.memory.channels` — DRAM channel of each transaction (linear interleave, XOR or IPOLY hash);
* :mod:`teg.memory.cache` — sectored set-associative LRU caches (used inside the engine loop,
  because hits depend on the order of accesses);
* :mod:`teg.memory.cachepolicy` — which accesses bypass L1 (stores, atomics, ``.cg``/``.cv`` and
  GPU/system-scope strong loads).
"""

from teg.memory.cache import cache_access, cache_geometry, cache_new, cache_row, cache_shape
from teg.memory.cachepolicy import bypasses_l1
from teg.memory.channels import channel_of
from teg.memory.coalesce import cc13_transactions, sector_transactions
from teg.memory.shared import shared_wavefronts

__all__ = ["shared_wavefronts", "sector_transactions", "cc13_transactions", "channel_of",
           "cache_access", "cache_geometry", "cache_new", "cache_row", "cache_shape", "bypasses_l1"]
