"""The next launches: where one more OSU run most lowers the expected regret of the algorithm choice
and the expected error of the model.

Each candidate collective launch (operation, algorithm, mapping, P) is a point of a curve
(operation, algorithm, mapping). The model's prediction of a cell (the curve at one P and size)
is taken as log-normal around the planning mode's prediction, with a log sd that grows with the
distance, in octaves of P, to the curve's nearest measured P, at the rate of the placement regime
the P lies in where the curve's regimes show their own (:func:`curve_sd`; a curve with no
measurement is at the cap). Measuring a launch brings its curve's sd down around its P. What that
is worth at a cell of the curve (:func:`cell_value`):

* the choice: where the curve's algorithm is not the predicted best, the expected relative gain if
  it is in fact faster than the best of the others (a put on it, struck at that best); where it is
  the predicted best, the expected relative loss if it is in fact slower than the runner-up (a call);
* the prediction: the expected relative error of a log-normal of that sd, sqrt(2 / pi) sd.

A launch's value is the drop of the sum over the cells of its curve (every candidate P, every
size); :func:`next_launches` takes, one at a time, the launch of the largest value (per node-second
when the budget is node-seconds), then lowers its curve's sds and goes on. The sds' three numbers
(noise at a measured P, growth per octave, cap) come from the data where it has enough
(:func:`estimate_uncertainty`), else from config ``plan.uncertainty``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtr

from collat.plan.design import LAUNCH

CURVE = ["operation", "algorithm", "mapping"]
SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))


@dataclass(frozen=True)
class Uncertainty:
    """Log sd of a prediction: ``floor`` at a measured P, growing by ``per_octave`` per octave of P
    to the curve's nearest measured P, at most ``cap`` (a curve with no measured P is at the cap)."""

    floor: float
    per_octave: float
    cap: float
    curves: tuple = ()  # ((operation, algorithm, mapping), per_octave) where a curve shows its own
    caps: tuple = ()  # (operation, cap) where the model's held-out algorithms give the operation its own
    regimes: tuple = ()  # ((operation, algorithm, mapping), spans) where a curve's regimes show their own
    spans: tuple = ()  # one curve's ((smallest P, largest P, per_octave), ...), one per placement regime

    def of(self, curve: tuple) -> "Uncertainty":
        """This uncertainty with ``curve``'s own growth per octave (its regimes' spans, where they
        show their own) and its operation's cap, where they have their own."""
        own, cap = dict(self.curves).get(tuple(curve)), dict(self.caps).get(curve[0])
        spans = dict(self.regimes).get(tuple(curve), ())
        if own is None and cap is None and not spans:
            return self
        return Uncertainty(self.floor, self.per_octave if own is None else own, self.cap if cap is None else cap,
                           spans=spans)

    def growth(self, P) -> np.ndarray:
        """The growth per octave at each of ``P``: that of the span (a placement regime's measured P,
        smallest to largest) holding it or nearest to it in log P; ``per_octave`` without spans."""
        P = np.log2(np.asarray(P, float))
        if not self.spans:
            return np.full(P.shape, self.per_octave)
        lo, hi, g = (np.array(v, float) for v in zip(*self.spans))
        gap = (np.maximum(np.log2(lo)[None, :] - P[:, None], 0.0)
               + np.maximum(P[:, None] - np.log2(hi)[None, :], 0.0))
        return g[np.argmin(gap, axis=1)]

    @classmethod
    def from_config(cls, cfg: dict) -> "Uncertainty":
        """Config ``plan.uncertainty``."""
        return cls(float(cfg["floor"]), float(cfg["per_octave"]), float(cfg["cap"]))


def curve_sd(P: np.ndarray, measured: np.ndarray, u: Uncertainty) -> np.ndarray:
    """The log sd at each of ``P`` given the curve's ``measured`` P (:class:`Uncertainty`)."""
    P = np.asarray(P, float)
    if not len(measured):
        return np.full(P.shape, u.cap)
    d = np.abs(np.log2(P)[:, None] - np.log2(np.asarray(measured, float))[None, :]).min(axis=1)
    return np.minimum(u.floor + u.growth(P) * d, u.cap)


def cell_value(mu: np.ndarray, strike: np.ndarray, sd: np.ndarray, strike_sd: np.ndarray | float = 0.0) -> np.ndarray:
    """What is still unknown at a cell, in relative latency: the choice's expected relative regret
    (the latency's ratio to ``strike``, the best prediction of the other algorithms, log-normal
    around exp(mu) / strike with the log sd of both, sqrt(sd^2 + strike_sd^2): a put where mu is
    above the strike, a call where it is at or below it) plus the prediction's expected relative
    error sqrt(2 / pi) sd. NaN strikes (no other algorithm) count the error only."""
    mu, strike, sd, ssd = np.broadcast_arrays(np.asarray(mu, float), np.asarray(strike, float),
                                              np.asarray(sd, float), np.asarray(strike_sd, float))
    shape = mu.shape
    mu, strike, sd, ssd = (np.atleast_1d(a).ravel() for a in (mu, strike, sd, ssd))
    out = SQRT_2_OVER_PI * sd
    both = np.sqrt(sd * sd + np.nan_to_num(ssd) ** 2)
    ok = np.isfinite(strike) & (both > 0)
    s, m, k = both[ok], mu[ok], np.log(strike[ok])
    d1 = (m - k + s * s) / s
    d2 = d1 - s
    forward = np.exp(m + 0.5 * s * s - k)  # E[X] / K
    call = forward * ndtr(d1) - ndtr(d2)
    put = ndtr(-d2) - forward * ndtr(-d1)
    out[ok] += np.where(m <= k, call, put)
    return out.reshape(shape)


def strikes(grid: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``grid`` (operation, algorithm, mapping, P, size, predicted): the smallest
    prediction of the other algorithms at its (operation, mapping, P, size), and that algorithm;
    NaN and -1 where it is alone."""
    cell = ["operation", "mapping", "P", "size"]
    v = grid["predicted"].to_numpy(float)
    key = grid.groupby(cell, sort=False).ngroup().to_numpy()
    order = np.lexsort((v, key))
    k, vs = key[order], v[order]
    first = np.r_[True, k[1:] != k[:-1]]
    start = np.flatnonzero(first)
    n = np.diff(np.r_[start, len(k)])
    alg = grid["algorithm"].to_numpy(int)[order]
    best, best_alg = np.repeat(vs[start], n), np.repeat(alg[start], n)
    runner = np.minimum(start + 1, len(k) - 1)
    second = np.repeat(np.where(n > 1, vs[runner], np.nan), n)
    second_alg = np.repeat(np.where(n > 1, alg[runner], -1), n)
    out, out_alg = np.empty(len(v)), np.empty(len(v), dtype=int)
    out[order] = np.where(~first, best, second)  # the best row's strike is the runner-up
    out_alg[order] = np.where(~first, best_alg, second_alg)
    return out, out_alg


@dataclass
class _Curve:
    """One curve's candidate P, its log predictions and strikes [P, size], its measured P."""

    key: tuple
    P: np.ndarray
    mu: np.ndarray
    strike: np.ndarray
    rival: np.ndarray  # the strike's algorithm [P, size], -1 for none
    measured: list
    cost: np.ndarray


def _curves(grid: pd.DataFrame, measured: pd.DataFrame, cost: pd.Series | None) -> list[_Curve]:
    strike, rival = strikes(grid)
    g = grid.assign(strike=strike, rival=rival)
    done = {key: sorted(v["P"].astype(int)) for key, v in measured.groupby(CURVE)} if len(measured) else {}
    out = []
    for key, c in g.groupby(CURVE, sort=True):
        wide = c.pivot_table(index="P", columns="size", values=["predicted", "strike", "rival"], aggfunc="first",
                             dropna=False)
        P = wide.index.to_numpy(int)
        costs = (np.ones(len(P)) if cost is None else
                 cost.reindex(pd.MultiIndex.from_arrays([[key[0]] * len(P), [key[1]] * len(P), [key[2]] * len(P), P],
                                                        names=LAUNCH)).to_numpy(float))
        out.append(_Curve(key, P, np.log(wide["predicted"].to_numpy(float)), wide["strike"].to_numpy(float),
                          np.nan_to_num(wide["rival"].to_numpy(float), nan=-1).astype(int), done.get(key, []), costs))
    return out


def _values(c: _Curve, u: Uncertainty, rivals: dict) -> tuple[np.ndarray, np.ndarray]:
    """(value of measuring each candidate P of a curve, the part of it that is the choice's);
    ``rivals``: {algorithm: measured P} of the curves of the same operation and mapping, whose sds
    the strikes carry."""
    mine = u.of(c.key)
    before = curve_sd(c.P, np.array(c.measured), mine)  # [n]
    strike_sd = np.zeros(c.mu.shape)
    for alg in np.unique(c.rival[c.rival >= 0]):
        sd = curve_sd(c.P, np.array(rivals.get(int(alg), [])), u.of((c.key[0], int(alg), c.key[2])))
        strike_sd = np.where(c.rival == alg, sd[:, None], strike_sd)
    logP = np.log2(c.P.astype(float))
    by = np.minimum(mine.floor + mine.growth(c.P)[None, :] * np.abs(logP[:, None] - logP[None, :]), mine.cap)  # [launch, P]
    after = np.minimum(before[None, :], by)
    now = np.nansum(cell_value(c.mu, c.strike, before[:, None], strike_sd))
    # only the P whose sd a launch lowers change: the value summed over those [launch, P, size]
    lower = after < before[None, :]
    lost = np.full(len(c.P), now)
    rows, cols = np.nonzero(lower)
    if len(rows):
        old = cell_value(c.mu[cols], c.strike[cols], before[cols][:, None], strike_sd[cols])
        new = cell_value(c.mu[cols], c.strike[cols], after[rows, cols][:, None], strike_sd[cols])
        lost -= np.bincount(rows, weights=np.nansum(old - new, axis=1), minlength=len(c.P))
    errors = SQRT_2_OVER_PI * np.isfinite(c.mu).sum(axis=1)  # the error part per unit of sd, per P
    error_drop = (before[None, :] - after) @ errors
    value = now - lost
    value[np.isin(c.P, c.measured)] = -np.inf
    return value, value - error_drop


def next_launches(grid: pd.DataFrame, measured: pd.DataFrame, u: Uncertainty, budget: float,
                  cost: pd.Series | None = None) -> pd.DataFrame:
    """Greedy picks of unmeasured launches of ``grid`` (every candidate launch's cells: operation,
    algorithm, mapping, P, size, predicted in us) until ``budget`` is spent: launches when ``cost``
    is None, else the sum of ``cost`` (a Series indexed by :data:`LAUNCH`, e.g. node-seconds; the
    value is then taken per unit of cost). ``measured``: the launches already made (:data:`LAUNCH`).
    Columns :data:`LAUNCH`, ``value`` (relative latency summed over the curve's cells), ``choice``
    (the part of it that is the algorithm choice's), ``cost``, ``reason``."""
    curves = _curves(grid, measured, cost)
    groups: dict = {}  # (operation, mapping) -> indices of its curves
    for i, c in enumerate(curves):
        groups.setdefault((c.key[0], c.key[2]), []).append(i)

    def rivals(i):
        return {curves[j].key[1]: curves[j].measured for j in groups[(curves[i].key[0], curves[i].key[2])]}

    scored = [_values(c, u, rivals(i)) for i, c in enumerate(curves)]
    rows, spent = [], 0.0
    while True:
        best, where = -np.inf, None
        for i, (c, (value, _)) in enumerate(zip(curves, scored)):
            per = value / (c.cost if cost is not None else 1.0)
            ok = np.isfinite(per) & (spent + (c.cost if cost is not None else 1.0) <= budget + 1e-9)
            if ok.any():
                j = int(np.flatnonzero(ok)[np.argmax(per[ok])])
                if per[j] > best:
                    best, where = per[j], (i, j)
        if where is None or best <= 0:
            break
        i, j = where
        c = curves[i]
        value, choice = scored[i][0][j], scored[i][1][j]
        mine = u.of(c.key)
        gap = curve_sd(c.P[j:j + 1], np.array(c.measured), mine)[0]
        spent += float(c.cost[j]) if cost is not None else 1.0
        rows.append((*c.key, int(c.P[j]), float(value), float(choice), float(c.cost[j]),
                     _reason(c, j, gap, float(mine.growth(c.P[j:j + 1])[0]), choice, value)))
        c.measured = sorted(c.measured + [int(c.P[j])])
        for k in groups[(c.key[0], c.key[2])]:  # its own values change, and those it is the rival of
            if k == i or (curves[k].rival == c.key[1]).any():
                scored[k] = _values(curves[k], u, rivals(k))
    return pd.DataFrame(rows, columns=LAUNCH + ["value", "choice", "cost", "reason"])


def _reason(c: _Curve, j: int, sd: float, growth: float, choice: float, value: float) -> str:
    """Why a launch was picked, in words: what it removes, and the log sd at its P (growing by
    ``growth`` per octave from the nearest measured P)."""
    where = ("its curve had no measurement" if not c.measured else
             f"growing {growth:.2g} per octave from the nearest measured P "
             f"{min(c.measured, key=lambda m: abs(np.log2(m / c.P[j])))}")
    what = "the algorithm choice" if choice >= 0.5 * value else "the model's error"
    return f"{what} ({choice:.3g} of {value:.3g} expected relative latency removed); log sd {sd:.2f}, {where}"


def estimate_uncertainty(cells: pd.DataFrame, prior: Uncertainty, physics: np.ndarray | None = None,
                         min_points: int = 20, min_curve: int = 10, held_out: dict | None = None,
                         machine: dict | None = None) -> Uncertainty:
    """The :class:`Uncertainty` the measured ``cells`` (operation, algorithm, mapping, P, size,
    measured: median latency per cell) show, each number falling back to ``prior`` where they hold
    fewer than ``min_points`` examples:

    * ``floor``: kept from ``prior`` (config: the noise of one cell, e.g. the model stage's noise floor);
    * ``per_octave``: each measured P between two others of its curve predicted by log-linear
      interpolation between them; the median over them of |log error| less the floor, per octave to
      the nearer of the two; a curve with ``min_curve`` such examples (over its sizes) gets its own
      median (curves are not alike: some bend, some are noisy); with ``machine``, only a P whose two
      neighbours lie in its own placement regime (:func:`collat.model.validation.regime` along P: the
      sockets, or nodes, its mapping fills) counts, since a jump across a socket or node boundary
      is a change of regime, not growth along P (the first design measures at those boundaries);
      and a curve with ``min_curve`` examples in each of two regimes or more gets a growth per
      regime (``regimes``; :meth:`Uncertainty.growth`): on the study (avg, every cell) the curves
      under map-by socket grow 0.0-0.3 per octave on one node and 0.4-7.8 on two, where the P lie a
      fraction of an octave apart and launches differ by more than neighbouring P do; one growth
      for the whole curve left its second node to a few launches;
    * ``cap``: with ``physics`` (the calibrated mode's prediction of each cell), the median |log|
      of measured over physics: how far the model is where no measurement of the curve helps.
      With ``held_out`` (operation -> the median |log error| of the model's price of an algorithm
      it never saw: rule model_transfer, each measured algorithm held out in turn) each of those
      operations gets that cap instead (``caps``): an error out of sample, where the median over
      the cells the calibration was fitted on is in sample, and smaller (study: 0.200 against
      0.226 for bcast and 0.291 for reduce)."""
    from collat.model.validation import GROUP, measured_neighbours, regime

    per_octave, cap = prior.per_octave, prior.cap
    y = np.log(cells["measured"].to_numpy(float))
    guess = np.log(measured_neighbours(cells))  # each measured P from its neighbours on the curve, NaN at its ends
    logP = pd.Series(np.log2(cells["P"].to_numpy(float)), index=cells.index).sort_values(kind="stable")
    along = logP.groupby([cells[g] for g in GROUP])  # each curve in increasing P
    nearer = np.minimum(logP - along.shift(1), along.shift(-1) - logP).reindex(cells.index).to_numpy()
    inner = np.isfinite(guess)
    if machine is not None:  # along P the size bounds play no part
        units = pd.Series(regime(cells, "P", machine, np.empty(0)), index=cells.index).reindex(logP.index)
        by = units.groupby([cells[g] for g in GROUP])
        same = ((by.shift(1) == units) & (by.shift(-1) == units)).reindex(cells.index).to_numpy()
        inner &= same
    ratios = np.maximum(np.abs(y - guess) - prior.floor, 0.0)[inner] / nearer[inner]
    own = pd.Series(ratios, index=pd.MultiIndex.from_frame(cells.loc[inner, CURVE])).groupby(level=[0, 1, 2])
    curves, regimes = (), ()
    if len(ratios) >= min_points:
        per_octave = float(np.median(ratios))
        curves = tuple(sorted((tuple(k), float(np.median(v))) for k, v in own if len(v) >= min_curve))
        if machine is not None:
            by_regime = pd.DataFrame({"r": ratios, "P": cells["P"].to_numpy()[inner],
                                      "regime": units.reindex(cells.index).to_numpy()[inner]},
                                     index=pd.MultiIndex.from_frame(cells.loc[inner, CURVE]))
            for k, g in by_regime.groupby(level=[0, 1, 2]):
                parts = tuple((int(v["P"].min()), int(v["P"].max()), float(np.median(v["r"])))
                              for _, v in g.groupby("regime") if len(v) >= min_curve)
                if len(parts) > 1:
                    regimes += ((tuple(k), parts),)
    if physics is not None:
        r = np.abs(y - np.log(np.asarray(physics, float)))
        r = r[np.isfinite(r)]
        if len(r) >= min_points:
            cap = float(max(np.median(r), prior.floor))
    caps = tuple(sorted((op, float(max(e, prior.floor))) for op, e in (held_out or {}).items() if np.isfinite(e)))
    return Uncertainty(prior.floor, per_octave, cap, curves, caps, regimes)
