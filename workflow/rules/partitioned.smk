# Stage: partitioned. Gain of MPI-4 partitioned (pipelined) over bulk communication
# (Gillis et al. 2023, eq. 1-9), the published numbers, and gain curves for the configured links
# and for the channels measured by the pt2pt stage.


rule partitioned_gillis:
    output:
        report(
            "results/partitioned/gillis_numbers.csv",
            category="5. Partitioned communication",
            caption="../report/partitioned_gillis.rst",
        ),
    params:
        cases=config["partitioned"]["gillis_numbers"],
        workloads=config["partitioned"]["workloads"],
        cpu=config["partitioned"]["cpu"],
    log:
        "logs/partitioned/gillis.log",
    benchmark:
        "benchmarks/rules/partitioned/gillis.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/partitioned_gillis.py"


rule partitioned_gain:
    input:
        unpack(partitioned_inputs),
    output:
        gain="results/partitioned/gain.parquet",
        crossover=report(
            "results/partitioned/crossover.csv",
            category="5. Partitioned communication",
            caption="../report/partitioned_crossover.rst",
        ),
    params:
        links=config["partitioned"]["links"],
        channels=config["partitioned"]["channels"],
        machine=machine_label(config["machine"]),
        workloads=config["partitioned"]["workloads"],
        cpu=config["partitioned"]["cpu"],
        threads=config["partitioned"]["threads"],
        theta=config["partitioned"]["theta"],
        size_exponents=config["partitioned"]["size_exponents"],
    priority: 3  # the longest chain off the longest path (common.smk)
    log:
        "logs/partitioned/gain.log",
    benchmark:
        "benchmarks/rules/partitioned/gain.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/partitioned_gain.py"


rule partitioned_figures:
    input:
        gain="results/partitioned/gain.parquet",
        crossover="results/partitioned/crossover.csv",
    output:
        size=report(
            "results/figures/partitioned/gain_vs_size.png",
            category="5. Partitioned communication",
            caption="../report/partitioned_gain_vs_size.rst",
        ),
        theta=report(
            "results/figures/partitioned/gain_vs_theta.png",
            category="5. Partitioned communication",
            caption="../report/partitioned_gain_vs_theta.rst",
        ),
        heatmap=report(
            "results/figures/partitioned/gain_heatmap.png",
            category="5. Partitioned communication",
            caption="../report/partitioned_gain_heatmap.rst",
        ),
        pdfs=expand("results/figures/partitioned/{name}.pdf", name=["gain_vs_size", "gain_vs_theta", "gain_heatmap"]),
    params:
        figure=config["partitioned"]["figure"],
    priority: 3  # the longest chain off the longest path (common.smk)
    log:
        "logs/partitioned/figures.log",
    benchmark:
        "benchmarks/rules/partitioned/figures.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/partitioned_figures.py"
