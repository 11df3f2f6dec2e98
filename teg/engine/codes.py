"""Integer codes shared by lowering, the jitted loop and the result: memory paths, scheduling
policies and dependency models, the loop's outcomes, stall causes and counters. The stall-cause
names are what reports print."""

from __future__ import annotations

from teg.machine.schema import UNIT_CLASSES  # noqa: F401  (re-exported: OpInfo.unit_class values)

# memory path of a static instruction
MEM_NONE, MEM_SHARED, MEM_GLOBAL = 0, 1, 2

# warp scheduling policy (teg.engine.Options.policy): loose round-robin, greedy-then-oldest,
# greedy-then-youngest
POLICY_LRR, POLICY_GTO, POLICY_GTY = 0, 1, 2
POLICY_CODES = {"lrr": POLICY_LRR, "gto": POLICY_GTO, "gty": POLICY_GTY}
# dependency model: register scoreboard, or the SASS control codes (stall counts, dependency barriers)
DEPMODEL_SCOREBOARD, DEPMODEL_CONTROLCODES = 0, 1
DEPMODEL_CODES = {"scoreboard": DEPMODEL_SCOREBOARD, "controlcodes": DEPMODEL_CONTROLCODES}

# how a call of the jitted loop (teg.engine.core.simulate) ends
RUN_DONE = 0                  # every warp retired: the cycles are the kernel's
RUN_DEADLOCK = 1              # warps wait forever (a barrier not every warp reaches; or a replay order
                              # whose next row waits for what only later rows provide)
RUN_BLOCK_TOO_BIG = 2         # a block does not fit in the SM's warp slots
RUN_REPLAY_NOT_RESIDENT = 3   # the replay order names a row whose warp is not resident then
RUN_PAUSED = 4                # the step budget ran out: the state is kept, the run resumes from it

# stall causes: every simulated cycle gets exactly one
ISSUE = 0          # at least one instruction issued in this cycle
SCHEDULER = 1      # scheduler busy: issue interval / multi-warp issue latency
SAME_WARP = 2      # same-warp issue latency (or control-code stall count)
UNIT_BUSY = 3      # functional unit still occupied by an earlier warp instruction
MEM_PIPE = 4       # memory pipeline full (C_mem outstanding transactions)
BANK_CONFLICT = 5  # extra shared-memory wavefronts of a producer
CHANNEL_QUEUE = 6  # producer's transaction queued behind a busy DRAM channel
CACHE_MISS = 7     # producer missed in L1 / L2
BARRIER = 8        # waiting at BAR for the rest of the block
NO_WARP = 9        # no warp resident (block launch)
L2_QUEUE = 10      # producer's request queued behind a busy L2 slice
DEP_BASE = 11      # dependency on a producer of class UNIT_CLASSES[i]: DEP_BASE + i
DEP_SHARED = DEP_BASE + len(UNIT_CLASSES)
DEP_GLOBAL = DEP_SHARED + 1
FETCH = DEP_GLOBAL + 1  # instruction not yet in the SM's instruction cache (cold fetch from L2 / DRAM)
CONST_MISS = FETCH + 1  # constant operand not yet in the SM's constant cache (cold fetch from L2)
TLB_MISS = CONST_MISS + 1  # access past L1 waiting for its page's translation (L2 TLB or page walk)
NUM_CAUSES = TLB_MISS + 1

CAUSE_NAMES = (("issue", "scheduler", "same_warp", "unit_busy", "mem_pipe_full", "bank_conflict",
                "channel_queue", "cache_miss", "barrier", "no_warp", "l2_queue")
               + tuple(f"dep_{c}" for c in UNIT_CLASSES) + ("dep_shared", "dep_global", "instruction_fetch",
                                                                    "constant_miss", "tlb_miss"))
assert len(CAUSE_NAMES) == NUM_CAUSES

# counters reported by the loop (Result.counters)
COUNTER_NAMES = ("instructions", "shared_accesses", "shared_wavefronts", "shared_wavefronts_min",
                 "global_accesses", "transactions", "l1_hits", "l1_misses", "l2_hits", "l2_misses",
                 "dram_transactions", "dram_bytes", "channel_wait_cycles",
                 "barriers", "blocks", "engine_steps", "warp_evaluations")
CTR = {n: i for i, n in enumerate(COUNTER_NAMES)}
# the counters' indexes, as the loop writes them
C_INSTR = CTR["instructions"]
C_SH_ACC, C_SH_WAVE, C_SH_WMIN = CTR["shared_accesses"], CTR["shared_wavefronts"], CTR["shared_wavefronts_min"]
C_G_ACC, C_TX = CTR["global_accesses"], CTR["transactions"]
C_L1H, C_L1M, C_L2H, C_L2M = CTR["l1_hits"], CTR["l1_misses"], CTR["l2_hits"], CTR["l2_misses"]
C_DRAM, C_DRAM_B, C_CHW = CTR["dram_transactions"], CTR["dram_bytes"], CTR["channel_wait_cycles"]
C_BARS, C_BLOCKS = CTR["barriers"], CTR["blocks"]
C_STEPS, C_EVALS = CTR["engine_steps"], CTR["warp_evaluations"]
