"""The calibrated mode's parameters, fitted on every collective measurement: results/model/calibration.csv."""

from collat.ingest.tidy import atomic_write
from collat.model.calibration import CalibrationStart, calibrate_all
from collat.runner import setup_log

log = setup_log(snakemake.log)
inp = snakemake.input
s = CalibrationStart.read(inp.collective, inp.hockney, inp.nbft_fits, inp.nbft_medians, snakemake.params.config)
table = calibrate_all(s.cells, s.start, s.options, s.placements, s.opts, s.receivers, snakemake.threads)
atomic_write(snakemake.output.calibration, lambda tmp: table.to_csv(tmp, index=False))
for (op, target), g in table.groupby(["operation", "target"]):
    log.info("%s %s: %d cells, rms log residual %.3f", op, target, g["cells"].iloc[0], g["rms_log_residual"].iloc[0])
o = s.options.openmpi
log.info("eager limit %d B (config model.openmpi.eager_limit, null: what the NBFT reduce runs or the point-to-point "
         "breaks show), small-message limit %s", o.eager_limit,
         f"{o.small_limit:.0f} B" if o.small_limit >= 0 else "none")
