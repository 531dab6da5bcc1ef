# Stage 1, ingest: obtain the published files, parse raw OSU logs, build the tidy tables.


rule fetch_published:
    output:
        "resources/study/{file}",
    params:
        url=lambda w: f"{PUBLISHED['base_url']}/{w.file}",
        sha256=lambda w: PUBLISHED["files"][w.file]["sha256"],
        # the mirror is not a param: where a checksummed file came from must not trigger reruns
    log:
        "logs/fetch/{file}.log",
    benchmark:
        "benchmarks/rules/fetch/{file}.tsv",
    conda:
        "../envs/collat.yaml"
    localrule: True
    script:
        "../scripts/fetch_published.py"


rule ingest_published:
    input:
        "resources/study/{file}",
    output:
        table="results/ingest/published/{file}.arrows",
        quality="results/ingest/published/{file}.quality.json",
    params:
        entry=lambda w: {**PUBLISHED["files"][w.file], **({"mpi": PUBLISHED["mpi"]} if PUBLISHED["mpi"] else {})},
        vocab=VOCAB,
    log:
        "logs/ingest/published/{file}.log",
    benchmark:
        "benchmarks/rules/ingest/published/{file}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/ingest_published.py"


rule ingest_raw:
    input:
        logs=lambda w: [f"{RAW['dir']}/{log}" for log in raw_batches()[w.batch]],
        manifest=raw_manifest(),
    output:
        # one part and one quality record per log, under the log's own path (common.smk tidy_parts)
        parts=directory("results/ingest/raw/{batch}"),
    params:
        logs=lambda w: raw_batches()[w.batch],  # the logs' paths under data.raw.dir
        patterns=lambda w: RAW["patterns"],  # a function: the {fields} are not wildcards
        on_bad_run=RAW["on_bad_run"],
        markers=RAW["markers"],
        pooled_factor=RAW["pooled_factor"],
        carry_over=RAW["marker_carry_over"],
        constant=RAW["metadata"],
        machine=config["machine"],
        vocab=VOCAB,
    wildcard_constraints:
        batch=r"(pt2pt|nbft|collective|any|passed_over)/\d+",
    log:
        "logs/ingest/raw/{batch}.log",
    benchmark:
        "benchmarks/rules/ingest/raw/{batch}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/ingest_raw.py"


rule ingest_table:
    input:
        lambda w: Path(config["data"]["tables"][int(w.entry)]["dir"]) / w.name,
    output:
        table="results/ingest/tables/{entry}/{name}.arrows",
        quality="results/ingest/tables/{entry}/{name}.quality.json",
    params:
        entry=lambda w: config["data"]["tables"][int(w.entry)],
        vocab=VOCAB,
    log:
        "logs/ingest/tables/{entry}/{name}.log",
    benchmark:
        "benchmarks/rules/ingest/tables/{entry}/{name}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/ingest_table.py"


rule tidy_table:
    input:
        parts=lambda w: tidy_parts(w.table, batches=True),
        manifest=raw_manifest(),
    output:
        table="results/tidy/{table}.parquet",
        quality="results/tidy/{table}.quality.csv",
    wildcard_constraints:
        table=r"pt2pt|nbft|collective",
    resources:
        # peak RSS is about 25 x the parts (benchmarks/ingest_large.py: 0.6 GB for the 24 MB part
        # of a 200 MB log), requested with a margin; the study's parts need the floor
        mem_mb=lambda w: max(1000, int(40 * parts_mb(w.table))),
    params:
        parts=lambda w: tidy_parts(w.table),  # each input file's part, in order (a raw log's in its batch)
        outliers=config["quality"]["outliers"],
        mpi=config["data"]["mpi"],
        asks=lambda w: measured_targets(config).get(w.table, {}),  # the targets (avg, max) the stages read
        channels=lambda w: needed_channels(config) if w.table == "pt2pt" else {},  # what the model's trees use
        stages=config["stages"],
        any_input=bool(ingest_parts()),
        raw_dir=RAW["dir"],
        raw_glob=RAW["glob"],
        cores=total_cores(config["machine"]),  # a collective run on more cannot be placed
        pooled_factor=RAW["pooled_factor"],  # files of one configuration this far apart: a warning
        on_bad_run=RAW["on_bad_run"],  # a log read twice: stop, or pass over the copy
    log:
        "logs/ingest/tidy_{table}.log",
    benchmark:
        "benchmarks/rules/ingest/tidy_{table}.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/tidy_table.py"


rule tidy:
    input:
        quality=expand("results/tidy/{table}.quality.csv", table=["pt2pt", "nbft", "collective"]),
        # the records of the logs the ingest passes over unread (no table reads them)
        passed_over=[f"results/ingest/raw/{batch}" for batch in sorted(raw_batches()) if batch.startswith("passed_over/")],
    output:
        quality=report("results/tidy/quality.csv", category="1. Ingest", caption="../report/quality.rst"),
    params:
        mpi=config["data"]["mpi"],
    log:
        "logs/ingest/tidy.log",
    benchmark:
        "benchmarks/rules/ingest/tidy.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/tidy.py"
