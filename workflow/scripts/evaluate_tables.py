"""Tables 1-4: published R² beside ours, as CSV, Markdown and LaTeX."""

from pathlib import Path

import pandas as pd

from collat.runner import setup_log
from collat.evaluate.tables import r2_table, to_latex, to_markdown
from collat.ingest.tidy import atomic_write

log = setup_log(snakemake.log)
p = snakemake.params
model, regression = pd.read_csv(snakemake.input.model), pd.read_csv(snakemake.input.regression)
parts = []
for spec in p.tables:
    names = {a["id"]: a["name"] for a in p.algorithms[spec["operation"]]}
    table = r2_table(spec, model, regression, p.size)
    n = spec["table"]
    out = {Path(f).name: f for f in [*snakemake.output.csv, *snakemake.output.md, *snakemake.output.tex]}
    atomic_write(out[f"table{n}.csv"], lambda tmp: table.to_csv(tmp, index=False))
    md = to_markdown(table, spec["title"], names)
    atomic_write(out[f"table{n}.md"], lambda tmp: Path(tmp).write_text(md))
    tex = to_latex(table, spec["title"], names)
    atomic_write(out[f"table{n}.tex"], lambda tmp: Path(tmp).write_text(tex))
    parts.append(md)
    log.info("table %d: %d cells, largest |difference| %.3f", n, len(table), table["difference"].abs().max())
text = "# The study's R² tables, regenerated\n\n" + "\n".join(parts)
atomic_write(snakemake.output.all, lambda tmp: Path(tmp).write_text(text))
