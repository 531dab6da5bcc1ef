"""How far the calibration carries to an algorithm nobody measured: each measured algorithm held
out in turn, the others calibrated, and the weight of the calibrated price against the openmpi
mode's that prices the held-out ones best (collat.model.transfer): results/model/transfer.csv."""

import pandas as pd

from collat.ingest.tidy import atomic_write
from collat.model.calibration import CalibrationStart
from collat.model.transfer import held_out_weights
from collat.model.validation import CELL
from collat.runner import setup_log

log = setup_log(snakemake.log)
inp = snakemake.input
s = CalibrationStart.read(inp.collective, inp.hockney, inp.nbft_fits, inp.nbft_medians, snakemake.params.config)
unfitted = pd.read_parquet(inp.unfitted, columns=CELL + ["mode", "target", "predicted"],
                           filters=[("mode", "==", "openmpi")])
openmpi = {target: c.merge(unfitted[unfitted["target"] == target], on=CELL, how="left")["predicted"].to_numpy(float)
           for target, c in s.cells.items()}
table = held_out_weights(s.cells, openmpi, s.start, s.options, s.placements, s.opts, s.receivers, snakemake.threads)
atomic_write(snakemake.output.transfer, lambda tmp: table.to_csv(tmp, index=False))
for row in table.itertuples():
    log.info("%s %s: weight %.1f over %d held-out algorithms (median |log error| calibrated %.3f, openmpi %.3f, "
             "blend %.3f)", row.operation, row.target, row.weight, row.algorithms, row.error_calibrated,
             row.error_openmpi, row.error_transferred)
