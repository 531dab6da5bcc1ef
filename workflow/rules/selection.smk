# Stage: selection. The model's choice of algorithm, its regret against the measured best and
# OpenMPI's default, and OpenMPI dynamic-rules files (one per mapping policy).


rule selection:
    input:
        unpack(segments_input),
        predictions="results/model/predictions.parquet",
        folds="results/model/validation_predictions.parquet",
        scores="results/model/validation.csv",
        collective="results/tidy/collective.parquet",
        intervals="results/model/intervals.csv",  # how uncertain each price is (selection.pick: expected)
        hockney="results/pt2pt/hockney.parquet",  # the sizes where a channel changes regime, for those widths
    output:
        regret=report(
            "results/selection/regret.csv",
            category="9. Algorithm selection",
            caption="../report/regret.rst",
        ),
        unseen=report(
            "results/selection/regret_unseen_algorithm.csv",
            category="9. Algorithm selection",
            caption="../report/regret_unseen.rst",
        ),
        unseen_P=report(
            "results/selection/regret_unseen_P.csv",
            category="9. Algorithm selection",
            caption="../report/regret_unseen_P.rst",
        ),
        cells="results/selection/choices.parquet",
        rules=expand("results/selection/rules_map-by-{mapping}.txt", mapping=config["mappings"]),
    params:
        faninout=config["selection"]["faninout"],  # beside each shape's own (model.openmpi.trees)
        trees=config["model"]["openmpi"]["trees"],
        targets=config["selection"]["targets"],
        mode=config["selection"]["mode"],
        modes=config["model"]["modes"],
        default_candidate=config["selection"]["default_candidate"],
        pick=config["selection"]["pick"],
        algorithms=config["selection"]["algorithms"],
        machine=config["machine"],
        mappings=config["mappings"],
    priority: 10  # on the way to the model's validation and the selection (the longest path)
    log:
        "logs/selection/selection.log",
    benchmark:
        "benchmarks/rules/selection/selection.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/selection.py"


rule selection_what_if:
    input:
        predictions="results/model/what_if/{name}.parquet",
        scores="results/model/validation.csv",
    output:
        expand("results/selection/what_if/{{name}}/rules_map-by-{mapping}.txt", mapping=config["mappings"]),
    params:
        faninout=config["selection"]["faninout"],  # beside each shape's own (model.openmpi.trees)
        trees=config["model"]["openmpi"]["trees"],
        target=config["selection"]["targets"][0],
        mode=config["selection"]["mode"],
        modes=config["model"]["modes"],
        default_candidate=config["selection"]["default_candidate"],
        mappings=config["mappings"],
    priority: 1  # off the longest path
    log:
        "logs/selection/what_if_{name}.log",
    benchmark:
        "benchmarks/rules/selection/what_if_{name}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/selection_what_if.py"


rule selection_figures:
    input:
        "results/selection/choices.parquet",
    output:
        png=report(
            expand("results/figures/selection/best_{operation}.png", operation=["bcast", "reduce"]),
            category="9. Algorithm selection",
            caption="../report/best_maps.rst",
        ),
        pdf=expand("results/figures/selection/best_{operation}.pdf", operation=["bcast", "reduce"]),
    params:
        mappings=config["mappings"],
        algorithms=config["algorithms"],
    priority: 10  # the longest path ends here: validation, selection, its figure
    log:
        "logs/selection/figures.log",
    benchmark:
        "benchmarks/rules/selection/figures.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/selection_figures.py"
