"""Segment sizes: what cutting a forced algorithm's messages into segments would change.

OpenMPI's fixed rules and a forced algorithm without ``coll_tuned_<op>_algorithm_segmentsize`` send
whole messages; with a segment size the trees OpenMPI cuts (facts: ``segmented``) pipeline them
(:func:`collat.model.openmpi_mode.pipelined`). Nothing measured says what a segment size costs on a
machine measured without one: the model's ratio of the segmented price to the whole-message price
is what the selection may bet on (a hybrid prediction times that ratio), and says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from collat import UserError

SEGMENT_COLUMNS = ["mode", "operation", "algorithm", "mapping", "P", "size", "target", "segsize", "ratio"]
KEYS = ["mode", "operation", "algorithm", "mapping", "P", "size", "target"]


def segment_ratios(modes: list, placements, algorithms: dict, P_values, segment_sizes, sizes,
                   processes: int = 1) -> pd.DataFrame:
    """Per mode, forced algorithm OpenMPI cuts into segments, mapping, P, size and target: its price
    with segments of each of ``segment_sizes`` bytes over its price with whole messages
    (:data:`SEGMENT_COLUMNS`; 1 where a message is one segment). Each segment size must be one of
    the grid's ``sizes`` (the costs are priced there): else one line naming config
    ``model.segment_sizes``."""
    from collat.model.predict import predict_all

    wrong = [int(s) for s in segment_sizes if int(s) not in set(int(m) for m in sizes)]
    if wrong:
        raise UserError(f"config key model.segment_sizes: {wrong[0]} is not a size of the grid (the measured sizes "
                        f"and model.extra_sizes: {', '.join(str(int(m)) for m in sizes)})")
    if not len(segment_sizes) or not modes:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in SEGMENT_COLUMNS})
    whole = predict_all(modes, placements, algorithms, P_values, processes, segsize=0)
    parts = []
    for s in segment_sizes:
        cut = predict_all(modes, placements, algorithms, P_values, processes, segsize=int(s))
        if not whole[KEYS].equals(cut[KEYS]):  # the same curves in the same order
            raise ValueError("segmented and whole-message grids differ in their rows")
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = cut["predicted"].to_numpy(float) / whole["predicted"].to_numpy(float)
        parts.append(whole[KEYS].assign(segsize=int(s), ratio=ratio))
    return pd.concat(parts, ignore_index=True)[SEGMENT_COLUMNS]
