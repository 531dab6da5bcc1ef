"""Conformance with the real OpenMPI library (Debian's 4.1.x; coll/base and coll/tuned as in 4.1.5).

Run by tests/openmpi/run.sh (make test-openmpi, called by .ci/run), which installs Debian's
openmpi-bin and libopenmpi-dev when missing, builds tests/openmpi/{topo,colls,decide,monitor,record}.c and exports
COLLAT_OPENMPI_BUILD; without it the tests are skipped.

* Trees: libmpi's own builders (topo.c) against collat.model.shapes.trees, every parent and ordered child list,
  P = 2..300, roots 0 and P - 1.
* Fixed rules: decide.c asks coll/tuned's own decision functions, on a communicator that pretends
  to have P ranks, what they run for P = 2..1023 and every size bound of the rules +- 1 and every
  power of two up to 4 MiB; collat.model.shapes.openmpi.default_algorithms must give the same algorithm everywhere.
* Choices: colls.c runs one MPI_Bcast and one MPI_Reduce per communicator size 2..16 and size, with
  record.so (LD_PRELOAD) noting which ompi_coll_base_*_intra_* function ran with which segment size
  and fan-out: with each rules file the pipeline wrote, the file's algorithm (or, where it says 0,
  the fixed rules'); without a file, what collat.model.shapes.openmpi.default_algorithms predicts; fall-backs
  (Rabenseifner -> linear, scatter-allgather -> linear, split binary -> pipeline) where
  collat.model.shapes.openmpi.runs_fallback says.
* Messages: monitor.c runs one MPI_Bcast or MPI_Reduce under OpenMPI's pml monitoring component;
  every peer's message count and bytes equal collat.model.shapes.messages, for every algorithm and
  the default at P = 4, 7, 8, 13, 16 and 1 B .. 1 MiB, and with a segment size for the trees.
* Negative control: a rules file whose first message size is not 0 is dropped by OpenMPI without a
  word (the fixed rules run); collat.selection.rulesfile.validate refuses it.
"""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from collat import InputError
from collat.model.shapes import trees
from collat.model.shapes import openmpi as md
from collat.selection.rulesfile import lookup, validate
from conftest import load_config, make_workdir, measure_config, run_snakemake

BUILD = os.environ.get("COLLAT_OPENMPI_BUILD")
pytestmark = [pytest.mark.openmpi,
              pytest.mark.skipif(not BUILD, reason="no OpenMPI probes built (tests/openmpi/run.sh)")]

WORLD = 16
SIZES = [1, 2, 3, 7, 8, 100, 1000, 1024, 3000, 5000, 16384, 20000, 65536, 100000, 300000, 1048576]
FUNCTIONS = {
    "bcast": {1: "basic_linear", 2: "chain", 3: "pipeline", 4: "split_bintree", 5: "bintree", 6: "binomial",
              7: "knomial", 8: "scatter_allgather", 9: "scatter_allgather_ring"},
    "reduce": {1: "basic_linear", 2: "chain", 3: "pipeline", 4: "binary", 5: "binomial", 6: "in_order_binary",
               7: "redscat_gather"},
}
FALLBACK_FUNCTIONS = {"linear": {"basic_linear"}, "pipeline": {"pipeline", "chain"}}
OURS = {  # libmpi builder -> (our parent array over relative ranks, our send order)
    "tree2": lambda P: ("binary", {}),
    "chain4": lambda P: ("chain", {"fanout": 4}),
    "chain1": lambda P: ("pipeline", {}),
    "bmtree": lambda P: ("binomial", {}),
    "in_order_bmtree": lambda P: ("in_order_binomial", {}),
    "kmtree4": lambda P: ("knomial", {"radix": 4}),
    "in_order_bintree": lambda P: ("in_order_binary", {}),
}


def run_mpi(cmd: list[str], timeout: int) -> subprocess.CompletedProcess:
    """Run an mpirun command; once more when OpenMPI 4.1's start-up lost the race for its session
    directory (orte_init: "/tmp/ompi.<host>.<uid>: File exists", seen once in many hundred runs
    when one mpirun starts as the last one's directory is removed). Any other failure stands."""
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if res.returncode and "orte_session_dir failed" in res.stdout + res.stderr:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return res


def libmpi_trees(pmax=300):
    out = subprocess.run([f"{BUILD}/topo", "2", str(pmax), "0", "last"], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    got = defaultdict(dict)  # (builder, P, root) -> {rank: (parent, children)}
    for line in out.splitlines():
        head, kids = line.split(":")
        name, P, root, rank, parent = head.split()
        got[(name, int(P), int(root))][int(rank)] = (int(parent), [int(k) for k in kids.split()])
    return got


def ours(builder: str, P: int, root: int):
    name, kw = OURS[builder](P)
    parent = trees.tree(P, {"tree": name, **kw})
    order = trees.send_order(name, P, kw.get("radix", 4))
    if builder == "in_order_bintree":  # absolute ranks, rooted at P - 1 whatever the root
        return {r: (int(parent[r]), order[r]) for r in range(P)}
    absolute = lambda s: (s + root) % P  # noqa: E731
    return {absolute(s): (-1 if parent[s] < 0 else absolute(int(parent[s])), [absolute(c) for c in order[s]])
            for s in range(P)}


def test_trees_equal_libmpi_builders():
    got = libmpi_trees()
    assert len(got) == 7 * 299 * 2 - 299, "every builder, P and root dumped"  # in-order bintree: one root
    wrong = []
    for (builder, P, root), theirs in got.items():
        mine = ours(builder, P, root)
        if mine != theirs:
            diff = next(r for r in range(P) if mine.get(r) != theirs.get(r))
            wrong.append(f"{builder} P={P} root={root} rank {diff}: libmpi {theirs.get(diff)}, ours {mine.get(diff)}")
    assert not wrong, f"{len(wrong)} trees differ, e.g. " + "; ".join(wrong[:5])


def fixed_rule_sizes(rules: dict) -> list[int]:
    bounds = {b for blocks in rules.values() for block in blocks for b, _ in block["sizes"] if b is not None}
    return sorted({s for b in bounds for s in (b - 1, b, b + 1) if s >= 1} | {2**k for k in range(23)})


def test_fixed_rules_equal_the_decision_functions_up_to_1023(tmp_path, config):
    rules = config["model"]["openmpi"]["default_rules"]
    sizes = fixed_rule_sizes(rules)
    record = tmp_path / "decide.txt"
    env = {**os.environ, "COLLAT_RECORD": str(record), "COLLAT_RECORD_DRY": "1", "LD_PRELOAD": f"{BUILD}/record.so"}
    subprocess.run([f"{BUILD}/decide", "2", "1023", *map(str, sizes)], env=env, check=True, timeout=600,
                   capture_output=True)
    ran = {}
    for line in record.read_text().splitlines():
        op, fn, P, nbytes, seg, _, _ = line.split()
        ran[(op, int(P), int(nbytes))] = (fn, int(seg))
    P = np.arange(2, 1024)
    wrong, cells = [], 0
    for op in ("bcast", "reduce"):
        ours_alg = md.default_algorithms(op, P, sizes, rules)
        for i, p in enumerate(P):
            for j, m in enumerate(sizes):
                cells += 1
                fn, seg = ran[(op, int(p), m)]
                if fn != FUNCTIONS[op][int(ours_alg[i, j])] or seg != 0:
                    wrong.append(f"{op} P={p} {m} B: libmpi {fn}, ours {FUNCTIONS[op][int(ours_alg[i, j])]}")
    assert len(ran) == cells
    assert not wrong, f"{len(wrong)} of {cells} cells differ: " + "; ".join(wrong[:8])
    print(f"fixed rules: {cells} cells agree (P 2..1023, {len(sizes)} sizes)")


def mpirun(tmp: Path, tag: str, rules: Path | None = None) -> dict:
    """{(operation, P, bytes): [(function, segsize, knob, depth), ...]} of one run of colls."""
    record = tmp / f"record-{tag}.txt"
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(WORLD), "--mca", "btl", "self,vader",
           "-x", f"COLLAT_RECORD={record}", "-x", f"LD_PRELOAD={BUILD}/record.so"]
    if rules is not None:
        cmd += ["--mca", "coll_tuned_use_dynamic_rules", "true", "--mca", "coll_tuned_dynamic_rules_filename", str(rules)]
    res = run_mpi(cmd + [f"{BUILD}/colls", *map(str, SIZES)], 600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    calls = defaultdict(list)
    for line in record.read_text().splitlines():
        op, fn, P, nbytes, seg, knob, depth = line.split()
        calls[(op, int(P), int(nbytes))].append((fn, int(seg), int(knob), int(depth)))
    assert set(calls) == {(op, P, m) for op in ("bcast", "reduce") for P in range(2, WORLD + 1) for m in SIZES}
    return calls


def check_calls(calls: dict, expected_alg, config: dict, faninout: dict | None) -> int:
    """Every cell ran the expected algorithm (and its fall-back where ours says); returns the cells."""
    specs = config["model"]["openmpi"]["trees"]
    wrong = []
    for (op, P, m), seq in sorted(calls.items()):
        alg, from_file = expected_alg(op, P, m)
        fn, seg, knob, depth = seq[0]
        want = FUNCTIONS[op][alg]
        if depth != 0 or fn != want or seg != 0:
            wrong.append(f"{op} P={P} {m} B: ran {fn} (segsize {seg}), expected {want} (algorithm {alg})")
            continue
        if alg == 2 and faninout is not None and from_file and knob != faninout[op].get(2, 0):
            wrong.append(f"{op} P={P} {m} B: chain fan-out {knob}, the file says {faninout[op].get(2)}")
        spec = md.tree_spec(specs, op, alg)
        if spec is not None and spec.get("fallback") and md.runs_fallback(spec, [P], [m])[0, 0]:
            inner = [f for f, _, _, d in seq if d == 1]
            if not inner or inner[0] not in FALLBACK_FUNCTIONS[spec["fallback"]]:
                wrong.append(f"{op} P={P} {m} B: {fn} fell back to {inner}, ours says {spec['fallback']}")
    assert not wrong, f"{len(wrong)} of {len(calls)} cells differ: " + "; ".join(wrong[:8])
    return len(calls)


@pytest.fixture(scope="module")
def rules_files(tmp_path_factory):
    """The rules files the pipeline writes (the selection stage on the study data)."""
    wd = make_workdir(tmp_path_factory.mktemp("study"), load_config())
    targets = [f"results/selection/rules_map-by-{m}.txt" for m in ("core", "socket", "node")]
    run_snakemake(wd, "--cores", "2", *targets)
    return [wd / t for t in targets]


def test_without_rules_file_the_default_is_what_we_predict(tmp_path, config):
    rules = config["model"]["openmpi"]["default_rules"]
    calls = mpirun(tmp_path, "fixed")
    n = check_calls(calls, lambda op, P, m: (md.default_algorithm(op, P, m, rules), False), config, None)
    print(f"fixed rules: {n} (operation, P, size) cells, P 2..{WORLD}, sizes {SIZES}")


def test_rules_files_run_what_they_choose(tmp_path, rules_files, config):
    defaults = config["model"]["openmpi"]["default_rules"]
    from collat.selection.choice import rules_faninout

    trees = config["model"]["openmpi"]["trees"]
    faninout = {op: rules_faninout(trees, op, config["selection"]["faninout"]) for op in ("bcast", "reduce")}
    assert faninout["bcast"][2] == faninout["reduce"][2] == 4  # the chain's, as a forced chain runs
    for path in rules_files:
        parsed = validate(path.read_text(), str(path))
        ids = {"bcast": 7, "reduce": 11}

        def expected(op, P, m):
            alg = lookup(parsed[ids[op]], P, m)
            return (alg, True) if alg else (md.default_algorithm(op, P, m, defaults), False)

        n = check_calls(mpirun(tmp_path, path.stem, path), expected, config, faninout)
        chosen = sorted({lookup(parsed[7], P, m) for P in range(2, WORLD + 1) for m in SIZES})
        print(f"{path.name}: {n} cells agree; bcast algorithms chosen {chosen}")


def test_a_broken_rules_file_is_dropped_silently_and_caught_by_us(tmp_path, config):
    broken = tmp_path / "broken.txt"
    # bcast: everyone linear, but the first message-size rule starts at 1 instead of 0
    broken.write_text("1\n7\n1\n2\n1\n1 1 0 0\n")
    with pytest.raises(InputError, match="line 6: expected message size 0 in the first rule"):
        validate(broken.read_text(), str(broken))
    fixed = mpirun(tmp_path, "fixed")
    ran = mpirun(tmp_path, "broken", broken)
    assert {k: v[0][0] for k, v in ran.items()} == {k: v[0][0] for k, v in fixed.items()}
    # the same file with the rule at 0 is obeyed: linear everywhere for bcast
    good = tmp_path / "good.txt"
    good.write_text("1\n7\n1\n2\n1\n0 1 0 0\n")
    ran = mpirun(tmp_path, "good", good)
    assert {v[0][0] for (op, _, _), v in ran.items() if op == "bcast"} == {"basic_linear"}


MONITORED_P = (4, 7, 8, 13, 16)
MONITORED_SIZES = (1, 1024, 65536, 1048576)
SEGMENTED = {"P": (7, 16), "sizes": (1000, 65536, 1048577), "segsize": 8192}  # the algorithms that take one


def monitored(op: str, algorithm: int, P: int, size: int, segsize: int = 0, rules: Path | None = None) -> dict:
    """{(src, dst): (messages, bytes)} that OpenMPI's pml monitoring component counted for one call
    (tests/openmpi/monitor.c): its internal messages, i.e. the collective's, per sender and peer,
    from the file each rank writes at MPI_Finalize (not the terminal, where ranks' lines may mix)."""
    import re
    import tempfile

    with tempfile.TemporaryDirectory(prefix="collat-monitor-") as tmp:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(P), "--mca", "btl", "self,vader",
               "--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
               "--mca", "pml_monitoring_filename", f"{tmp}/rank"]
        if rules is not None:  # the rules file decides (``algorithm`` unused)
            cmd += ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_dynamic_rules_filename",
                    str(rules)]
        elif algorithm:
            cmd += ["--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", f"coll_tuned_{op}_algorithm", str(algorithm)]
            if segsize:
                cmd += ["--mca", f"coll_tuned_{op}_algorithm_segmentsize", str(segsize)]
        res = run_mpi(cmd + [f"{BUILD}/monitor", op, str(size)], 120)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        files = sorted(Path(tmp).glob("rank.*.prof"))
        assert len(files) == P, f"{len(files)} monitoring files of {P} ranks"
        text = "\n".join(f.read_text() for f in files)
    line = re.compile(r"^I\s+(\d+)\s+(\d+)\s+(\d+) bytes\s+(\d+) msgs sent")
    return {(int(m[1]), int(m[2])): (int(m[4]), int(m[3])) for m in map(line.match, text.splitlines()) if m}


def test_a_rules_file_s_chain_runs_the_fan_in_out_it_states(tmp_path, config):
    """OpenMPI hands a rule's fan-in/out to the chain: 0 runs one chain (the root talks to rank 1
    alone), 4 runs four (ranks 1, 5, 9, 13 at P = 16), which is what a forced chain runs and the
    model prices; the pipeline writes 4 (collat.selection.choice.rules_faninout)."""
    from collat.selection.choice import rules_faninout

    heads = {}
    for fanout in (0, 4):
        path = tmp_path / f"chain{fanout}.txt"
        path.write_text(f"2\n7\n1\n16\n1\n0 2 {fanout} 0\n11\n1\n16\n1\n0 2 {fanout} 0\n")
        validate(path.read_text(), str(path))
        sent = monitored("bcast", 0, 16, 1024, rules=path)
        taken = monitored("reduce", 0, 16, 1024, rules=path)
        heads[fanout] = (sorted(d for s, d in sent if s == 0), sorted(s for s, d in taken if d == 0))
    assert heads[0] == ([1], [1]) and heads[4] == ([1, 5, 9, 13], [1, 5, 9, 13])
    trees = config["model"]["openmpi"]["trees"]
    assert rules_faninout(trees, "bcast")[2] == rules_faninout(trees, "reduce")[2] == 4


def test_every_message_equals_what_openmpi_sends():
    """Message-level conformance: for every algorithm of both operations and the default, per-peer
    message counts and bytes from OpenMPI's pml monitoring component equal
    collat.model.shapes.messages (block rounding, halves, non-power-of-two steps and fall-backs
    included); then with a segment size, for the algorithms that take one."""
    from concurrent.futures import ThreadPoolExecutor

    from collat.config.defaults import openmpi_facts
    from collat.model.shapes.messages import messages, per_peer

    facts = openmpi_facts("4.1")
    cells = [(op, alg, P, size, 0) for op, n in (("bcast", 10), ("reduce", 8)) for alg in range(n)
             for P in MONITORED_P for size in MONITORED_SIZES]
    takes_segments = {"bcast": (2, 3, 4, 5, 6, 7), "reduce": (2, 3, 4, 5, 6)}
    cells += [(op, alg, P, size, SEGMENTED["segsize"]) for op, algs in takes_segments.items() for alg in algs
              for P in SEGMENTED["P"] for size in SEGMENTED["sizes"]]
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda c: monitored(*c), cells))
    wrong = []
    for (op, alg, P, size, seg), measured in zip(cells, got):
        ours = per_peer(messages(op, alg, P, size, facts["trees"], facts["default_rules"], seg))
        if measured != ours:
            diff = sorted((k, measured.get(k), ours.get(k)) for k in set(measured) | set(ours)
                          if measured.get(k) != ours.get(k))
            wrong.append(f"{op} {alg} P={P} {size} B seg {seg}: (peer, OpenMPI, ours) {diff[:3]}")
    assert not wrong, f"{len(wrong)} of {len(cells)} cells differ: " + "; ".join(wrong[:6])
    print(f"messages: {len(cells)} cells equal, every peer's count and bytes")


def test_the_barrier_sends_what_the_model_says():
    """The barrier OSU runs before every call (its last round spreads the ranks' starts): per-peer
    message counts from OpenMPI's pml monitoring equal collat.model.shapes.barrier's rounds of the
    barrier the fixed rules pick, at P where each of recursive doubling (a power of two and not),
    linear and Bruck runs."""
    from collections import Counter

    from collat.config.defaults import openmpi_facts
    from collat.model.shapes import barrier

    rules = openmpi_facts("4.1")["barrier_rules"]
    wrong = []
    Ps = (2, 3, 5, 7, 8, 12, 16, 63, 64, 70)
    for P in Ps:
        name = barrier.algorithm(P, rules)
        ours = Counter((int(a), int(b)) for src, dst in barrier.rounds(P, name) for a, b in zip(src, dst))
        measured = {pair: n for pair, (n, _) in monitored("barrier", 0, P, 0).items()}
        if measured != dict(ours):
            diff = sorted((k, measured.get(k), ours.get(k)) for k in set(measured) | set(ours)
                          if measured.get(k) != ours.get(k))
            wrong.append(f"P={P} ({name}): (peer, OpenMPI, ours) {diff[:3]}")
    assert not wrong, "; ".join(wrong)
    print(f"barrier: {len(Ps)} communicator sizes equal, every peer's messages")


OSU = os.environ.get("COLLAT_OSU_BUILD")


@pytest.mark.skipif(not OSU, reason="no OSU build (tests/openmpi/run.sh builds ../shared/tools/osu)")
def test_a_machine_from_nothing_plan_measure_model_rules_file(tmp_path):
    """An empty machine description of 1 node x 4 cores: stage plan writes a first design (the
    point-to-point and NBFT launches the model needs, then collective launches); accepted as it is,
    stage measure runs it through real mpirun and the real OSU 7.3 binaries (oversubscribed: the
    timings mean nothing, the chain is checked), the ingest reads the logs and the model and the
    selection write a rules file; record.so shows each forced launch ran the algorithm the plan
    asked for, and a rerun has nothing left to do."""
    record = tmp_path / "record.txt"
    mpi = ["--oversubscribe", "--mca", "btl", "self,vader", "-x", f"COLLAT_RECORD={record}",
           "-x", f"LD_PRELOAD={BUILD}/record.so"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    wd = tmp_path / "wd"
    mine = measure_config(wd, 4, 2, {"bcast": {0: "default", 1: "linear", 6: "binomial"},
                                     "reduce": {0: "default", 1: "linear", 5: "binomial"}}, OSU, mpi, 4096,
                          plan={"budget": {"launches": 18}})
    run_snakemake(wd, "results/plan/launches.csv", "--cores", "2", "--configfile", str(mine))
    plan = pd.read_csv(wd / "results/plan/launches.csv")
    assert set(plan.loc[plan["kind"] == "pt2pt", "channel"]) == {"cache", "core"}  # the machine's channels
    nbft = plan[plan["kind"] == "nbft"]
    assert set(zip(nbft["operation"], nbft["channel"])) == {(o, c) for o in ("bcast", "reduce") for c in ("cache", "core")}
    coll = plan[plan["kind"] == "collective"]
    assert len(coll) == 18 and set(coll["P"]) == {2, 3, 4} and coll["reason"].str.startswith("first design").all()
    assert (wd / "results/plan/jobs/nodes1.sbatch").read_text().count("mpirun") == len(plan) + 1  # and --version
    assert not (wd / "osu_raw").exists()  # planning runs nothing
    (wd / "accepted.csv").write_text((wd / "results/plan/launches.csv").read_text())
    run_snakemake(wd, "--cores", "2", "--configfile", str(mine), timeout=1500)
    for f in plan["file"]:
        assert "# OSU MPI" in (wd / "osu_raw" / f).read_text(), f  # every planned log, written by OSU
    # each log names the MPI that ran it (mpirun --version above OSU's output): the model checks it
    named = pd.read_parquet(wd / "results/tidy/collective.parquet")["mpi"]
    assert named.notna().all() and named.str.startswith("openmpi-4.1.").all(), set(named)
    rules = (wd / "results/selection/rules_map-by-core.txt").read_text()
    validate(rules, "rules_map-by-core.txt")
    assert pd.read_csv(wd / "results/selection/regret.csv")["cells"].gt(0).all()
    # what ran: every forced launch its algorithm at every size, nothing else but the default's choices
    ran = defaultdict(set)  # (operation, P) -> {(function, bytes)} at depth 0
    for line in record.read_text().splitlines():
        op, fn, P, nbytes, seg, _, depth = line.split()
        if depth == "0":
            ran[(op, int(P))].add((fn, int(nbytes)))
            assert seg == "0", line  # the segment size the command states, as the model prices it
    rules_cfg = load_config()["model"]["openmpi"]["default_rules"]
    forced = plan[plan["kind"] != "pt2pt"]
    for (op, P), g in forced.groupby(["operation", "P"]):
        sizes = sorted({m for _, m in ran[(op, P)]})
        assert sizes[0] == (4 if op == "reduce" else 1) and sizes[-1] == 4096
        asked = {FUNCTIONS[op][int(a)] for a in g["algorithm"] if a != 0}
        for fn in asked:
            assert {m for f, m in ran[(op, P)] if f == fn} == set(sizes), (op, P, fn)
        default = md.default_algorithms(op, np.array([P]), sizes, rules_cfg)[0]
        allowed = asked | ({FUNCTIONS[op][int(a)] for a in default} if 0 in set(g["algorithm"]) else set())
        assert {f for f, _ in ran[(op, P)]} <= allowed, (op, P, ran[(op, P)], allowed)
    again = run_snakemake(wd, "-n", "--cores", "2", "--configfile", str(mine))
    assert "Nothing to be done" in again.stdout + again.stderr  # a measured log is a raw input now
    assert (wd / "results/plan/launches.csv").is_file()  # the next round, proposed


@pytest.mark.skipif(not OSU, reason="no OSU build (tests/osu_build.sh)")
def test_a_pinned_launch_outside_an_allocation_runs(tmp_path):
    """Stage measure's point-to-point launch as a workstation runs it (no SLURM allocation): its
    rankfile names this host, not +n0 (which mpirun refuses there), and the real osu_latency runs
    with both ranks pinned where the rankfile says."""
    from collat.plan import jobs

    machine = {"name": "two cores", "nodes": 1, "sockets_per_node": 1, "cores_per_socket": 2, "cores_per_l3": 2}
    launch = {"kind": "pt2pt", "benchmark": "osu_latency", "operation": None, "algorithm": None, "mapping": None,
              "channel": "cache", "P": 2, "receiver": 1}
    rf = tmp_path / "rankfile"
    rf.write_text(jobs.rankfile(machine, launch, allocated=False))
    opts = jobs.MeasureOptions(OSU, "accepted.csv", "mpirun", tuple(["--allow-run-as-root"] if os.geteuid() == 0 else []),
                               True, 20, 2, 1024, None, None, "00:10:00")
    words = jobs.command(launch, machine, opts, str(rf))
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
    done = subprocess.run(words[:1] + ["--report-bindings"] + words[1:], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "# OSU MPI Latency Test" in done.stdout and "1024" in done.stdout
    assert "rank 1 bound to socket 0[core 1" in done.stdout + done.stderr
