"""teg.app — whole CUDA programs without a GPU (``teg trace app``): teg's own CUDA runtime
(:file:`cudart.c`, built by :mod:`teg.app.build`) takes the place of ``libcudart.so.13`` in an
unmodified program built with ``nvcc -cudart shared``; :mod:`teg.app.session` answers its requests
(:mod:`teg.app.protocol`) and runs every kernel launch in :mod:`teg.emu` on the program's own
memory (:mod:`teg.app.heap`), reading its fatbinaries (:mod:`teg.app.fatbin`) and describing the
device from a machine table (:mod:`teg.app.device`). :mod:`teg.app.program` refuses what it
cannot run. docs/emulator.md, "Whole programs", describes it.
"""
