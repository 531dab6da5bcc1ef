"""The modes fitted on no collective measurement (paper, openmpi) on the dense (P, size) grid, from
the pt2pt and nbft stages alone: what the validation scores as they are and the calibrated grid joins.
Runs another MPI made, forced runs that measure as one algorithm and runs under two mappings that
measure as one placement, where the openmpi mode prices them apart, stop the run here."""

from pathlib import Path

import pandas as pd

from collat.model import ModelOptions, Placements, build_modes, grid_axes, predict_all
from collat.model.forcing import check_forced_runs, check_placements, measured_as_one
from collat.model.shapes.openmpi import check_mpi_version
from collat.model.placement import cores_per_node
from collat.runner import setup_log
from collat.config.settings import FITTED_MODES
from collat.ingest.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
cfg = snakemake.params.config
options = ModelOptions.from_config(cfg["model"], cfg["mappings"], pd.read_parquet(snakemake.input.hockney),
                                   pd.read_csv(snakemake.input.nbft_fits))
raw = Path(snakemake.params.raw_dir)


def named(source: str) -> str:
    """A raw log by its path, a published file by its name."""
    return str(raw / source) if (raw / source).is_file() else source


collective = read_parquet(snakemake.input.collective, "collective")
check_mpi_version(collective, snakemake.params.facts_version, named)
sizes, P_values, max_receivers = grid_axes(collective, cfg["machine"], options.grid_step, options.extra_sizes)
modes = build_modes(options, cfg["channels"], sizes, max_receivers, pd.read_parquet(snakemake.input.hockney),
                    pd.read_parquet(snakemake.input.hockney_study), pd.read_csv(snakemake.input.nbft_fits),
                    pd.read_parquet(snakemake.input.nbft_medians),
                    names=tuple(m for m in options.modes if m not in FITTED_MODES),
                    cores_per_node=cores_per_node(cfg["machine"]))
predictions = predict_all(modes, Placements(cfg["machine"]), cfg["algorithms"], P_values, snakemake.threads)
priced = predictions.loc[(predictions["mode"] == "openmpi") & (predictions["target"] == "avg")]
separation = check_forced_runs(collective, priced, named, snakemake.params.forced_check)
placements = check_placements(collective, priced, named, snakemake.params.placement_check)
for row in measured_as_one(separation).itertuples(index=False):  # quality.forced_check: false
    log.warning("%s under map-by %s: the forced runs measure as one algorithm (%.2fx apart, median of %d cells "
                "the openmpi mode prices 2x apart): %s, %s", row.operation, row.mapping, row.median_ratio, row.cells,
                row.source_a, row.source_b)
for row in separation.itertuples(index=False):
    log.info("%s under map-by %s: %d pairs of algorithms priced 2x apart measure %.2fx apart (median of %d cells)",
             row.operation, row.mapping, row.pairs, row.median_ratio, row.cells)
for row in measured_as_one(placements).itertuples(index=False):  # quality.placement_check: false
    log.warning("%s under map-by %s and %s: the runs measure as one placement (%.2fx apart, median of %d cells the "
                "openmpi mode prices 2x apart): %s, %s", row.operation, row.mapping_a, row.mapping_b, row.median_ratio,
                row.cells, row.source_a, row.source_b)
for row in placements.itertuples(index=False):
    log.info("%s under map-by %s and %s: %d algorithms whose placements are priced 2x apart measure %.2fx apart "
             "(median of %d cells)", row.operation, row.mapping_a, row.mapping_b, row.algorithms, row.median_ratio,
             row.cells)
atomic_write(snakemake.output.predictions, lambda tmp: predictions.to_parquet(tmp, index=False))
log.info("%d predictions of the modes %s", len(predictions), [m.name for m in modes])
