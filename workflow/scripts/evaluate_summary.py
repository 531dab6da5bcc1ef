"""results/summary.md: headline numbers, each with the file it comes from."""

from pathlib import Path

import pandas as pd

from collat.runner import setup_log
from collat.evaluate.tables import summary_markdown
from collat.model.options import eager_limit
from collat.ingest.tidy import atomic_write

log = setup_log(snakemake.log)
i = snakemake.input
paths = {"hockney": i.hockney, "model_scores": i.model, "regression_scores": i.regression,
         "tables": "results/tables/", "validation": i.validation, "nbft_fits": i.nbft_fits,
         "noise_floor": i.noise_floor, "default_runs": i.default_runs, "intervals": i.intervals}
calibration = None
if "calibration" in i.keys():  # the calibrated mode is predicted
    paths["calibration"] = i.calibration
    calibration = pd.read_csv(i.calibration)
crossover = None
if "crossover" in i.keys():  # the partitioned stage runs
    paths["crossover"] = i.crossover
    crossover = pd.read_csv(i.crossover)
selection = None
if "regret" in i.keys():
    paths.update(regret=i.regret, unseen=i.unseen, unseen_P=i.unseen_P)
    selection = (pd.read_csv(i.regret), pd.read_csv(i.unseen), pd.read_csv(i.unseen_P))
what_if = {Path(f).stem: pd.read_parquet(f) for f in i.what_if}
paths["what_if"] = {Path(f).stem: f for f in i.what_if}
nbft_fits = pd.read_csv(i.nbft_fits)
eager = eager_limit(snakemake.params.eager_limit, pd.read_csv(i.hockney), nbft_fits)
text = summary_markdown(pd.read_csv(i.hockney), pd.read_csv(i.model), pd.read_csv(i.regression),
                        [pd.read_csv(t) for t in i.tables], crossover, paths,
                        snakemake.params.size, snakemake.params.setting, pd.read_csv(i.validation), selection,
                        nbft_fits, what_if, pd.read_csv(i.noise_floor, dtype={"nodes": str}),
                        figure_setting=snakemake.params.figure,
                        rules={f: Path(f).read_text() for f in i.rules} if "rules" in i.keys() else None,
                        fanout_form=snakemake.params.fanout_form, pick=snakemake.params.pick,
                        algorithms=snakemake.params.algorithms, eager=eager,
                        default_runs=pd.read_csv(i.default_runs), calibration=calibration,
                        trees=snakemake.params.trees, intervals=pd.read_csv(i.intervals))
atomic_write(snakemake.output[0], lambda tmp: Path(tmp).write_text(text))
log.info("summary written")
