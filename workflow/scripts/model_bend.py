"""How much of the calibrated mode's bend between two measured P the hybrid keeps, per operation and
target: each curve's odd and even measured P held out in turn, the others calibrated
(collat.model.bend): results/model/bend.csv."""

from collat.ingest.tidy import atomic_write
from collat.model.bend import bend_weights
from collat.model.calibration import CalibrationStart
from collat.runner import setup_log

log = setup_log(snakemake.log)
inp = snakemake.input
s = CalibrationStart.read(inp.collective, inp.hockney, inp.nbft_fits, inp.nbft_medians, snakemake.params.config)
table = bend_weights(s.cells, s.start, s.options, s.placements, s.opts, s.receivers, snakemake.threads)
atomic_write(snakemake.output.bend, lambda tmp: table.to_csv(tmp, index=False))
for row in table.itertuples():
    log.info("%s %s: weight %.1f over %d cells between two others (median |log error| straight line %.3f, "
             "model's shape %.3f, weighted %.3f)", row.operation, row.target, row.weight, row.cells,
             row.error_line, row.error_model, row.error_weighted)
