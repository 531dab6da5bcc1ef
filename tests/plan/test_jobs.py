"""OSU commands, batch scripts and the manifest of planned launches (collat.plan.jobs)."""

import pandas as pd
import pytest

from collat.plan import jobs

SMALL = {"name": "s", "nodes": 2, "sockets_per_node": 2, "cores_per_socket": 4, "cores_per_l3": 2, "numa_per_socket": 1}
OPTS = jobs.MeasureOptions("/opt/osu", "accepted.csv", "mpirun", (), True, None, None, 65536, "batch", "hpc", "00:10:00")


def launch(**kw):
    base = {"kind": "collective", "benchmark": "osu_reduce", "operation": "reduce", "algorithm": 5, "mapping": "core",
            "channel": None, "P": 6, "receiver": None}
    return {**base, **kw}


def test_a_collective_forces_its_algorithm_placement_and_binding():
    words = jobs.command(launch(), SMALL, OPTS)
    assert words == ["mpirun", "-np", "6", "--map-by", "core", "--bind-to", "core",
                     "--mca", "coll_tuned_use_dynamic_rules", "1", "--mca", "coll_tuned_reduce_algorithm", "5",
                     "--mca", "coll_tuned_reduce_algorithm_segmentsize", "0",
                     "/opt/osu/c/mpi/collective/blocking/osu_reduce", "-f", "-m", "4:65536"]
    trees = [{"operation": "bcast", "algorithm": 7, "tree": "knomial", "radix": 4},
             {"operation": "reduce", "algorithm": 2, "tree": "chain", "fanout": 4}]
    chain = jobs.command(launch(algorithm=2), SMALL, OPTS, trees=trees)
    assert chain[chain.index("coll_tuned_reduce_algorithm_chain_fanout") + 1] == "4"
    knomial = jobs.command(launch(operation="bcast", benchmark="osu_bcast", algorithm=7), SMALL, OPTS, trees=trees)
    assert knomial[knomial.index("coll_tuned_bcast_algorithm_knomial_radix") + 1] == "4"
    default = jobs.command(launch(algorithm=0), SMALL, OPTS, trees=trees)
    assert not any("segmentsize" in w for w in default)  # the fixed rules choose for themselves
    node = jobs.command(launch(mapping="node", P=3), SMALL, OPTS)
    assert node[node.index("--bind-to") + 1] == "numa"  # more ranks than nodes: a NUMA domain each
    srun = jobs.command(launch(mapping="socket"), SMALL, jobs.MeasureOptions(**{**OPTS.__dict__, "launcher": "srun"}))
    assert srun[:3] == ["env", "OMPI_MCA_coll_tuned_use_dynamic_rules=1", "OMPI_MCA_coll_tuned_reduce_algorithm=5"]
    assert "--distribution=block:cyclic" in srun and "--cpu-bind=sockets" in srun


def test_point_to_point_and_nbft_are_pinned_by_a_rankfile():
    p2p = launch(kind="pt2pt", benchmark="osu_latency", operation=None, algorithm=None, mapping=None,
                 channel="node", P=2, receiver=8)
    assert jobs.rankfile(SMALL, p2p) == "rank 0=+n0 slot=0\nrank 1=+n1 slot=0\n"
    words = jobs.command(p2p, SMALL, OPTS, "rf.txt")
    assert words[:5] == ["mpirun", "-np", "2", "--rankfile", "rf.txt"] and "-f" not in words
    nbft = launch(kind="nbft", benchmark="osu_bcast", operation="bcast", algorithm=1, mapping=None,
                  channel="socket", P=3)
    assert jobs.rankfile(SMALL, nbft) == "rank 0=+n0 slot=0\nrank 1=+n0 slot=4\nrank 2=+n0 slot=5\n"
    # outside an allocation mpirun refuses relative nodes: this host by name, one node only
    assert jobs.rankfile(SMALL, nbft, allocated=False) == \
        "rank 0=localhost slot=0\nrank 1=localhost slot=4\nrank 2=localhost slot=5\n"
    with pytest.raises(ValueError, match="spans two nodes"):
        jobs.rankfile(SMALL, p2p, allocated=False)
    assert jobs.in_allocation({"SLURM_JOB_ID": "7"}) and not jobs.in_allocation({"HOME": "/root"})
    with pytest.raises(ValueError, match="rankfile"):
        jobs.command(nbft, SMALL, OPTS)
    assert jobs.log_path(nbft) == "nbft/bcast/socket/np3.txt" and jobs.log_path(p2p) == "pt2pt/node/recv8.txt"
    assert jobs.log_path(launch()) == "reduce/core/alg5/np6.txt"


def test_version_line_names_the_mpi_or_nothing():
    assert jobs.version_line("mpirun (Open MPI) 4.1.6\n\nReport bugs to https://www.open-mpi.org/\n") == \
        "mpirun (Open MPI) 4.1.6"
    assert jobs.version_line("HYDRA build details:\n    Version: 4.0.2\n") is None  # no name on its first line
    assert jobs.version_line("") is None


def test_batch_scripts_one_per_node_count_and_the_manifest():
    rows = pd.DataFrame([launch(), launch(P=9), launch(kind="pt2pt", benchmark="osu_latency", operation=None,
                                                        algorithm=None, mapping=None, channel="node", P=2, receiver=8)])
    scripts = jobs.batch_scripts(rows, SMALL, OPTS, "resources/osu_raw")
    assert sorted(scripts) == ["nodes1.sbatch", "nodes2.sbatch"]
    two = scripts["nodes2.sbatch"]
    assert two.count('rf=$(mktemp)') == two.count('rm -f "$rf"') == 1  # a rankfile removed after its launch
    assert "#SBATCH --nodes=2" in two and "#SBATCH --partition=batch" in two and "#SBATCH --account=hpc" in two
    assert two.count("mpirun -np") == 2 and '--rankfile "$rf"' in two and "rank 1=+n1 slot=0" in two
    assert '> "$raw/reduce/core/alg5/np9.txt.part" 2>&1 && mv' in two  # no half-written log
    m = jobs.manifest(rows)
    assert list(m["file"]) == ["reduce/core/alg5/np6.txt", "reduce/core/alg5/np9.txt", "pt2pt/node/recv8.txt"]
    assert m["P"].isna().tolist() == [False, False, True] and m["receiver"].iloc[2] == 8



def test_a_batch_script_without_measure_osu_takes_the_directory_from_its_environment(tmp_path):
    import os
    import stat
    import subprocess

    stub = tmp_path / "bin" / "mpirun"  # records its words, one per line, as the real launcher would get them
    stub.parent.mkdir()
    stub.write_text('#!/bin/bash\nif [ "$1" = --version ]; then printf "mpirun (Open MPI) 4.1.4\\n\\nReport bugs\\n"; '
                    'exit; fi\nprintf "%s\\n" "$@" >> "$CALLS"\n')
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    script = tmp_path / "nodes1.sbatch"
    script.write_text(jobs.batch_scripts(pd.DataFrame([launch()]), SMALL,
                                         jobs.MeasureOptions(**{**OPTS.__dict__, "osu": None}), "raw")["nodes1.sbatch"])
    env = {**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls.txt"),
           "OSU": str(tmp_path / "osu 7.3")}
    subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, check=True)
    words = (tmp_path / "calls.txt").read_text().splitlines()
    assert words[words.index("0") + 1] == f"{tmp_path}/osu 7.3/c/mpi/collective/blocking/osu_reduce"  # one word
    # the log names the MPI that ran it (its first line), which the ingest records
    assert (tmp_path / "raw/reduce/core/alg5/np6.txt").read_text().splitlines() == ["mpirun (Open MPI) 4.1.4"]
    env.pop("OSU")
    run = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "set OSU to your OSU micro-benchmarks 7 build" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1  # one line, before any launch
