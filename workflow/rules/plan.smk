# Stage: plan, and measuring. `plan` proposes the next round of OSU launches (results/plan/): for a
# machine nothing was measured on, the first design; else the launches where a measurement most
# lowers the expected regret of the algorithm choice and the model's error (src/collat/plan/).
# `measure` runs the launches a user accepted (config measure.launches) whose logs data.raw.dir
# does not hold yet, one job per launch, when config measure.osu names an OSU build; the ingest
# reads their logs like any other. A log that exists is a raw input: never run again. On a
# cluster the launches of one node count form a group, which a profile's `group-components:
# [measure=N]` submits as one job of up to N launches, and its `resources: [osu_launch=1]` runs
# them one after another in it: the job asks for their largest node count and task count, and the
# sum of their runtimes (profiles/slurm).


rule plan:
    input:
        unpack(plan_input),
    output:
        launches=report("results/plan/launches.csv", category="10. Measurement plan", caption="../report/plan.rst"),
        manifest="results/plan/manifest.csv",
        jobs=directory("results/plan/jobs"),
    params:
        machine=config["machine"],
        algorithms=config["algorithms"],
        mappings=config["mappings"],
        channels=config["channels"],
        plan=config["plan"],
        measure=config["measure"],
        raw_dir=RAW["dir"],
        trees=config["model"]["openmpi"]["trees"],  # the fan-out or radix each forced run states
        target=config["selection"]["targets"][0],
    threads: 1
    priority: 1  # nothing waits for it
    log:
        "logs/plan/plan.log",
    benchmark:
        "benchmarks/rules/plan/plan.tsv",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/plan.py"


rule measure:
    output:
        f"{RAW['dir']}/{{measured}}",
    params:
        launch=lambda w: PENDING[w.measured],
        machine=config["machine"],
        measure=config["measure"],
        trees=config["model"]["openmpi"]["trees"],
    wildcard_constraints:
        measured="|".join(re.escape(f) for f in PENDING) or "$^",
    # on a cluster, a launch group: the launches of one node count in one job (measure_group)
    group:
        measure_group
    resources:
        nodes=lambda w: PENDING[w.measured]["nodes"],
        tasks=lambda w: int(PENDING[w.measured]["P"]),
        osu_launch=1,  # a profile's `resources: [osu_launch=1]` runs a group's launches one after another
    log:
        "logs/measure/{measured}.log",
    conda:
        "../envs/collat.yaml"
    script:
        "../scripts/measure.py"
