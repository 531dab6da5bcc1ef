"""What a config may leave out because the package or the machine description knows it.

Applied once, after the schema has filled its own defaults (:func:`collat.config.schema.validate_config`):

* ``algorithms``, ``model.openmpi.trees``, ``model.openmpi.default_rules`` and
  ``model.openmpi.barrier_rules``: facts of the MPI
  version (``model.openmpi.version``), kept in the package (``collat/model/shapes/openmpi-<version>.yaml``);
  a config that lists fewer algorithms gets the trees of those only;
* ``channels``: the channels the machine has (:func:`machine_channels`);
* ``model.unpinned_channel``: :func:`unpinned_channel` of the machine;
* ``partitioned.channels``: every channel; ``partitioned.figure.workload``: the first workload.

:func:`left_out_stages` then takes out of ``stages`` a stage whose inputs the config lacks, each
with the line that says why.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from collat.model.placement import one_l3_per_socket

FACTS_DIR = Path(__file__).resolve().parents[1] / "model" / "shapes"


@lru_cache(maxsize=None)
def _facts_text(version: str) -> str:
    path = FACTS_DIR / f"openmpi-{version}.yaml"
    if not path.is_file():
        known = sorted(p.stem.removeprefix("openmpi-") for p in FACTS_DIR.glob("openmpi-*.yaml"))
        raise ValueError(f"model.openmpi.version: found {version!r}, expected one of {known}")
    return path.read_text()


def openmpi_facts(version: str = "4.1") -> dict:
    """OpenMPI's algorithm numbers and names, the shape each runs and its fixed decision rules (a
    fresh copy: the caller may change it)."""
    import yaml

    return yaml.safe_load(_facts_text(version))


def machine_channels(machine: dict) -> list[str]:
    """The channels two ranks of this machine can talk over, fastest first: ``cache`` (one L3 shared
    by several cores), ``core`` (one socket, another L3), ``socket`` (one node, another socket),
    ``node``."""
    l3, per_socket = int(machine["cores_per_l3"]), int(machine["cores_per_socket"])
    channels = []
    if l3 > 1:
        channels.append("cache")
    if per_socket > l3:
        channels.append("core")
    if int(machine["sockets_per_node"]) > 1:
        channels.append("socket")
    if int(machine["nodes"]) > 1:
        channels.append("node")
    return channels


def unpinned_channel(machine: dict, channels: list[str] | None = None) -> str:
    """The channel of two ranks of one socket that nothing pins to a core: ``core`` where the
    socket holds several L3s (the scheduler has no reason to keep them in one), ``cache`` where
    one L3 serves the whole socket; where ``channels`` (the config's) name the socket's pairs by
    the other word (a log's ``core`` for a one-L3 socket), that one."""
    own = "cache" if one_l3_per_socket(machine) and int(machine["cores_per_socket"]) > 1 else "core"
    if channels is not None and own not in channels:
        return next((c for c in ("core", "cache") if c in channels), own)
    return own


def complete(config: dict) -> dict:
    """Fill, in place, what the config left out and the package or the machine knows (see the
    module's docstring); returns the config."""
    openmpi = config.setdefault("model", {}).setdefault("openmpi", {})
    facts = None
    if (config.get("algorithms") is None or openmpi.get("trees") is None or openmpi.get("default_rules") is None
            or openmpi.get("barrier_rules") is None):
        facts = openmpi_facts(str(openmpi.get("version", "4.1")))
    if config.get("algorithms") is None:
        config["algorithms"] = facts["algorithms"]
    if openmpi.get("trees") is None:
        ids = {(op, int(a["id"])) for op, entries in config["algorithms"].items() for a in entries}
        openmpi["trees"] = [t for t in facts["trees"] if (t["operation"], int(t["algorithm"])) in ids]
    if openmpi.get("default_rules") is None:
        openmpi["default_rules"] = facts["default_rules"]
    if openmpi.get("barrier_rules") is None:
        openmpi["barrier_rules"] = facts["barrier_rules"]
    if config.get("channels") is None and "machine" in config:
        config["channels"] = machine_channels(config["machine"])
    model = config["model"]
    if model.get("unpinned_channel") is None and "machine" in config:
        model["unpinned_channel"] = unpinned_channel(config["machine"], config.get("channels"))
    part = config.get("partitioned")
    if part is not None:
        if part.get("channels") is None:
            part["channels"] = list(config.get("channels") or [])
        figure = part.get("figure")
        if figure is not None and figure.get("workload") is None and part.get("workloads"):
            figure["workload"] = next(iter(part["workloads"]))
        evaluate = config.get("evaluate")
        if evaluate is not None and evaluate.get("summary_crossover") is None and figure and figure.get("workload"):
            evaluate["summary_crossover"] = {"threads": figure["threads"], "theta": min(figure["thetas"]),
                                             "delay": figure["workload"], "note": "the figures' setting"}
    return config


def left_out_stages(config: dict) -> list[str]:
    """Take out of ``config["stages"]`` (in place) each stage whose inputs the config lacks; one line
    per stage left out, saying why."""
    notes = []
    stages = config.get("stages", [])
    part = config.get("partitioned") or {}
    if "partitioned" in stages and not part.get("workloads"):
        notes.append("stage partitioned left out: partitioned.workloads names no delay model (e.g. "
                     "{gamma100: {gamma: 100}}, a fixed delay of 100 us/MB)")
        stages.remove("partitioned")
    return notes


#: the tidy tables each stage reads, through its own rules and the stages it builds on (the model
#: prices with the Hockney and NBFT fits; evaluate, figures and selection read the model's outputs)
STAGE_TABLES = {
    "pt2pt": ("pt2pt",),
    "nbft": ("pt2pt", "nbft"),  # gamma = T_NBFT / T_p2p
    "partitioned": ("pt2pt",),
    "regression": ("collective",),
    "model": ("pt2pt", "nbft", "collective"),
    "evaluate": ("pt2pt", "nbft", "collective"),
    "figures": ("pt2pt", "nbft", "collective"),
    "selection": ("pt2pt", "nbft", "collective"),
    "plan": (),  # a machine with nothing measured gets a first design
}


def stages_without_input(stages: list[str], tables: set[str] | None, nbft_assumed: bool = False) -> list[str]:
    """Take out of ``stages`` (in place) each stage that reads a tidy table no input feeds;
    ``tables``: the tables some input is known to feed, None where a log's table is only known once
    it is read (marker lines, per-run manifest rows): then nothing is left out. Where no input exists
    at all, every stage goes without a word: the ingest's one line says what is missing. With
    ``nbft_assumed`` (config ``nbft.unmeasured_slope`` set) and collective logs no stage lacks the
    NBFT table: the nbft stage assumes a line on every channel it has no run of, as most people
    have no flat-tree runs.
    One line per stage left out, saying which tables it lacks."""
    if tables is None:
        return []
    if nbft_assumed and "collective" in tables:  # the assumed line is there to price the collectives
        tables = set(tables) | {"nbft"}
    if not tables:
        stages[:] = [s for s in stages if not STAGE_TABLES[s]]
        return []
    notes = []
    for stage in list(stages):
        lacking = [t for t in STAGE_TABLES[stage] if t not in tables]
        if lacking:
            stages.remove(stage)
            notes.append(f"stage {stage} left out: no input feeds the {' and '.join(lacking)} table"
                         f"{'s' if len(lacking) > 1 else ''}")
    return notes



def derived_mappings(default: list[str], found: set[str] | None, machine: dict | None = None) -> list[str]:
    """The mappings of a config that names none: those of ``default`` (the schema's: every mapping
    the placement models, in its order) that the collective inputs name (``found``); ``default``
    where the inputs do not say before they are read or name none of them (a log naming another
    mapping is then refused by the ingest with the modelled ones), less, on a ``machine``, each one
    that places every rank as one before it does (:func:`collat.model.placement.same_placements`:
    map-by node on a machine of one node, unless its sockets hold several NUMA domains), which a
    plan would measure twice."""
    kept = [m for m in default if m in (found or ())]
    if kept or machine is None:
        return kept or list(default)
    from collat.model.placement import same_placements

    out: list[str] = []
    for m in default:
        if not any(same_placements(machine, machine, m, k) for k in out):
            out.append(m)
    return out
