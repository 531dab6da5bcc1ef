"""How far the calibration carries to an algorithm nobody measured: each measured algorithm held
out in turn, the others calibrated, and the weight of the calibrated price against the openmpi
mode's that prices the held-out ones best (collat.model.transfer): results/model/transfer.csv."""

import pandas as pd

from collat.ingest.tidy import atomic_write, read_parquet
from collat.model import ModelOptions, Placements
from collat.model.calibration import CalibrationOptions, starting_costs
from collat.model.transfer import held_out_weights
from collat.model.validation import CELL, measured_cells
from collat.runner import setup_log

log = setup_log(snakemake.log)
cfg = snakemake.params.config
hockney = pd.read_parquet(snakemake.input.hockney)
options = ModelOptions.from_config(cfg["model"], hockney=hockney)
opts = CalibrationOptions.from_config(cfg["model"]["calibrated"])
collective = read_parquet(snakemake.input.collective, "collective")
start, receivers = starting_costs(hockney, pd.read_csv(snakemake.input.nbft_fits),
                                  pd.read_parquet(snakemake.input.nbft_medians), options, cfg["channels"], collective,
                                  cfg["machine"])
unfitted = pd.read_parquet(snakemake.input.unfitted, columns=CELL + ["mode", "target", "predicted"],
                           filters=[("mode", "==", "openmpi")])
cells = {target: measured_cells(collective, target) for target in opts.targets}
openmpi = {target: c.merge(unfitted[unfitted["target"] == target], on=CELL, how="left")["predicted"].to_numpy(float)
           for target, c in cells.items()}
table = held_out_weights(cells, openmpi, start, options, Placements(cfg["machine"]), opts, receivers,
                         snakemake.threads)
atomic_write(snakemake.output.transfer, lambda tmp: table.to_csv(tmp, index=False))
for row in table.itertuples():
    log.info("%s %s: weight %.1f over %d held-out algorithms (median |log error| calibrated %.3f, openmpi %.3f, "
             "blend %.3f)", row.operation, row.target, row.weight, row.algorithms, row.error_calibrated,
             row.error_openmpi, row.error_transferred)
