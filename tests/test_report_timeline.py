"""The timeline (`teg estimate --timeline`): what the engine records per row and per transaction,
checked on hand-computed cases, and the Chrome trace-event JSON made of it — valid, its spans of one
warp tiling the warp's cycles, its waits named by the causes of the stall breakdown."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from teg.engine.setup import RunSetup
from teg.cli import main
from teg.engine import CAUSE_NAMES, run
from teg.engine.handmade import make_input
from teg.engine.codes import DEP_BASE
from teg.engine.recording import recording
from teg.engine.records import (TL_SINCE, TX_CH_ARRIVE, TX_CH_END, TX_CH_START, TX_CHAN,
                                TX_SLICE, with_records)
from teg.report.timeline import PID_DRAM, PID_L2, TID_WARP, TimelineError, Window, trace_events, wait_segments


def chain():
    """One warp: s0 (latency 4) → s1 (latency 6) → s2, issue latencies 1: issues at 0, 4, 10; 11 cycles,
    3 issue cycles and 3 + 5 cycles waiting for the producer (dependency class of s0/s1)."""
    return make_input(lat_exec=[4, 6, 1], lat_multi=[1] * 3, lat_same=[1] * 3, dst=[[1], [2], []],
                      src=[[], [1], [2]], setup=RunSetup(opcodes=["A", "B", "C"], pcs=[0, 16, 32]))


def contended():
    """Two warps of two independent instructions on one unit copy busy 4 cycles per instruction (GTO):
    w0 issues at 0 and 4, w1 at 8 and 12; 13 cycles."""
    return make_input(lat_exec=[1, 1], lat_multi=[1, 1], lat_same=[1, 1], units_occ=(4.0,),
                      rows_per_warp=[[0, 1], [0, 1]], warps_per_block=2)


def two_loads():
    """One warp, two loads of 128 B on DRAM channel 0 (1 cycle per byte, latency 100, no caches):
    the second waits at the channel for the first."""
    return make_input(lat_exec=[0, 0], lat_multi=[1, 1], lat_same=[1, 1], mem=[2, 2], dst=[[1], [2]],
                      tx=[[(0, 128, 0)], [(4096, 128, 0)]], service_per_byte=1.0, dram_latency=100.0,
                      setup=RunSetup(opcodes=["LDG", "LDG"], pcs=[0, 16]))


def recorded(inp):
    return run(with_records(inp, timeline=True, instructions=True))


def warp_spans(doc, ctx):
    """Complete events of warp context ``ctx``'s track, in time order."""
    return sorted((e for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == TID_WARP + ctx),
                  key=lambda e: e["ts"])


def test_recording_changes_no_result():
    for make in (chain, contended, two_loads):
        plain = run(make())
        rec = recorded(make())
        assert (rec.cycles, rec.stalls, rec.timeline.tolist()) == (plain.cycles, plain.stalls, plain.timeline.tolist())


def test_chain_rows_hand_computed():
    inp = with_records(chain(), timeline=True, instructions=True)
    r = run(inp)
    rec = recording(r, inp)
    assert r.cycles == 11 and r.timeline.tolist() == [0, 4, 10]
    rows = np.arange(3)
    assert rec.issued().tolist() == [0, 1, 2] and rec.issue(rows).tolist() == [0, 4, 10]
    assert rec.scheduler(rows).tolist() == [0, 0, 0] and rec.sm(rows).tolist() == [0, 0, 0]
    row, a, b, code = wait_segments(rec, rows)
    dep = DEP_BASE + 1                                     # make_input's default producer class
    assert r.stalls == {**dict.fromkeys(CAUSE_NAMES, 0), "issue": 3, CAUSE_NAMES[dep]: 8}
    assert row.tolist() == [1, 2] and a.tolist() == [1, 5] and b.tolist() == [4, 10] and code.tolist() == [dep, dep]
    assert r.row_record[:, TL_SINCE].tolist() == [0, 1, 5] == rec.since(rows).tolist()


def test_chain_timeline_tiles_the_warp_with_the_breakdown_causes():
    inp = with_records(chain(), timeline=True, instructions=True)
    r = run(inp)
    doc = json.loads(json.dumps(trace_events(r, inp, options={"policy": "gto"})))
    spans = warp_spans(doc, 0)
    assert [(e["name"], e["ts"], e["dur"]) for e in spans] == [
        ("A", 0, 1), (spans[1]["name"], 1, 3), ("B", 4, 1), (spans[1]["name"], 5, 5), ("C", 10, 1)]
    assert sum(e["dur"] for e in spans) == r.cycles            # the warp's life is the kernel here
    waits = {}
    for e in spans:
        if e["name"] in CAUSE_NAMES:
            waits[e["name"]] = waits.get(e["name"], 0) + e["dur"]
    # one warp on one scheduler: its waits are the SM's stall cycles, cause by cause
    assert waits == {k: v for k, v in r.stalls.items() if v and k != "issue"}
    assert doc["otherData"]["time_unit"] == "1 us of trace time = 1 cycle"
    assert doc["otherData"]["options"] == {"policy": "gto"}
    sched = [e for e in doc["traceEvents"] if e["ph"] == "i" and e["tid"] == 1]
    assert [(e["name"], e["ts"]) for e in sched] == [("A", 0), ("B", 4), ("C", 10)]
    blocks = [(e["name"], e["ts"]) for e in doc["traceEvents"] if e["ph"] == "i" and e["tid"] == 0]
    assert sorted(blocks) == [("exit block 0", 11), ("launch block 0", 0)]


def test_unit_contention_waits_and_unit_track():
    inp = with_records(contended(), timeline=True)
    r = run(inp)
    assert r.cycles == 13 and r.timeline.tolist() == [0, 4, 8, 12]
    doc = trace_events(r, inp)
    w1 = [(e["name"], e["ts"], e["dur"]) for e in warp_spans(doc, 1)]
    assert w1 == [("unit_busy", 0, 8), ("#0", 8, 1), ("unit_busy", 9, 3), ("#1", 12, 1)]
    assert sum(d for _, _, d in w1) == 13
    w0 = [(e["name"], e["ts"], e["dur"]) for e in warp_spans(doc, 0)]
    assert w0 == [("#0", 0, 1), ("unit_busy", 1, 3), ("#1", 4, 1)]
    unit = [(e["ts"], e["dur"]) for e in doc["traceEvents"] if e["ph"] == "X" and 100 <= e["tid"] < TID_WARP]
    assert sorted(unit) == [(0, 4), (4, 4), (8, 4), (12, 4)]    # one copy, busy back to back


def test_dram_channel_requests_and_queue():
    inp = with_records(two_loads(), timeline=True)
    r = run(inp)
    tx = r.tx_record
    assert (tx[:, TX_SLICE] == -1).all()                       # no L2 slices modelled here
    assert tx[:, TX_CHAN].tolist() == [0, 0]
    assert tx[:, TX_CH_ARRIVE].tolist() == [0, 1]
    assert tx[:, TX_CH_START].tolist() == [0, 128]
    assert tx[:, TX_CH_END].tolist() == [128, 256]
    rec = recording(r, inp)                                    # the same, read by name
    assert rec.l2_slices().tx.size == 0
    dram = rec.dram_channels()
    assert (dram.tx.tolist(), dram.where.tolist(), dram.arrive.tolist(), dram.start.tolist(), dram.end.tolist()) == \
        ([0, 1], [0, 0], [0, 1], [0, 128], [128, 256])
    doc = trace_events(r, inp)
    served = [(e["ts"], e["dur"], e["name"]) for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == PID_DRAM]
    assert served == [(0, 128, "read 128 B"), (128, 128, "read 128 B")]
    queue = [(e["ts"], e["args"]["queued"]) for e in doc["traceEvents"] if e["ph"] == "C"]
    assert queue == [(0, 0), (1, 1), (128, 0)]


def test_window_clips_and_counts():
    inp = with_records(chain(), timeline=True)
    r = run(inp)
    doc = trace_events(r, inp, Window.parse("2:6"))
    spans = [(e["ts"], e["dur"]) for e in warp_spans(doc, 0)]
    assert spans == [(2, 2), (4, 1), (5, 1)]
    assert doc["otherData"]["window"] == [2.0, 6.0]
    with pytest.raises(TimelineError, match="more than 3 events"):
        trace_events(r, inp, max_events=3)
    for bad in ("7", "5:2", "a:b", "-1:4"):
        with pytest.raises(TimelineError, match="--timeline-cycles"):
            Window.parse(bad)
    assert Window.parse(":9") == Window(0.0, 9.0) and Window.parse("3:") == Window(3.0, None)


def test_needs_a_recorded_run():
    inp = with_records(chain(), timeline=False)
    with pytest.raises(TimelineError, match="did not record"):
        trace_events(run(inp), inp)


def test_cli_timeline_of_the_bundled_example(tmp_path):
    out = tmp_path / "t.json"
    res = CliRunner().invoke(main, ["estimate", "--timeline", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    doc = json.loads(out.read_text())
    assert doc["otherData"]["kernel"] == "matmul_abt" and doc["otherData"]["machine"] == "sm_90"
    # the options as asked (no --policy: the table's), the policy the run used (sm_90: gto)
    assert doc["otherData"]["options"]["policy"] is None and doc["otherData"]["policy"] == "gto"
    ev = doc["traceEvents"]
    assert all({"ph", "pid", "name"} <= set(e) for e in ev)
    assert all(e["dur"] > 0 for e in ev if e["ph"] == "X")
    warps = {e["tid"] for e in ev if e["ph"] == "X" and e["tid"] >= TID_WARP and e["pid"] < PID_L2}
    assert len(warps) == 32
    for tid in warps:          # the spans of a warp tile its life: launch to its last issue
        spans = sorted((e["ts"], e["dur"]) for e in ev if e["ph"] == "X" and e["tid"] == tid and e["pid"] < PID_L2)
        assert all(a + d == b for (a, d), (b, _) in zip(spans, spans[1:]))
        assert sum(d for _, d in spans) == spans[-1][0] + spans[-1][1] - spans[0][0]
    waits = {e["name"] for e in ev if e["ph"] == "X" and e["tid"] >= TID_WARP and e["name"] in CAUSE_NAMES}
    assert waits <= set(CAUSE_NAMES) and "cache_miss" in waits and "bank_conflict" in waits
    marks = [e["name"] for e in ev if e["ph"] == "i" and e["tid"] == 0]
    assert sorted(marks) == sorted([f"launch block {b}" for b in range(4)] + [f"exit block {b}" for b in range(4)])
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"L2", "DRAM"} <= names
    assert max(e["ts"] + e.get("dur", 0) for e in ev if e["ph"] in "Xi") <= summary["cycles"]
