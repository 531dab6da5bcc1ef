"""The noise floor of the measurements, over all of them and per mapping and number of nodes the
communicator spans, within a job (repeats) and between jobs (the default against a forced run of
the same tree): results/model/noise_floor.csv (collat.model.validation.noise_floors)."""

from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet
from collat.model.validation import noise_floors

log = setup_log(snakemake.log)
floors = noise_floors(read_parquet(snakemake.input.collective, "collective"), snakemake.params.machine,
                      snakemake.params.targets, snakemake.params.default_rules, snakemake.params.trees)
atomic_write(snakemake.output[0], lambda tmp: floors.to_csv(tmp, index=False))
log.info("noise floors of %d (target, mapping, nodes) groups", len(floors))
