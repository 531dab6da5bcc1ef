"""MPI-4 partitioned communication: the gain of pipelined over bulk sends (Gillis et al. 2023).

Units throughout: message and partition sizes in bytes, times in microseconds, bandwidth in
GB/s (10^9 B/s = 1000 B/us), delay rates gamma in us/MB with MB = 10^6 B (the paper's unit:
``gamma * beta`` in Gillis eq. 4 is then ``gamma * beta / 1000``, dimensionless).

Vocabulary: ``threads`` is the paper's N, ``theta`` the partitions per thread, the number of
partitions is ``N * theta``; ``size`` is always the *total* message (all partitions), as on the
x axis of the paper's figures, and ``partition_size = size / (N * theta)``.

The paper has one formula for large messages (Gillis eq. 4, latency neglected) and one for small
messages (Gillis eq. 5, delay neglected). :func:`gain` covers both: every message costs the link's
point-to-point time ``t(m)`` (Hockney ``alpha + m / beta`` or any measured/fitted curve). The
bulk send is one message of the whole buffer after the last partition is ready; the pipelined
send issues ``N * theta`` messages one after another on the same link, and the first
``N * theta - 1`` of them overlap with the delay ``D = gamma * S_part`` (Gillis eq. 8) between the first
and the last partition becoming ready::

    T_b = t(N theta S)                                                  (Gillis eq. 2 with latency)
    T_p = max{(N theta - 1) t(S) - gamma S, 0} + t(S)                   (Gillis eq. 3 with latency)
    eta = T_b / T_p

With ``t(m) = m / beta`` (no latency) this is Gillis eq. 4 exactly; with ``gamma = 0`` and
``t(m) = alpha`` (no bandwidth term, i.e. small messages) it is Gillis eq. 5 exactly. For the
Hockney link the break-even partition size (eta = 1) has a closed form,
``S* = (N theta - 1) alpha / gamma`` (:func:`crossover_hockney`): below it the extra latencies
cost more than the delay hides.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import numpy as np
import pandas as pd

MB = 1e6  # bytes per MB in the paper's us/MB


def number(value) -> float:
    """A config number: a float/int or an exact fraction string such as ``"1/13"``."""
    if isinstance(value, str):
        return float(Fraction(value.replace(" ", "")))
    return float(value)


def bandwidth_bytes_per_us(bandwidth_GBps):
    """GB/s (10^9 B/s) to B/us."""
    return np.asarray(bandwidth_GBps, dtype=float) * 1e3


def computation_rate(ai, ci, frequency_GHz, flops_per_cycle=8.0):
    """Average computation rate mu in us/MB (Appendix A, Gillis eq. 6): mu = (AI / CI) / (flops_per_cycle * F).

    AI is the arithmetic intensity (flop/B of memory used), CI the communication intensity (bytes
    sent per byte of memory used); F in GHz. The paper writes the 8 flops per cycle into Gillis eq. 6.
    """
    seconds_per_byte = (np.asarray(ai, float) / np.asarray(ci, float)) / (flops_per_cycle * np.asarray(frequency_GHz, float) * 1e9)
    return seconds_per_byte * 1e6 * MB


def noise(eps, delta):
    """Relative standard deviation of one partition's computation time, sigma = (eps + delta) / 2 (Gillis eq. 7)."""
    return (np.asarray(eps, float) + np.asarray(delta, float)) / 2.0


def delay_rate(mu, theta, eps, delta):
    """Delay rate gamma_theta in the unit of mu (Appendix A, Gillis eq. 9).

    gamma_theta = mu * (theta + (eps + delta) / 2 * (sqrt(theta) + 1) - 1): the last of a thread's
    theta partitions is ready after mu S (theta + sqrt(theta) sigma), the first after mu S (1 - sigma).
    """
    theta = np.asarray(theta, float)
    return np.asarray(mu, float) * (theta + noise(eps, delta) * (np.sqrt(theta) + 1.0) - 1.0)


def delay(gamma, partition_size):
    """Delay D = gamma_theta * S_part in us (Gillis eq. 8), gamma in us/MB, S_part in bytes."""
    return np.asarray(gamma, float) * np.asarray(partition_size, float) / MB


def t_bulk(partition_size, n_partitions, bandwidth_GBps):
    """Bulk (thread-synchronised) communication time in us, latency neglected (Gillis eq. 2)."""
    return np.asarray(n_partitions, float) * np.asarray(partition_size, float) / bandwidth_bytes_per_us(bandwidth_GBps)


def t_pipelined(partition_size, n_partitions, bandwidth_GBps, delay_us):
    """Pipelined communication time in us, latency neglected (Gillis eq. 3)."""
    one = np.asarray(partition_size, float) / bandwidth_bytes_per_us(bandwidth_GBps)
    return np.maximum((np.asarray(n_partitions, float) - 1.0) * one - np.asarray(delay_us, float), 0.0) + one


def gain_large(threads, theta, gamma, bandwidth_GBps):
    """Large-message gain eta = N theta / max{N theta - gamma_theta beta, 1} (Gillis eq. 4); gamma in us/MB, beta in GB/s."""
    parts = np.asarray(threads, float) * np.asarray(theta, float)
    gamma_beta = np.asarray(gamma, float) / MB * bandwidth_bytes_per_us(bandwidth_GBps)
    return parts / np.maximum(parts - gamma_beta, 1.0)


def gain_small(threads, theta):
    """Small-message gain eta = 1 / (N theta) (Gillis eq. 5): latency only, delay neglected."""
    return 1.0 / (np.asarray(threads, float) * np.asarray(theta, float))


def gain(size, threads, theta, gamma, t_message: Callable[[np.ndarray], np.ndarray]):
    """Gain T_b / T_p for any message size, with latency and delay (module docstring).

    ``size`` is the total message in bytes, ``gamma`` the delay rate in us/MB and ``t_message``
    the point-to-point time in us of one message of the given bytes (vectorised). Arrays broadcast.
    """
    size, threads, theta, gamma = np.broadcast_arrays(*(np.asarray(a, float) for a in (size, threads, theta, gamma)))
    parts = threads * theta
    part_size = size / parts
    one = np.asarray(t_message(part_size), float)
    t_b = np.asarray(t_message(size), float)
    t_p = np.maximum((parts - 1.0) * one - delay(gamma, part_size), 0.0) + one
    return t_b / t_p


def hockney_message(alpha_us, bandwidth_GBps) -> Callable[[np.ndarray], np.ndarray]:
    """t(m) = alpha + m / beta for one link (alpha in us, beta in GB/s)."""
    per_byte = 1.0 / float(bandwidth_bytes_per_us(bandwidth_GBps))
    return lambda m: alpha_us + per_byte * np.asarray(m, float)


def crossover_hockney(threads, theta, gamma, alpha_us):
    """Total message size (B) where pipelining breaks even on a Hockney link: N theta (N theta - 1) alpha / gamma.

    From ``(N theta - 1) alpha = gamma S_part`` (the bandwidth terms cancel). Infinite when gamma is
    0 (pipelining never pays); 0 when N theta = 1 (nothing to pipeline, eta = 1 everywhere).
    """
    parts = np.asarray(threads, float) * np.asarray(theta, float)
    gamma = np.asarray(gamma, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = parts * (parts - 1.0) * np.asarray(alpha_us, float) * MB / gamma
    return np.where(parts == 1.0, 0.0, np.where(gamma > 0, out, np.inf))


def crossover(threads, theta, gamma, t_message, size_min=1.0, size_max=2.0**40, points=800) -> float:
    """Smallest total message size (B) from which the pipelined send is at least as fast (eta >= 1).

    Found on a log grid of ``points`` sizes and refined by bisection, for any ``t_message`` (a
    piecewise Hockney fit can cross more than once; the first crossing is returned). NaN when eta
    stays below 1 on [size_min, size_max].
    """
    grid = np.geomspace(size_min, size_max, points)
    eta = gain(grid, threads, theta, gamma, t_message)
    above = np.flatnonzero(eta >= 1.0)
    if above.size == 0:
        return float("nan")
    i = above[0]
    if i == 0:
        return float(grid[0])
    lo, hi = np.log(grid[i - 1]), np.log(grid[i])
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if gain(np.exp(mid), threads, theta, gamma, t_message) >= 1.0:
            hi = mid
        else:
            lo = mid
    return float(np.exp(hi))


# --------------------------------------------------------------------------- published numbers

def workload_gamma(workload: dict, theta, cpu: dict):
    """gamma_theta (us/MB) of a config workload: either a fixed ``gamma`` or AI/CI/delta/eps via Gillis eq. 6 and 9."""
    if "gamma" in workload:
        return np.broadcast_to(np.asarray(number(workload["gamma"]), float), np.shape(theta)).astype(float)
    mu = computation_rate(number(workload["ai"]), number(workload["ci"]), cpu["frequency_GHz"], cpu["flops_per_cycle"])
    return delay_rate(mu, theta, number(workload["eps"]), number(workload["delta"]))


def _significant(x: float, digits: int) -> float:
    return float(f"{x:.{digits - 1}e}")


def published_digits(value: float) -> int:
    """Significant digits a published number was printed with (from its shortest repr)."""
    mantissa = f"{value!r}".lstrip("-").replace(".", "").lstrip("0")
    return max(len(mantissa.split("e")[0]), 1)


def agrees(ours: float, published: float, digits: int = 4) -> bool:
    """True when ``ours`` rounds to ``published`` at min(digits, digits printed) significant digits."""
    d = min(digits, published_digits(published))
    return _significant(ours, d) == _significant(published, d)


PAPER_COLUMNS = ["case", "quantity", "theta", "threads", "bandwidth_GBps", "gamma_us_per_MB", "published", "ours",
                 "rel_diff", "kind", "agrees_4_digits", "note"]


def gillis_numbers(cases: list[dict], workloads: dict, cpu: dict) -> pd.DataFrame:
    """Evaluate every published case of config ``partitioned.gillis_numbers`` (Gillis eq. 4, 6, 9; crossover).

    Each case names its ``quantity`` (gamma, eta, or crossover_size) and either a ``workload``
    (gamma from Gillis eq. 6 and 9) or a fixed ``gamma``; eta needs ``threads`` and ``bandwidth_GBps``,
    the crossover also ``latency_us``. ``kind`` is ``model`` for numbers the paper computed from
    its formulas and ``measured`` for what it measured (compared, never expected to agree).
    """
    rows = []
    for c in cases:
        theta = float(c["theta"])
        if "workload" in c:
            gamma = float(workload_gamma(workloads[c["workload"]], theta, cpu))
        else:
            gamma = number(c["gamma"])
        q = c["quantity"]
        if q == "gamma":
            ours = gamma
        elif q == "eta":
            ours = float(gain_large(c["threads"], theta, gamma, c["bandwidth_GBps"]))
        elif q == "crossover_size":
            ours = float(crossover_hockney(c["threads"], theta, gamma, c["latency_us"]))
        else:  # the schema restricts quantity; this guards direct callers
            raise ValueError(f"paper case {c.get('case')!r}: unknown quantity {q!r} (expected gamma, eta, crossover_size)")
        published = float(c["published"])
        rows.append({
            "case": c["case"],
            "quantity": q,
            "theta": theta,
            "threads": c.get("threads"),
            "bandwidth_GBps": c.get("bandwidth_GBps"),
            "gamma_us_per_MB": gamma,
            "published": published,
            "ours": ours,
            "rel_diff": (ours - published) / published,
            "kind": c.get("kind", "model"),
            "agrees_4_digits": agrees(ours, published),
            "note": c.get("note", ""),
        })
    out = pd.DataFrame(rows, columns=PAPER_COLUMNS)
    return out.astype({"threads": "Int64", "bandwidth_GBps": "Float64"})


# --------------------------------------------------------------------------- gain curves

def links(config_links: dict, hockney: pd.DataFrame | None, channels: list[str], machine: str):
    """Point-to-point time functions of every link to draw curves for.

    ``config_links`` gives named Hockney links (latency_us, bandwidth_GBps), e.g. the paper's
    MeluXina; ``hockney`` the fits of the point-to-point stage, one link per channel (all regimes).
    Returns {link name: (source, channel, alpha_us, bandwidth_GBps, t_message)}.
    """
    from collat.pt2pt.hockney import t_p2p_curve

    out = {}
    for name, p in config_links.items():
        out[name] = ("config", "", float(p["latency_us"]), float(p["bandwidth_GBps"]),
                     hockney_message(float(p["latency_us"]), float(p["bandwidth_GBps"])))
    if hockney is not None:
        for ch in channels:
            f = hockney[hockney["channel"] == ch].sort_values("regime")
            if f.empty:
                continue
            alpha = float(f["alpha_us"].iloc[0])
            beta = float(1e-3 / f["beta_us_per_byte"].iloc[-1])  # large-message regime, GB/s
            out[f"{machine} {ch}"] = ("pt2pt", ch, alpha, beta, t_p2p_curve(hockney, ch))
    return out


def gain_grid(link_table: dict, workloads: dict, cpu: dict, threads: list[int], thetas: list[int],
              sizes: np.ndarray) -> pd.DataFrame:
    """eta (unified), Gillis eq. 4 and Gillis eq. 5 for every link x delay x threads x theta x size."""
    frames = []
    n, th, m = (a.ravel() for a in np.meshgrid(np.asarray(threads, float), np.asarray(thetas, float),
                                                np.asarray(sizes, float), indexing="ij"))
    for link, (source, channel, alpha, beta, t_msg) in link_table.items():
        for wname, w in workloads.items():
            g = workload_gamma(w, th, cpu)
            parts = n * th
            frames.append(pd.DataFrame({
                "link": link, "source": source, "channel": channel, "alpha_us": alpha, "bandwidth_GBps": beta,
                "delay": wname, "threads": n.astype(int), "theta": th.astype(int), "size": m.astype(np.int64),
                "partition_size": m / parts, "gamma_us_per_MB": g,
                "eta": gain(m, n, th, g, t_msg),
                "eta_eq4": gain_large(n, th, g, beta),
                "eta_eq5": gain_small(n, th),
            }))
    return pd.concat(frames, ignore_index=True)


def crossover_table(link_table: dict, workloads: dict, cpu: dict, threads: list[int], thetas: list[int]) -> pd.DataFrame:
    """Break-even total message size per link x delay x threads x theta (numerical and Hockney closed form)."""
    rows = []
    for link, (source, channel, alpha, beta, t_msg) in link_table.items():
        for wname, w in workloads.items():
            for n in threads:
                for th in thetas:
                    g = float(workload_gamma(w, float(th), cpu))
                    rows.append({
                        "link": link, "source": source, "channel": channel, "delay": wname,
                        "threads": int(n), "theta": int(th), "gamma_us_per_MB": g,
                        "crossover_size": crossover(n, th, g, t_msg) if n * th > 1 else 0.0,
                        "crossover_size_hockney": float(crossover_hockney(n, th, g, alpha)),
                    })
    return pd.DataFrame(rows)
