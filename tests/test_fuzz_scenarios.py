"""The scenario classes of the fuzz campaign (benchmarks/fuzz_scenarios.py: concurrency, signals,
caches, odd paths, FIFOs, devices, symlinks, memory caps; issue 37) run a few scenarios each with
fixed seeds (one of each here): every one ends clean (``ok`` or a one-line refusal), with no data lost, no stale result,
no traceback, no hang and nothing leaked. ``python3 benchmarks/fuzz_campaign.py --scenarios N`` runs
N of each class."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _scenarios():
    spec = importlib.util.spec_from_file_location("teg_fuzz_scenarios", ROOT / "benchmarks" / "fuzz_scenarios.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


FS = _scenarios()
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="scenarios use /proc, FIFOs and RLIMIT_AS")


@pytest.mark.parametrize("cls", FS.CLASSES)
def test_scenarios_end_clean(tmp_path, cls):
    outcomes = [FS.run_scenario(cls, 37, 0, tmp_path)]
    bad = [(o.name, o.outcome, o.detail) for o in outcomes if o.outcome not in FS.CLEAN]
    assert bad == []
    assert list(tmp_path.iterdir()) in ([], [tmp_path / "big.npz"])      # each scenario cleans its folder
