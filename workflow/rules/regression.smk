# Stage: regression. Segmented linear regression of latency against P (eq. 12), with in-sample,
# cross-validated and extrapolation R², for every operation, algorithm, mapping, size and target.


rule regression_fit:
    input:
        "results/tidy/collective.parquet",
    output:
        scores=report(
            "results/regression/scores.csv",
            category="4. Segmented regression",
            caption="../report/regression_scores.rst",
        ),
        coefficients=report(
            "results/regression/coefficients.csv",
            category="4. Segmented regression",
            caption="../report/regression_coefficients.rst",
        ),
        predictions="results/regression/predictions.parquet",
    params:
        machine=config["machine"],
        options=config["regression"],
        paper_cleaning=config["paper"]["cleaning"],
    priority: 10  # on the way to the model's validation and the selection (the longest path)
    log:
        "logs/regression/fit.log",
    benchmark:
        "benchmarks/rules/regression/fit.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/regression_fit.py"
