"""``teg parse``: text and JSON reports, kernel selection, unknown opcodes, errors (exit 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from teg.cli import main

machine = pytest.importorskip("teg.machine")

FIXTURES = Path(__file__).parent / "fixtures" / "sass"
ADDR_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/", re.M)
UNKNOWN_LISTING = "\tcode for sm_90\n\t\tFunction : k\n  /*0000*/ FROB.X R1, R2 ;\n  /*0010*/ FROB.X R1, R2 ;\n" \
                  "  /*0020*/ EXIT ;\n"


def _run(*args, stdin=None):
    return CliRunner().invoke(main, ["parse", *args], input=stdin)


def test_json_report_of_a_fixture():
    path = FIXTURES / "kernels.sm_90.sass"
    res = _run(str(path), "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    kernels = {k["name"]: k for k in doc["kernels"]}
    assert len(kernels) == 17
    assert sum(k["instructions"] for k in kernels.values()) == len(ADDR_LINE.findall(path.read_text()))
    for k in kernels.values():
        assert {"name", "arch", "instructions", "by_class", "unknown_opcodes"} <= k.keys()
        assert k["arch"] == "sm_90"
        assert sum(k["by_class"].values()) == k["instructions"]
        assert k["unknown_opcodes"] == {}
        assert k["control"]["decoded"] == k["instructions"]


def test_by_class_matches_the_machine_table():
    res = _run(str(FIXTURES / "kernels.sm_86.sass"), "--json", "--kernel", "saxpy")
    (k,) = json.loads(res.stdout)["kernels"]
    table = machine.load(k["machine"])
    from teg.sass import parse_file

    (p,) = [p for p in parse_file(FIXTURES / "kernels.sm_86.sass") if p.name == "saxpy"]
    expected: dict[str, int] = {}
    for ins in p.instructions:
        cls = table.classify(ins.opcode).unit_class
        expected[cls] = expected.get(cls, 0) + 1
    assert k["by_class"] == dict(sorted(expected.items()))


def test_text_report_and_kernel_selection_by_demangled_name():
    res = _run(str(FIXTURES / "kernels.sm_80.nvdisasm.sass"), "--kernel", "reduce_sum<float>")
    assert res.exit_code == 0, res.output
    assert "_Z10reduce_sumIfEvPKT_PS0_i" in res.stdout and "1 kernel" in res.stdout
    assert "control: none in this listing" in res.stdout      # nvdisasm -c prints no encodings


def test_gt200_listing_uses_the_gt200_table():
    res = _run(str(FIXTURES / "teg_listing3.sass"), "--json")
    assert res.exit_code == 0, res.output
    kernels = json.loads(res.stdout)["kernels"]
    assert [k["arch"] for k in kernels] == ["sm_13", "sm_13"]
    assert kernels[0]["instructions"] == 25 and kernels[0]["unknown_opcodes"] == {}


def test_unknown_opcode_is_a_warning_and_strict_makes_it_an_error():
    # the report is complete, but a run that met unknown opcodes never exits 0 (1 = report with
    # unknown opcodes, 2 = error)
    res = _run("-", "--json", stdin=UNKNOWN_LISTING)
    assert res.exit_code == 1
    (k,) = json.loads(res.stdout)["kernels"]
    assert k["unknown_opcodes"] == {"FROB.X": 2} and k["by_class"]["unknown"] == 2
    assert "FROB.X x2" in res.stderr
    res = _run("-", "--strict", stdin=UNKNOWN_LISTING)
    assert res.exit_code == 2 and "FROB.X" in res.stderr and res.stderr.startswith("teg: error:")


def test_machine_override():
    res = _run(str(FIXTURES / "kernels.sm_90.sass"), "--json", "--kernel", "saxpy", "--machine", "sm_80")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["kernels"][0]["machine"] == "sm_80"


@pytest.mark.parametrize("args,stdin,message", [
    (["nonexistent.sass"], None, "nonexistent.sass"),
    (["-"], "\tcode for sm_90\n\t\tFunction : k\n  /*0000*/ IADD3 R1, R2, R999 ;\n", "<stdin>:3"),
    ([str(FIXTURES / "kernels.sm_90.sass"), "--kernel", "nope"], None, "no kernel named 'nope'"),
    (["-"], "", "no SASS kernels"),
])
def test_errors_print_one_line_and_exit_2(args, stdin, message):
    res = _run(*args, stdin=stdin)
    assert res.exit_code == 2
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("arch", (75, 80, 86, 89, 90, 100, 120))
def test_no_unknown_opcodes_in_any_fixture(arch):
    """Acceptance: every opcode nvcc 13 emitted for the fixtures is classified by the table
    teg.machine.for_arch suggests."""
    res = _run(str(FIXTURES / f"kernels.sm_{arch}.sass"), "--json")
    assert res.exit_code == 0, res.output
    kernels = json.loads(res.stdout)["kernels"]
    assert kernels and all(k["machine"] and k["unknown_opcodes"] == {} for k in kernels)
    assert "unknown" not in res.stderr
