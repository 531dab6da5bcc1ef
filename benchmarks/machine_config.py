"""Helpers of benchmarks/measure_machine.sh: this node's config, and the held-out launches.

    python benchmarks/machine_config.py config --osu DIR [--bind true|false] [--options="WORDS"]
                                               [--raw DIR] [--launches CSV] [--budget N]
    python benchmarks/machine_config.py heldout ACCEPTED.csv [--seed N]

``config`` prints a user's config of this node (one node; sockets, cores and L3 from lscpu and
sysfs), map-by core, logs in osu_raw/, stage measure on. ``heldout`` prints, in random order, the
collective launches of every algorithm at every P from 2 to the node's cores under map-by core
that ACCEPTED.csv (the launches the rounds ran) does not hold: what the rounds' model is scored on.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml


def lscpu() -> dict:
    text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}


def l3_cpus() -> int | None:
    """CPUs sharing cpu0's L3 (sysfs), or None where the kernel does not say."""
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "level").read_text().strip() == "3":
                shared = (index / "shared_cpu_list").read_text().strip()
                return sum(int(b) - int(a) + 1 if b else 1
                           for a, b in re.findall(r"(\d+)(?:-(\d+))?", shared))
        except OSError:
            return None
    return None


def machine() -> dict:
    """This node as config ``machine``; where lscpu's counts do not multiply to the CPUs the process
    may use, one socket of that many cores sharing one L3 (a container's view)."""
    info, cpus = lscpu(), len(os.sched_getaffinity(0))
    sockets = int(info.get("Socket(s)", 1) or 1)
    threads = int(info.get("Thread(s) per core", 1) or 1)
    per_socket = int(info.get("Core(s) per socket", cpus) or cpus)
    if sockets * per_socket * threads != cpus:
        sockets, per_socket, threads = 1, cpus, 1
    l3 = l3_cpus()
    per_l3 = max(1, min(per_socket, (l3 // threads) if l3 else per_socket))
    if per_socket % per_l3:
        per_l3 = per_socket
    return {"name": f"{info.get('Model name', 'this node')} ({sockets * per_socket} cores)", "nodes": 1,
            "sockets_per_node": sockets, "cores_per_socket": per_socket, "cores_per_l3": per_l3}


def config(osu: str, bind: bool, options: list[str], raw: str, launches: str, budget: int) -> dict:
    return {"machine": machine(), "mappings": ["core"],
            "data": {"raw": {"dir": raw}},
            "measure": {"osu": osu, "launches": launches, "bind": bind, "launcher_options": options},
            "plan": {"budget": {"launches": budget}}}


def heldout(accepted: str, seed: int) -> pd.DataFrame:
    from collat.config.defaults import openmpi_facts

    m = machine()
    cores = m["sockets_per_node"] * m["cores_per_socket"]
    done = pd.read_csv(accepted)
    done = done[done["kind"] == "collective"]
    ran = set(zip(done["operation"], done["algorithm"].astype(int), done["P"].astype(int)))
    rows = [{"kind": "collective", "benchmark": f"osu_{op}", "operation": op, "algorithm": int(a["id"]),
             "mapping": "core", "channel": None, "P": P, "receiver": None}
            for op, entries in openmpi_facts("4.1")["algorithms"].items() for a in entries
            for P in range(2, cores + 1) if (op, int(a["id"]), P) not in ran]
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("config")
    c.add_argument("--osu", required=True)
    c.add_argument("--bind", default="true")
    c.add_argument("--options", default="", help="launcher options, one string")
    c.add_argument("--raw", default="osu_raw")
    c.add_argument("--launches", default="accepted.csv")
    c.add_argument("--budget", type=int, default=54)
    h = sub.add_parser("heldout")
    h.add_argument("accepted")
    h.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.what == "config":
        cfg = config(args.osu, args.bind == "true", shlex.split(args.options), args.raw, args.launches, args.budget)
        yaml.safe_dump(cfg, sys.stdout, sort_keys=False, default_flow_style=None)
    else:
        heldout(args.accepted, args.seed).to_csv(sys.stdout, index=False)


if __name__ == "__main__":
    main()
