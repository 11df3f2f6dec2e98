"""Model-only parameters of the analytical models, read from a machine table.

A machine table carries the parameters the analytical models need (and the engine does not) in its
``analytical:`` section, a mapping ``name → {value: number, source: str}``. Parameters of a table
that has none yet (the modern ``sm_*`` tables) come from an overlay
``isa_tables/analytical/<machine name>.yaml`` (else the overlay of the table
:func:`teg.machine.for_arch` suggests for the machine's SM version) holding the same
``analytical:`` mapping; a value in the machine table itself wins over the overlay, and explicit
overrides (``teg compare --param``) win over both.

Parameter names (each model's docstring says which equation uses them):

============================  ===============================================================
``mem_ld``                    Mem_LD, DRAM round trip per transaction (Hong & Kim Table 1 row 5)
``departure_del_coal``        Departure_del_coal (Table 1 row 7)
``departure_del_uncoal``      Departure_del_uncoal (Table 1 row 6)
``issue_cycles``              Issue_cycles, cycles to issue one warp instruction (row 2)
``uncoal_per_mw``             optional fixed #Uncoal_per_mw (32 on compute capability 1.0/1.1)
``cpa_base_mem_latency``      base_mem_latency (Dasgupta §3.2.6.2)
``cpa_dep_delay_32b`` …       dep_delay_32b / 64b / 128b / vector (Dasgupta Tables 8–11)
``cpa_freq_mhz``              tuned frequency (Dasgupta Table 6); the machine clock when absent
``cpa_issue_cycles``          cycles of a normal instruction (Dasgupta §3.2.3)
``cpa_high_latency_cycles``   cycles of one SFU (MUFU) instruction (Dasgupta §4.2.4)
``luo_a`` … ``luo_d``         empirical CPD parameters (Luo & Suda eqs. 3–5)
``luo_max_warps``             m of eq. (4); the machine's max warps per SM when absent
``luo_t_mem``                 cost/latency of a global ld/st (Luo & Suda Table 1, eq. 1)
``luo_cost_<class>``          cost of one computation instruction of a unit class (Table 1);
                              ``luo_cost_default`` for classes without their own entry
``bsp_g_sm`` … ``bsp_g_l2``   BSP communication latencies (Amarís et al. eqs. 4–5)
``bsp_lambda``                λ of eq. (3)
``bsp_cores_per_sm``          cores per SM (P = SMs × cores, eq. 3)
``bsp_l1_hit_rate`` …         optional user hit rates (else the cache model's)
============================  ===============================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from teg import TegError
from teg.textfile import TextFileError
from teg.yamlfile import load_yaml_file


class ModelParameterError(TegError):
    """A parameter an analytical model needs is missing or malformed."""


@dataclass(frozen=True)
class ModelParams:
    """Machine-wide inputs of the analytical models.

    ``clock_mhz``, ``num_sms``, ``bandwidth_gbs``, ``warp_size`` and ``max_warps_per_sm`` come from
    the machine table proper; ``values`` holds the model-only parameters (see module docstring) and
    ``sources`` where each came from."""

    machine: str
    clock_mhz: float
    num_sms: int
    bandwidth_gbs: float
    warp_size: int = 32
    max_warps_per_sm: int = 32
    values: Mapping[str, float] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> float:
        try:
            return float(self.values[name])
        except KeyError:
            raise ModelParameterError(
                f"machine {self.machine!r}: analytical parameter {name!r} is not set "
                f"(add it under 'analytical:' in the machine table or pass --param {name}=VALUE)"
            ) from None

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def get(self, name: str, default: float | None = None) -> float | None:
        value = self.values.get(name)
        return default if value is None else float(value)

    def with_values(self, overrides: Mapping[str, float], source: str = "override") -> "ModelParams":
        """A copy with ``overrides`` replacing or adding model-only parameters."""
        values = dict(self.values)
        sources = dict(self.sources)
        for name, value in overrides.items():
            values[name] = _number(value, name, source)
            sources[name] = source
        return replace(self, values=values, sources=sources)

    @property
    def bytes_per_cycle(self) -> float:
        """Peak DRAM bandwidth of the whole GPU in bytes per SM clock cycle."""
        return self.bandwidth_gbs * 1e9 / (self.clock_mhz * 1e6)


def _number(value: Any, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ModelParameterError(f"{where}: analytical parameter {name!r} must be a finite number, got {value!r}")
    return float(value)


def parse_section(section: Any, where: str) -> tuple[dict[str, float], dict[str, str]]:
    """Read an ``analytical:`` mapping ``name → {value: number, source: str}`` (every number has a
    source, as in the machine tables)."""
    if section is None:
        return {}, {}
    if not isinstance(section, Mapping):
        raise ModelParameterError(f"{where}: 'analytical' must be a mapping of name → {{value, source}}")
    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    for name, entry in section.items():
        if not isinstance(entry, Mapping) or "value" not in entry:
            raise ModelParameterError(f"{where}: analytical parameter {name!r} must be {{value: number, source: text}}")
        source = entry.get("source")
        if not isinstance(source, str) or not source.strip():
            raise ModelParameterError(f"{where}: analytical parameter {name!r} has no source")
        values[str(name)] = _number(entry["value"], str(name), where)
        sources[str(name)] = source
    return values, sources


def overlay_path(machine_name: str, tables_dir: Path | None = None) -> Path:
    """Where the analytical overlay of machine ``machine_name`` lives."""
    if tables_dir is None:
        from teg.resources import isa_tables_dir

        tables_dir = isa_tables_dir()
    return Path(tables_dir) / "analytical" / f"{machine_name}.yaml"


def load_overlay(machine_name: str, tables_dir: Path | None = None,
                 sm: int | None = None) -> tuple[dict[str, float], dict[str, str]]:
    """The ``analytical:`` section of ``isa_tables/analytical/<machine_name>.yaml``, else of the
    overlay of the table suggested for SM version ``sm`` (empty if neither exists)."""
    path = overlay_path(machine_name, tables_dir)
    if not path.is_file() and sm is not None:
        from teg.machine import MachineTableError, for_arch

        try:
            path = overlay_path(for_arch(sm), tables_dir)
        except MachineTableError:
            return {}, {}
    if not path.is_file():
        return {}, {}
    try:
        doc = load_yaml_file(path, "analytical overlay")
    except TextFileError as exc:
        raise ModelParameterError(str(exc)) from None
    if not isinstance(doc, Mapping) or "analytical" not in doc:
        raise ModelParameterError(f"{path}: an analytical overlay must hold an 'analytical:' mapping")
    return parse_section(doc["analytical"], str(path))


def _machine_section(machine: Any) -> tuple[dict[str, float], dict[str, str]]:
    """The analytical parameters of the resolved table: ``raw['analytical']`` (with sources), else
    ``extras`` (bare values the loader already validated)."""
    raw = getattr(machine, "raw", None) or {}
    where = getattr(machine, "source_path", "") or getattr(machine, "name", "machine")
    if isinstance(raw, Mapping) and raw.get("analytical") is not None:
        return parse_section(raw["analytical"], where)
    extras = getattr(machine, "extras", None) or {}
    return parse_section({k: {"value": v, "source": where} for k, v in extras.items()}, where)


# Every model-only parameter one of the four models reads (teg.models.mwp_cwp, cpa, mpd_cpd, bsp);
# ``luo_cost_<class>`` is MPD/CPD's cost of an instruction class. An override of any other name
# would change nothing, so it is refused.
PARAMETERS = frozenset((
    "mem_ld", "departure_del_coal", "departure_del_uncoal", "issue_cycles", "uncoal_per_mw",
    "cpa_issue_cycles", "cpa_high_latency_cycles", "cpa_base_mem_latency", "cpa_freq_mhz",
    "cpa_dep_delay_32b", "cpa_dep_delay_64b", "cpa_dep_delay_128b", "cpa_dep_delay_vector",
    "luo_a", "luo_b", "luo_c", "luo_d", "luo_t_mem", "luo_max_warps", "luo_cost_default",
    "bsp_lambda", "bsp_g_sm", "bsp_g_l1", "bsp_g_l2", "bsp_g_gm", "bsp_cores_per_sm", "bsp_l1_hit_rate",
    "bsp_l2_hit_rate",
))


def is_parameter(name: str) -> bool:
    """Whether some analytical model reads the parameter ``name`` (:data:`PARAMETERS`)."""
    return name in PARAMETERS or (name.startswith("luo_cost_") and name[len("luo_cost_"):].isidentifier())


def params_for(machine: Any, overrides: Mapping[str, float] | None = None,
               tables_dir: Path | None = None) -> ModelParams:
    """Resolve the analytical-model parameters of ``machine`` (a :class:`teg.machine.Machine`):
    overlay ``isa_tables/analytical/<name>.yaml`` < the table's own ``analytical:`` < ``overrides``
    (names no model reads are refused)."""
    for name in overrides or ():
        if not is_parameter(name):
            raise ModelParameterError(f"--param {name}: no analytical model reads a parameter of that name "
                                      f"(they read: {', '.join(sorted(PARAMETERS))}, luo_cost_<class>)")
    values, sources = load_overlay(machine.name, tables_dir, getattr(machine, "sm", None))
    own_values, own_sources = _machine_section(machine)
    values.update(own_values)
    sources.update(own_sources)
    params = ModelParams(
        machine=machine.name,
        clock_mhz=float(machine.clock_mhz),
        num_sms=int(machine.num_sms),
        bandwidth_gbs=float(machine.memory.bandwidth_gbs),
        warp_size=int(machine.warp_size),
        max_warps_per_sm=int(machine.limits.max_warps),
        values=values,
        sources=sources,
    )
    return params.with_values(overrides) if overrides else params
