"""Speed of the point-to-point model: the whole ORFEO grid and one curve up to P = 16384.

Run after the default pipeline (it reads results/tidy/collective.parquet, results/pt2pt,
results/nbft and results/model/calibration.csv):

    .venv/bin/python benchmarks/model_speed.py [--repeat 3]

Prints, per task, the best wall time of ``--repeat`` runs on one core (numpy threads pinned to 1),
beside a baseline measured in the same run (one tree at a time instead of one forest per curve),
then a last line ``grid_seconds=<x> grid_first_seconds=<f> curve16384_seconds=<y>`` and each mode's grid
alone, ``<mode>_grid_seconds=<t>`` (f: the first
grid of the process, which pays what a pipeline job pays once: loading the compiled kernels,
building the schedules, touching fresh memory).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from collat.config.defaults import complete
from collat.config.schema import validate_config  # noqa: E402
from collat import model as md  # noqa: E402
from collat.model.shapes import trees  # noqa: E402
from collat.model import forest as fo  # noqa: E402
from collat.model import openmpi_mode as om  # noqa: E402
from collat.ingest.tidy import read_parquet  # noqa: E402


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs per task; the best is printed (default 3)")
    ap.add_argument("--root", default=".", help="the directory whose results/ a default run wrote (default .)")
    args = ap.parse_args()
    r = args.root
    cfg = yaml.safe_load(open(f"{r}/config/config.yaml"))
    validate_config(cfg, f"{r}/workflow/schemas/config.schema.yaml", f"{r}/config/config.yaml")  # its defaults
    complete(cfg)  # the MPI facts the config leaves out
    collective = read_parquet(f"{r}/results/tidy/collective.parquet", "collective")
    sizes = np.sort(collective["size"].unique())
    stage = (pd.read_parquet(f"{r}/results/pt2pt/hockney.parquet"),
             pd.read_parquet(f"{r}/results/pt2pt/hockney_study.parquet"), pd.read_csv(f"{r}/results/nbft/fits.csv"),
             pd.read_parquet(f"{r}/results/nbft/medians.parquet"), pd.read_csv(f"{r}/results/model/calibration.csv"))
    options = md.ModelOptions.from_config(cfg["model"], cfg["mappings"], stage[0], stage[2])
    modes = md.build_modes(options, cfg["channels"], sizes, 255, *stage)
    P_grid = range(2, 257)

    def grid():  # fresh caches: placements and censuses are part of the cost
        return md.predict_all(modes, md.Placements(cfg["machine"]), cfg["algorithms"], P_grid)

    start = time.perf_counter()
    n_points = len(grid())  # the first call, as a pipeline job makes it: compiled kernels loaded, schedules built
    t_first = time.perf_counter() - start
    t_grid = best(grid, args.repeat)
    print(f"ORFEO grid: modes {[m.name for m in modes]}, 2 operations, all modelled algorithms, 3 mappings, "
          f"P = 2..256, {len(sizes)} sizes, both targets: {n_points} predictions in {t_grid:.2f} s "
          f"(the first call in this process: {t_first:.2f} s)")
    per_mode = {m.name: best(lambda m=m: md.predict_all([m], md.Placements(cfg["machine"]), cfg["algorithms"], P_grid),
                             args.repeat) for m in modes}
    print("each mode's grid alone (fresh placements, the same process): "
          + ", ".join(f"{name} {t:.2f} s" for name, t in per_mode.items()))

    # baseline in the same run: the same binary-tree curve, one tree per call
    openmpi = next(m for m in modes if m.name == "openmpi")
    costs = openmpi.costs["bcast"]
    pl = md.Placements(cfg["machine"])

    def tree_by_tree():
        for P in P_grid:
            parent = trees.binary(P)
            links = fo.link_channels(parent, pl(P, "core"), costs.index, options.unpinned_channel)
            counts = fo.census(parent, None, costs.index, options.unpinned_channel, links)
            om.evaluate_tree(parent, counts, costs, "bcast", links)

    def forest_curve():
        openmpi.curve("bcast", 5, "core", P_grid, md.Placements(cfg["machine"]))

    t_base, t_forest = best(tree_by_tree, args.repeat), best(forest_curve, args.repeat)
    print(f"one binary curve P = 2..256: tree by tree {t_base:.3f} s, as one forest {t_forest:.3f} s "
          f"(ratio {t_base / t_forest:.1f}x)")

    # a bigger machine: 64 nodes x 2 sockets x 64 cores = 8192 x 2 = 16384 cores
    big = dict(cfg["machine"], nodes=128)
    big_mode = md.OpenMPIMode(md.openmpi_costs(stage[0], stage[2], stage[3], options.openmpi, cfg["channels"], sizes,
                                               16383), options)
    P_big = sorted({int(p) for k in range(1, 15) for p in (2 ** k, 3 * 2 ** (k - 1)) if p <= 16384})

    def curve16384():
        big_mode.curve("bcast", 5, "node", P_big, md.Placements(big))

    t_big = best(curve16384, args.repeat)
    print(f"binary bcast, map-by node, 128 nodes x 128 cores: {len(P_big)} P values from 2 to 16384 "
          f"(powers of two and 3 x 2^k), {len(sizes)} sizes: {t_big:.2f} s")
    print(f"grid_seconds={t_grid:.3f} grid_first_seconds={t_first:.3f} curve16384_seconds={t_big:.3f} "
          + " ".join(f"{name}_grid_seconds={t:.3f}" for name, t in per_mode.items()))


if __name__ == "__main__":
    main()
