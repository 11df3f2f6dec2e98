"""Luo & Suda's MPD/CPD model ("An execution time prediction analytical model for GPU with
instruction-level and thread-level parallelism awareness", IPSJ SIG 2011).

A warp's code is a sequence of *calculate periods*: a computation task (cost ``c_i``) followed by a
memory task (cost ``m_i``). Costs are Luo & Suda's per-instruction costs (Table 1): ``c_i`` sums
``luo_cost_<unit class>`` over the task's computation instructions, ``m_i = luo_t_mem`` × its
global memory instructions.

* MPD per memory task (eqs. 1–2): ``Warp_bwt = N_thread·D_mem / (N_trans·t_mem)``,
  ``MPD = min(N_act, ⌊GPU_bwt / (N_act·N_sm·Warp_bwt)⌋)`` with GPU_bwt in bytes per cycle.
* CPD (eqs. 3–5): ``CPD1 = (c − P)(N_act − b) + a``, ``CPD2 = n/(m−1)·√((m−1)² − (N_act − m)²) + a``,
  ``n = d(P − c)²``, ``CPD = min(CPD1, CPD2)``; P is the computation instruction proportion
  Σc / Σ(c + m).
* Period types (eqs. 6–13), by whether computation covers memory in the previous and current period:
  type 1 (c_{i−1} ≥ m_{i−1}, c_i ≥ m_i): ``T_i = ⌈N_act·c_i/CPD⌉`` (6);
  type 2 (c_{i−1} ≥ m_{i−1}, c_i < m_i): ``+ T_c``, ``T_c = max(m_i − (N_act−1)·c_i, 0)`` (7–8);
  type 3 (c_{i−1} < m_{i−1}, c_i ≥ m_i): ``+ T_p``,
  ``T_p = max(m_{i−1}·⌊N_act/MPD − 1⌋ − (N_act−1)·c_i, 0)`` (9–10);
  type 4 (both <): ``+ T_p + T_c``, ``T_c = max(m_i − ((N_act−1)·c_i + T_p), 0)`` (11–13).

Readings of the printed equations (docs/model.md): the ``n`` of eq. (8) is N_act (eq. 13 and the
other periods use N_act there; the ``n`` of eq. 5 is a different quantity); eq. (13) lacks the
``, 0`` of its ``max``; the first period has no previous period (types 1/2); MPD and CPD are kept
≥ 1 (a negative or zero degree of parallelism has no meaning and would divide by zero); the sum of
the periods is the time of one SM's active warps, multiplied by #Rep (Hong & Kim eq. 21) for the
grid.

Parameters: ``luo_a``, ``luo_b``, ``luo_c``, ``luo_d``, ``luo_t_mem``, ``luo_cost_default`` and
``luo_cost_<class>`` per unit class, optionally ``luo_max_warps`` (m; default the machine's max
warps per SM).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from teg.models.params import ModelParams
from teg.models.profile import KernelProfile, Period, ProfileError
from teg.models.result import ModelResult


@dataclass(frozen=True)
class PeriodCost:
    """One calculate period's inputs and cost."""

    type: int
    c: float
    m: float
    mpd: float
    t_c: float
    t_p: float
    t: float


@dataclass(frozen=True)
class MpdCpdResult(ModelResult):
    cpd: float
    cpd1: float
    cpd2: float
    p: float
    n_act: int
    rep: float
    sm_cycles: float
    mpd_min: float
    periods: tuple[PeriodCost, ...]
    type_counts: dict


def computation_cost(period: Period, params: ModelParams) -> float:
    """c_i: Σ over the computation task of the per-class instruction cost (Table 1)."""
    default = params["luo_cost_default"]
    return sum(count * params.get(f"luo_cost_{cls}", default) for cls, count in period.comp.items())


def mpd(n_act: int, n_sm: int, d_mem: float, n_trans: float, t_mem: float, gpu_bwt: float,
        n_thread: int = 32) -> float:
    """MPD = min(N_act, ⌊GPU_bwt / (N_act·N_sm·Warp_bwt)⌋), Warp_bwt = N_thread·D_mem/(N_trans·t_mem)
    (eqs. 1–2), kept ≥ 1."""
    if d_mem <= 0 or t_mem <= 0:
        return float(n_act)
    warp_bwt = n_thread * d_mem / (max(n_trans, 1e-12) * t_mem)                     # (1)
    return float(max(1, min(n_act, math.floor(gpu_bwt / (n_act * n_sm * warp_bwt)))))  # (2)


def cpd(p: float, n_act: int, a: float, b: float, c: float, d: float, m: float) -> tuple[float, float, float]:
    """(CPD, CPD1, CPD2) with CPD1 = (c−P)(N_act−b)+a (3), CPD2 = n/(m−1)·√((m−1)²−(N_act−m)²)+a (4),
    n = d(P−c)² (5); CPD = max(1, min(CPD1, CPD2))."""
    cpd1 = (c - p) * (n_act - b) + a
    n = d * (p - c) ** 2
    if m > 1:
        cpd2 = n / (m - 1) * math.sqrt(max((m - 1) ** 2 - (n_act - m) ** 2, 0.0)) + a
    else:
        cpd2 = a
    return max(1.0, min(cpd1, cpd2)), cpd1, cpd2


def period_time(c_i: float, m_i: float, c_prev: float | None, m_prev: float | None, mpd_prev: float,
                n_act: int, cpd_: float) -> PeriodCost:
    """T_i of one calculate period by its type (eqs. 6–13); ``c_prev is None`` for the first period."""
    base = math.ceil(n_act * c_i / cpd_)
    prev_slow = c_prev is not None and c_prev < m_prev
    cur_slow = c_i < m_i
    t_p = t_c = 0.0
    if prev_slow:
        t_p = max(m_prev * math.floor(n_act / mpd_prev - 1) - (n_act - 1) * c_i, 0.0)   # (10), (12)
    if cur_slow:
        t_c = max(m_i - ((n_act - 1) * c_i + t_p), 0.0)                                 # (8), (13)
    kind = 1 + int(cur_slow) + 2 * int(prev_slow)                                       # 1, 2, 3, 4
    return PeriodCost(type=kind, c=c_i, m=m_i, mpd=mpd_prev, t_c=t_c, t_p=t_p, t=base + t_p + t_c)


def mpd_cpd(profile: KernelProfile, params: ModelParams) -> MpdCpdResult:
    """Luo & Suda's execution time: Σ_i T_i over the profile's calculate periods (eqs. 1–13)."""
    t_mem = params["luo_t_mem"]
    a, b, c, d = params["luo_a"], params["luo_b"], params["luo_c"], params["luo_d"]
    m = params.get("luo_max_warps", float(params.max_warps_per_sm))
    n_act = profile.active_warps_per_sm
    periods = profile.periods
    if not periods and profile.total_insts > 0:
        raise ProfileError(f"{profile.name}: the profile has no calculate periods (Luo & Suda need the program "
                           "order of computation and memory tasks; profile_from derives it from a trace)")
    costs = [(computation_cost(p, params), p.mem_insts * t_mem) for p in periods]
    total = sum(ci + mi for ci, mi in costs)
    p_comp = sum(ci for ci, _ in costs) / total if total > 0 else 1.0
    cpd_, cpd1, cpd2 = cpd(p_comp, n_act, a, b, c, d, m)
    gpu_bwt = params.bytes_per_cycle
    mpds = [mpd(n_act, profile.active_sms, p.mem_width, p.mem_trans, t_mem, gpu_bwt, profile.warp_size)
            for p in periods]
    rows: list[PeriodCost] = []
    for i, (c_i, m_i) in enumerate(costs):
        prev = costs[i - 1] if i else (None, None)
        rows.append(period_time(c_i, m_i, prev[0], prev[1], mpds[i - 1] if i else float(n_act), n_act, cpd_))
    sm_cycles = float(sum(r.t for r in rows))
    cycles = sm_cycles * profile.rep
    type_counts = {f"type{t}": sum(1 for r in rows if r.type == t) for t in (1, 2, 3, 4)}
    return MpdCpdResult(
        model="mpd_cpd", cycles=cycles, seconds=cycles / (params.clock_mhz * 1e6),
        cpd=cpd_, cpd1=cpd1, cpd2=cpd2, p=p_comp, n_act=n_act, rep=profile.rep, sm_cycles=sm_cycles,
        mpd_min=min(mpds) if mpds else float(n_act), periods=tuple(rows), type_counts=type_counts,
    )
