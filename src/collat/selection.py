"""Choosing the collective algorithm from the model, its regret, and an OpenMPI dynamic-rules file.

For every (operation, mapping, P, size) the model's pick is the modelled algorithm with the
smallest predicted completion time (openmpi mode, target ``max``). Where the data has every
forced algorithm of the operation at that cell, the measured best is the one with the smallest
measured latency (median over runs, flagged outliers left out), and the regret of a choice is its
measured latency over the measured best: for the model (its pick among the measured algorithms)
and for OpenMPI's default (algorithm 0, measured as such).

The rules file follows OpenMPI 4.1's classic format read through
``coll_tuned_dynamic_rules_filename``: the number of collectives, then per collective its id
(BCAST 7, REDUCE 11 in ``coll_base_functions.h``), the number of communicator-size blocks, and per
block its smallest communicator size, the number of message-size rules and one line per rule:
smallest message size in bytes, algorithm, fan-in/out, segment size. OpenMPI uses the last block
whose size is <= the communicator's and the last rule whose size is <= the message's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLLECTIVE_IDS = {"bcast": 7, "reduce": 11}
CELL = ["operation", "mapping", "P", "size"]


def predicted_best(predictions: pd.DataFrame, candidates: dict | None = None, mode: str = "openmpi",
                   target: str = "max") -> pd.DataFrame:
    """Per cell, the algorithm with the smallest prediction (ties: the smaller id); ``candidates``
    restricts the choice per operation ({operation: [ids]}); the default (0) is never a candidate."""
    p = predictions[(predictions["mode"] == mode) & (predictions["target"] == target)
                    & (predictions["algorithm"] > 0) & predictions["predicted"].notna()]
    if candidates is not None:
        keep = np.zeros(len(p), dtype=bool)
        for op, ids in candidates.items():
            keep |= ((p["operation"] == op) & p["algorithm"].isin(ids)).to_numpy()
        p = p[keep]
    p = p.sort_values(CELL + ["predicted", "algorithm"], kind="stable")
    best = p.drop_duplicates(CELL, keep="first")
    return best[CELL + ["algorithm", "predicted"]].rename(columns={"algorithm": "predicted_best"}).reset_index(drop=True)


def measured_table(collective: pd.DataFrame, target: str = "avg") -> pd.DataFrame:
    """Median over runs of the measured latency per (cell, algorithm), outliers left out."""
    c = collective[~collective["outlier"] & collective[target].notna()]
    return c.groupby(CELL + ["algorithm"], as_index=False)[target].median().rename(columns={target: "measured"})


def measured_best(measured: pd.DataFrame) -> pd.DataFrame:
    """Per cell where every forced algorithm of the operation was measured: the fastest one."""
    forced = measured[measured["algorithm"] > 0]
    everything = forced.groupby("operation")["algorithm"].unique().map(set).to_dict()
    have = forced.groupby(CELL)["algorithm"].agg(lambda a: set(a)).rename("have").reset_index()
    complete = have[[h == everything[o] for o, h in zip(have["operation"], have["have"])]][CELL]
    f = forced.merge(complete, on=CELL).sort_values(CELL + ["measured", "algorithm"], kind="stable")
    best = f.drop_duplicates(CELL, keep="first")
    return best.rename(columns={"algorithm": "measured_best", "measured": "best_latency"}).reset_index(drop=True)


def regret(predictions: pd.DataFrame, collective: pd.DataFrame, target: str = "avg") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-cell choices and regrets, summary per operation x mapping x chooser)."""
    measured = measured_table(collective, target)
    best = measured_best(measured)
    forced = measured[measured["algorithm"] > 0].groupby("operation")["algorithm"].unique()
    pick = predicted_best(predictions, {op: list(ids) for op, ids in forced.items()})
    cells = best.merge(pick, on=CELL, how="inner")
    lat = measured.set_index(CELL + ["algorithm"])["measured"]
    cells["model_latency"] = lat.reindex(pd.MultiIndex.from_frame(
        cells[CELL + ["predicted_best"]].rename(columns={"predicted_best": "algorithm"}))).to_numpy()
    cells["default_latency"] = lat.reindex(pd.MultiIndex.from_frame(cells[CELL].assign(algorithm=0))).to_numpy()
    cells["regret_model"] = cells["model_latency"] / cells["best_latency"]
    cells["regret_default"] = cells["default_latency"] / cells["best_latency"]
    rows = []
    for (op, mapping), g in cells.groupby(["operation", "mapping"]):
        for chooser in ("model", "default"):
            r = g[f"regret_{chooser}"].dropna()
            rows.append({"operation": op, "mapping": mapping, "chooser": chooser, "target": target,
                         "cells": len(r), "within_10pct": float((r <= 1.1).mean()) if len(r) else np.nan,
                         "geomean_regret": float(np.exp(np.log(r).mean())) if len(r) else np.nan,
                         "median_regret": float(r.median()) if len(r) else np.nan,
                         "max_regret": float(r.max()) if len(r) else np.nan})
    return cells, pd.DataFrame(rows)


def rules_blocks(best: pd.DataFrame, faninout: dict) -> list[tuple[int, list[tuple[int, int, int, int]]]]:
    """Compressed rule blocks of one collective and mapping from a predicted_best frame.

    Message-size rules keep only the sizes where the choice changes; consecutive communicator
    sizes with identical rules share one block. ``faninout`` maps algorithm -> fan-in/out (chain: 4).
    """
    blocks: list[tuple[int, list]] = []
    for P, g in best.sort_values(["P", "size"]).groupby("P"):
        rules, last = [], None
        for size, alg in zip(g["size"], g["predicted_best"]):
            if alg != last:
                rules.append((0 if not rules else int(size), int(alg), int(faninout.get(int(alg), 0)), 0))
                last = alg
        if blocks and blocks[-1][1] == rules:
            continue
        blocks.append((int(P), rules))
    return blocks


def write_rules(per_collective: dict[str, list]) -> str:
    """The classic rules file text for {operation: blocks} (no comments: the v4.1 reader skips
    every non-digit character, so free text with digits would corrupt it)."""
    lines = [str(len(per_collective))]
    for op, blocks in per_collective.items():
        lines += [str(COLLECTIVE_IDS[op]), str(len(blocks))]
        for comm_size, rules in blocks:
            lines += [str(comm_size), str(len(rules))]
            lines += [" ".join(str(v) for v in r) for r in rules]
    return "\n".join(lines) + "\n"


def parse_rules(text: str) -> dict[int, list[tuple[int, list[tuple[int, int, int, int]]]]]:
    """Read a classic rules file back: {collective id: [(comm size, [(msg size, alg, faninout, segsize)])]}."""
    tokens = iter(int(t) for t in text.split())
    out = {}
    for _ in range(next(tokens)):
        cid = next(tokens)
        blocks = []
        for _ in range(next(tokens)):
            comm = next(tokens)
            rules = [tuple(next(tokens) for _ in range(4)) for _ in range(next(tokens))]
            blocks.append((comm, rules))
        out[cid] = blocks
    return out


def lookup(blocks, P: int, size: int) -> int:
    """The algorithm OpenMPI takes from parsed blocks: last block with comm size <= P, last rule with
    message size <= size."""
    chosen = None
    for comm, rules in blocks:
        if comm <= P:
            chosen = rules
    if chosen is None:
        return 0
    alg = 0
    for msg, a, _, _ in chosen:
        if msg <= size:
            alg = a
    return alg
