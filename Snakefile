# Collective-latency study: from raw OSU logs to Hockney fits, NBFT factors, models and figures.
# Usage: snakemake --cores N   (README.md; config keys in config/README.md)

import sys
import time
from pathlib import Path

from snakemake.utils import min_version

from collat.config.defaults import complete, left_out_stages
from collat.config.schema import ConfigSchemaError, validate_config
from collat.config.settings import check_results_machine, stamp_results

min_version("9.0")


# A config given with --configfile replaces this one instead of being merged into it: a user's
# machine must never inherit the ORFEO description (links, workloads, algorithms) it does not restate.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# stages a user names are run or refused; the default list loses those no input feeds
STAGES_GIVEN = "stages" in config
MAPPINGS_GIVEN = "mappings" in config  # else the collective logs' own, where they say before being read
# the schema's defaults filled in; a refused config stops with one line: file, key, found, expected
try:
    validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml",
                    ", ".join(map(str, workflow.overwrite_configfiles or ["config/config.yaml"])))
except ConfigSchemaError as exc:
    sys.exit(f"{exc}")  # the one line, last: no traceback for a user's mistake
# the OpenMPI version whose facts (trees, fixed rules) the model applies; None where the config states both
OPENMPI = config["model"]["openmpi"]
FACTS_VERSION = None if OPENMPI.get("trees") is not None and OPENMPI.get("default_rules") is not None else str(
    OPENMPI["version"])
# what the config left out and the package (the MPI version's facts) or the machine knows
try:
    complete(config)
except ValueError as exc:
    sys.exit(f"{exc}")
for note in left_out_stages(config):
    print(note, file=sys.stderr)
# results/ of another machine are never merged with this one's: one line, before any job
try:
    check_results_machine("results", config["machine"])
except ValueError as exc:
    sys.exit(f"{exc}")


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
include: "workflow/rules/plan.smk"


STARTED = time.time()


onstart:
    # which machine results/ describes, for the next run's check
    stamp_results("results", config["machine"])


onsuccess:
    # an earlier config's outputs (a rules file of a mapping the logs no longer have) stay in results/:
    # named after a whole run, never removed
    from itertools import chain

    from collat.config.settings import leftover_line, leftover_results
    from collat.runner import say_last

    dag = getattr(workflow, "dag", None)  # Snakemake's own DAG of this run: its targets, every job's files
    if dag is not None and any(job.rule.name == "all" for job in getattr(dag, "targetjobs", ())):
        used = {f for job in dag.jobs for f in chain(job.input, job.output, job.log)}
        leftovers = leftover_results("results", used)
        say_last([leftover_line("results", leftovers)] if leftovers else [])


onerror:
    # a user's mistake, said last (after Snakemake's own tail): the one line each failed job logged
    from collat.runner import say_last, user_errors

    say_last(user_errors("logs", STARTED - 1))


rule all:
    input:
        all_targets(),
    default_target: True
