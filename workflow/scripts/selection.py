"""Model-based algorithm choice: regret table, per-cell choices and OpenMPI rules files."""

from pathlib import Path

import pandas as pd

from collat.runner import setup_log
from collat.selection.rulesfile import validate
from collat.model.validation import measured_cells, size_bounds
from collat.selection.choice import (best_validated_mode, choice_sd, measured_table, predicted_best, regret,
                                     regret_sparse_P, regret_unseen_algorithm, rules_candidates, rules_text,
                                     with_segments)
from collat.ingest.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
p = snakemake.params
mode = p.mode
if mode == "best":
    mode = best_validated_mode(pd.read_csv(snakemake.input.scores), p.modes, p.targets[0])
    log.info("selection.mode best: %s (smallest mean median relative error over the validation's splits)", mode)
predictions = pd.read_parquet(snakemake.input.predictions, filters=[("mode", "==", mode)])  # the chooser's rows
collective = read_parquet(snakemake.input.collective, "collective")
expected = p.pick == "expected"
if expected:  # how surely each price is known: an algorithm priced less surely must be predicted faster to win
    measured = {t: measured_cells(collective, t) for t in predictions["target"].unique()}
    predictions["sd"] = choice_sd(predictions, measured, pd.read_csv(snakemake.input.intervals), p.machine,
                                  size_bounds(pd.read_parquet(snakemake.input.hockney)))
summaries, cells = [], None
for target in p.targets:
    c, s = regret(predictions, collective, target, mode, p.default_candidate, p.algorithms, p.trees)
    summaries.append(s)
    if cells is None:
        cells = c.assign(target=target)
regret_table = pd.concat(summaries, ignore_index=True)
atomic_write(snakemake.output.regret, lambda tmp: regret_table.to_csv(tmp, index=False))
folds = pd.read_parquet(snakemake.input.folds, filters=[("model", "==", mode)])
unseen = pd.concat([regret_unseen_algorithm(folds, collective, target, mode, expected) for target in p.targets],
                   ignore_index=True)
atomic_write(snakemake.output.unseen, lambda tmp: unseen.to_csv(tmp, index=False))
unseen_P = pd.concat([regret_sparse_P(folds, collective, target, mode, p.default_candidate, expected)
                      for target in p.targets],
                     ignore_index=True)
atomic_write(snakemake.output.unseen_P, lambda tmp: unseen_P.to_csv(tmp, index=False))
atomic_write(snakemake.output.cells, lambda tmp: cells.to_parquet(tmp, index=False))
if "segments" in snakemake.input.keys():  # segment sizes compete in the rules files, as the model prices them
    predictions = with_segments(predictions, pd.read_parquet(snakemake.input.segments), mode)
# the algorithms a rules file may name (selection.algorithms): every modelled one, or those measured
candidates = rules_candidates(predictions, measured_table(collective, p.targets[0]), p.algorithms)
best = predicted_best(candidates, None, mode, p.targets[0], p.default_candidate)
if "segsize" in best:
    cut = best[best["segsize"] > 0]
    log.info("rules files: %d of %d cells (%s) with a segment size nobody measured", len(cut), len(best),
             ", ".join(f"{s} B: {n}" for s, n in cut["segsize"].value_counts().sort_index().items()) or "none")
for mapping, path in zip(p.mappings, snakemake.output.rules):
    b = best[best["mapping"] == mapping]
    text = rules_text(b, p.trees, p.faninout)
    validate(text, path)  # OpenMPI would drop a malformed file without a word
    atomic_write(path, lambda tmp, t=text: Path(tmp).write_text(t))
log.info("%d measured cells scored; rules for %s", len(cells), ", ".join(p.mappings))
