"""teg.analysis — experiments built on the engine: :mod:`teg.analysis.whatif` (one mechanism
removed at a time), :mod:`teg.analysis.sweep` (N warps / B blocks on one SM),
:mod:`teg.analysis.compare`, whole applications (:mod:`teg.analysis.kernel_task`: one kernel in any
process; :mod:`teg.analysis.application`: what they add up to), sweep files
(:mod:`teg.analysis.sweepspec`, its resumable table :mod:`teg.analysis.rowlog`) and the executors
that run many tasks (:mod:`teg.analysis.executors`)."""
