"""OpenMPI dynamic-rules files for a machine nobody measured (config model.what_if): per mapping, the
algorithm the selection's mode prices fastest at every P and size it priced (where that mode priced
the mapping; else the hybrid, calibrated or openmpi mode: collat.selection.choice.what_if_mode)."""

from pathlib import Path

import pandas as pd

from collat.runner import setup_log
from collat.selection.rulesfile import validate
from collat.selection.choice import best_validated_mode, predicted_best, rules_text, what_if_mode
from collat.ingest.tidy import atomic_write

log = setup_log(snakemake.log)
p = snakemake.params
predictions = pd.read_parquet(snakemake.input.predictions)
preferred = p.mode
if preferred == "best":
    preferred = best_validated_mode(pd.read_csv(snakemake.input.scores), p.modes, p.target)
for mapping, path in zip(p.mappings, snakemake.output):
    mode = what_if_mode(predictions, mapping, preferred)
    best = predicted_best(predictions[predictions["mapping"] == mapping], None, mode, p.target, p.default_candidate)
    text = rules_text(best, p.trees, p.faninout)
    validate(text, path)  # OpenMPI would drop a malformed file without a word
    atomic_write(path, lambda tmp, t=text: Path(tmp).write_text(t))
    log.info("%s, map-by %s: rules of the %s mode's picks (%s target)", snakemake.wildcards.name, mapping, mode,
             p.target)
