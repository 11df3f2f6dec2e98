"""teg.analysis — experiments built on the engine: :mod:`teg.analysis.whatif` (one mechanism
removed at a time), :mod:`teg.analysis.sweep` (N warps / B blocks on one SM) and
:mod:`teg.analysis.compare`."""
