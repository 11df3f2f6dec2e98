"""Dasgupta's CUDA Performance Analyzer (M.S. thesis, Georgia Tech 2011): Hong & Kim's model
extended to GT200 memory transactions.

* Transaction-size weighted departure delay (eqs. 20–23) and memory latency (eq. 24):
  ``avg_dep_delay_per_tran = Σ_s dep_delay_s · weight_s`` over 32 B, 64 B, 128 B scalar
  transactions and vector-operation transactions (§3.2.5, Table 11: vector transactions have their
  own departure delay), ``mem_latency_final = base_mem_latency + (num_trans_per_request − 1) ·
  avg_dep_delay_per_tran``.
* MWP with bandwidth (eqs. 16–18): ``Data_per_request`` (16), ``bandwidth_requirements_per_warp =
  Freq · Data_per_request / mem_latency_final`` (17, the thesis prints it only by name; this is
  Hong & Kim's eq. 7 with the request's data), ``MWP_peak_BW`` (18).
* MWP without bandwidth (eqs. 19, 24–26): ``dep_delay_per_request = avg_dep_delay_per_tran ·
  num_trans_per_request`` (25, as eq. 15 of Hong & Kim) and ``MWP_without_BW_full =
  mem_latency_final / dep_delay_per_request`` (26, as Hong & Kim eq. 16).
* ``Active_warps_for_MWP = N · independent_loads / duplicate_loads`` (27) and
  ``MWP = min(MWP_peak_BW, MWP_without_BW, Active_warps_for_MWP)`` (28).
* Duplicate loads merge: scalar transaction counts are divided by ``duplicate_loads`` (§3.2.4.3);
  vector transactions do not merge (§3.2.5.1).
* Compute cycles (§3.2.3): every instruction costs ``cpa_issue_cycles`` except SFU (high-latency)
  instructions (``cpa_high_latency_cycles``) and bank-conflicted shared requests (their average
  conflicted latency from the profile). Memory cycles = mem_latency_final × memory requests.
* CWP (eqs. 29–30), the three execution-time cases and the synchronization cost are Hong & Kim's
  (eqs. 22–24, 26), shared with :mod:`teg.models.mwp_cwp`.

Parameters: ``cpa_base_mem_latency``, ``cpa_dep_delay_32b``, ``cpa_dep_delay_64b``,
``cpa_dep_delay_128b``, ``cpa_dep_delay_vector``, ``cpa_issue_cycles``, ``cpa_high_latency_cycles``
and optionally ``cpa_freq_mhz`` (the tuned frequency; model cycles are converted to the machine
clock for ``cycles``).

Where the thesis is silent: ``num_trans_per_request`` below 1 (after merging) adds no negative
departure term (``max(num_trans_per_request − 1, 0)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from teg.models.mwp_cwp import cwp, execution_cycles, peak_bandwidth_mwp, synch_cost
from teg.models.params import ModelParams
from teg.models.profile import KernelProfile
from teg.models.result import ModelResult


@dataclass(frozen=True)
class CpaResult(ModelResult):
    mwp: float
    cwp: float
    n: int
    rep: float
    case: str
    model_cycles: float          # cycles at the tuned frequency (eq. 22–24 + 26)
    freq_mhz: float
    exec_cycles_app: float
    synch_cost: float
    data_per_request: float
    num_trans_per_request: float
    weight_32b: float
    weight_64b: float
    weight_128b: float
    weight_vector: float
    avg_dep_delay_per_tran: float
    mem_latency_final: float
    dep_delay_per_request: float
    bandwidth_per_warp_gbs: float
    mwp_peak_bw: float
    mwp_without_bw_full: float
    active_warps_for_mwp: float
    mem_cycles: float
    comp_cycles: float
    cwp_full: float


def departure_delay_per_transaction(params: ModelParams, t32: float, t64: float, t128: float,
                                    tvec: float) -> tuple[float, tuple[float, float, float, float]]:
    """avg_dep_delay_per_tran = Σ dep_delay_s × weight_s, weight_s = t_s / Σ t (eqs. 20–23, with
    vector transactions as a fourth class). Returns (delay, (w32, w64, w128, wvec))."""
    total = t32 + t64 + t128 + tvec
    if total <= 0:
        return 0.0, (0.0, 0.0, 0.0, 0.0)
    weights = (t32 / total, t64 / total, t128 / total, tvec / total)
    delays = (
        params["cpa_dep_delay_32b"] if t32 else 0.0,
        params["cpa_dep_delay_64b"] if t64 else 0.0,
        params["cpa_dep_delay_128b"] if t128 else 0.0,
        params["cpa_dep_delay_vector"] if tvec else 0.0,
    )
    return sum(d * w for d, w in zip(delays, weights)), weights


def compute_cycles(profile: KernelProfile, issue: float, high_latency: float) -> float:
    """Comp_cycles (§3.2.3): issue cycles for every instruction, except SFU instructions at
    ``high_latency`` cycles and conflicted shared requests at their average conflicted latency."""
    normal = profile.total_insts - profile.high_latency_insts - profile.shared_conflicted
    return (issue * normal + high_latency * profile.high_latency_insts
            + profile.shared_conflict_latency * profile.shared_conflicted)


def cpa(profile: KernelProfile, params: ModelParams) -> CpaResult:
    """The CUDA Performance Analyzer prediction (Dasgupta eqs. 16–30 on Hong & Kim eqs. 22–26)."""
    base = params["cpa_base_mem_latency"]
    issue = params["cpa_issue_cycles"]
    high = params["cpa_high_latency_cycles"]
    freq = params.get("cpa_freq_mhz", params.clock_mhz)
    n = profile.active_warps_per_sm
    rep = profile.rep
    warp_mem = profile.mem_insts
    dup = max(profile.duplicate_loads, 1.0)
    t32, t64, t128 = profile.trans_32 / dup, profile.trans_64 / dup, profile.trans_128 / dup
    tvec = profile.trans_vector

    if warp_mem > 0:
        data_per_request = (t32 * 32 + t64 * 64 + t128 * 128 + profile.vector_bytes) / warp_mem  # (16)
        ntpr = (t32 + t64 + t128 + tvec) / warp_mem                                              # (19)
    else:
        data_per_request = ntpr = 0.0
    avg_dep, (w32, w64, w128, wvec) = departure_delay_per_transaction(params, t32, t64, t128, tvec)  # (20)-(23)
    mem_latency = base + max(ntpr - 1.0, 0.0) * avg_dep if warp_mem > 0 else 0.0                   # (24)
    dep_per_request = avg_dep * ntpr                                                                 # (25)
    mwp_nobw_full = mem_latency / dep_per_request if dep_per_request > 0 else math.inf               # (26)
    bw_per_warp, mwp_peak = peak_bandwidth_mwp(params, data_per_request, mem_latency,
                                               profile.active_sms, freq)                             # (17), (18)
    active_for_mwp = n * profile.independent_loads / dup                                             # (27)
    mwp = min(mwp_peak, mwp_nobw_full, active_for_mwp)                                               # (28)

    mem_cycles = mem_latency * warp_mem
    comp_cycles = compute_cycles(profile, issue, high)
    cwp_full, cwp_ = cwp(mem_cycles, comp_cycles, n)                                                 # (29), (30)
    exec_app, case = execution_cycles(mem_cycles, comp_cycles, warp_mem, mem_latency, mwp, cwp_, n, rep)
    sync = synch_cost(dep_per_request, mwp, profile.synch_insts, profile.active_blocks_per_sm, rep)
    model_cycles = exec_app + sync
    seconds = model_cycles / (freq * 1e6)
    return CpaResult(
        model="cpa", cycles=seconds * params.clock_mhz * 1e6, seconds=seconds,
        mwp=mwp, cwp=cwp_, n=n, rep=rep, case=case, model_cycles=model_cycles, freq_mhz=freq,
        exec_cycles_app=exec_app, synch_cost=sync, data_per_request=data_per_request,
        num_trans_per_request=ntpr, weight_32b=w32, weight_64b=w64, weight_128b=w128, weight_vector=wvec,
        avg_dep_delay_per_tran=avg_dep, mem_latency_final=mem_latency, dep_delay_per_request=dep_per_request,
        bandwidth_per_warp_gbs=bw_per_warp, mwp_peak_bw=mwp_peak, mwp_without_bw_full=mwp_nobw_full,
        active_warps_for_mwp=active_for_mwp, mem_cycles=mem_cycles, comp_cycles=comp_cycles, cwp_full=cwp_full,
    )

