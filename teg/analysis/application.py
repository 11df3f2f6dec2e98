"""What a whole application adds up to: :func:`estimate_application` runs one task per kernel
(:mod:`teg.analysis.kernel_task`) on an executor and :func:`summarize` adds the
:class:`~teg.analysis.kernel_task.KernelRow` results up into an :class:`ApplicationReport` — kernels of
one stream run one after another, so the application's time is the sum of the kernels' times
(:class:`Totals`), and a mechanism's saving is the sum of the kernels' savings
(:class:`MechanismSaving`).

Reading the application and selecting its kernels is :mod:`teg.trace.application`.
"""

from __future__ import annotations

from dataclasses import dataclass

from teg.analysis.kernel_task import KernelRow, run_kernel_task, tasks_for
from teg.engine.options import MECHANISMS, Options
from teg.trace.application import Application, KernelRef


@dataclass(frozen=True)
class Totals:
    """Sums over the kernels that ran: their number, cycles, time (µs; None when a kernel's is
    unknown), warp instructions (None for what-if runs), IPC over the sums; and how many kernels
    are missing or failed."""

    kernels: int
    cycles: int
    time_us: float | None
    instructions: int | None
    ipc: float | None
    missing: int
    failed: int


@dataclass(frozen=True)
class TopKernel:
    """A kernel that gains much from removing a mechanism: its id, name and saving (µs when every
    kernel's clock is known, else None; cycles)."""

    id: int
    name: str
    saved_us: float | None
    saved_cycles: int


@dataclass(frozen=True)
class MechanismSaving:
    """One mechanism removed from every kernel: the summed saving (cycles; µs at each kernel's
    clock), its share of the application's time, the application's speedup ``T / (T - saved)``
    and the kernels that gain most."""

    mechanism: str
    description: str
    saved_cycles: int
    saved_us: float | None
    share: float
    speedup: float
    top: tuple[TopKernel, ...]


@dataclass
class ApplicationReport:
    """Per-kernel rows (launch order) plus what the application adds up to."""

    source: str
    rows: list[KernelRow]
    missing: list[KernelRef]
    streams: list[int]

    @property
    def done(self) -> list[KernelRow]:
        return [r for r in self.rows if r.error is None]

    @property
    def failed(self) -> list[KernelRow]:
        return [r for r in self.rows if r.error is not None]

    @property
    def complete(self) -> bool:
        """Every listed kernel was there and ran."""
        return not self.missing and not self.failed

    def totals(self) -> Totals:
        """Sums over the kernels that ran (:class:`Totals`)."""
        done = self.done
        cyc = sum(r.cycles for r in done)
        times = [r.time_us for r in done]
        ins = [r.estimate.instructions if r.estimate is not None else None for r in done]
        return Totals(kernels=len(done), cycles=cyc,
                      time_us=sum(times) if times and None not in times else None,
                      instructions=sum(ins) if ins and None not in ins else None,
                      ipc=(sum(ins) / cyc if cyc and ins and None not in ins else None),
                      missing=len(self.missing), failed=len(self.failed))

    def by_time(self) -> list[KernelRow]:
        """The kernels that ran, longest first (time, else cycles; ties in launch order)."""
        return sorted(self.done, key=lambda r: (-(r.time_us if r.time_us is not None else r.cycles), r.position))

    def share(self, row: KernelRow) -> float:
        """The kernel's share of the application's time (of its cycles when a clock is unknown)."""
        t = self.totals()
        if t.time_us:
            return row.time_us / t.time_us
        return row.cycles / t.cycles if t.cycles else 0.0

    def mechanisms(self, top: int = 3) -> list[MechanismSaving]:
        """Per mechanism of the what-if runs, the application's saving and the ``top`` kernels
        that gain most (empty without what-if runs)."""
        done = [r for r in self.done if r.whatifs is not None]
        if not done:
            return []
        total_t = sum(_time(r, r.cycles) for r in done)
        clocked = all(r.clock_mhz for r in done)
        out = []
        for m in done[0].whatifs:
            gains = [(_time(r, r.whatifs[m].saved), r) for r in done]
            saved_t = sum(g for g, _ in gains)
            best = sorted((g for g in gains if g[0] > 0), key=lambda g: (-g[0], g[1].position))[:top]
            out.append(MechanismSaving(
                mechanism=m, description=MECHANISMS.get(m, "all of the above removed"),
                saved_cycles=sum(r.whatifs[m].saved for r in done), saved_us=saved_t if clocked else None,
                share=saved_t / total_t if total_t else 0.0,
                speedup=total_t / (total_t - saved_t) if total_t > saved_t else float("inf"),
                top=tuple(TopKernel(id=r.id, name=r.name, saved_us=g if clocked else None,
                                    saved_cycles=r.whatifs[m].saved) for g, r in best)))
        return out


def _time(row: KernelRow, cycles: int) -> float:
    """``cycles`` of ``row``'s kernel in µs at its clock (in cycles when it has none)."""
    return cycles / row.clock_mhz if row.clock_mhz else float(cycles)


def summarize(app: Application, rows: list[KernelRow]) -> ApplicationReport:
    """The report of ``rows`` (any order) for ``app``."""
    return ApplicationReport(source=app.source, rows=sorted(rows, key=lambda r: r.position),
                             missing=list(app.missing), streams=app.streams)


def estimate_application(app: Application, machine: str | None = None, options: Options | None = None,
                         sass: str | None = None, whatif: tuple[str, ...] | None = None,
                         executor=None, progress: bool = False) -> ApplicationReport:
    """Run every present kernel of ``app`` on ``executor`` (:class:`teg.analysis.executors.Executor`;
    default: all local cores) and add the results up."""
    from teg.analysis.executors import Executor

    ex = executor or Executor()
    tasks = tasks_for(app, machine, options, sass, whatif)
    rows = [r for _, r in ex.run(run_kernel_task, tasks, desc="kernels" if progress else None)]
    return summarize(app, rows)


__all__ = ["ApplicationReport", "Totals", "MechanismSaving", "TopKernel", "summarize", "estimate_application"]
