"""How much of its wait for the receiver a reduce sender sees, per channel and size, measured.

A reduce sender's call ends after its own gap, plus a share q of the time until its parent takes
its message in (:func:`collat.model.forest.osu_rank_times`): q = 0 when the send completes
locally (eager), 1 when it completes with the receive (rendezvous). Neither holds between ranks
of one node: the senders of a flat fan-in over the study's intra-node channels each see about
half of their wait up to 64 B and from 4 to 128 KiB, a fifth to a third between, where a network
sender sees none up to 128 KiB (benchmarks/README.md). The NBFT stage measures exactly that fan-in, per channel: its reduce avg
is the mean over the root and the senders. So q is read from it: the model prices each measured
flat fan-in twice, with q = 0 and q = 1, and q is the least-squares share (relative errors, over
the measured P) between the two that gives the measured avg. No collective measurement enters:
an algorithm nobody measured is priced with it.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from collat.model.costs import ChannelCosts
from collat.model.forest import flat_trees
from collat.model.openmpi_mode import evaluate


def flat_fanins(costs: ChannelCosts, channel: int, P_values) -> tuple[np.ndarray, np.ndarray]:
    """(mean rank time with q = 0, with q = 1) [P, S] of reduce flat trees of P ranks whose P - 1
    senders all talk to the root over ``channel`` (an index of ``costs.channels``), at costs' sizes:
    the model's price of the NBFT stage's runs."""
    forest, counts = flat_trees(P_values, channel, len(costs.channels))
    means = []
    for q in (0.0, 1.0):
        probe = copy.copy(costs)  # the same costs, every sender waiting q of its wait
        probe.wait_shares = np.full(costs.p2p.shape, q)
        means.append(evaluate(forest, counts, probe, "reduce")[1])
    return means[0], means[1]


def wait_shares(costs: ChannelCosts, medians: pd.DataFrame, operation: str = "reduce") -> np.ndarray:
    """q [K, S] at ``costs``' channels and sizes from the nbft stage's median table
    (:func:`collat.nbft.gamma.median_table`, its ``operation`` avg rows): per channel, the share that
    makes the model's flat fan-ins (:func:`flat_fanins`) meet the measured avg over the measured P
    (weighted least squares on relative errors, clipped to [0, 1]). A size takes the measurement of
    the nearest measured size at or below it (below every measured size, the smallest), scaled by
    the ratio of the channel's point-to-point times, as the NBFT table is. Runs of more ranks than
    the costs price fan-outs for (the config's machine) are left out. NaN where a channel has no
    measurement
    (:meth:`ChannelCosts.waits` then applies its eager/rendezvous rule)."""
    K, S = costs.p2p.shape
    out = np.full((K, S), np.nan)
    avg = medians[(medians["operation"] == operation) & (medians["target"] == "avg")]
    for k, channel in enumerate(costs.channels):
        measured = avg[avg["channel"] == channel].pivot_table(index="P", columns="size", values="latency")
        measured = measured[[m for m in measured.columns if measured[m].notna().any()]]
        if costs.table_by_receivers is not None:  # fan-outs the costs price (the machine's cores, config)
            measured = measured[measured.index - 1 < costs.table_by_receivers.shape[1]]
        if measured.empty:
            continue
        known = measured.columns.to_numpy(dtype=float)
        near = known[np.clip(np.searchsorted(known, costs.sizes, side="right") - 1, 0, len(known) - 1)]
        scale = np.ones(S)
        off = near != costs.sizes
        if off.any():  # a size not measured: without point-to-point curves, nothing to scale by
            scale[off] = np.nan if costs.curves is None else costs.curves[k](costs.sizes[off]) / costs.curves[k](near[off])
        y = measured[near].to_numpy() * scale[None, :]  # [P, S]
        a0, a1 = flat_fanins(costs, k, measured.index)
        d, r = a1 - a0, y - a0
        w = np.where(np.isfinite(y) & (y > 0), 1.0 / np.where(y > 0, y, 1.0) ** 2, 0.0)
        d, r = np.where(w > 0, d, 0.0), np.where(w > 0, r, 0.0)
        den = (w * d * d).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[k] = np.where(den > 0, np.clip((w * d * r).sum(axis=0) / den, 0.0, 1.0), np.nan)
    return out
