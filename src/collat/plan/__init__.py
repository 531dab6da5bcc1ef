"""Stage plan (and measure): which OSU launches to make next, and how to run them.

``design``: the launches a machine allows (candidate P, the placement's boundaries, the point-to-
point and NBFT launches the model needs) and the first design for a machine nobody measured;
``acquisition``: the next launches, where a measurement most lowers the expected regret of the
algorithm choice and the model's expected error; ``campaign``: one round of both; ``jobs``: the
OSU command of a launch, SLURM batch scripts and the ingest's manifest of their logs.
"""
