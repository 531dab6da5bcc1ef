"""OpenMPI dynamic-rules files for a machine nobody measured (config model.what_if): per mapping, the
algorithm its calibrated mode (else the openmpi mode) prices fastest at every P and size it priced."""

from pathlib import Path

import pandas as pd

from collat.runner import setup_log
from collat.rulesfile import validate
from collat.selection import predicted_best, rules_blocks, write_rules
from collat.tidy import atomic_write

log = setup_log(snakemake.log)
p = snakemake.params
predictions = pd.read_parquet(snakemake.input[0])
mode = "calibrated" if (predictions["mode"] == "calibrated").any() else "openmpi"
best = predicted_best(predictions, None, mode, p.target, p.default_candidate)
faninout = {int(k): int(v) for k, v in p.faninout.items()}
for mapping, path in zip(p.mappings, snakemake.output):
    b = best[best["mapping"] == mapping]
    text = write_rules({op: rules_blocks(b[b["operation"] == op], faninout) for op in ("bcast", "reduce")})
    validate(text, path)  # OpenMPI would drop a malformed file without a word
    atomic_write(path, lambda tmp, t=text: Path(tmp).write_text(t))
log.info("%s: rules of the %s mode's picks (%s target) for %s", snakemake.wildcards.name, mode, p.target,
         ", ".join(p.mappings))
