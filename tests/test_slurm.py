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

from conftest import REPO, load_config, make_workdir, run_snakemake

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
