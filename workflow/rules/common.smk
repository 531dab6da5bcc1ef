# Input functions, targets and shared parameters of the workflow.
#
# Job priorities (the `priority:` of each rule) put a local run's jobs in critical-path order, so
# that two cores stay busy and no job ends a run alone: 10 for the longest path (hockney, gamma,
# regression, calibration, predictions, validation, selection and their figures); off it, the
# longest chains first: 3 for the partitioned stage (gain and figures, 7-8 s) and for the short
# tables and summary, which are ready before the figures (left last, the two ran one after the
# other on one core at the end of every run: 1.5 s); 2 for the collective figures (7-8 s each) and
# the accuracy figures (5-6 s); 1 for the shorter figure jobs (pt2pt, nbft: 4-5 s), so that a run
# ends on two short jobs, not on one long one beside an idle core. Cold runs on 2 cores, alternated:
# 66.3 / 67.9 s with the 3/2/1 levels, 68.7 / 69.2 s without; the rest: the README's durations.

import functools
import os
import re
import sys
from pathlib import Path

from collat.config.vocabulary import Vocabulary
from collat.ingest.markers import compile_rules
from collat.ingest.metadata import batch_of
from collat.model.placement import machine_label, total_cores
from collat.config.defaults import derived_mappings, stages_without_input
from collat.config.settings import ConfigError, check as check_config, measured_targets, needed_channels

VOCAB = Vocabulary.from_config(config)
PUBLISHED = config["data"]["published"]
RAW = config["data"]["raw"]
try:
    compile_rules(RAW["markers"])
except ValueError as exc:
    sys.exit(f"config key {exc}")
TABLE_NUMBERS = [t["table"] for t in config["paper"]["tables"]]
WHAT_IF = {entry["name"]: i for i, entry in enumerate(config["model"]["what_if"])}  # name -> its index
TIDY = expand("results/tidy/{table}.parquet", table=["pt2pt", "nbft", "collective"])


wildcard_constraints:
    file=r"[^/]+\.csv",
    operation=r"bcast|reduce",
    size=r"\d+",
    log=r".+",
    entry=r"\d+",
    target=r"avg|max",
    name=r"[A-Za-z0-9_.-]+",


def published_files():
    return list(PUBLISHED["files"]) if PUBLISHED["enabled"] else []


def raw_manifest():
    if not RAW["manifest"]:
        return []
    path = Path(RAW["dir"]) / RAW["manifest"]
    return [str(path)] if path.is_file() else []


def _manifest_rows():
    """The manifest's whole-file rows (file -> its non-empty fields) and the files it has per-run
    rows for, read without pandas (the workflow is being parsed)."""
    import csv

    files, per_run = {}, set()
    if raw_manifest():
        with open(raw_manifest()[0], newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("run"):
                    per_run.add(row["file"])
                else:
                    files[row["file"]] = {k: v for k, v in row.items() if k not in ("file", "run") and v}
    return {"files": files, "per_run": per_run}


MANIFEST_ROWS = _manifest_rows()


def _pending():
    """The accepted launches (config measure.launches) whose logs data.raw.dir does not hold yet,
    by log path: what stage measure runs, when config measure.osu names an OSU build. A log that
    exists is a raw input like any other, never run again."""
    path = Path(config["measure"]["launches"])
    if config["measure"]["osu"] is None or not path.is_file():
        return {}
    import csv

    from collat.plan.design import nodes_spanned
    from collat.plan.jobs import BINARIES, binary, log_path

    out = {}
    with open(path, newline="") as fh:
        for number, row in enumerate(csv.DictReader(fh), 2):
            launch = {k: (row.get(k) or None) for k in ("kind", "benchmark", "operation", "algorithm", "mapping",
                                                          "channel", "P", "receiver")}
            try:
                for k in ("algorithm", "P", "receiver"):
                    launch[k] = None if launch[k] is None else int(float(launch[k]))
                if (launch["kind"] not in ("pt2pt", "nbft", "collective") or launch["P"] is None
                        or launch["benchmark"] not in BINARIES):
                    raise ValueError
            except ValueError:
                sys.exit(f"{path}, line {number}: expected a launch (kind pt2pt, nbft or collective; benchmark "
                         f"osu_latency, osu_bcast or osu_reduce; integer algorithm, P, receiver), found {dict(row)}")
            launch["nodes"] = nodes_spanned(config["machine"], launch["kind"], launch["mapping"], launch["P"],
                                            launch["channel"])
            file = log_path(launch)
            if not (Path(RAW["dir"]) / file).exists():
                out[file] = launch
    # a wrong OSU path is the config's mistake: refused before any job, as the last line
    for benchmark in sorted({launch["benchmark"] for launch in out.values()}):
        osu = binary(config["measure"]["osu"], benchmark)
        if not Path(osu).is_file():
            sys.exit(f"config key measure.osu: {osu} not found (expected an OSU 7 build, the folder holding "
                     f"c/mpi/, or an install's libexec/osu-micro-benchmarks/mpi)")
    return out


PENDING = _pending()


def measure_group(wildcards):
    """The launch group of a pending launch on a cluster: its node count's. Each group is registered
    under the parent id `measure` (Snakemake's own bookkeeping of a group with wildcards), so that
    one `group-components: [measure=N]` bundles the launches of every node count, each apart."""
    group = f"measure_{PENDING[wildcards.measured]['nodes']}nodes"
    workflow.parent_groupids[group] = "measure"
    return group


@functools.lru_cache(maxsize=None)
def raw_logs():
    """Log files under data.raw.dir matching data.raw.glob and, when given, data.raw.extensions
    (POSIX paths relative to the dir); hidden files, README.md and the manifest are never logs.
    The directory is walked once per parse (the rules' inputs and each table's parts ask)."""
    root = Path(RAW["dir"])
    if not root.is_dir():
        return sorted(PENDING)
    extensions = RAW.get("extensions")
    excluded = {p for pattern in RAW["exclude"] for p in root.glob(pattern)}
    matched = {
        p.relative_to(root).as_posix()
        for p in root.glob(RAW["glob"])
        if p.is_file()
        and p.name not in ("README.md", RAW["manifest"])
        and not p.name.startswith(".")
        and (extensions is None or p.suffix in extensions)
        and p not in excluded
    }
    # the manifest may name a log the glob leaves out; one it names that does not exist is the
    # tidy_table rule's error, with its line
    named = set(MANIFEST_ROWS["files"]) | MANIFEST_ROWS["per_run"]
    return sorted(matched | {n for n in named if n and (root / n).is_file()} | set(PENDING))


def table_files():
    """(entry index, file relative to its dir) of every file config data.tables names."""
    out = []
    for i, entry in enumerate(config["data"]["tables"]):
        root = Path(entry["dir"])
        if root.is_dir():
            out += [(i, p.relative_to(root).as_posix()) for p in sorted(root.glob(entry["glob"])) if p.is_file()]
    return out


@functools.lru_cache(maxsize=None)
def predicted_metadata(relpath):
    """What a raw log's path pattern, the manifest's row of the file and data.raw.metadata say about
    it, and the benchmark its first OSU title line names where they do not; None where marker lines
    or per-run manifest rows may say otherwise (once per log: the stages, the mappings and every
    table's rule ask; read-only)."""
    from collat.ingest.metadata import constant_metadata, from_path, normalise_benchmark
    from collat.ingest.osu import title_benchmark

    if relpath in PENDING:  # a launch stage measure will run: the plan says what it is
        return {k: str(v) for k, v in PENDING[relpath].items() if v is not None and k not in ("kind", "nodes")}
    if RAW["markers"] or relpath in MANIFEST_ROWS["per_run"]:
        return None
    meta = dict(from_path(relpath, RAW["patterns"]) or {})
    meta.update(MANIFEST_ROWS["files"].get(relpath, {}))
    meta.update(constant_metadata(relpath, RAW["metadata"]) or {})
    if "benchmark" in meta:
        meta["benchmark"] = normalise_benchmark(str(meta["benchmark"]))
    elif "operation" not in meta:  # the log's own title line, where path and manifest do not say
        found = title_benchmark(Path(RAW["dir"]) / relpath)
        if found is not None:
            meta["benchmark"] = found
    return meta


def described(relpath):
    """Whether a path pattern, a manifest row or data.raw.metadata describes a raw log (else the
    ingest passes over it or stops with its line: collat.ingest.metadata.resolve)."""
    from collat.ingest.metadata import constant_metadata, from_path

    return (from_path(relpath, RAW["patterns"]) is not None or relpath in MANIFEST_ROWS["files"]
            or constant_metadata(relpath, RAW["metadata"]) is not None)


def passed_over(relpath):
    """Whether the ingest passes over a raw log unread: under on_bad_run: skip, one that no path
    pattern, manifest row, data.raw.metadata glob or marker line describes (notes, a backup copy).
    Its quality record goes to quality.csv alone (rule tidy), so that editing it reruns no table."""
    return (RAW["on_bad_run"] == "skip" and relpath not in PENDING and not RAW["markers"]
            and relpath not in MANIFEST_ROWS["per_run"] and not described(relpath))


def predicted_table(relpath):
    """The tidy table a raw log goes to (collat.ingest.read.table_of of :func:`predicted_metadata`);
    None where the metadata do not say, or where marker lines or per-run manifest rows may say
    otherwise: such a log feeds every table's rule."""
    from collat.ingest.read import table_of

    meta = predicted_metadata(relpath)
    return None if meta is None else table_of(meta)


def mappings_of_inputs():
    """The mappings the collective inputs name (published files, raw logs by their metadata), or
    None when some input's mapping is known only once it is read (processed tables, marker lines)."""
    found = {PUBLISHED["files"][f].get("mapping") for f in published_files()
             if PUBLISHED["files"][f]["table"] == "collective"}
    if any(config["data"]["tables"][i]["table"] == "collective" for i, _ in table_files()):
        return None
    for log in raw_logs():
        meta = predicted_metadata(log)
        if meta is None:
            return None
        if not described(log):  # never read as a run: skipped (on_bad_run: skip) or refused
            continue
        if "mapping" in meta:
            found.add(meta["mapping"])
        elif "channel" not in meta and predicted_table(log) != "pt2pt":  # a channel: never a collective log
            return None
    return None if None in found else found


def raw_batch(relpath):
    """The ingest job of a raw log (collat.ingest.metadata.batch_of): its predicted table's ('any' where
    only its runs say; 'passed_over' for one the ingest passes over unread)."""
    kind = "passed_over" if passed_over(relpath) else (predicted_table(relpath) or "any")
    return batch_of(relpath, kind, RAW["batches"])


@functools.lru_cache(maxsize=None)
def raw_batches():
    """Each ingest job (rule ingest_raw) and its raw logs, in path order."""
    out = {}
    for log in raw_logs():
        out.setdefault(raw_batch(log), []).append(log)
    return out


def tidy_parts(table, batches=False):
    """The ingested parts one tidy table is built from (rule tidy_table), in their order, the
    published files and processed tables of that table, and the raw logs predicted to feed it or
    whose table is not known before reading (none the ingest passes over unread, see
    :func:`passed_over`), each in its batch's folder; with ``batches``, the folders themselves,
    what the rule waits for."""
    published = [f for f in published_files() if PUBLISHED["files"][f]["table"] == table]
    raw = [log for log in raw_logs() if predicted_table(log) in (table, None) and not passed_over(log)]
    raw_parts = ([f"results/ingest/raw/{raw_batch(log)}/{log}.arrows" for log in raw] if not batches
                 else sorted({f"results/ingest/raw/{raw_batch(log)}" for log in raw}))
    return (
        expand("results/ingest/published/{file}.arrows", file=published)
        + raw_parts
        + [f"results/ingest/tables/{i}/{name}.arrows" for i, name in table_files()
           if config["data"]["tables"][i]["table"] == table]
    )


def parts_mb(table):
    """The size of a table's parts in MB, those written so far (a tidy_table job's memory)."""
    return sum(os.path.getsize(p) for p in tidy_parts(table) if os.path.exists(p)) / 1e6


def tables_with_input():
    """The tidy tables some input feeds (published files, processed tables, raw logs by their
    predicted table), or None when a raw log's table is known only once it is read."""
    tables = {PUBLISHED["files"][f]["table"] for f in published_files()}
    tables |= {config["data"]["tables"][i]["table"] for i, _ in table_files()}
    for log in raw_logs():
        table = predicted_table(log)
        if table is None and predicted_metadata(log) is not None and not described(log):
            continue  # never read as a run: skipped (on_bad_run: skip) or refused
        if table is None:
            return None
        tables.add(table)
    return tables


# mappings a user names are the vocabulary; otherwise the ones the collective logs name (in the
# placement's order), where every log says before it is read
if not MAPPINGS_GIVEN:
    config["mappings"] = derived_mappings(config["mappings"], mappings_of_inputs(), config["machine"])
    VOCAB = Vocabulary.from_config(config)
# stages a user names run or are refused; the default list loses those no input feeds, one line each
if not STAGES_GIVEN:
    for note in stages_without_input(config["stages"], tables_with_input(),
                                     nbft_assumed=config["nbft"]["unmeasured_slope"] is not None):
        print(note, file=sys.stderr)
try:
    check_config(config)
except ConfigError as exc:
    sys.exit(str(exc))  # the one line, last: no traceback for a user's mistake


def ingest_parts():
    return (
        expand("results/ingest/published/{file}.arrows", file=published_files())
        + [f"results/ingest/raw/{batch}" for batch in raw_batches()]
        + [f"results/ingest/tables/{i}/{name}.arrows" for i, name in table_files()]
    )


def partitioned_inputs(wildcards):
    """The Hockney fits, only when gain curves are drawn for measured channels."""
    return {"hockney": "results/pt2pt/hockney.parquet"} if config["partitioned"]["channels"] else {}


def calibration_input(wildcards):
    """The calibrated mode's parameters, when that mode is predicted."""
    return {"calibration": "results/model/calibration.csv"} if "calibrated" in config["model"]["modes"] else {}


def transfers():
    """Whether model_transfer runs (both modes it blends, calibrated and openmpi, are predicted)."""
    return {"calibrated", "openmpi"} <= set(config["model"]["modes"])


def transfer_input(wildcards):
    """How far the calibration carries to an unmeasured algorithm (rule model_transfer), when it runs."""
    return {"transfer": "results/model/transfer.csv"} if transfers() else {}


def bend_input(wildcards):
    """How much of the calibrated mode's bend between measured P the hybrid keeps (rule model_bend),
    when both modes are predicted."""
    return {"bend": "results/model/bend.csv"} if {"calibrated", "hybrid"} <= set(config["model"]["modes"]) else {}


def fanout_shape_input(wildcards):
    """The NBFT stage's medians, whose measured fan-outs a calibration may keep (config
    model.calibrated.nbft_shape other than line)."""
    if config["model"]["calibrated"]["nbft_shape"] == "line":
        return {}
    return {"nbft_medians": "results/nbft/medians.parquet"}


def segments_input(wildcards):
    """The segmented prices (rule model_segments), when config model.segment_sizes names any."""
    return {"segments": "results/model/segments.parquet"} if config["model"].get("segment_sizes") else {}


def hybrid_input(wildcards):
    """The regression stage's grid, the hybrid mode's trend beyond each curve's measured P."""
    return {"trend": "results/regression/predictions.parquet"} if "hybrid" in config["model"]["modes"] else {}


def crossover_summary_input(wildcards):
    """The partitioned stage's break-even sizes, for the summary, when that stage runs."""
    return {"crossover": "results/partitioned/crossover.csv"} if "partitioned" in config["stages"] else {}


def selection_summary_input(wildcards):
    """The selection stage's regret tables, for the summary, when that stage runs."""
    if "selection" not in config["stages"]:
        return {}
    out = {
        "regret": "results/selection/regret.csv",
        "unseen": "results/selection/regret_unseen_algorithm.csv",
        "unseen_P": "results/selection/regret_unseen_P.csv",
    }
    if config["model"].get("segment_sizes"):  # the rules files' segment sizes: a bet the summary names
        out["rules"] = [f"results/selection/rules_map-by-{m}.txt" for m in config["mappings"]]
    return out


def calibration_start_input(wildcards):
    """What the validation recalibrates the calibrated mode from, per split, when that mode is on
    (beside the Hockney fits and the NBFT lines, which every validation reads)."""
    if "calibrated" not in config["model"]["modes"]:
        return {}
    return {"nbft_medians": "results/nbft/medians.parquet"}


def plan_input(wildcards):
    """What the plan starts from: the tidy tables some input feeds (what is measured), and the
    model's predictions, noise floor and error on held-out algorithms when the model stage runs;
    nothing for a first design."""
    tables = tables_with_input()
    out = {t: f"results/tidy/{t}.parquet" for t in ("pt2pt", "nbft", "collective") if tables is None or t in tables}
    if "model" in config["stages"] and "collective" in out:
        out.update(predictions="results/model/predictions.parquet", floor="results/model/noise_floor.csv",
                   **transfer_input(wildcards))
    return out


def stage_targets(stage):
    return {
        "plan": ["results/plan/launches.csv", "results/plan/manifest.csv", "results/plan/jobs"],
        "pt2pt": [
            "results/pt2pt/hockney.csv",
            "results/pt2pt/hockney.parquet",
            "results/pt2pt/q_ratios.parquet",
            "results/figures/pt2pt/latency_per_receiver.png",
            "results/figures/pt2pt/hockney_fits.png",
        ],
        "nbft": [
            "results/nbft/gamma.parquet",
            "results/nbft/fits.csv",
            "results/figures/nbft/gamma_heatmaps.png",
        ],
        "model": [
            "results/model/predictions.parquet",
            "results/model/scores.csv",
            "results/model/validation.csv",
            "results/model/noise_floor.csv",
        ]
        + (["results/model/calibration.csv"] if "calibrated" in config["model"]["modes"] else [])
        + (["results/model/transfer.csv"] if transfers() else [])
        + list(bend_input(None).values())
        + expand("results/model/what_if/{name}.parquet", name=WHAT_IF),
        "evaluate": expand("results/tables/table{n}.{ext}", n=TABLE_NUMBERS, ext=["csv", "md", "tex"])
        + ["results/tables/tables.md", "results/summary.md"],
        "figures": expand(
            "results/figures/collective/{operation}_{size}B.png",
            operation=["bcast", "reduce"],
            size=config["evaluate"]["figure_sizes"],
        )
        + [
            "results/figures/accuracy/r2_bcast.png",
            "results/figures/accuracy/r2_reduce.png",
            "results/figures/accuracy/error_vs_size.png",
            "results/figures/accuracy/validation.png",
        ],
        "selection": ["results/selection/regret.csv", "results/selection/regret_unseen_algorithm.csv",
                      "results/selection/choices.parquet"]
        + expand("results/selection/rules_map-by-{mapping}.txt", mapping=config["mappings"])
        + expand("results/figures/selection/best_{operation}.png", operation=["bcast", "reduce"])
        + expand("results/selection/what_if/{name}/rules_map-by-{mapping}.txt", name=WHAT_IF, mapping=config["mappings"]),
        "regression": [
            "results/regression/scores.csv",
            "results/regression/coefficients.csv",
            "results/regression/predictions.parquet",
        ],
        "partitioned": [
            "results/partitioned/gillis_numbers.csv",
            "results/partitioned/gain.parquet",
            "results/partitioned/crossover.csv",
            "results/figures/partitioned/gain_vs_size.png",
            "results/figures/partitioned/gain_vs_theta.png",
            "results/figures/partitioned/gain_heatmap.png",
        ],
    }[stage]


def all_targets():
    # the study's checksummed copies too: one deleted after a run is fetched again (and re-ingested)
    targets = expand("resources/study/{file}", file=published_files()) + TIDY + ["results/tidy/quality.csv"]
    for stage in config["stages"]:
        targets += stage_targets(stage)
    return targets
