"""SLURM stdout of OSU runs on a small machine the study never saw: one node, one socket, 16 cores
sharing one L3 (so every pair of pinned ranks talks over the ``cache`` channel), OpenMPI 4.1.6.

Not measurements: made-up latencies (a Hockney line per message, each algorithm a simple multiple
of it over P), times a deterministic +-3 % ripple that differs between the two sweeps of every run.
Written the way a job script that loops over P leaves them: the MPI version line first, a marker
line before the runs of every P, two OSU runs per P, and in one file a run cut short by SLURM's
time limit. ``full=False`` writes them as OSU prints them without ``-f`` (the Avg column only). The
end-to-end tests write them into their temporary directory:

    .venv/bin/python tests/data/make_osu_small.py OUT_DIR
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

SIZES = [2**k for k in range(21)]
P_VALUES = range(2, 17)
BCAST = (0, 1, 2, 5, 6)   # default, linear, chain, binary, binomial
REDUCE = (0, 1, 2, 4, 5)  # default, linear, chain, binary, binomial
PATTERNS = ["latency-{channel}.out", "nbft-{operation}-{channel}.out", "{operation}-{mapping}-alg{algorithm}.out"]
MARKER = {"regex": r"^np=(?P<P>\d+) "}


def message(m: int) -> float:
    """One message between two cores of the L3 (us): eager up to 64 KiB, then rendezvous."""
    return 0.25 + m / 9000 if m < 65536 else 1.5 + m / 7000


def ripple(P: int, m: int, sweep: int) -> float:
    return 1 + 0.03 * (((7 * P + 3 * m.bit_length() + 2 * sweep) % 5) - 2) / 2


def bcast(algorithm: int, P: int, m: int) -> float:
    depth = math.ceil(math.log2(P))
    return {0: 0.9 * depth * message(m), 1: (P - 1) * (0.08 + m / 12000) + message(m),
            2: 0.8 * (P - 1) * message(m), 5: 0.85 * (depth + 1) * message(m), 6: depth * message(m)}[algorithm]


def reduce(algorithm: int, P: int, m: int) -> float:
    depth, op = math.ceil(math.log2(P)), m / 20000
    return {0: 0.95 * depth * (message(m) + op), 1: (P - 1) * (0.1 + op + m / 12000) + message(m),
            2: 0.7 * (P - 1) * (message(m) + op), 4: 0.9 * (depth + 1) * (message(m) + op),
            5: depth * (message(m) + op)}[algorithm]


def collective_runs(name: str, latency, cut_short: bool = False, full: bool = True) -> list[str]:
    lines = ["mpirun (Open MPI) 4.1.6", ""]
    flag, header = (" -f", "   Min Latency(us)   Max Latency(us)  Iterations") if full else ("", "")
    for P in P_VALUES:
        lines.append(f"np={P} mpirun --map-by core --bind-to core osu_{name.lower()}{flag}")
        for sweep in range(2):
            title = {"bcast": "Broadcast", "reduce": "Reduce"}[name.lower()]
            lines += [f"# OSU MPI {title} Latency Test v7.3", "# Datatype: MPI_CHAR.", f"# Size       Avg Latency(us){header}"]
            for m in SIZES:
                slowest = latency(P, m) * ripple(P, m, sweep)
                rest = f"{0.3 * slowest:>18.2f}{slowest:>18.2f}{1000:>12}" if full else ""
                lines.append(f"{m:<10}{0.7 * slowest:>18.2f}{rest}")
    if cut_short:  # one more run, killed at the time limit after two sizes
        rows = (["1                       0.61              0.26              0.88        1000",
                 "2                       0.60              0.26              0.85        1000"] if full else
                ["1                       0.61", "2                       0.60"])
        lines += [f"np={P_VALUES[-1]} mpirun --map-by core --bind-to core osu_{name.lower()}{flag}",
                  f"# OSU MPI {title} Latency Test v7.3", "# Datatype: MPI_CHAR.",
                  f"# Size       Avg Latency(us){header}", *rows,
                  "slurmstepd: error: *** JOB 4242 ON small01 CANCELLED AT 2026-11-20T03:14:15 DUE TO TIME LIMIT ***"]
    return lines


def write_logs(out: Path, full: bool = True) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lines = ["mpirun (Open MPI) 4.1.6", "# OSU MPI Latency Test v7.3", "# Size          Latency (us)"]
    for sweep in range(2):
        lines += [f"{m:<16}{message(m) * ripple(1, max(m, 1), sweep):>12.2f}" for m in [0] + SIZES]
    (out / "latency-cache.out").write_text("\n".join(lines) + "\n")
    for operation, algorithms, priced in (("bcast", BCAST, bcast), ("reduce", REDUCE, reduce)):
        for algorithm in algorithms:
            text = collective_runs(operation, lambda P, m: priced(algorithm, P, m), cut_short=algorithm == 0, full=full)
            (out / f"{operation}-core-alg{algorithm}.out").write_text("\n".join(text) + "\n")
        # a flat tree with every receiver on the L3: the linear algorithm's runs, as their own NBFT log
        text = collective_runs(operation, lambda P, m: priced(1, P, m), full=full)
        (out / f"nbft-{operation}-cache.out").write_text("\n".join(text) + "\n")


def config(base: dict, raw: Path) -> dict:
    """The study's config (``base``) for this machine: its description, channel, mapping and logs."""
    cfg = dict(base)
    cfg["machine"] = {"name": "SMALL (1 x 16 cores, one L3; synthetic)", "nodes": 1, "sockets_per_node": 1,
                      "cores_per_socket": 16, "cores_per_l3": 16, "numa_per_socket": 1}
    cfg["channels"], cfg["mappings"] = ["cache"], ["core"]
    cfg["data"] = {**base["data"], "published": {**base["data"]["published"], "enabled": False},
                   "raw": {**base["data"]["raw"], "dir": str(raw), "glob": "*.out", "patterns": PATTERNS,
                           "manifest": None, "markers": [MARKER], "on_bad_run": "skip"}}
    cfg["model"] = {**base["model"], "unpinned_channel": "cache", "modes": ["openmpi", "calibrated", "hybrid"],
                    "cleanings": ["robust", "none"], "paper": {**base["model"]["paper"], "max_P": []}}
    cfg["regression"] = {**base["regression"], "cleanings": ["robust", "none"]}
    cfg["paper"] = {"cleaning": {"size": 1, "thresholds": []}, "tables": []}
    cfg["partitioned"] = {**base["partitioned"], "channels": ["cache"], "gillis_numbers": []}
    return cfg


if __name__ == "__main__":
    write_logs(Path(sys.argv[1]))
