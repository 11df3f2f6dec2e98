"""The timeline of one engine run as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev →
*Open trace file*) and ``chrome://tracing`` open: ``teg estimate --timeline FILE.json``.

Time: **1 µs of trace time is 1 cycle** (``ts`` and ``dur`` are cycles), so the viewer's "µs" read as
cycles; ``otherData`` names the kernel, the machine, its clock (to convert) and the options.

Tracks (a process per SM that ran something, threads inside it):

* ``blocks`` — instants where a block was launched and where its last warp issued its last instruction;
* ``scheduler k`` — an instant per issue, named by the opcode;
* ``warp c (block b)`` — the warp's life: a span per wait before an issue, named by its stall cause
  (the causes of the stall breakdown; how a wait is cut into causes: :mod:`teg.engine.records`),
  and a one-cycle span per issue, named by the opcode. The spans of one warp tile its cycles from
  launch to its last issue;
* ``UNIT copy i`` (per scheduler, or ``SM UNIT`` for units the SM's schedulers share) — the spans
  the copy was occupied, named by the opcode.

and a process ``L2`` (a track per slice) and ``DRAM`` (a track per channel): a span per request
served (the memory system's own service time), and a counter of the requests queued at it.

``--timeline-cycles A:B`` keeps the events that overlap cycles ``[A, B)`` (clipped to it); a window
with more than ``max_events`` events is refused (the file would be too large to open)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from teg import TegError
from teg.engine.codes import CAUSE_NAMES, MEM_SHARED, SCHEDULER
from teg.engine.lowered import EngineInput
from teg.engine.recording import Recording, recording
from teg.engine.result import Result

MAX_EVENTS = 1_000_000
PID_L2, PID_DRAM = 1_000_000, 1_000_001      # the memory system's processes (SMs are pids 0…)
TID_BLOCKS = 0
TID_SCHED = 1                                 # schedulers 1…S, then units, then warps
TID_UNIT = 100
TID_WARP = 10_000


class TimelineError(TegError):
    """A timeline that cannot be written (not recorded, empty window, too many events)."""


@dataclass(frozen=True)
class Window:
    """Cycles ``[start, end)`` of the timeline (``end`` None: to the end of the run)."""

    start: float = 0.0
    end: float | None = None

    @classmethod
    def parse(cls, text: str | None) -> "Window":
        """``A:B``, ``A:`` or ``:B`` (whole cycles, ``A < B``); None or empty: everything."""
        if not text:
            return cls()
        a, sep, b = text.partition(":")
        try:
            start = int(a) if a.strip() else 0
            end = int(b) if b.strip() else None
        except ValueError:
            start = end = -1
        if not sep or start < 0 or (end is not None and end <= start):
            raise TimelineError(f"--timeline-cycles {text!r}: expected A:B with whole cycles 0 <= A < B "
                                "(A: or :B for an open end)")
        return cls(float(start), None if end is None else float(end))

    def clip(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Spans ``[a, b)`` clipped to the window, and a mask of those left non-empty."""
        hi = np.inf if self.end is None else self.end
        ca = np.maximum(a, self.start)
        cb = np.minimum(b, hi)
        return ca, cb, cb > ca

    def holds(self, t: np.ndarray) -> np.ndarray:
        """Which instants ``t`` lie in the window."""
        return (t >= self.start) & (t < (np.inf if self.end is None else self.end))


class _Events:
    """Trace events gathered column-wise (one call per kind of event, numpy arrays in), turned into
    the JSON list at the end; counts as it goes so that an oversized window fails early."""

    def __init__(self, limit: int):
        self.limit = limit
        self.items: list[dict] = []

    def _room(self, n: int) -> None:
        if len(self.items) + n > self.limit:
            raise TimelineError(f"timeline: more than {self.limit:,} events in the window; narrow it with "
                                "--timeline-cycles A:B")

    def spans(self, pid, tid, names, a, b, args=None) -> None:
        """Complete events ``[a, b)``; ``pid``/``tid``/``names`` arrays or scalars."""
        n = int(np.size(a))
        self._room(n)
        pid, tid, names = (np.broadcast_to(np.asarray(x, dtype=object), (n,)) for x in (pid, tid, names))
        for i in range(n):
            e = {"ph": "X", "pid": int(pid[i]), "tid": int(tid[i]), "name": str(names[i]),
                 "ts": float(a[i]), "dur": float(b[i] - a[i])}
            if args is not None:
                e["args"] = args(i)
            self.items.append(e)

    def instants(self, pid, tid, names, t, args=None) -> None:
        n = int(np.size(t))
        self._room(n)
        pid, tid, names = (np.broadcast_to(np.asarray(x, dtype=object), (n,)) for x in (pid, tid, names))
        for i in range(n):
            e = {"ph": "i", "s": "t", "pid": int(pid[i]), "tid": int(tid[i]), "name": str(names[i]),
                 "ts": float(t[i])}
            if args is not None:
                e["args"] = args(i)
            self.items.append(e)

    def counter(self, pid, name, t, values) -> None:
        self._room(len(t))
        self.items.extend({"ph": "C", "pid": pid, "name": name, "ts": float(x), "args": {"queued": int(v)}}
                          for x, v in zip(t, values))

    def name(self, pid, tid, label, sort) -> None:
        """Metadata: the name and sort position of a process (``tid`` None) or a thread."""
        if tid is None:
            self.items.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": label}})
            self.items.append({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": sort}})
        else:
            self.items.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": label}})
            self.items.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                               "args": {"sort_index": sort}})


def _row_context(inp: EngineInput) -> np.ndarray:
    """The warp context of every dynamic row (-1: a row no simulated warp runs)."""
    lens = inp.grid.c_end - inp.grid.c_start
    first = np.repeat(np.cumsum(lens) - lens, lens)
    rows = np.arange(int(lens.sum())) - first + np.repeat(inp.grid.c_start, lens)
    out = np.full(inp.num_rows, -1, np.int64)
    out[rows] = np.repeat(np.arange(lens.shape[0]), lens)
    return out


def wait_segments(rec: Recording, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The non-empty wait segments of ``rows`` (issued rows of a recording), consecutive segments
    of one row with the same cause merged: ``(row, start, end, cause code)`` arrays in row order."""
    bounds = rec.wait_bounds(rows)
    codes = np.column_stack([rec.wait_causes(rows), np.full(rows.shape[0], SCHEDULER, np.int64)])
    a, b = bounds[:, :-1].ravel(), bounds[:, 1:].ravel()
    row, code = np.repeat(rows, 4), codes.ravel()
    keep = b > a
    row, a, b, code = row[keep], a[keep], b[keep], code[keep]
    if row.size == 0:
        return row, a, b, code
    joined = np.r_[False, (row[1:] == row[:-1]) & (code[1:] == code[:-1]) & (a[1:] == b[:-1])]
    heads = np.nonzero(~joined)[0]
    ends = np.maximum.reduceat(b, heads)
    return row[heads], a[heads], ends, code[heads]


def _unit_tracks(keys: np.ndarray) -> tuple[list, np.ndarray]:
    """Thread ids of the unit-copy tracks: ``keys`` rows are (SM, owner, unit, copy); each distinct
    key gets ``TID_UNIT`` + its rank among its SM's keys. Returns ``[(key, tid)]`` and each row's tid."""
    if keys.shape[0] == 0:
        return [], np.zeros(0, np.int64)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    first = np.searchsorted(uniq[:, 0], uniq[:, 0], side="left")      # uniq is sorted by SM first
    tids = TID_UNIT + np.arange(uniq.shape[0]) - first
    return [(tuple(int(v) for v in k), int(t)) for k, t in zip(uniq, tids)], tids[inverse.ravel()]


def _row_wavefronts(inp: EngineInput, rec: Recording) -> np.ndarray:
    """Shared-memory wavefronts each row occupied its unit for (1 for other rows), as the engine
    counts them with the run's bank-conflict switch."""
    shared = inp.static.s_mem[inp.rows.r_sidx] == MEM_SHARED
    w = inp.rows.r_wave if rec.bank_conflicts else inp.rows.r_wave_min
    return np.where(shared, np.maximum(w, 1), 1)


@dataclass(frozen=True)
class _Rows:
    """The issued rows of a recorded run, with what every track needs of them."""

    rows: np.ndarray        # dynamic row indexes
    sched: np.ndarray       # scheduler (global index)
    sm: np.ndarray
    ctx: np.ndarray         # warp context
    sidx: np.ndarray        # static instruction
    issue: np.ndarray       # issue cycle
    opname: np.ndarray      # opcode text (object array)


def _issued_in(rec: Recording, window: Window, chunk: int = 1 << 20) -> int:
    """Rows issued inside ``window``, counted in chunks of ``chunk`` rows."""
    n = 0
    for a in range(0, rec.rows.shape[0], chunk):
        n += int(np.count_nonzero(window.holds(rec.issue(slice(a, a + chunk)))))
    return n


def check_timeline_size(inp: EngineInput, window: Window, max_events: int = MAX_EVENTS) -> None:
    """Refuse, before the run, a timeline that cannot be made: without ``--timeline-cycles`` every
    issued row gives at least two events (its issue on the warp's and the scheduler's track), so a
    run of more than ``max_events / 2`` rows would be refused after it; and the records need
    memory per row and transaction (:mod:`teg.hostmem`)."""
    from teg.hostmem import TIMELINE_ROW_BYTES, TIMELINE_TX_BYTES, require

    n, m = inp.num_rows, int(inp.rows.tx_addr.shape[0])
    if window.start <= 0 and window.end is None and 2 * n > max_events:
        raise TimelineError(f"timeline: the run issues {n:,} warp instructions, at least {2 * n:,} events, more than "
                            f"the {max_events:,} a timeline may hold; narrow it with --timeline-cycles A:B "
                            "(refused before the run)")
    require(n * TIMELINE_ROW_BYTES + m * TIMELINE_TX_BYTES, f"timeline: recording {n:,} warp instructions",
            "sample fewer SMs with --sms N (the records cover every row, whatever --timeline-cycles keeps), or give "
            "teg more memory")


def _issued_rows(rec: Recording, inp: EngineInput, ops: list[str]) -> _Rows:
    rows = rec.issued()
    sidx = inp.rows.r_sidx[rows]
    return _Rows(rows=rows, sched=rec.scheduler(rows), sm=rec.sm(rows), ctx=_row_context(inp)[rows], sidx=sidx,
                 issue=rec.issue(rows), opname=np.asarray(ops, dtype=object)[sidx])


def _warp_events(ev: _Events, rec: Recording, r: _Rows, inp: EngineInput, pcs, window: Window, S: int) -> None:
    """Per warp: a span per wait segment named by its cause, a one-cycle span per issue."""
    w_row, w_a, w_b, w_code = wait_segments(rec, r.rows)
    a, b, keep = window.clip(w_a, w_b)
    w_sm = rec.sm(w_row)
    ev.spans(w_sm[keep], TID_WARP + _row_context(inp)[w_row[keep]],
             np.asarray(CAUSE_NAMES, dtype=object)[w_code[keep]], a[keep], b[keep])
    a, b, keep = window.clip(r.issue, r.issue + 1.0)
    row, sidx = r.rows[keep], r.sidx[keep]
    ev.spans(r.sm[keep], TID_WARP + r.ctx[keep], r.opname[keep], a[keep], b[keep],
             args=lambda i: {"pc": None if pcs is None else int(pcs[sidx[i]]), "row": int(row[i])})
    here = window.holds(r.issue)
    ev.instants(r.sm[here], TID_SCHED + (r.sched[here] % S), r.opname[here], r.issue[here])


def _unit_events(ev: _Events, rec: Recording, r: _Rows, inp: EngineInput, window: Window, S: int) -> list:
    """Per functional-unit copy (of a scheduler, or of the SM for units its schedulers share): the
    spans it was occupied. Returns the tracks made as ``[((sm, owner, unit, copy), tid)]``."""
    copy = rec.unit_copy(r.rows)
    unit = inp.static.s_unit[r.sidx].astype(np.int64)
    owner = np.where(inp.static.u_per_sm[unit] != 0, S, r.sched % S)       # S stands for "the SM"
    busy_end = r.issue + inp.static.s_occ[r.sidx] * _row_wavefronts(inp, rec)[r.rows]
    a, b, keep = window.clip(r.issue, busy_end)
    keep &= copy >= 0
    tracks, tids = _unit_tracks(np.column_stack([r.sm, owner, unit, copy])[keep])
    ev.spans(r.sm[keep], tids, r.opname[keep], a[keep], b[keep])
    return tracks


def _block_events(ev: _Events, rec: Recording, r: _Rows, inp: EngineInput, window: Window) -> None:
    """Per block on its SM's ``blocks`` track: launch (its first wait begins) and exit (its last issue)."""
    blk = inp.grid.c_block[r.ctx]
    n = int(blk.max()) + 1 if blk.size else 0
    launch = np.full(n, np.inf)
    np.minimum.at(launch, blk, rec.since(r.rows))
    exit_ = np.full(n, -np.inf)
    np.maximum.at(exit_, blk, r.issue + 1.0)
    blk_sm = np.zeros(n, np.int64)
    blk_sm[blk] = r.sm
    for label, t in (("launch", launch), ("exit", exit_)):
        sel = np.isfinite(launch) & window.holds(t)
        ev.instants(blk_sm[sel], TID_BLOCKS, [f"{label} block {b}" for b in np.nonzero(sel)[0]], t[sel])


def _track_names(ev: _Events, r: _Rows, inp: EngineInput, kernel, units: list[str], unit_tracks, mem_tracks,
                 S: int) -> None:
    for sm in sorted(set(r.sm.tolist())):
        ev.name(sm, None, f"SM {sm} · {kernel}", sm)
        ev.name(sm, TID_BLOCKS, "blocks", 0)
        for k in range(S):
            ev.name(sm, TID_SCHED + k, f"scheduler {k}", 1 + k)
    for (sm, own, u, c), tid in unit_tracks:
        ev.name(sm, tid, f"{'SM' if own == S else f'sched {own}'} {units[u]} copy {c}", tid)
    for sm, c in sorted(set(zip(r.sm.tolist(), r.ctx.tolist()))):
        ev.name(sm, TID_WARP + c, f"warp {c} (block {int(inp.grid.c_block[c])})", TID_WARP + c)
    for pid, label, tids in mem_tracks:
        ev.name(pid, None, label, pid)
        for tid in tids:
            ev.name(pid, tid, f"{'slice' if pid == PID_L2 else 'channel'} {tid}", tid)


def trace_events(result: Result, inp: EngineInput, window: Window = Window(), options: dict | None = None,
                 max_events: int = MAX_EVENTS) -> dict:
    """The trace-event document (a dict: ``traceEvents`` and ``otherData``) of a run that recorded
    its rows (``Options(record_timeline=True)`` or :func:`teg.engine.records.with_records`) for the
    cycles of ``window``."""
    rec = recording(result, inp)
    if not rec.has_rows or rec.rows.shape[0] != inp.num_rows:
        raise TimelineError("timeline: the run did not record its rows (run an input made by "
                            "teg.engine.records.with_records(inp, timeline=True))")
    s = result.setup
    named = s is not None
    ops = list((s.opcodes if named else None) or [f"#{i}" for i in range(inp.num_static)])
    units = list((s.units if named else None) or [f"unit{u}" for u in range(inp.static.u_occ.shape[0])])
    S = rec.schedulers
    ev = _Events(max_events)
    ev._room(2 * _issued_in(rec, window))     # each issue in the window: an instant and a span, before any array
    r = _issued_rows(rec, inp, ops)
    _warp_events(ev, rec, r, inp, s.pcs if named else None, window, S)
    unit_tracks = _unit_events(ev, rec, r, inp, window, S)
    _block_events(ev, rec, r, inp, window)
    mem_tracks = _memory_events(ev, rec, inp, window)
    kernel = s.kernel if named else None
    _track_names(ev, r, inp, kernel, units, unit_tracks, mem_tracks, S)
    other = {"generator": GENERATOR, "kernel": kernel, "machine": s.machine if named else None,
             "clock_mhz": result.clock_mhz, "time_unit": "1 us of trace time = 1 cycle", "cycles": result.cycles,
             "window": [window.start, window.end], "options": options or {},
             "dependency_model": s.dependency_model if named else None, "policy": s.policy if named else None}
    return {"otherData": other, "traceEvents": ev.items}    # otherData first: its generator marks the file teg's


def _memory_events(ev: _Events, rec: Recording, inp: EngineInput, window: Window) -> list:
    """Service spans and queue counters of the L2 slices and DRAM channels; returns the tracks made
    as ``(pid, label, sorted tids)``."""
    if rec.tx is None or rec.tx.shape[0] == 0:
        return []
    row_of = np.searchsorted(inp.rows.r_tx_start, np.arange(rec.tx.shape[0]), side="right") - 1
    tracks = []
    for pid, label, served in ((PID_L2, "L2", rec.l2_slices()), (PID_DRAM, "DRAM", rec.dram_channels())):
        sel = served.tx
        if sel.size == 0:
            continue
        where, arrive, start, end = served.where, served.arrive, served.start, served.end
        names = np.where(inp.static.s_store[inp.rows.r_sidx[row_of[sel]]] == 2, "write", "read")
        nbytes = inp.rows.tx_bytes[sel]
        a, b, keep = window.clip(start, np.maximum(end, start + 1e-3))
        ev.spans(pid, where[keep], [f"{n} {int(x)} B" for n, x in zip(names[keep], nbytes[keep])], a[keep], b[keep],
                 args=lambda i, r=row_of[sel][keep], ad=inp.rows.tx_addr[sel][keep], ar=arrive[keep]:
                 {"row": int(r[i]), "address": hex(int(ad[i])), "arrived": float(ar[i])})
        for w in np.unique(where):
            q = where == w
            t, depth = _queue_depth(arrive[q], start[q])
            keep_t = window.holds(t)
            ev.counter(pid, f"{label} {'slice' if pid == PID_L2 else 'channel'} {w} queue", t[keep_t], depth[keep_t])
        tracks.append((pid, label, sorted(set(where.tolist()))))
    return tracks


def _queue_depth(arrive: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Requests waiting (arrived, not yet in service) after each change: times and counts."""
    t = np.concatenate([arrive, start])
    step = np.concatenate([np.ones(arrive.shape[0], np.int64), -np.ones(start.shape[0], np.int64)])
    order = np.lexsort((step, t))          # at equal times the departures first
    t, depth = t[order], np.cumsum(step[order])
    last = np.r_[t[1:] != t[:-1], True]    # one value per distinct time: the count after all its changes
    return t[last], depth[last]


GENERATOR = "teg estimate --timeline"


def timeline_owned(path) -> bool:
    """A timeline teg wrote (:mod:`teg.fileio` ownership): its first bytes carry ``otherData`` with
    teg's generator."""
    from teg.fileio import file_head

    head = file_head(path)
    return head.startswith(b'{"otherData":{"generator":"' + GENERATOR.encode() + b'"')


def check_timeline_target(path, force: bool = False) -> None:
    """Refuse, before any run, a timeline path teg may not write (:func:`teg.fileio.prepare`)."""
    from teg import fileio

    fileio.prepare(path, timeline_owned, force, folder=False)


def write_timeline(path, result: Result, inp: EngineInput, window: Window = Window(), options: dict | None = None,
                   max_events: int = MAX_EVENTS, force: bool = False) -> int:
    """Write the trace-event JSON of :func:`trace_events` to ``path`` through :mod:`teg.fileio`
    (atomic; an existing file is replaced only if it is a timeline teg wrote, or with ``force``);
    returns the number of events."""
    from teg import fileio

    doc = trace_events(result, inp, window, options, max_events)
    try:
        with fileio.atomic_file(path, timeline_owned, force) as fh:
            fh.write(json.dumps(doc, separators=(",", ":")).encode("utf-8"))
    except OSError as exc:
        raise TimelineError(f"{path}: cannot write the timeline: {exc.strerror or exc}") from None
    return len(doc["traceEvents"])
