# Stage: figures. The study's Figures 3 and 4 (latency against P, measured and modelled) and the
# accuracy figures (R² heat maps, error against message size).


rule figures_collective:
    input:
        collective="results/tidy/collective.parquet",
        model="results/model/predictions.parquet",
        regression="results/regression/predictions.parquet",
    output:
        png=report(
            expand("results/figures/collective/{{operation}}_{size}B.png", size=config["evaluate"]["figure_sizes"]),
            category="8. Figures",
            subcategory="Latency against P",
            caption="../report/collective_grid.rst",
        ),
        pdf=expand("results/figures/collective/{{operation}}_{size}B.pdf", size=config["evaluate"]["figure_sizes"]),
    params:
        sizes=config["evaluate"]["figure_sizes"],
        machine=config["machine"],
        mappings=config["mappings"],
        algorithms=lambda wc: config["algorithms"][wc.operation],
    priority: 2  # off the longest path, after the partitioned chain (common.smk)
    log:
        "logs/figures/collective_{operation}.log",
    benchmark:
        "benchmarks/rules/figures/collective_{operation}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/figures_collective.py"


rule figures_accuracy:
    input:
        model="results/model/scores.csv",
        regression="results/regression/scores.csv",
    output:
        r2=report(
            expand("results/figures/accuracy/r2_{operation}.png", operation=["bcast", "reduce"]),
            category="8. Figures",
            subcategory="Accuracy",
            caption="../report/r2_heatmaps.rst",
        ),
        error=report(
            "results/figures/accuracy/error_vs_size.png",
            category="8. Figures",
            subcategory="Accuracy",
            caption="../report/error_vs_size.rst",
        ),
        pdfs=expand("results/figures/accuracy/{name}.pdf", name=["r2_bcast", "r2_reduce", "error_vs_size"]),
    params:
        size=config["evaluate"]["size"],
        algorithms=config["algorithms"],
        mappings=config["mappings"],
    priority: 2  # off the longest path, with the collective figures: the 5-6 s figure jobs before the 4 s ones (common.smk)
    log:
        "logs/figures/accuracy.log",
    benchmark:
        "benchmarks/rules/figures/accuracy.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/figures_accuracy.py"


rule figures_validation:
    input:
        predictions="results/model/validation_predictions.parquet",
        scores="results/model/validation.csv",
    output:
        png=report(
            "results/figures/accuracy/validation.png",
            category="8. Figures",
            subcategory="Accuracy",
            caption="../report/validation_figure.rst",
        ),
        pdf="results/figures/accuracy/validation.pdf",
    params:
        target=config["validation"]["targets"][0],  # avg where validated: OSU's headline column
    priority: 10  # on the longest path: the validation, its figure, the summary
    log:
        "logs/figures/validation.log",
    benchmark:
        "benchmarks/rules/figures/validation.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/figures_validation.py"
