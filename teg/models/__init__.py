"""teg.models — the published analytical GPU performance models, on the same inputs as the engine.

* :mod:`teg.models.profile` — :class:`KernelProfile` and :func:`profile_from` (Program + trace +
  machine → the counts the papers use);
* :mod:`teg.models.params` — model-only parameters from the machine tables (:func:`params_for`);
* :mod:`teg.models.mwp_cwp` — Hong & Kim, ISCA'09, eqs. (1)–(27);
* :mod:`teg.models.cpa` — Dasgupta's CUDA Performance Analyzer (GT200 transactions), eqs. (16)–(30);
* :mod:`teg.models.mpd_cpd` — Luo & Suda's MPD/CPD model, eqs. (1)–(13);
* :mod:`teg.models.bsp` — Amarís et al.'s BSP-based model, eqs. (3)–(5).

Each model is a pure function ``model(profile, params) -> result`` whose result has ``cycles``
(at the machine clock), ``seconds`` and the model's intermediate metrics (:meth:`metrics`).
"""

from teg.models.bsp import BspResult, bsp
from teg.models.cpa import CpaResult, cpa
from teg.models.mpd_cpd import MpdCpdResult, mpd_cpd
from teg.models.mwp_cwp import MwpCwpResult, mwp_cwp
from teg.models.params import ModelParameterError, ModelParams, params_for
from teg.models.profile import KernelProfile, Period, ProfileError, profile_from

MODELS = {"mwp_cwp": mwp_cwp, "cpa": cpa, "mpd_cpd": mpd_cpd, "bsp": bsp}

__all__ = ["MODELS", "KernelProfile", "Period", "ProfileError", "profile_from", "ModelParams", "ModelParameterError",
           "params_for", "mwp_cwp", "cpa", "mpd_cpd", "bsp", "MwpCwpResult", "CpaResult", "MpdCpdResult", "BspResult"]
