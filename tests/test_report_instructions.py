"""The instruction view (`teg estimate --view instructions`): waits before issue split by cause and
the stall cycles charged to each static instruction — hand-computed on small cases, and summing to
the stall breakdown cause by cause on the bundled example."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from teg.engine.setup import RunSetup
from teg.cli import main
from teg.cli.estimate import EXAMPLE_SASS, EXAMPLE_TRACE
from teg.engine import CAUSE_NAMES, Options, load_inputs, lower, run
from teg.engine.handmade import make_input
from teg.engine.codes import ISSUE
from teg.engine.records import PC_STALL, PC_WAIT, with_records
from teg.report.instructions import (ViewError, back_edges, instruction_rows, instructions_text, loop_marks,
                                     parse_views)
from teg.resources import traces_dir

UNIT = CAUSE_NAMES.index("unit_busy")


def contended():
    """Two warps of two independent instructions on one unit copy busy 4 cycles each (GTO): w0 issues
    at 0 and 4, w1 at 8 and 12. w1 waits 8 cycles for s0 and 3 for s1, w0 3 for s1; the SM stalls
    in [1, 4) on w0's s1, in [5, 8) on w1's s0 and in [9, 12) on w1's s1."""
    return make_input(lat_exec=[1, 1], lat_multi=[1, 1], lat_same=[1, 1], units_occ=(4.0,),
                      rows_per_warp=[[0, 1], [0, 1]], warps_per_block=2,
                      setup=RunSetup(opcodes=["IADD3", "IADD3"], pcs=[0, 16]))


def test_contended_hand_computed():
    inp = with_records(contended(), instructions=True)
    r = run(inp)
    assert r.cycles == 13 and r.stalls["unit_busy"] == 9 and r.stalls["issue"] == 4
    pcc = r.pc_causes
    assert pcc[PC_WAIT, :, UNIT].tolist() == [8, 6, 0]
    assert pcc[PC_WAIT].sum() == 14
    assert pcc[PC_STALL, :, UNIT].tolist() == [3, 6, 0]
    rows = instruction_rows(r, inp)
    assert [x["executions"] for x in rows] == [2, 2, 0]
    assert rows[0]["wait_per_execution"] == {"unit_busy": 4.0}
    assert rows[1]["wait_per_execution"] == {"unit_busy": 3.0}
    assert [x["stall_cycles"] for x in rows] == [{"unit_busy": 3.0}, {"unit_busy": 6.0}, {}]
    assert [x["stall_share"] for x in rows] == [1 / 3, 2 / 3, 0.0]
    text = instructions_text(rows)
    assert "0010" in text and "unit_busy 3" in text and "66.7%" in text


def test_loops_found_from_back_edges():
    inp = make_input(lat_exec=[1] * 4, lat_multi=[1] * 4, lat_same=[1] * 4,
                     rows_per_warp=[[0, 1, 2, 1, 2, 3], [0, 3]])
    pcs = np.array([0, 16, 32, 48])
    assert back_edges(inp, pcs) == [(16, 32)]
    assert loop_marks([0, 16, 32, 48], [(16, 32)]) == ["", "/", "\\", ""]
    assert loop_marks([0, 16, 32, 48], [(0, 48), (16, 32)]) == ["/", "|/", "|\\", "\\"]
    inp = with_records(inp, instructions=True)
    assert [x["loop"] for x in instruction_rows(run(inp), inp)][:4] == ["", "/", "\\", ""]


@pytest.mark.parametrize("sms", [None, 1])
def test_stall_cycles_sum_to_the_breakdown(sms):
    d = traces_dir()
    f = load_inputs(sass=d / EXAMPLE_SASS, trace=d / EXAMPLE_TRACE)
    inp = lower(f.program, f.kernel_trace, f.machine, Options(sms=sms))
    plain = run(inp)
    inp = with_records(inp, instructions=True)
    r = run(inp)
    assert (r.cycles, r.stalls) == (plain.cycles, plain.stalls)
    raw = r.outcome.sm_cycle_stalls or r.stalls           # SM-cycles by cause, every SM
    charged = r.pc_causes[PC_STALL].sum(axis=0)
    for c, name in enumerate(CAUSE_NAMES):
        if c != ISSUE:
            assert charged[c] == raw[name], name
    rows = instruction_rows(r, inp, f.program)
    assert len(rows) == inp.num_static + 1
    assert rows[0]["sass"] == f.program.instructions[0].text
    for name, cycles in r.stalls.items():
        if name != "issue":
            total = sum(x["stall_cycles"].get(name, 0.0) for x in rows)
            assert total == pytest.approx(cycles, abs=1.0), name       # the breakdown is rounded
    assert sum(x["stall_share"] for x in rows) == pytest.approx(1.0)
    assert sum(x["executions"] for x in rows) == r.instructions
    assert sum(x["wait"] for x in rows) == int(r.pc_wait.sum())        # the causes split the same waits


def test_views_parse():
    assert parse_views("instructions,summary") == ("instructions", "summary")
    for bad in ("", "timeline", "summary,,x"):
        with pytest.raises(ViewError, match="--view"):
            parse_views(bad)


def test_cli_views():
    runner = CliRunner()
    only = runner.invoke(main, ["estimate", "--view", "instructions"])
    assert only.exit_code == 0, only.output
    assert "cycle breakdown" not in only.stdout and "BAR.SYNC.DEFER_BLOCKING" in only.stdout
    assert "/" in only.stdout and "\\" in only.stdout                 # the k loop is marked
    summary = runner.invoke(main, ["estimate", "--view", "summary"])
    assert "cycles      " in summary.stdout and "cycle breakdown" not in summary.stdout
    default = runner.invoke(main, ["estimate"])
    assert "cycle breakdown" in default.stdout and "wait by cause" not in default.stdout
    js = runner.invoke(main, ["estimate", "--json"])
    doc = json.loads(js.stdout)
    assert doc["instructions"][0]["pc"] == 0 and len(doc["instructions"]) > 70
    bad = runner.invoke(main, ["estimate", "--view", "pcs"])
    assert bad.exit_code == 2 and "expected a comma-separated list" in bad.output


def test_an_estimate_report_is_a_list_of_views():
    """teg/report/views.py: --view names become views (the summary and stall sections in one view,
    first); the text is their texts in order, the JSON their parts merged in order (--json carries
    every view); only the instruction view asks the run to record anything."""
    from types import SimpleNamespace

    from teg.report.summary import summary_data, summary_text
    from teg.report.views import (ALL_VIEWS, InstructionsView, SummaryView, estimate_views, records_of, views_json,
                                  views_text)

    assert estimate_views(("instructions", "stalls")) == (SummaryView(("stalls",)), InstructionsView())
    assert estimate_views(("summary",)) == (SummaryView(("summary",)),)
    assert records_of(estimate_views(("summary", "stalls"))) == frozenset()
    assert records_of(ALL_VIEWS) == {"instructions"}
    inp = with_records(contended(), instructions=True)
    est = SimpleNamespace(result=run(inp), lowered=inp, inputs=SimpleNamespace(program=None))
    rows = instruction_rows(est.result, inp)
    assert views_text(estimate_views(("stalls", "instructions")), est) == \
        summary_text(est.result, views=("stalls",)) + "\n\n" + instructions_text(rows)
    doc = json.loads(views_json(ALL_VIEWS, est))
    # the instruction view's part is merged last: its "instructions" rows take the place of the
    # summary's instruction count (the format teg estimate --json has always had)
    assert list(doc) == list(summary_data(est.result))
    assert doc["instructions"] == json.loads(json.dumps(rows)) and doc["cycles"] == 13
