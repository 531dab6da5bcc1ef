"""The whole default pipeline through the SLURM profile on a real single-node SLURM.

Run by tests/slurm/run.sh (make test-slurm, called by .ci/run), which installs Debian's slurm-wlm
and munge, starts the daemons, exports COLLAT_SLURM_BASE and stops them by PID afterwards. Without
that variable the test is skipped.
"""

import filecmp
import os
from pathlib import Path

import pandas as pd
import pytest

from conftest import REPO, load_config, make_workdir, measure_config, run_snakemake

BASE = os.environ.get("COLLAT_SLURM_BASE")
pytestmark = [pytest.mark.slurm, pytest.mark.skipif(not BASE, reason="no SLURM test cluster (tests/slurm/run.sh)")]


def result_files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted((root / "results").rglob("*"))
            if p.is_file() and p.suffix in (".csv", ".parquet", ".md", ".tex", ".txt")}


def test_default_pipeline_under_slurm_equals_local(tmp_path):
    cfg = load_config()
    local = make_workdir(tmp_path / "local", cfg)
    run_snakemake(local, "--cores", "2")
    remote = make_workdir(tmp_path / "slurm", cfg)
    res = run_snakemake(remote, "--profile", str(REPO / "tests/slurm/profile"), timeout=1500)
    # the jobs really ran under SLURM: the controller's job-completion log and the plugin's job logs
    completed = Path(BASE, "log", "jobcomp.txt").read_text()
    ours = [line for line in completed.splitlines() if f"WorkDir={remote} " in line]
    assert sum("JobState=COMPLETED" in line for line in ours) >= 25, completed[-2000:]
    slurm_logs = remote / ".snakemake" / "slurm_logs"
    assert slurm_logs.is_dir() and any(slurm_logs.rglob("*.log"))
    assert {"tidy", "model_predict", "regression_fit"} <= {p.name.removeprefix("rule_") for p in slurm_logs.iterdir()}, \
        (sorted(p.name for p in slurm_logs.iterdir()), res.stdout[-2000:])
    # ... and gave the same results as the local run
    a, b = result_files(local), result_files(remote)
    assert set(a) == set(b)
    for rel in a:
        if rel.endswith(".parquet"):
            pd.testing.assert_frame_equal(pd.read_parquet(a[rel]), pd.read_parquet(b[rel]), obj=rel)
        else:
            assert filecmp.cmp(a[rel], b[rel], shallow=False), rel


OSU = os.environ.get("COLLAT_OSU_BUILD")


@pytest.mark.skipif(not OSU, reason="no OSU build (tests/slurm/run.sh builds ../shared/tools/osu)")
def test_a_launch_group_of_stage_measure_runs_as_slurm_jobs(tmp_path):
    """A planned launch group (the first design of a 2-core node: every launch on one node) accepted
    and run by stage measure through the SLURM profile: one SLURM job for the group, asking for its
    launches' node count and largest task count (they run one after another in it), each launch
    writing its OSU log into data.raw.dir; the ingest reads them."""
    mpi = ["--oversubscribe", "--mca", "btl", "self,vader"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    wd = tmp_path / "wd"
    mine = measure_config(wd, 2, 1, {"bcast": {0: "default", 6: "binomial"}, "reduce": {0: "default", 5: "binomial"}},
                          OSU, mpi, 1024)
    run_snakemake(wd, "results/plan/launches.csv", "--cores", "1", "--configfile", str(mine))
    plan = pd.read_csv(wd / "results/plan/launches.csv")
    assert len(plan) == 7 and (plan["nodes"] == 1).all() and plan["P"].max() == 2  # one group: a node, 2 ranks
    assert (wd / "results/plan/jobs/nodes1.sbatch").is_file()
    (wd / "accepted.csv").write_text((wd / "results/plan/launches.csv").read_text())
    run_snakemake(wd, "results/tidy/pt2pt.parquet", "results/tidy/nbft.parquet", "results/tidy/collective.parquet",
                  "--profile", str(REPO / "tests/slurm/profile"), "--configfile", str(mine), timeout=1200)
    completed = Path(BASE, "log", "jobcomp.txt").read_text()
    ours = [line for line in completed.splitlines() if f"WorkDir={wd} " in line and "JobState=COMPLETED" in line]
    # one job for the seven launches, two tasks (not fourteen: they run in series in it)
    assert sum("ProcCnt=2 " in line for line in ours) == 1, completed[-2000:]
    logs = wd / ".snakemake" / "slurm_logs"
    assert not (logs / "rule_measure").exists()
    group = [f for d in logs.glob("group_measure_1nodes*") for f in d.rglob("*.log")]
    assert len(group) == 1, sorted(p.name for p in logs.iterdir())
    ran = group[0].read_text()
    assert sum(line.startswith("localrule measure:") for line in ran.splitlines()) == len(plan), ran[-3000:]
    for f in plan["file"]:
        assert "# OSU MPI" in (wd / "osu_raw" / f).read_text(), f
    coll = pd.read_parquet(wd / "results/tidy/collective.parquet")
    assert set(zip(coll["operation"], coll["algorithm"])) == {("bcast", 0), ("bcast", 6), ("reduce", 0), ("reduce", 5)}
