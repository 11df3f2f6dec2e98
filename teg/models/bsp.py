"""Amarís, Cordeiro, Goldman & de Camargo's BSP-based model ("A Simple BSP-based Model to Predict
Execution Time in GPU Applications", HiPC 2015), equations (3)–(5):

    T_k = t · (Comp + Comm_GM + Comm_SM) / (R · P · λ)                           (3)
    Comm_SM = (ld_0 + st_0) · g_SM                                                (4)
    Comm_GM = (ld_1 + st_1 − L1 − L2) · g_GM + L1 · g_L1 + L2 · g_L2              (5)

t threads, per-thread computation cycles Comp (one cycle per computation instruction, §V.A), shared
(ld_0, st_0) and global (ld_1, st_1) accesses per thread, L1 and L2 the per-thread load hits, R the
clock and P = SMs × cores per SM. Multiplying T_k by R gives cycles.

Hit counts: L1 = h_L1 · ld_1 and L2 = h_L2 · (ld_1 − L1), with the hit rates given by the user
(``bsp_l1_hit_rate`` / ``bsp_l2_hit_rate``) or else the profile's cache-model rates (else 0).
Barriers are not counted (§IV: intra-block synchronization "does not affect processing time").

Parameters: ``bsp_g_sm``, ``bsp_g_gm``, ``bsp_g_l1``, ``bsp_g_l2``, ``bsp_lambda``,
``bsp_cores_per_sm``.
"""

from __future__ import annotations

from dataclasses import dataclass

from teg.models.params import ModelParams
from teg.models.profile import KernelProfile
from teg.models.result import ModelResult


@dataclass(frozen=True)
class BspResult(ModelResult):
    threads: int
    cores: int
    lam: float
    comp: float
    comm_gm: float
    comm_sm: float
    l1_hits: float
    l2_hits: float
    l1_hit_rate: float
    l2_hit_rate: float
    hit_rate_source: str


def bsp(profile: KernelProfile, params: ModelParams) -> BspResult:
    """T_k of eq. (3) in cycles (T_k · R) with Comm_SM (4) and Comm_GM (5)."""
    g_sm, g_gm = params["bsp_g_sm"], params["bsp_g_gm"]
    g_l1, g_l2 = params["bsp_g_l1"], params["bsp_g_l2"]
    lam = params["bsp_lambda"]
    cores = int(round(params["bsp_cores_per_sm"])) * params.num_sms
    h1, h2, source = _hit_rates(profile, params)
    ld1, st1 = profile.thread_ld_global, profile.thread_st_global
    l1 = h1 * ld1
    l2 = h2 * (ld1 - l1)
    comm_sm = (profile.thread_ld_shared + profile.thread_st_shared) * g_sm                 # (4)
    comm_gm = (ld1 + st1 - l1 - l2) * g_gm + l1 * g_l1 + l2 * g_l2                        # (5)
    comp = profile.thread_comp
    t = profile.threads
    cycles = t * (comp + comm_gm + comm_sm) / (cores * lam)                                # (3) · R
    return BspResult(
        model="bsp", cycles=cycles, seconds=cycles / (params.clock_mhz * 1e6), threads=t, cores=cores,
        lam=lam, comp=comp, comm_gm=comm_gm, comm_sm=comm_sm, l1_hits=l1, l2_hits=l2,
        l1_hit_rate=h1, l2_hit_rate=h2, hit_rate_source=source,
    )


def _hit_rates(profile: KernelProfile, params: ModelParams) -> tuple[float, float, str]:
    """User rates win; then the profile's cache-model rates; a level the machine lacks hits 0."""
    user1, user2 = params.get("bsp_l1_hit_rate"), params.get("bsp_l2_hit_rate")
    if user1 is not None or user2 is not None:
        return (user1 or 0.0), (user2 or 0.0), "user"
    if profile.l1_hit_rate is not None or profile.l2_hit_rate is not None:
        return (profile.l1_hit_rate or 0.0), (profile.l2_hit_rate or 0.0), "cache model"
    return 0.0, 0.0, "none"
