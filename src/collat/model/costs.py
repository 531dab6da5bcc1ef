"""What one fan-out costs on each channel, read from the earlier stages' outputs.

Nothing is fitted here: the point-to-point lines are the pt2pt stage's Hockney fits (one file per
weighting: ``results/pt2pt/hockney.parquet`` and the study's OLS fit ``hockney_study.parquet``), the
NBFT lines are the nbft stage's fits (study eq. 6, ``results/nbft/fits.csv``) and the measured NBFT
cost per receiver count is the nbft stage's median table (``results/nbft/medians.parquet``,
:func:`collat.nbft.gamma.median_table`). The model only evaluates them at its sizes.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from collat import InputError
from collat.pt2pt.hockney import t_p2p, t_p2p_curve


class ChannelCosts:
    """What one fan-out costs on each channel, at a list of sizes (arrays over [K channels, S sizes]).

    ``p2p[k, s]`` = T_p2p^k(size_s) (study eq. 5); ``alpha``, ``beta``: the NBFT line of channel k
    (study eq. 6), T_NBFT^k(n + 1, m) = alpha + beta n for n receivers. ``table`` (given as [K, S, n])
    holds T_NBFT^k with n receivers as measured (median over runs, interpolated over the measured P)
    up to the largest measured NBFT, the line beyond, 0 for n = 0; it is kept as
    ``table_by_receivers`` [K, n, S] so that the rows of one receiver count are contiguous.
    ``link_table`` [K, n, S] prices n messages on a shared link (openmpi mode's ``shared_link``).
    """

    def __init__(self, channels: list[str], sizes, p2p, alpha, beta, table=None, curves=None, idle_table=None):
        self.channels = list(channels)
        self.curves = curves  # T_p2p of each channel at any size (the Hockney fits), for schedules
        self.index = {c: i for i, c in enumerate(self.channels)}
        self.sizes = np.asarray(sizes, dtype=float)
        self.p2p, self.alpha, self.beta = (np.asarray(a, dtype=float) for a in (p2p, alpha, beta))
        self.table_by_receivers = None if table is None else np.ascontiguousarray(np.transpose(table, (0, 2, 1)))
        # the same from the NBFT runs that leave every node a core idle, where some runs fill one and
        # that changes a fan-out of fewer receivers than a node has cores (None: no difference)
        self.idle_table = None if idle_table is None else np.ascontiguousarray(np.transpose(idle_table, (0, 2, 1)))
        self.link_table = None
        self.overhead = 0.0  # a per-call constant added to every prediction (the calibrated mode's)
        # a reduce sender's wait for its receiver (osu_rank_times): eager up to eager_limit bytes
        self.eager_limit, self.wait_eager, self.wait_rendezvous = np.inf, 0.0, 1.0
        self.wait_shares = None  # [K, S] measured per channel (collat.model.waits), NaN: the rule above
        self.memory_contention = 0.0  # us per byte per concurrent message in one socket (shared_memory)
        self.forward = 0.0  # us between an inner non-root rank's own message and its sends (osu_rank_times)
        self.skew = 0.0  # us per rank of the fullest other node than the root's, added to a call (calibrated mode)
        self.release = 0.0  # us per message of the barrier's last-round queue: the spread of the starts (calibrated)
        self.full = 1.0  # the factor a call slows by where some node has no idle core (calibrated mode)
        # the part of each gap beta that moves bytes [K, S] (None: none), and the resource each channel's
        # bytes move through (0: the node's memory, 1: its network link): a fan-out's receivers on one
        # resource share it and are served together, and the two resources move their bytes at once
        self.gap_bytes = None
        self.group = np.array([1 if c == "node" else 0 for c in self.channels], dtype=np.int64)
        self.flat_runs = None  # the NBFT stage's median table of this operation (channel, P, size, target, latency)

    def bytes_part(self) -> np.ndarray:
        """:attr:`gap_bytes`, zeros when there is none, [K, S]."""
        if self.gap_bytes is None:
            return np.zeros_like(self.beta)
        return np.ascontiguousarray(np.broadcast_to(self.gap_bytes, self.beta.shape), dtype=float)

    @classmethod
    def from_stage_outputs(cls, hockney: pd.DataFrame, nbft_fits: pd.DataFrame, operation: str, target: str,
                           channels: list[str], sizes, medians: pd.DataFrame | None = None,
                           max_receivers: int = 0, cores_per_node: int | None = None) -> "ChannelCosts":
        """From the pt2pt stage's Hockney fits, the nbft stage's lines and (optionally) its median
        table (:func:`collat.nbft.gamma.median_table`), for one operation and target (avg or max).
        With ``cores_per_node``, the table of the runs that leave every node a core idle
        (:func:`fills_node`) is kept apart (:attr:`idle_table`) where it differs."""
        sizes = np.asarray(sizes, dtype=float)
        f = nbft_fits[(nbft_fits["operation"] == operation) & (nbft_fits["target"] == target)]
        have = [c for c in channels if c in set(f["channel"]) and c in set(hockney["channel"])]
        if not have:
            raise InputError(
                "results/nbft/fits.csv", None,
                f"an NBFT fit of {operation} {target} on one of the channels {list(channels)} that have a point-to-point "
                f"fit (results/pt2pt/hockney.csv: {sorted(set(hockney['channel']))}): the model prices a fan-out with "
                f"its channel's NBFT; add flat-tree osu_{operation} logs with every receiver on one channel (data.raw "
                f"pattern nbft/{{operation}}/{{channel}}/np{{P}}.txt), or let nbft.unmeasured_slope assume a line",
                f"NBFT fits on {sorted(set(f['channel']))}")
        p2p = np.vstack([t_p2p(hockney, c, sizes) for c in have])
        alpha, beta = np.empty_like(p2p), np.empty_like(p2p)
        nearest = []
        for k, c in enumerate(have):
            g = f[f["channel"] == c].sort_values("size")
            measured = g["size"].to_numpy(float)
            # the NBFT line of the nearest measured size at or below (the smallest for tiny sizes),
            # scaled by T_p2p(m) / T_p2p(m~): gamma(P, m~) T_p2p(m), exact at measured sizes
            j = np.clip(np.searchsorted(measured, sizes, side="right") - 1, 0, len(measured) - 1)
            scale = p2p[k] / t_p2p(hockney, c, measured[j])
            alpha[k] = g["alpha_us"].to_numpy()[j] * scale
            beta[k] = g["beta_us"].to_numpy()[j] * scale
            nearest.append((measured[j], scale))
        table = idle = None
        if medians is not None and max_receivers > 0:
            table = receiver_table(alpha, beta, max_receivers)
            idle = table.copy()
            d = medians[(medians["operation"] == operation) & (medians["target"] == target)]
            n = np.arange(max_receivers + 1, dtype=float)
            for k, c in enumerate(have):
                med = d[d["channel"] == c].set_index(["size", "P"])["latency"].sort_index()
                for si, (m_near, scale) in enumerate(zip(*nearest[k])):
                    if m_near not in med.index.get_level_values(0):
                        continue
                    series = med.loc[m_near]
                    recv = series.index.to_numpy(float) - 1.0
                    inside = n <= recv.max()
                    table[k, si, inside] = np.interp(n[inside], recv, series.to_numpy()) * scale
                    spare = ~fills_node(c, series.index.to_numpy(), cores_per_node)
                    idle[k, si] = table[k, si] if spare.all() else _continued(
                        table[k, si], n, recv[spare], series.to_numpy()[spare] * scale, beta[k, si])
            table[:, :, 0] = idle[:, :, 0] = 0.0
            below = n < (cores_per_node or 0)  # the fan-outs a collective that leaves a core idle can have
            if not np.array_equal(table[:, :, below], idle[:, :, below]):
                return cls(have, sizes, p2p, alpha, beta, table, [t_p2p_curve(hockney, c) for c in have], idle)
        return cls(have, sizes, p2p, alpha, beta, table, [t_p2p_curve(hockney, c) for c in have])

    def idle(self) -> "ChannelCosts":
        """These costs with :attr:`idle_table` as the fan-out table (itself where there is none): what
        a collective that leaves every node a core idle pays."""
        if self.idle_table is None:
            return self
        out = copy.copy(self)
        out.table_by_receivers, out.idle_table = self.idle_table, None
        return out

    def waits(self) -> np.ndarray:
        """The share of the wait for its receiver a reduce sender sees, [K, S]: :attr:`wait_shares`
        where measured (the NBFT stage's flat fan-ins, :func:`collat.model.waits.wait_shares`), else
        ``wait_eager`` up to ``eager_limit`` bytes and ``wait_rendezvous`` above, on every channel."""
        rule = np.broadcast_to(np.where(self.sizes > self.eager_limit, self.wait_rendezvous, self.wait_eager),
                               self.p2p.shape)
        if self.wait_shares is None:
            return np.ascontiguousarray(rule, dtype=float)
        shares = np.broadcast_to(self.wait_shares, self.p2p.shape)
        return np.ascontiguousarray(np.where(np.isnan(shares), rule, shares), dtype=float)

    def p2p_at(self, k: np.ndarray, size: np.ndarray) -> np.ndarray:
        """T_p2p of channel index k[i] at sizes size[i, :] (any sizes, from the Hockney fits)."""
        if self.curves is None:
            raise ValueError("these channel costs carry no Hockney fits: message schedules cannot be priced")
        out = np.empty(size.shape)
        for kk in np.unique(k):
            rows = k == kk
            out[rows] = self.curves[kk](size[rows])
        return out

    def scaled(self, factor: float) -> "ChannelCosts":
        """NBFT costs multiplied by ``factor`` (same point-to-point times, so the same Q)."""
        out = ChannelCosts(self.channels, self.sizes, self.p2p, self.alpha * factor, self.beta * factor,
                           curves=self.curves)
        out.eager_limit, out.wait_eager, out.wait_rendezvous = self.eager_limit, self.wait_eager, self.wait_rendezvous
        out.wait_shares = self.wait_shares
        for name in ("table_by_receivers", "link_table"):
            value = getattr(self, name)
            setattr(out, name, None if value is None else value * factor)
        return out


def fills_node(channel: str, P, cores_per_node: int | None) -> np.ndarray:
    """Whether an NBFT run of ``P`` ranks on ``channel`` leaves some node no idle core: the root and
    its receivers share one node except on the node channel, whose P - 1 receivers fill another
    node first. All False without ``cores_per_node``."""
    P = np.asarray(P)
    if cores_per_node is None:
        return np.zeros(P.shape, dtype=bool)
    return (P - 1 if channel == "node" else P) >= cores_per_node


def full_node_slowdown(runs: pd.DataFrame | None, target: str, channels: list[str],
                       cores_per_node: int | None) -> float:
    """How many times slower the NBFT stage's flat runs that fill a node (:func:`fills_node`) ran
    than those that leave every core idle predict at the same receivers (the line through the two
    largest of them, as :func:`_continued` continues them): the median over channels and sizes of
    the first full run's latency over that line, at least 1. 1 where no channel has a full run and
    two idle ones. ``runs``: the stage's median table of one operation (channel, P, size, target,
    latency: :attr:`ChannelCosts.flat_runs`)."""
    if runs is None or cores_per_node is None:
        return 1.0
    runs = runs[(runs["target"] == target) & runs["channel"].isin(channels)]
    ratios = []
    for (channel, _), g in runs.groupby(["channel", "size"], sort=True):
        P, latency = g["P"].to_numpy(), g["latency"].to_numpy(float)
        full = fills_node(channel, P, cores_per_node)
        if not full.any() or (~full).sum() < 2:
            continue
        first = np.argmin(np.where(full, P, np.iinfo(np.int64).max))
        n = np.array([P[first] - 1.0])
        line = _continued(np.zeros(1), n, P[~full] - 1.0, latency[~full], 0.0)[0]
        if line > 0:
            ratios.append(latency[first] / line)
    return max(1.0, float(np.median(ratios))) if ratios else 1.0


def _continued(row: np.ndarray, n: np.ndarray, recv: np.ndarray, values: np.ndarray, slope: float) -> np.ndarray:
    """A table row [n] read from the runs ``recv`` (receivers) with ``values`` alone: interpolated
    up to the largest, continued beyond it along the line through the two largest (a slope of at
    least 0; the NBFT line's ``slope`` where one run is left), ``row`` where none is."""
    if len(recv) == 0:
        return row
    out = row.copy()
    inside = n <= recv.max()
    out[inside] = np.interp(n[inside], recv, values)
    last = np.argsort(recv)[-2:]
    step = ((values[last[1]] - values[last[0]]) / (recv[last[1]] - recv[last[0]]) if len(last) == 2
            else max(slope, 0.0))
    out[~inside] = values[last[-1]] + max(step, 0.0) * (n[~inside] - recv[last[-1]])
    return out


def receiver_table(alpha: np.ndarray, beta: np.ndarray, max_receivers: int) -> np.ndarray:
    """T_NBFT with n = 0 .. max_receivers receivers on the line alpha + max(beta, 0) n, [K, S, n]
    (study eq. 6; a negative slope is taken as flat)."""
    n = np.arange(max_receivers + 1, dtype=float)
    return alpha[:, :, None] + np.maximum(beta, 0.0)[:, :, None] * n[None, None, :]


def paper_costs(hockney_study: pd.DataFrame, nbft_fits: pd.DataFrame, target: str, channels: list[str],
                sizes) -> dict[str, ChannelCosts]:
    """operation -> the paper mode's costs: the study's OLS Hockney fit and NBFT lines of ``target``."""
    return {op: ChannelCosts.from_stage_outputs(hockney_study, nbft_fits, op, target, channels, sizes)
            for op in ("bcast", "reduce")}


def openmpi_costs(hockney: pd.DataFrame, nbft_fits: pd.DataFrame, medians: pd.DataFrame, options,
                  channels: list[str], sizes, max_receivers: int,
                  cores_per_node: int | None = None) -> dict[str, ChannelCosts]:
    """operation -> the openmpi mode's costs (``options``: :class:`~collat.model.options.OpenMPIOptions`):
    the pt2pt stage's fit, the NBFT of ``nbft_target`` measured where measured, a shared link's
    queue priced with ``link_target``, and (reduce) each channel's share of a sender's wait that its
    NBFT runs measured (:func:`collat.model.waits.wait_shares`)."""
    out = {}
    for op in ("bcast", "reduce"):
        c = ChannelCosts.from_stage_outputs(hockney, nbft_fits, op, options.nbft_target, channels, sizes, medians,
                                            max_receivers, cores_per_node)
        c.eager_limit = options.eager_limit
        if medians is not None:  # the NBFT runs themselves: flat trees the calibration also fits
            c.flat_runs = medians[medians["operation"] == op].reset_index(drop=True)
        if op == "reduce" and medians is not None:  # a sender's share of its wait, from its NBFT runs
            from collat.model.waits import wait_shares

            c.wait_shares = wait_shares(c, medians, op)
        if options.link_target != options.nbft_target:
            c.link_table = ChannelCosts.from_stage_outputs(hockney, nbft_fits, op, options.link_target, channels,
                                                           sizes, medians, max_receivers).table_by_receivers
        out[op] = c
    return out
