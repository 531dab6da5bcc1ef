"""The paper mode: the collective study's model as its code ran it (study eq. 2-3, 10-11).

Level-synchronous stages (:func:`staged_forest`, study eq. 2-3): a stage lasts as long as the
slowest fan-out of its level, n_s segments pipeline through the L levels in L + n_s - 1 stages, and
each stage costs the whole message's fan-out divided by n_s (n_s from config, tuned per case by
the study). A fan-out whose receivers sit on mixed channels is folded onto the highest channel
(:func:`folded_fanout`, study eq. 10-11) and costed with that channel's NBFT line of the avg column
(study eq. 6), from the study's own OLS Hockney fit (the pt2pt stage's ``hockney_study.parquet``).
It predicts avg only, as the study did.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from collat.model import kernels
from collat.model.shapes.openmpi import tree_spec
from collat.model.costs import ChannelCosts
from collat.model.forest import Forest, Placements, census_rows
from collat.model.options import ModelOptions
from collat.model.predict import blocks_frame, curve_blocks


def folded_fanout(counts: np.ndarray, costs: ChannelCosts) -> np.ndarray:
    """Cost in us of each parent's fan-out, [n_parents, S], from its children per channel
    [n_parents, K], by the collective study's eq. 11 as its code ran it.

    c_max = the highest channel present in config order; N_eq = N_max + sum_j floor(N_j / Q_max,j)
    with Q_max,j = T_p2p(c_max) / T_p2p(c_j) (study eq. 10); cost = the NBFT line of c_max with
    N_eq receivers, alpha + beta N_eq (study eq. 6). A parent without children costs 0.
    """
    counts = np.asarray(counts)
    n, K = counts.shape
    S = costs.p2p.shape[1]
    present = counts > 0
    s_idx = np.arange(S)[None, :]
    order = np.where(present, np.arange(K)[None, :], -1)
    cmax = np.repeat(order.max(axis=1)[:, None], S, axis=1)  # [n, S]
    t_max = costs.p2p[cmax, s_idx]
    q = t_max[:, None, :] / costs.p2p[None, :, :]  # [n, K, S]
    folded = np.floor(counts[:, :, None] / q)
    mine = np.arange(K)[None, :, None] == cmax[:, None, :]
    n_eq = np.where(mine, counts[:, :, None], folded).sum(axis=1)
    line = costs.alpha[cmax, s_idx] + costs.beta[cmax, s_idx] * n_eq
    return np.where(present.any(axis=1)[:, None], line, 0.0)


def staged_forest(forest: Forest, w: np.ndarray, segments: int = 1, inverse: np.ndarray | None = None) -> np.ndarray:
    """The collective study's eq. 2-3 for every tree of a forest, [T, S]: level-synchronous stages,
    n_s segments pipelined.

    Stage i (0-based, i < L + n_s - 1) runs the fan-outs of levels max(0, i - n_s + 1) .. min(i, L - 1)
    concurrently and lasts as long as the slowest of them; ``w`` holds every node's fan-out cost at
    the segment (0 for leaves), or with ``inverse`` every census row's, node n's being w[inverse[n]]
    (:func:`~collat.model.forest.census_rows`).
    """
    T, S = len(forest.sizes), w.shape[1]
    L1, level = forest.tree_memo("levels", lambda: _levels(forest))
    inverse = np.arange(len(level), dtype=np.int64) if inverse is None else np.asarray(inverse, dtype=np.int64)
    level_max = np.zeros((T * L1, S))
    kernels.group_max(level, inverse, np.ascontiguousarray(w, dtype=float), level_max)
    level_max = level_max.reshape(T, L1, S)
    pad = np.concatenate([level_max, np.zeros((T, segments - 1, S))], axis=1)
    window = pad.copy()
    for o in range(1, segments):  # stage i = max over levels i - o, o < n_s
        window[:, o:] = np.maximum(window[:, o:], pad[:, :-o])
    return window.sum(axis=1)


def _levels(forest: Forest) -> tuple:
    """(levels per tree L, every node's row tree x L + level) of :func:`staged_forest`."""
    d = forest.depth
    L1 = int(d.max(initial=0)) + 1
    return L1, (forest.tree_id * L1 + d).astype(np.int64)


def staged(parent: np.ndarray, w: np.ndarray, segments: int = 1) -> np.ndarray:
    """The collective study's eq. 2-3 for one tree ([S]); see :func:`staged_forest`."""
    return staged_forest(Forest([np.asarray(parent)]), w, segments)[0]


def evaluate_staged(forest: Forest, counts: np.ndarray, costs: ChannelCosts, segments: int = 1) -> np.ndarray:
    """Completion [T, S] of every tree of a forest: the fan-outs costed at one segment (the whole
    message's cost over n_s, as the study's code) by :func:`folded_fanout`, then staged."""
    distinct, inverse = forest.memo("census_rows", lambda: census_rows(counts))
    w = folded_fanout(distinct, costs.scaled(1.0 / segments) if segments > 1 else costs)
    return staged_forest(forest, w, segments, inverse)


class PaperMode:
    """Predictions of the collective study's model (``costs``: operation -> :class:`ChannelCosts`)."""

    name = "paper"

    def __init__(self, costs: dict[str, ChannelCosts], options: ModelOptions):
        self.costs, self.options = costs, options

    def algorithms(self, operation: str) -> list[int]:
        """The algorithms the study modelled (config ``model.paper.algorithms``)."""
        return sorted({int(s["algorithm"]) for s in self.options.paper.algorithms if s["operation"] == operation})

    def curve(self, operation: str, algorithm: int, mapping: str, P_values, placements: Placements) -> pd.DataFrame:
        """:meth:`blocks` as a frame."""
        return blocks_frame(self.blocks(operation, algorithm, mapping, P_values, placements))

    def blocks(self, operation: str, algorithm: int, mapping: str, P_values, placements: Placements,
               shapes: dict | None = None) -> list[dict]:
        """avg of one (operation, algorithm, mapping) at every P of ``P_values`` and every size
        (:func:`~collat.model.predict.curve_blocks`; ``shapes`` is not used: each curve its own staged forest)."""
        costs = self.costs[operation]
        Pv = np.asarray([int(p) for p in P_values])
        spec = tree_spec(self.options.paper.algorithms, operation, algorithm)
        if spec is None or len(Pv) == 0:
            return []
        n_s = self.options.paper.segments(spec, mapping)
        forest, counts = placements.census(spec, Pv, mapping, costs.index, self.options.unpinned_channel)
        done = evaluate_staged(forest, counts, costs, n_s)
        shape = (len(Pv), len(costs.sizes))
        return curve_blocks(Pv, costs.sizes, {"avg": done}, np.full(shape, spec["tree"], dtype=object), n_s,
                            np.full(shape, int(algorithm)))
