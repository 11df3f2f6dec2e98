"""Hong & Kim's MWP-CWP analytical model (ISCA 2009, "An Analytical Model for a GPU Architecture
with Memory-level and Thread-level Parallelism Awareness"), equations (1)–(27).

Memory warp parallelism (MWP) is the number of warps per SM whose memory requests overlap; it is
bounded by the departure delay between memory warps (eq. 16), by peak bandwidth (eq. 6) and by the
active warps N (eq. 5). Computation warp parallelism (CWP, eq. 8) is how many warps compute during
one memory waiting period, plus one. The execution time takes one of three forms (eqs. 22–24), and
barriers add Synch_cost (eq. 26).

Parameters (machine table ``analytical:``): ``mem_ld``, ``departure_del_coal``,
``departure_del_uncoal``, ``issue_cycles`` and optionally ``uncoal_per_mw``.

Edge cases the paper leaves open (documented in docs/model.md): a kernel without global memory
requests has Mem_L = Mem_cycles = 0, Comp_p = 0 and MWP = N (nothing limits memory parallelism);
the bandwidth bound is infinite when Mem_L = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from teg.models.params import ModelParams
from teg.models.profile import KernelProfile
from teg.models.result import ModelResult


@dataclass(frozen=True)
class MwpCwpResult(ModelResult):
    mwp: float
    cwp: float
    n: int
    rep: float
    case: str                   # "eq22" (MWP = CWP = N), "eq23" (memory bound), "eq24" (compute bound)
    exec_cycles_app: float
    synch_cost: float
    mem_l: float
    mem_l_coal: float
    mem_l_uncoal: float
    departure_delay: float
    mwp_without_bw_full: float
    mwp_without_bw: float
    mwp_peak_bw: float
    bw_per_warp_gbs: float
    mem_cycles: float
    comp_cycles: float
    cwp_full: float
    weight_coal: float
    weight_uncoal: float
    uncoal_per_mw: float


def cwp(mem_cycles: float, comp_cycles: float, n: int) -> tuple[float, float]:
    """CWP_full = (Mem_cycles + Comp_cycles) / Comp_cycles (eq. 8); CWP = MIN(CWP_full, N) (eq. 9).
    Returns (CWP_full, CWP). A kernel without computation has CWP_full = ∞."""
    full = (mem_cycles + comp_cycles) / comp_cycles if comp_cycles > 0 else math.inf
    return full, min(full, float(n))


def execution_cycles(mem_cycles: float, comp_cycles: float, mem_insts: float, mem_l: float,
                     mwp: float, cwp_: float, n: int, rep: float) -> tuple[float, str]:
    """Exec_cycles_app, choosing the case as the paper lists it (§3.4.2):

    * MWP = N and CWP = N → (Mem_cycles + Comp_cycles + Comp_p·(MWP−1))·#Rep  (eq. 22 = eq. 4);
    * CWP ≥ MWP or Comp_cycles > Mem_cycles → (Mem_cycles·N/MWP + Comp_p·(MWP−1))·#Rep  (eq. 23 = eq. 1);
    * MWP > CWP → (Mem_L + Comp_cycles·N)·#Rep  (eq. 24 = eq. 3),

    with Comp_p = Comp_cycles / #Mem_insts (eq. 2). Without memory instructions Comp_p is undefined
    and the kernel is all computation: eq. (24) (Case 5 of §3.2.2 with an empty memory period).
    Returns (cycles, case name)."""
    if mem_insts <= 0:
        return (mem_l + comp_cycles * n) * rep, "eq24"
    comp_p = comp_cycles / mem_insts
    if mwp == n and cwp_ == n:
        return (mem_cycles + comp_cycles + comp_p * (mwp - 1)) * rep, "eq22"
    if cwp_ >= mwp or comp_cycles > mem_cycles:
        return (mem_cycles * n / mwp + comp_p * (mwp - 1)) * rep, "eq23"
    return (mem_l + comp_cycles * n) * rep, "eq24"


def synch_cost(departure_delay: float, mwp: float, synch_insts: float, active_blocks_per_sm: int,
               rep: float) -> float:
    """Synch_cost = Departure_delay × (MWP−1) × #Synch_insts × #Active_blocks_per_SM × #Rep (eq. 26)."""
    return departure_delay * (mwp - 1) * synch_insts * active_blocks_per_sm * rep


def peak_bandwidth_mwp(params: ModelParams, load_bytes_per_warp: float, mem_l: float,
                       active_sms: int, freq_mhz: float | None = None) -> tuple[float, float]:
    """BW_per_warp = Freq × Load_bytes_per_warp / Mem_L (eq. 7, in GB/s) and
    MWP_peak_BW = Mem_Bandwidth / (BW_per_warp × #ActiveSM) (eq. 6). Returns (BW_per_warp, MWP_peak_BW)."""
    freq_ghz = (freq_mhz if freq_mhz is not None else params.clock_mhz) / 1000.0
    if mem_l <= 0 or load_bytes_per_warp <= 0:
        return 0.0, math.inf
    bw_per_warp = freq_ghz * load_bytes_per_warp / mem_l
    return bw_per_warp, params.bandwidth_gbs / (bw_per_warp * active_sms)


def mwp_cwp(profile: KernelProfile, params: ModelParams) -> MwpCwpResult:
    """Hong & Kim equations (5)–(27) on ``profile``; ``cycles`` = Exec_cycles_with_synch (eq. 27)."""
    mem_ld = params["mem_ld"]
    del_uncoal = params["departure_del_uncoal"]
    del_coal = params["departure_del_coal"]
    issue = params["issue_cycles"]
    uncoal_per_mw = params.get("uncoal_per_mw", profile.uncoal_per_mw)
    n = profile.active_warps_per_sm
    rep = profile.rep
    coal, uncoal = profile.coal_mem_insts, profile.uncoal_mem_insts
    mem_insts = coal + uncoal

    mem_l_uncoal = mem_ld + (uncoal_per_mw - 1) * del_uncoal                         # (10)
    mem_l_coal = mem_ld                                                               # (11)
    if mem_insts > 0:
        w_uncoal = uncoal / mem_insts                                                 # (13)
        w_coal = coal / mem_insts                                                     # (14)
        mem_l = mem_l_uncoal * w_uncoal + mem_l_coal * w_coal                         # (12)
        departure_delay = del_uncoal * uncoal_per_mw * w_uncoal + del_coal * w_coal   # (15)
        mwp_nobw_full = mem_l / departure_delay if departure_delay > 0 else math.inf  # (16)
    else:
        w_uncoal = w_coal = 0.0
        mem_l = departure_delay = 0.0
        mwp_nobw_full = math.inf
    mwp_nobw = min(mwp_nobw_full, n)                                                  # (17)
    bw_per_warp, mwp_peak = peak_bandwidth_mwp(params, profile.load_bytes_per_warp, mem_l,
                                               profile.active_sms)                    # (6), (7)
    mwp = min(mwp_nobw, mwp_peak, n)                                                  # (5)

    mem_cycles = mem_l_uncoal * uncoal + mem_l_coal * coal                            # (18)
    comp_cycles = issue * profile.total_insts                                         # (19)
    cwp_full, cwp_ = cwp(mem_cycles, comp_cycles, n)                                  # (8), (9)
    exec_app, case = execution_cycles(mem_cycles, comp_cycles, mem_insts, mem_l, mwp, cwp_, n, rep)
    sync = synch_cost(departure_delay, mwp, profile.synch_insts, profile.active_blocks_per_sm, rep)
    cycles = exec_app + sync                                                          # (27)
    return MwpCwpResult(
        model="mwp_cwp", cycles=cycles, seconds=cycles / (params.clock_mhz * 1e6),
        mwp=mwp, cwp=cwp_, n=n, rep=rep, case=case, exec_cycles_app=exec_app, synch_cost=sync,
        mem_l=mem_l, mem_l_coal=mem_l_coal, mem_l_uncoal=mem_l_uncoal, departure_delay=departure_delay,
        mwp_without_bw_full=mwp_nobw_full, mwp_without_bw=mwp_nobw, mwp_peak_bw=mwp_peak,
        bw_per_warp_gbs=bw_per_warp, mem_cycles=mem_cycles, comp_cycles=comp_cycles, cwp_full=cwp_full,
        weight_coal=w_coal, weight_uncoal=w_uncoal, uncoal_per_mw=uncoal_per_mw,
    )
