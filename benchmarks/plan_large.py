"""How long stage plan takes on a large machine (the goal: 1,024 nodes x 128 cores in <= 10 s).

    .venv/bin/python benchmarks/plan_large.py [--nodes 1024] [--cores-per-socket 64]

Two rounds of collat.plan.campaign.plan_round on a machine of ``--nodes`` nodes of two sockets:
the first design (nothing measured), and a round with a prediction of every candidate launch at
21 sizes (synthetic latencies of a log P tree: the planner's work does not depend on their values)
and one measured launch per curve. Every algorithm of OpenMPI 4.1, three mappings. Prints the
seconds of each beside the seconds of building the candidate grid alone (the baseline: what any
planner must at least do) and their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--cores-per-socket", type=int, default=64)
    args = ap.parse_args()
    from collat.config.defaults import machine_channels, openmpi_facts
    from collat.plan.campaign import PlanOptions, plan_round
    from collat.plan.design import LAUNCH, collective_candidates

    machine = {"name": "large", "nodes": args.nodes, "sockets_per_node": 2, "cores_per_socket": args.cores_per_socket,
               "cores_per_l3": 8, "numa_per_socket": 4}
    algorithms = openmpi_facts("4.1")["algorithms"]
    mappings, channels = ["core", "socket", "node"], machine_channels(machine)
    opts = PlanOptions(launches=64, node_hours=None, first_per_curve=3, every_P_below=32, nbft_points=4,
                       overhead_seconds=2.0, prior={"floor": 0.03, "per_octave": 0.1, "cap": 0.3})
    t = time.perf_counter()
    cand = collective_candidates(machine, algorithms, mappings)
    base = time.perf_counter() - t
    t = time.perf_counter()
    first, _ = plan_round(machine, algorithms, mappings, channels, opts)
    first_s = time.perf_counter() - t
    sizes = 2 ** np.arange(0, 21)
    grid = cand.merge(pd.DataFrame({"size": sizes}), how="cross")
    grid["predicted"] = (1.0 + grid["algorithm"]) * np.log2(grid["P"]) * (1 + grid["size"] / 1e4)
    measured = cand.groupby(["operation", "algorithm", "mapping"]).head(1)
    cells = measured.merge(pd.DataFrame({"size": sizes}), how="cross").assign(measured=1.0)
    t = time.perf_counter()
    nxt, _ = plan_round(machine, algorithms, mappings, channels, opts, measured=cells, predictions=grid, floor=0.03)
    next_s = time.perf_counter() - t
    print(f"machine: {args.nodes} nodes x {2 * args.cores_per_socket} cores; {len(cand)} candidate launches, "
          f"{len(grid)} predicted cells")
    print(f"baseline (candidate grid) {base:.3f} s")
    print(f"first design: {first_s:.2f} s, {len(first)} launches, ratio {first_s / base:.1f}")
    print(f"next round: {next_s:.2f} s, {len(nxt)} launches, ratio {next_s / base:.1f}")


if __name__ == "__main__":
    main()
