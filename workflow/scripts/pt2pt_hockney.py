"""Hockney fits per channel and Q ratios from the tidy point-to-point table; beside them the collective
study's own fit (its weighting, its fixed breaks), which the paper mode prices with."""

from collat import InputError
from collat.pt2pt.hockney import eager_limit, fit_hockney, q_ratios
from collat.runner import setup_log
from collat.ingest.tidy import atomic_write, read_parquet

log = setup_log(snakemake.log)
opt = snakemake.params.options
pt2pt = read_parquet(snakemake.input[0], "pt2pt")
fits = fit_hockney(pt2pt, snakemake.params.channels, opt["breaks"], opt["detect_breaks"], opt["max_breaks"],
                   opt["min_points_per_regime"], opt["weighting"])
if fits.empty:
    raise InputError(snakemake.input[0], None, f"point-to-point latency rows (osu_latency) on one of the channels "
                     f"{list(snakemake.params.channels)}", f"{len(pt2pt)} rows on {sorted(set(pt2pt['channel']))}")
atomic_write(snakemake.output.csv, lambda tmp: fits.to_csv(tmp, index=False))
atomic_write(snakemake.output.parquet, lambda tmp: fits.to_parquet(tmp, index=False))
for _, r in fits[fits["alpha_at_bound"]].iterrows():
    log.warning("channel %s, %d-%d B: the free line's latency alpha was negative; held at 0 (alpha_at_bound)",
                r["channel"], r["size_min"], r["size_max"])
study = fit_hockney(pt2pt, snakemake.params.channels, opt["breaks"], weighting=snakemake.params.study_weighting,
                    nonnegative=False)  # as the study ran it
atomic_write(snakemake.output.study, lambda tmp: study.to_parquet(tmp, index=False))
q = q_ratios(fits, pt2pt["size"].unique())
atomic_write(snakemake.output.q, lambda tmp: q.to_parquet(tmp, index=False))
log.info("\n%s", fits.to_string())
# each channel's protocol switch (columns switch, switch_jump): the eager limit where no NBFT reduce run shows one
log.info("protocol switch per channel: %s; the intra-node channels' eager limit: %d B",
         ", ".join(f"{r.channel} after {r.switch:.0f} B" for r in fits.drop_duplicates("channel").itertuples()
                   if r.switch == r.switch), eager_limit(fits))
