"""From planned launches to what runs them: the OSU command of each, SLURM batch scripts, a manifest.

A launch's log is named by the ingest's default path patterns (resources/osu_raw/README.md), so
that it comes back with its exact metadata; the manifest says the same per file for a raw
directory read through other patterns. What forces the run:

* a collective: ``--map-by <mapping>`` and its binding (core; socket; one rank per node on a core,
  more on a NUMA domain), ``coll_tuned_use_dynamic_rules 1`` and ``coll_tuned_<op>_algorithm``
  (0: the fixed rules decide) with its segment size (0) and fan-out or radix stated, OSU's ``-f``
  for the min and max over ranks; with srun, the
  distribution and binding that place ranks alike and the MCA parameters as OMPI_MCA_ variables;
* a point-to-point or NBFT launch: a rankfile that pins the root to core 0 of the first node and
  the receivers to the cores of one channel (:func:`collat.plan.design.ranks_of`); always mpirun.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from collat.plan.design import nodes_spanned, ranks_of

BINARIES = {  # OSU 7 build tree (c/mpi/...) and install tree (libexec/osu-micro-benchmarks/mpi/...)
    "osu_latency": ("c/mpi/pt2pt/standard/osu_latency", "pt2pt/standard/osu_latency", "pt2pt/osu_latency"),
    "osu_bcast": ("c/mpi/collective/blocking/osu_bcast", "collective/blocking/osu_bcast", "collective/osu_bcast"),
    "osu_reduce": ("c/mpi/collective/blocking/osu_reduce", "collective/blocking/osu_reduce", "collective/osu_reduce"),
}
SMALLEST = {"osu_latency": 1, "osu_bcast": 1, "osu_reduce": 4}  # OSU's reduce sums floats: 4 B at least
BIND = {"core": "core", "socket": "socket"}
DISTRIBUTION = {"core": ("block:block", "cores"), "socket": ("block:cyclic", "sockets"), "node": ("cyclic", "ldoms")}


@dataclass(frozen=True)
class MeasureOptions:
    """Config ``measure``, checked by the schema."""

    osu: str | None
    launches: str
    launcher: str
    launcher_options: tuple[str, ...]
    bind: bool
    iterations: int | None
    warmup: int | None
    max_size: int
    partition: str | None
    account: str | None
    time: str

    @classmethod
    def from_config(cls, cfg: dict) -> "MeasureOptions":
        s = cfg["slurm"]
        return cls(cfg["osu"], str(cfg["launches"]), str(cfg["launcher"]), tuple(cfg["launcher_options"]),
                   bool(cfg["bind"]), cfg["iterations"], cfg["warmup"], int(cfg["max_size"]), s["partition"],
                   s["account"], str(s["time"]))


def binary(osu: str | None, benchmark: str) -> str:
    """Path of an OSU benchmark under ``osu`` (a build or an install directory): the first of
    :data:`BINARIES` that exists, else the build tree's (the directory is on another machine)."""
    base = Path(osu or "$OSU")
    for rel in BINARIES[benchmark]:
        if (base / rel).is_file():
            return str(base / rel)
    return str(base / BINARIES[benchmark][0])


def log_path(launch) -> str:
    """The raw log of a launch, relative to data.raw.dir, as the default path patterns name it."""
    if launch["kind"] == "pt2pt":
        return f"pt2pt/{launch['channel']}/recv{int(launch['receiver'])}.txt"
    if launch["kind"] == "nbft":
        return f"nbft/{launch['operation']}/{launch['channel']}/np{int(launch['P'])}.txt"
    return f"{launch['operation']}/{launch['mapping']}/alg{int(launch['algorithm'])}/np{int(launch['P'])}.txt"


def rankfile(machine: dict, launch, allocated: bool = True) -> str:
    """OpenMPI rankfile text of a pt2pt or NBFT launch: nodes relative to the allocation (+n0, +n1),
    or, outside one (``allocated`` false: a workstation, where mpirun refuses relative nodes), this
    host by name (``localhost``), which only a launch on one node can use."""
    ranks = ranks_of(machine, launch)
    if not allocated and any(node for node, _ in ranks):
        raise ValueError(f"a {launch['kind']} launch over {launch['channel']!r} spans two nodes: it runs inside "
                         "an allocation (a SLURM job, a hostfile), where its rankfile can name them")
    host = (lambda node: f"+n{node}") if allocated else (lambda node: "localhost")
    return "".join(f"rank {i}={host(node)} slot={core}\n" for i, (node, core) in enumerate(ranks))


def in_allocation(environ) -> bool:
    """Whether mpirun runs inside a batch allocation that names the nodes (SLURM, PBS, LSF, a
    hostfile given through OpenMPI's environment), so that a rankfile may name nodes relatively."""
    return any(environ.get(k) for k in ("SLURM_JOB_ID", "PBS_NODEFILE", "LSB_HOSTS", "OMPI_MCA_orte_default_hostfile"))


def algorithm_knobs(trees: list | None, operation: str, algorithm: int) -> list[tuple[str, str]]:
    """The MCA parameters a forced algorithm runs with, stated as the model assumes them (config
    ``model.openmpi.trees``): no segmentation, and the chain's fan-out or the k-nomial's radix where
    its shape has one (OpenMPI's defaults, stated so that each log says what ran)."""
    out = [(f"coll_tuned_{operation}_algorithm_segmentsize", "0")]
    spec = next((t for t in trees or [] if t["operation"] == operation and int(t["algorithm"]) == int(algorithm)), {})
    if spec.get("tree") == "chain" and "fanout" in spec:
        out.append((f"coll_tuned_{operation}_algorithm_chain_fanout", str(int(spec["fanout"]))))
    if spec.get("tree") == "knomial" and "radix" in spec:
        out.append((f"coll_tuned_{operation}_algorithm_knomial_radix", str(int(spec["radix"]))))
    return out


def command(launch, machine: dict, opts: MeasureOptions, rankfile_path: str | None = None,
            trees: list | None = None) -> list[str]:
    """The words that run one launch (its stdout is the raw log). A pt2pt or NBFT launch needs the
    path its :func:`rankfile` is written to, when ``opts.bind``; ``trees`` (config
    ``model.openmpi.trees``) gives a forced algorithm's fan-out or radix (:func:`algorithm_knobs`)."""
    bench = launch["benchmark"]
    osu = [binary(opts.osu, bench)]
    if bench != "osu_latency":
        osu.append("-f")
    osu += ["-m", f"{SMALLEST[bench]}:{opts.max_size}"]
    if opts.iterations is not None:
        osu += ["-i", str(opts.iterations)]
    if opts.warmup is not None:
        osu += ["-x", str(opts.warmup)]
    P = int(launch["P"])
    mca = []
    if launch["kind"] != "pt2pt":
        op, alg = launch["operation"], int(launch["algorithm"])
        mca = [("coll_tuned_use_dynamic_rules", "1"), (f"coll_tuned_{op}_algorithm", str(alg))]
        if alg != 0:  # the default's fixed rules choose their own (and pass segment size 0)
            mca += algorithm_knobs(trees, op, alg)
    if launch["kind"] == "collective" and opts.launcher == "srun":
        dist, bind = DISTRIBUTION[launch["mapping"]]
        env = ["env"] + [f"OMPI_MCA_{k}={v}" for k, v in mca]
        return env + ["srun", *opts.launcher_options, "-n", str(P), f"--distribution={dist}",
                      f"--cpu-bind={bind if opts.bind else 'none'}"] + osu
    words = ["mpirun", *opts.launcher_options, "-np", str(P)]
    if launch["kind"] == "collective":
        mapping = launch["mapping"]
        bind = BIND.get(mapping, "core" if P <= int(machine["nodes"]) else "numa")
        words += ["--map-by", mapping, "--bind-to", bind if opts.bind else "none"]
    elif opts.bind:
        if rankfile_path is None:
            raise ValueError(f"a {launch['kind']} launch pins its ranks: a rankfile path is needed")
        words += ["--rankfile", rankfile_path]
    else:
        words += ["--bind-to", "none"]
    for k, v in mca:
        words += ["--mca", k, v]
    return words + osu


def version_line(output: str) -> str | None:
    """The first line of ``mpirun --version`` where it names an MPI and its version (``mpirun (Open
    MPI) 4.1.6``), which a log carries above OSU's output so that the ingest records which MPI ran
    it (the ``mpi`` column); None where it does not."""
    from collat.ingest.osu import mpi_version

    first = (output.strip().splitlines() or [""])[0]
    return first if mpi_version(first) else None


def manifest(launches: pd.DataFrame) -> pd.DataFrame:
    """The ingest's manifest rows of the launches' logs (data.raw.manifest format)."""
    m = launches.assign(file=[log_path(r) for _, r in launches.iterrows()])
    m = m[["file", "benchmark", "operation", "channel", "mapping", "algorithm", "P", "receiver"]].copy()
    m.loc[m["benchmark"] == "osu_latency", "P"] = pd.NA  # a point-to-point log has no P field
    for c in ("algorithm", "P", "receiver"):
        m[c] = m[c].astype("Int64")
    return m


def _shell_word(word: str) -> str:
    """``word`` quoted for bash, but the rankfile's variable and the ``$OSU`` of :func:`binary` (no
    ``measure.osu``: the directory the batch script's environment names) left for bash to expand."""
    if word == "$rf":
        return '"$rf"'
    if word.startswith("$OSU/"):
        return '"$OSU"/' + shlex.quote(word[len("$OSU/"):])
    return shlex.quote(word)


def batch_scripts(launches: pd.DataFrame, machine: dict, opts: MeasureOptions, raw_dir: str,
                  trees: list | None = None) -> dict[str, str]:
    """One SLURM batch script per node count: {file name: text}. Each runs its launches one after
    another, each log written beside the others under ``raw_dir`` (data.raw.dir) with its rankfile."""
    nodes = [nodes_spanned(machine, r["kind"], r["mapping"], r["P"], r["channel"]) for _, r in launches.iterrows()]
    out = {}
    for n in sorted(set(nodes)):
        rows = launches[[k == n for k in nodes]]
        lines = ["#!/bin/bash", f"#SBATCH --job-name=collat-measure-{n}n", f"#SBATCH --nodes={n}",
                 f"#SBATCH --ntasks-per-node={int(machine['sockets_per_node']) * int(machine['cores_per_socket'])}",
                 "#SBATCH --exclusive", f"#SBATCH --time={opts.time}"]
        lines += [f"#SBATCH --partition={opts.partition}"] if opts.partition else []
        lines += [f"#SBATCH --account={opts.account}"] if opts.account else []
        lines += [f"# {len(rows)} launches of the plan (results/plan/launches.csv) on {n} node(s)", "set -u",
                  f"raw={shlex.quote(raw_dir)}"]
        lines += [] if opts.osu else [': "${OSU:?set OSU to your OSU micro-benchmarks 7 build or install directory '
                                      '(or measure.osu in the config)}"']
        lines += ['mpi=$(mpirun --version 2>&1 | head -n 1)  # each log says which MPI ran it', ""]
        for _, r in rows.iterrows():
            log = log_path(r)
            lines.append(f'mkdir -p "$raw/{Path(log).parent}"')
            pinned = r["kind"] != "collective" and opts.bind
            if pinned:
                lines.append(f"rf=$(mktemp); printf '%s' {shlex.quote(rankfile(machine, r))} > \"$rf\"")
            words = command(r, machine, opts, "$rf" if pinned else None, trees)
            cmd = " ".join(_shell_word(w) for w in words)
            lines.append(f'{{ printf \'%s\\n\' "$mpi"; {cmd}; }} > "$raw/{log}.part" 2>&1 && mv "$raw/{log}.part" "$raw/{log}"')
            if pinned:
                lines.append('rm -f "$rf"')
        out[f"nodes{n}.sbatch"] = "\n".join(lines) + "\n"
    return out
