"""How the engine's Numba kernels are compiled.

Every kernel is cached on disk (``cache=True``) and compiled without Numba's reference counting
(``_nrt=False``: the kernels never allocate, and with it every call took and dropped a reference
on each array argument, 60-70% of the run time).  ``kernel`` is for what only other kernels call:
it has no CPython wrapper, which Numba would otherwise generate and optimise for each of the
hundred-odd kernels (measured: about 15% of the compile time).  ``entry`` is for the few that Python
calls (the event loop, the memo's view, the tests of the queue)."""

from functools import partial

from numba import njit

kernel = partial(njit, cache=True, _nrt=False, no_cpython_wrapper=True)
entry = partial(njit, cache=True, _nrt=False)
