# Stage: evaluate. The study's Tables 1-4 regenerated beside the published values, and the summary.


rule evaluate_tables:
    input:
        model="results/model/scores.csv",
        regression="results/regression/scores.csv",
    output:
        csv=expand("results/tables/table{n}.csv", n=TABLE_NUMBERS),
        md=expand("results/tables/table{n}.md", n=TABLE_NUMBERS),
        tex=expand("results/tables/table{n}.tex", n=TABLE_NUMBERS),
        all=report("results/tables/tables.md", category="7. Tables and summary", caption="../report/tables.rst"),
    params:
        tables=config["paper"]["tables"],
        algorithms=config["algorithms"],
        size=config["evaluate"]["size"],
    priority: 3  # short, ready before the figures: not left to end the run alone (common.smk)
    log:
        "logs/evaluate/tables.log",
    benchmark:
        "benchmarks/rules/evaluate/tables.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/evaluate_tables.py"


rule evaluate_summary:
    input:
        unpack(selection_summary_input),
        unpack(crossover_summary_input),
        unpack(calibration_input),  # how much slower a call on a full node is priced, when calibrated
        hockney="results/pt2pt/hockney.csv",
        model="results/model/scores.csv",
        regression="results/regression/scores.csv",
        tables=expand("results/tables/table{n}.csv", n=TABLE_NUMBERS),
        validation="results/model/validation.csv",
        intervals="results/model/intervals.csv",  # how sure the validation's coverage is
        default_runs="results/model/default_runs.csv",  # algorithms nobody forced, as the default runs them
        noise_floor="results/model/noise_floor.csv",
        nbft_fits="results/nbft/fits.csv",
        what_if=expand("results/model/what_if/{name}.parquet", name=WHAT_IF),
    output:
        report("results/summary.md", category="7. Tables and summary", caption="../report/summary.rst"),
    params:
        size=config["evaluate"]["size"],
        setting=config["evaluate"]["summary_crossover"],
        figure=config["partitioned"]["figure"],
        fanout_form=config["model"]["calibrated"]["nbft_shape"],  # auto: its rule was seen on the splits
        pick=config["selection"]["pick"],  # how the selection's picks are made, said with its numbers
        algorithms=config["selection"]["algorithms"],  # what a rules file may name
        eager_limit=config["model"]["openmpi"]["eager_limit"],  # stated, or null: what the data show
        trees=config["model"]["openmpi"]["trees"],  # an algorithm's kind, for its interval's coverage
    priority: 3  # short, ready before the figures: not left to end the run alone (common.smk)
    log:
        "logs/evaluate/summary.log",
    benchmark:
        "benchmarks/rules/evaluate/summary.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/evaluate_summary.py"
