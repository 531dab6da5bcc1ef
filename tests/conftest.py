"""Shared fixtures: the study's data, the ingested tidy tables, one study run per session, configs.

The full study data lives beside the clone (../shared/data, or COLLAT_SHARED_DATA); tests that need
it are skipped with one line when it is absent, so that a fresh clone tests itself on the cut in
tests/data/ (see tests/data/orfeo-epyc-2024-cut/README.md) and the synthetic logs of tests/data/osu_raw/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("COLLAT_SHARED_DATA", REPO.parent / "shared" / "data"))
STUDY = SHARED_DATA / "orfeo-epyc-2024"
RAW_SAMPLES = SHARED_DATA / "osu-raw-samples"
FIXTURES = Path(__file__).parent / "fixtures"
STUDY_CUT = Path(__file__).parent / "data" / "orfeo-epyc-2024-cut"
SYNTHETIC_RAW = Path(__file__).parent / "data" / "osu_raw"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
HAVE_STUDY = (STUDY / "p2p.csv").is_file()
NO_STUDY = f"the study's full data is not beside the clone ({STUDY}; COLLAT_SHARED_DATA sets it)"
needs_study = pytest.mark.skipif(not HAVE_STUDY, reason=NO_STUDY)
needs_samples = pytest.mark.skipif(not RAW_SAMPLES.is_dir(),
                                   reason=f"the raw OSU samples are not beside the clone ({RAW_SAMPLES})")


def load_config() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture(scope="session")
def config():
    return load_config()


@pytest.fixture(scope="session")
def vocab(config):
    from collat.ingest import Vocabulary

    return Vocabulary.from_config(config)


@pytest.fixture(scope="session")
def study_tables(config, vocab):
    """The nine published files ingested and merged exactly as the pipeline does."""
    if not HAVE_STUDY:
        pytest.skip(NO_STUDY)
    from collat.ingest import from_published_csv, merge

    parts = []
    for name, entry in config["data"]["published"]["files"].items():
        meta = {k: v for k, v in entry.items() if k not in ("sha256", "table")}
        if config["data"]["published"].get("mpi"):
            meta["mpi"] = config["data"]["published"]["mpi"]  # as the ingest_published rule passes it
        df, q = from_published_csv(STUDY / name, entry["table"], meta, vocab, name)
        parts.append((entry["table"], df, q))
    return merge(parts, config["quality"]["outliers"])


def make_workdir(tmp: Path, config: dict) -> Path:
    """A Snakemake working directory with its own config/config.yaml."""
    (tmp / "config").mkdir(parents=True, exist_ok=True)
    (tmp / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return tmp


def cut_config() -> dict:
    """The default config reading the cut of the study data (its checksums) instead of the full files."""
    cfg = load_config()
    sums = dict(line.split()[::-1] for line in (STUDY_CUT / "SHA256SUMS").read_text().splitlines() if line.strip())
    for name, entry in cfg["data"]["published"]["files"].items():
        entry["sha256"] = sums[name]
    return cfg


@pytest.fixture(scope="session")
def study_run(tmp_path_factory):
    """The default pipeline on the full study data, once per session (shared by the end-to-end checks)."""
    if not HAVE_STUDY:
        pytest.skip(NO_STUDY)
    wd = make_workdir(tmp_path_factory.mktemp("study"), load_config())
    run_snakemake(wd, "--cores", "2")
    return wd


def run_snakemake(workdir: Path, *args, check=True, env_extra=None, timeout=900):
    env = {**os.environ, "STUDY_DATA_MIRROR": str(STUDY if HAVE_STUDY else STUDY_CUT), **(env_extra or {})}
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{res.stdout[-4000:]}\n{res.stderr[-6000:]}")
    return res
