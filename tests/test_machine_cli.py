"""`teg machines` and `teg machines show`."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

import teg.machine as tm
from teg.cli import main


def test_machines_lists_tables():
    res = CliRunner().invoke(main, ["machines"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split()[:4] == ["name", "sm", "clock", "MHz"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == set(tm.available())
    assert rows["gt200"][1:4] == ["13", "1296", "30"]
    assert rows["h200"][1:4] == ["90", "1980", "132"]


def test_show_yaml_is_the_resolved_table(tmp_path):
    res = CliRunner().invoke(main, ["machines", "show", "h100_sxm"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("# resolved machine table h100_sxm")
    doc = yaml.safe_load(res.output)
    assert "extends" not in doc and doc["name"] == "h100_sxm"
    assert doc["num_sms"]["value"] == 132 and "opcodes" in doc and "IMAD.WIDE" in doc["opcodes"]["map"]
    p = tmp_path / "copy.yaml"
    p.write_text(res.output)
    again, orig = tm.load(p), tm.load("h100_sxm")
    assert (again.opcodes, again.latencies, again.memory) == (orig.opcodes, orig.latencies, orig.memory)


def test_show_json_and_user_path(tmp_path):
    p = tmp_path / "mine.yaml"
    p.write_text('extends: sm_80\ndescription: "mine"\nnum_sms: {value: 7, source: "test"}\n')
    res = CliRunner().invoke(main, ["machines", "show", str(p), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["name"] == "mine" and doc["num_sms"] == {"value": 7, "source": "test"}
    assert doc["clock_mhz"]["value"] == 1410


def test_show_errors_are_one_line():
    res = CliRunner().invoke(main, ["machines", "show", "sm_42"])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and res.output.startswith("teg: error: unknown machine 'sm_42'")
