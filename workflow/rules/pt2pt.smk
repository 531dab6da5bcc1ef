# Stage 2, pt2pt: piecewise Hockney fits per channel (study eq. 5), channel ratios Q (study eq. 10), Figure 2;
# and the fit with the collective study's own weighting and breaks, for the model's paper mode.


rule pt2pt_hockney:
    input:
        "results/tidy/pt2pt.parquet",
    output:
        csv=report("results/pt2pt/hockney.csv", category="2. Point-to-point", caption="../report/hockney.rst"),
        parquet="results/pt2pt/hockney.parquet",
        q="results/pt2pt/q_ratios.parquet",
        study="results/pt2pt/hockney_study.parquet",
    params:
        channels=config["channels"],
        options=config["pt2pt"],
        study_weighting=config["model"]["paper"]["hockney_weighting"],
    priority: 10  # on the way to the model's validation and the selection (the longest path)
    log:
        "logs/pt2pt/hockney.log",
    benchmark:
        "benchmarks/rules/pt2pt/hockney.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/pt2pt_hockney.py"


rule pt2pt_figures:
    input:
        tidy="results/tidy/pt2pt.parquet",
        fits="results/pt2pt/hockney.parquet",
    output:
        receivers=report(
            "results/figures/pt2pt/latency_per_receiver.png",
            category="2. Point-to-point",
            caption="../report/latency_per_receiver.rst",
        ),
        fits=report("results/figures/pt2pt/hockney_fits.png", category="2. Point-to-point", caption="../report/hockney_fits.rst"),
        pdfs=["results/figures/pt2pt/latency_per_receiver.pdf", "results/figures/pt2pt/hockney_fits.pdf"],
    params:
        size=config["pt2pt"]["figure_size"],
        machine=config["machine"]["name"],
    priority: 1  # off the longest path, after the longer chains (common.smk)
    log:
        "logs/pt2pt/figures.log",
    benchmark:
        "benchmarks/rules/pt2pt/figures.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/pt2pt_figures.py"
