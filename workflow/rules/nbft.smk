# Stage 3, nbft: NBFT lines T(P) = alpha + beta (P - 1) (study eq. 6), gamma(P, m) (study eq. 7) and the
# measured medians per receiver count that the model prices fan-outs with.


rule nbft_gamma:
    input:
        tidy="results/tidy/nbft.parquet",
        fits="results/pt2pt/hockney.parquet",
    output:
        gamma="results/nbft/gamma.parquet",
        fits=report("results/nbft/fits.csv", category="3. NBFT", caption="../report/nbft_fits.rst"),
        medians="results/nbft/medians.parquet",
    params:
        targets=config["nbft"]["targets"],
        min_r2=config["nbft"]["min_r2"],
        unmeasured_slope=config["nbft"]["unmeasured_slope"],
        operations=list(config["algorithms"]),
    priority: 10  # on the way to the model's validation and the selection (the longest path)
    log:
        "logs/nbft/gamma.log",
    benchmark:
        "benchmarks/rules/nbft/gamma.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/nbft_gamma.py"


rule nbft_figures:
    input:
        "results/nbft/gamma.parquet",
    output:
        png=report("results/figures/nbft/gamma_heatmaps.png", category="3. NBFT", caption="../report/gamma_heatmaps.rst"),
        pdf="results/figures/nbft/gamma_heatmaps.pdf",
        reduce_png=report("results/figures/nbft/gamma_heatmaps_reduce.png", category="3. NBFT",
                          caption="../report/gamma_heatmaps.rst"),
        reduce_pdf="results/figures/nbft/gamma_heatmaps_reduce.pdf",
    params:
        channels=config["channels"],
    priority: 1  # off the longest path, after the longer chains (common.smk)
    log:
        "logs/nbft/figures.log",
    benchmark:
        "benchmarks/rules/nbft/figures.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/nbft_figures.py"
