"""Checks of the config that its schema cannot express: one key naming what another defines.

The schema (workflow/schemas/config.schema.yaml, applied by snakemake's ``validate``) checks each
key on its own; :func:`check` then checks the keys against each other, once, when the workflow is
parsed, and names the first key that is wrong, the value found and what it must be.
"""

from __future__ import annotations

from pathlib import Path

from collat.model.placement import one_l3_per_socket


class ConfigError(ValueError):
    """A config key that contradicts another; the message starts with the key's path."""

    def __init__(self, key: str, found, expected: str):
        super().__init__(f"config key {key}: found {found!r}, expected {expected}")
        self.key = key


def _algorithm_ids(config: dict) -> dict[str, set[int]]:
    out = {}
    for op, entries in config["algorithms"].items():
        ids, names = set(), set()
        for i, entry in enumerate(entries):
            if entry["id"] in ids:
                raise ConfigError(f"algorithms.{op}[{i}].id", entry["id"], f"an id not used twice in algorithms.{op}")
            if entry["name"] in names:
                raise ConfigError(f"algorithms.{op}[{i}].name", entry["name"],
                                  f"a name not used twice in algorithms.{op}")
            ids.add(entry["id"])
            names.add(entry["name"])
        out[op] = ids
    return out


TABLE_KEYS = {  # what a row of each tidy table needs, from a column or the metadata
    "collective": ("operation", "algorithm", "mapping", "P", "size", "avg"),
    "nbft": ("operation", "channel", "P", "size", "avg"),
    "pt2pt": ("channel", "size"),
}


def _tables(config: dict) -> None:
    for i, entry in enumerate(config["data"].get("tables", [])):
        key = f"data.tables[{i}]"
        from_columns = list(entry["columns"].values())
        metadata = entry.get("metadata", {})
        twice = sorted({k for k in from_columns if from_columns.count(k) > 1} | (set(from_columns) & set(metadata)))
        if twice:
            raise ConfigError(f"{key}.columns", entry["columns"], f"each tidy key from one place only ({twice[0]!r} "
                              "is given twice, by two columns or by a column and the metadata)")
        have = set(from_columns) | set(metadata)
        needed = [k for k in TABLE_KEYS[entry["table"]] if k not in have]
        if entry["table"] == "pt2pt" and not have & {"avg", "bandwidth"}:
            needed.append("avg or bandwidth")
        if needed:
            raise ConfigError(f"{key}.columns", entry["columns"], f"a column or {key}.metadata entry for "
                              f"{', '.join(needed)} (a {entry['table']} row needs it)")
        for k in entry.get("values", {}):
            if k not in from_columns:
                raise ConfigError(f"{key}.values.{k}", k, f"a tidy key one of {key}.columns maps to")


FITTED_MODES = ("calibrated", "hybrid")  # model.modes fitted on the collective measurements (rule model_predict)
NOT_OUT_OF_SAMPLE = ("paper",)  # model.modes tuned on the study's data: never the best validated one


#: the folders of its working directory the workflow writes (job logs, outputs, rule timings, state)
WRITTEN = ("logs", "results", "benchmarks/rules", ".snakemake")


def _raw_dir(config: dict) -> None:
    """data.raw.dir apart from every folder in :data:`WRITTEN`: one inside the other, the ingest would
    read the workflow's own job logs as OSU logs (``logs/ingest/raw/...``), and each run would
    add to the next one's inputs."""
    given = config["data"]["raw"]["dir"]
    raw = Path(given).resolve()
    for folder in WRITTEN:
        own = Path(folder).resolve()
        if raw == own or own in raw.parents or raw in own.parents:
            raise ConfigError("data.raw.dir", given, f"a folder apart from {folder}/, where the workflow writes its "
                              "own files (they would be read as OSU logs): osu_logs, say")


def _machine(machine: dict) -> None:
    """A socket made of whole L3s and whole NUMA domains: the placement counts a rank's L3 and NUMA
    domain by dividing its core number, so a part of one would put two cores that share no cache
    on one L3, and the plan's boundaries would fall between cores nothing separates."""
    per_socket = int(machine["cores_per_socket"])
    hints = {"cores_per_l3": "a socket is made of whole L3s, each serving as many cores (lscpu -C lists the "
                             "L3s; /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list names the cores of one)",
             "numa_per_socket": "a socket splits into NUMA domains of as many cores each (lscpu: NUMA node(s) "
                                "over Socket(s))"}
    for key, count in (("cores_per_l3", int(machine["cores_per_l3"])),
                       ("numa_per_socket", int(machine.get("numa_per_socket", 1)))):
        if per_socket % count:
            raise ConfigError(f"machine.{key}", count,
                              f"a divisor of machine.cores_per_socket ({per_socket}): {hints[key]}")


#: the file in a results folder that names the machine its outputs describe (written as a run starts)
RESULTS_MACHINE = "machine.yaml"


def check_results_machine(results: str | Path, machine: dict) -> None:
    """Raise :class:`ValueError` (one line) when ``results`` holds the outputs of a machine other than
    ``machine`` (by ``name``, as :func:`stamp_results` wrote it): a run there would leave the other
    machine's files beside its own (rules files of mappings this machine lacks, another study's
    tables and gain curves), merged silently. A folder without the file says nothing."""
    import yaml

    stamp = Path(results) / RESULTS_MACHINE
    if not stamp.is_file():
        return
    try:
        name = (yaml.safe_load(stamp.read_text()) or {}).get("name")
    except (yaml.YAMLError, AttributeError):
        name = None
    if name != machine["name"]:
        raise ValueError(f"{stamp}: {Path(results)}/ holds the outputs of machine {name!r}, this config describes "
                         f"{machine['name']!r} (machine.name): run it in another directory (snakemake -d DIR), or "
                         f"move {Path(results)}/ away first")


def stamp_results(results: str | Path, machine: dict) -> None:
    """Write ``machine`` (the config's description) to ``results``/machine.yaml, which
    :func:`check_results_machine` reads on the next run."""
    import os

    import yaml

    stamp = Path(results) / RESULTS_MACHINE
    stamp.parent.mkdir(parents=True, exist_ok=True)
    tmp = stamp.with_name(f".{stamp.name}.tmp{os.getpid()}")
    tmp.write_text(yaml.safe_dump(dict(machine), sort_keys=False))
    os.replace(tmp, stamp)  # whole, or not at all


#: files of results/ that no rule makes but a documented command does: not an earlier config's
NOT_RULES = (RESULTS_MACHINE, "report.html")


def leftover_results(results: str | Path, used) -> list[str]:
    """The files under ``results`` that no job of a whole run reads or writes (``used``: the paths
    of every job's input, output and log, relative as the workflow names them; a directory output
    covers what it holds): an earlier config's outputs, such as a rules file of a mapping the logs
    no longer have. Hidden files and :data:`NOT_RULES` are left out. Sorted."""
    import os

    root = Path(results)
    used = {os.path.normpath(str(u)) for u in used}
    out = []
    for path in sorted(root.rglob("*")) if root.is_dir() else []:
        rel = path.relative_to(root)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts) or str(rel) in NOT_RULES:
            continue
        name = os.path.normpath(str(root / rel))
        if name not in used and not any(str(parent) in used for parent in (root / rel).parents):
            out.append(name)
    return out


def leftover_line(results: str | Path, files: list[str], shown: int = 5) -> str:
    """One line naming ``files`` (:func:`leftover_results`, at least one), for the end of a run: at
    most ``shown`` of them, and how many more."""
    more = f" and {len(files) - shown} more" if len(files) > shown else ""
    what, it, was = ("1 file", "it", "it was") if len(files) == 1 else (f"{len(files)} files", "them", "they were")
    return (f"{Path(results)}/ also holds {what} that this config's run does not make (an earlier config's, left "
            f"as {was}): {', '.join(files[:shown])}{more}; move or delete {it} (snakemake --list-untracked "
            "lists them all)")


def check(config: dict) -> None:
    """Raise :class:`ConfigError` for the first key that names something no other key defines, a
    machine whose sockets do not split into whole L3s and NUMA domains (:func:`_machine`), or a
    raw-log folder the workflow writes into (:func:`_raw_dir`)."""
    _machine(config["machine"])
    _raw_dir(config)
    channels = list(config["channels"])
    stages = set(config.get("stages", []))
    model = config["model"]
    modes = list(model["modes"])
    if "selection" in stages and config["selection"]["mode"] not in modes + ["best"]:
        raise ConfigError("selection.mode", config["selection"]["mode"],
                          f"best or one of model.modes {modes} (the selection picks with a mode the model stage "
                          "predicts)")
    if "selection" in stages and config["selection"]["mode"] == "best" and not set(modes) - set(NOT_OUT_OF_SAMPLE):
        raise ConfigError("selection.mode", "best", f"a mode validated out of sample in model.modes {modes} "
                          "(openmpi, calibrated or hybrid; the paper mode was tuned on the study's data)")
    if "hybrid" in modes and "calibrated" not in modes:
        raise ConfigError("model.modes", modes, "calibrated beside hybrid (the hybrid mode corrects the calibrated "
                          "mode's predictions)")
    if model["unpinned_channel"] not in channels:
        raise ConfigError("model.unpinned_channel", model["unpinned_channel"], f"one of channels {channels}")
    if "model" in stages and "nbft" in stages:
        fitted = list(config["nbft"]["targets"])
        for key, target in (("model.openmpi.nbft_target", model["openmpi"]["nbft_target"]),
                            ("model.openmpi.link_target", _link_target(model)),
                            ("model.paper.nbft_target", model["paper"]["nbft_target"])):
            mode = key.split(".")[1]
            if (mode in modes or (mode == "openmpi" and set(modes) & set(FITTED_MODES))) and target not in fitted:
                raise ConfigError(key, target, f"one of nbft.targets {fitted} (the nbft stage fits what the "
                                  f"model prices fan-outs with; an unfitted target would be assumed, not measured)")
    if "model" in stages:
        used = needed_channels(config)
        missing = [c for c in used if c not in channels]
        if missing:
            c = missing[0]
            machine = config["machine"]
            one_l3 = one_l3_per_socket(machine)
            how = ("; one L3 serves each socket of this machine, so the log of two cores of one socket that names "
                   "core measures cache: write cache in channels instead of core, and a log that names core is read "
                   "as cache" if c == "cache" and one_l3 and "core" in channels
                   else "; name it, with an osu_latency log of that pair")
            raise ConfigError("channels", channels, f"every channel the ranks of config machine talk over under "
                              f"mappings {list(config['mappings'])}, {c!r} too: {used[c]} talk over {c!r} (placement: "
                              f"cache = pinned to one L3, machine.cores_per_l3 = {machine['cores_per_l3']}; "
                              f"core = one socket; socket; node){how}")
        from collat.model.placement import channels_used

        if model["what_if"] and not {"openmpi", "calibrated"} & set(modes):
            raise ConfigError("model.what_if", [e["name"] for e in model["what_if"]], f"openmpi or calibrated in "
                              f"model.modes {modes} (the modes a machine nobody measured is priced with)")
        for i, entry in enumerate(model["what_if"]):
            bigger = {**config["machine"], "nodes": entry["nodes"]}
            for channel, pair in channels_used(bigger, config["mappings"], model["unpinned_channel"]).items():
                if channel not in channels:
                    raise ConfigError(f"model.what_if[{i}].nodes", entry["nodes"], f"a machine whose channels are "
                                      f"among channels {channels}: {pair} talk over {channel!r} (leave "
                                      f"model.what_if out, or measure that channel)")
    names = [entry["name"] for entry in model["what_if"]]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ConfigError(f"model.what_if[{i}].name", name, "a name not used twice in model.what_if")
    _tables(config)
    ids = _algorithm_ids(config)
    for key, entries in (("model.openmpi.trees", model["openmpi"]["trees"]),
                         ("model.paper.algorithms", model["paper"]["algorithms"])):
        seen = set()
        for i, entry in enumerate(entries):
            op, alg = entry["operation"], entry["algorithm"]
            if alg not in ids.get(op, set()):
                raise ConfigError(f"{key}[{i}].algorithm", alg, f"an id of algorithms.{op} {sorted(ids.get(op, []))}")
            if (op, alg) in seen:
                raise ConfigError(f"{key}[{i}].algorithm", alg, f"one entry per {op} algorithm")
            seen.add((op, alg))
    part = config.get("partitioned")
    if part is not None and "partitioned" in stages:
        for i, channel in enumerate(part["channels"]):
            if channel not in channels:
                raise ConfigError(f"partitioned.channels[{i}]", channel, f"one of channels {channels}")
        low, high = part["size_exponents"]
        if low > high:
            raise ConfigError("partitioned.size_exponents", part["size_exponents"],
                              "[smallest, largest] exponent of 2, smallest first")
        workloads = part["workloads"]
        if part["figure"]["workload"] not in workloads:
            raise ConfigError("partitioned.figure.workload", part["figure"]["workload"],
                              f"one of partitioned.workloads {sorted(workloads)}")
        delay = (config.get("evaluate", {}).get("summary_crossover") or {}).get("delay")
        for name, w in workloads.items():
            if "ai" in w and not part.get("cpu"):
                raise ConfigError(f"partitioned.workloads.{name}", w, "a delay rate gamma, or partitioned.cpu "
                                  "(frequency_GHz, flops_per_cycle) for a workload given by ai, ci, delta, eps")
        if delay is not None and "evaluate" in stages and delay not in workloads:
            raise ConfigError("evaluate.summary_crossover.delay", delay,
                              f"one of partitioned.workloads {sorted(workloads)}")


def _link_target(model: dict) -> str:
    """Config ``model.openmpi.link_target``, null meaning its ``nbft_target`` (as the model reads it)."""
    return model["openmpi"].get("link_target") or model["openmpi"]["nbft_target"]


def needed_channels(config: dict) -> dict[str, str]:
    """The channels the model's trees use on config ``machine`` under ``mappings`` (each with a
    pair of ranks that talks over it), when the model stage runs: the point-to-point table must
    measure each (checked by the tidy rule, :func:`collat.ingest.read.check_channels_measured`)."""
    if "model" not in set(config.get("stages", [])):
        return {}
    from collat.model.placement import channels_used

    return channels_used(config["machine"], config["mappings"], config["model"]["unpinned_channel"])


def measured_targets(config: dict) -> dict[str, dict[str, list[str]]]:
    """What the tidy tables must measure for the stages the config runs: table (nbft, collective) ->
    target column (avg, max) -> the config keys that ask for it. OSU prints the max column only with
    ``-f``; a log without it cannot feed a key that names ``max`` (checked by the tidy rule,
    :func:`collat.ingest.read.check_measured_targets`)."""
    stages = set(config.get("stages", []))
    model = config["model"]
    modes = set(model["modes"])
    asks: dict[str, dict[str, list[str]]] = {"nbft": {}, "collective": {}}

    def ask(table, key, targets):
        for target in [targets] if isinstance(targets, str) else targets:
            asks[table].setdefault(target, []).append(key)

    if "nbft" in stages:
        ask("nbft", "nbft.targets", config["nbft"]["targets"])
    if "model" in stages:
        if "openmpi" in modes or modes & set(FITTED_MODES):  # the fitted modes start from the openmpi mode's costs
            ask("nbft", "model.openmpi.nbft_target", model["openmpi"]["nbft_target"])
            ask("nbft", "model.openmpi.link_target", _link_target(model))
        if "paper" in modes:
            ask("nbft", "model.paper.nbft_target", model["paper"]["nbft_target"])
        if modes & set(FITTED_MODES):
            ask("collective", "model.calibrated.targets", model["calibrated"]["targets"])
        ask("collective", "validation.targets", config["validation"]["targets"])
    if "regression" in stages:
        ask("collective", "regression.targets", config["regression"]["targets"])
    if "selection" in stages:
        ask("collective", "selection.targets", config["selection"]["targets"])
    return asks
