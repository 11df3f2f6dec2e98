"""`teg validate report`: error conventions (checked against the TEG report's printed Tables 2–5),
MAPE per group and model on the recorded synthetic sample (hand-computed), text/JSON/CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from teg.cli import main
from teg.validate import report as R

DATA = Path(__file__).parent / "data" / "validation"
MEASURED = DATA / "sample_measured.json"
PREDICTED = DATA / "sample_predicted.json"


def test_teg_report_tables_reproduce_printed_errors():
    """TEG's tables divide by the prediction: (52590 − 55605) / 52590 = −5.73 %."""
    doc = json.loads((DATA / "teg_report_tables.json").read_text())
    rows = R.join(doc["measured"], doc["predicted"])
    assert len(rows) == 16
    for r in rows:
        k = [c["case"] for c in doc["measured"]["cases"]].index(r.case)
        ws = [x["warps"] for x in doc["measured"]["cases"][k]["results"]]
        printed = doc["printed_error_percent"][r.case][ws.index(r.warps)]
        assert 100 * R.error(r.predicted["teg_2011"], r.measured, "predicted") == pytest.approx(printed, abs=0.006)
    # the usual convention differs: (52590 − 55605) / 55605
    assert 100 * R.error(52590, 55605, "measured") == pytest.approx(-5.422, abs=0.001)


def test_mape_on_recorded_sample_by_hand():
    meas = R.load_document(MEASURED, "measured")
    pred = R.load_document(PREDICTED, "predicted")
    doc = R.build(meas, pred)
    eng, mwp = doc["models"]["engine"], doc["models"]["mwp_cwp"]
    # engine: +10, -10, +10, +10, +30 %  -> 14 % overall; groups latency 10, teg_app 10, bank 30
    assert eng["mape"] == pytest.approx(14.0)
    assert (eng["n"], eng["missing"]) == (5, 0)
    assert {g: v["mape"] for g, v in eng["groups"].items()} == pytest.approx({"latency": 10.0, "teg_app": 10.0, "bank": 30.0})
    # mwp_cwp: -25, +25, -20 % (two rows missing) -> 23.33 %
    assert mwp["mape"] == pytest.approx(70 / 3)
    assert (mwp["n"], mwp["missing"]) == (3, 2)
    assert mwp["groups"]["bank"] == {"mape": None, "n": 0}
    assert list(doc["models"]) == ["engine", "mwp_cwp"]
    assert doc["measured_synthetic"] is True
    row = next(r for r in doc["rows"] if r["case"] == "lat_ffma_n32" and r["warps"] == 2)
    assert row["error"]["engine"] == pytest.approx(-0.1)


def test_speedup_is_workload_normalised():
    # perfect scaling: time constant while warps double -> speedup = W
    assert R.speedup([1, 2, 4], [100.0, 100.0, 100.0]) == [1.0, 2.0, 4.0]
    # TEG Table 2 measured: 16 warps take 186958 vs 55605 for one -> 16 * 55605 / 186958
    assert R.speedup([16, 1], [186958.0, 55605.0])[1] == pytest.approx(16 * 55605 / 186958)


def test_text_report_lists_models_groups_and_rows():
    doc = R.build(R.load_document(MEASURED, "measured"), R.load_document(PREDICTED, "predicted"))
    text = R.render_text(doc)
    assert "synthetic" in text
    head = next(line for line in text.splitlines() if line.startswith("MAPE"))
    assert head.split()[2:6] == ["latency", "bank", "teg_app", "overall"]   # suite group order
    assert any(line.split()[:2] == ["engine", "10.0"] for line in text.splitlines())
    assert "matmul_abt_conflict" in text and "+10.0%" in text


def test_cli_report_json_and_plots(tmp_path):
    res = CliRunner().invoke(main, ["validate", "report", str(MEASURED), "-p", str(PREDICTED), "--json",
                                    "--plots", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["models"]["engine"]["mape"] == pytest.approx(14.0)
    assert doc["models"]["mwp_cwp"]["mape"] == pytest.approx(70 / 3)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib" in doc["plots_note"]
    else:
        assert {Path(p).name for p in doc["plots"]} >= {"pred_vs_measured.png", "scaling_teg_app.png"}


def test_bad_inputs_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cases": [{"case": "x", "results": [{"warps": 1, "cycles": -3}]}]}')
    with pytest.raises(R.ValidationDataError, match=r"bad.json: x: results\[0\]: 'cycles' must be a positive"):
        R.load_document(bad, "measured")
    bad.write_text("{not json")
    with pytest.raises(R.ValidationDataError, match=r"bad.json:1: not valid JSON"):
        R.load_document(bad, "measured")
    with pytest.raises(R.ValidationDataError, match="is a 'predicted' document"):
        R.load_document(PREDICTED, "measured")
    res = CliRunner().invoke(main, ["validate", "report", str(PREDICTED), "-p", str(PREDICTED)])
    assert res.exit_code == 2 and res.output.startswith("teg: error:")
    other = tmp_path / "other.json"
    other.write_text('{"kind": "predicted", "cases": [{"case": "zzz", "results": [{"warps": 1, "predicted": {"engine": 5}}]}]}')
    with pytest.raises(R.ValidationDataError, match="no measured case has a prediction"):
        R.build(R.load_document(MEASURED, "measured"), R.load_document(other, "predicted"))
    with pytest.raises(R.ValidationDataError, match="error basis"):
        R.error(1.0, 2.0, "sideways")
