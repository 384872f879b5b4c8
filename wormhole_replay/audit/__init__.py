"""Audit: the accelerated (wormhole) simulation of a trace against the full packet-level one.

* :mod:`.compare`: matching flows, collectives and iterations of two runs one to one, and the
  metrics (relative errors and their distribution, what was fast-forwarded, which memo entries
  and jumps touched the worst flows).  Pure pandas/NumPy: no simulation.
* :mod:`.report`: the self-contained HTML report with its matplotlib plots.
* :mod:`.command`: the ``wormhole-replay audit`` subcommand (runs, baseline reuse, outputs).

Nothing heavy is imported here, so that the command line stays quick to start.
"""
