# Collective-latency study: from raw OSU logs to Hockney fits, NBFT factors, models and figures.
# Usage: snakemake --cores N   (README.md; config keys in config/README.md)

from snakemake.utils import min_version, validate

min_version("9.0")


# A config given with --configfile replaces this one instead of being merged into it: a user's
# machine must never inherit the ORFEO description (links, workloads, algorithms) it does not restate.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"



validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/pt2pt.smk"
include: "workflow/rules/nbft.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/regression.smk"
include: "workflow/rules/partitioned.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/selection.smk"


rule all:
    input:
        all_targets(),
    default_target: True
