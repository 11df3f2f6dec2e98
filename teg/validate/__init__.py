"""teg.validate — measured ground truth for teg.

* :mod:`teg.validate.suite` — the CUDA validation suite shipped in ``teg/validate/cuda/``
  (micro-benchmarks after the TEG report §3.2.1, bank-conflict / coalescing / channel patterns,
  Hong & Kim's micro-benchmarks, the TEG application cases) and its manifest ``cases.yaml``;
* :mod:`teg.validate.measure` — run it on a local GPU through the CUDA driver (ctypes);
* :mod:`teg.validate.predict` — teg's predictions (emulator trace → engine + analytical models);
* :mod:`teg.validate.report` — per-case error and MAPE per group and model, plots;
* :mod:`teg.validate.calibrate` — fit latency / throughput parameters into a derived machine table.
"""

from teg.validate.suite import SuiteError, load as load_suite

__all__ = ["load_suite", "SuiteError"]
