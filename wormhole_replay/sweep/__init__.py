"""Sweeps: many configurations of a run at once, as Dask tasks, sharing one memo database.

``spec`` reads and checks the TOML spec, ``points`` resolves each point (its id, its task, the
checks its run would make), ``worker`` runs a point in a worker process, ``run`` drives the Dask
cluster and writes the sweep's folder, ``table`` makes its results table and ``report`` its HTML
report; ``command`` is ``wormhole-replay sweep``. Nothing is imported here, so that the command
line stays quick to start. From Python::

    from wormhole_replay.sweep.points import resolve
    from wormhole_replay.sweep.run import open_client, run_sweep
    from wormhole_replay.sweep.spec import load_spec

    spec = load_spec("sweep.toml")
    points = resolve(spec)
    with open_client(workers=2) as (client, where):
        summary = run_sweep(spec, points, Path("out/sweep"), client, memo_db="/abs/path/memo.sqlite")
"""
