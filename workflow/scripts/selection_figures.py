"""Maps of the fastest algorithm over (P, size): the model's pick beside the measured best."""

import pandas as pd

from collat.figures.style import save
from collat.selection.figures import best_algorithm_maps
from collat.runner import setup_log

log = setup_log(snakemake.log)
cells = pd.read_parquet(snakemake.input[0])
for op, png in zip(["bcast", "reduce"], snakemake.output.png):
    save(best_algorithm_maps(cells, op, snakemake.params.mappings, snakemake.params.algorithms[op]), png)
