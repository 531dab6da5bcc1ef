"""Shared fixtures: the study's data in ../shared/data, the ingested tidy tables, a config."""

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
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


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
    if not STUDY.is_dir():
        pytest.fail(f"the study's data is missing: {STUDY}")
    from collat.ingest import from_published_csv, merge

    parts = []
    for name, entry in config["data"]["published"]["files"].items():
        meta = {k: v for k, v in entry.items() if k not in ("sha256", "table")}
        df, q = from_published_csv(STUDY / name, entry["table"], meta, vocab, name)
        parts.append((entry["table"], df, q))
    return merge(parts, config["quality"]["outliers"])


def make_workdir(tmp: Path, config: dict) -> Path:
    """A Snakemake working directory with its own config/config.yaml."""
    (tmp / "config").mkdir(parents=True, exist_ok=True)
    (tmp / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return tmp


def run_snakemake(workdir: Path, *args, check=True, env_extra=None, timeout=900):
    env = {**os.environ, "STUDY_DATA_MIRROR": str(STUDY), **(env_extra or {})}
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{res.stdout[-4000:]}\n{res.stderr[-6000:]}")
    return res
