"""Shared fixtures: the study's data, the ingested tidy tables, one study run per session, configs.

The full study data lives beside the clone (../shared/data, or COLLAT_SHARED_DATA); tests that need
it are skipped with one line when it is absent, so that a fresh clone tests itself on the cut in
tests/data/ (see tests/data/orfeo-epyc-2024-cut/README.md) and the synthetic logs of tests/data/osu_raw/.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
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
    """The study's config with what it leaves to the schema's defaults and the package filled in,
    as the workflow does."""
    from snakemake.utils import validate

    from collat.config.defaults import complete

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    return complete(config)


#: the eager limit the study's NBFT reduce runs show: config/config.yaml leaves it null for the data
#: to give (tests/nbft/test_gamma.py checks that the study's lines give this), so the tests that build
#: the model's options without the pt2pt and nbft stages' files state it
STUDY_EAGER_LIMIT = 131072


def study_model(config: dict) -> dict:
    """A copy of the study config's ``model`` with the eager limit its data show stated."""
    import copy

    model = copy.deepcopy(config["model"])
    model["openmpi"]["eager_limit"] = STUDY_EAGER_LIMIT
    return model


@pytest.fixture(scope="session")
def config():
    return load_config()


@pytest.fixture(scope="session")
def vocab(config):
    from collat.ingest.read import Vocabulary

    return Vocabulary.from_config(config)


@pytest.fixture(scope="session")
def study_tables(config, vocab):
    """The nine published files ingested and merged exactly as the pipeline does."""
    if not HAVE_STUDY:
        pytest.skip(NO_STUDY)
    from collat.ingest.read import from_published_csv, merge

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


def measure_config(wd: Path, cores: int, cores_per_l3: int, algorithms: dict, osu: str, launcher_options: list,
                   max_size: int, **extra) -> Path:
    """A user's config (written to ``wd``/mine.yaml, its path returned) of a one-node machine nobody
    measured, map-by core, the given algorithms ({operation: {id: name}}), stage measure on with
    ``osu`` and accepted launches in ``accepted.csv``, logs in ``osu_raw`` (OSU run short: the
    timings of an oversubscribed test machine mean nothing); ``extra`` top-level keys beside."""
    cfg = {"machine": {"name": f"{cores} cores", "nodes": 1, "sockets_per_node": 1, "cores_per_socket": cores,
                       "cores_per_l3": cores_per_l3},
           "mappings": ["core"],
           "algorithms": {op: [{"id": i, "name": n} for i, n in entries.items()] for op, entries in algorithms.items()},
           "data": {"raw": {"dir": "osu_raw"}},
           "measure": {"osu": osu, "launches": "accepted.csv", "launcher_options": launcher_options, "bind": False,
                       "iterations": 20, "warmup": 2, "max_size": max_size},
           **extra}
    wd.mkdir(parents=True, exist_ok=True)
    (wd / "mine.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return wd / "mine.yaml"


def cut_config() -> dict:
    """The default config reading the cut of the study data (its checksums) instead of the full files."""
    cfg = load_config()
    sums = dict(line.split()[::-1] for line in (STUDY_CUT / "SHA256SUMS").read_text().splitlines() if line.strip())
    for name, entry in cfg["data"]["published"]["files"].items():
        entry["sha256"] = sums[name]
    return cfg


_STUDY: dict = {}  # the session's study run, started in the background: {"base", "dir": Path, "proc": Popen}


def study_config() -> dict:
    """The default config of the session's study run, with one machine nobody measured (the study's
    on four nodes, model.what_if) so that the end-to-end checks cover that rule too."""
    cfg = load_config()
    cfg["model"]["what_if"] = [{"name": "four-nodes", "nodes": 4}]
    return cfg


def _start_study_run() -> None:
    base = Path(tempfile.mkdtemp(prefix="collat-study-"))
    wd = make_workdir(base / "study", study_config())
    cmd, env = snakemake_call(wd, "--cores", "2")
    with open(base / "snakemake.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    _STUDY.update(base=base, dir=wd, proc=proc)


def pytest_collection_modifyitems(session, config, items):
    """The tests on the session's study run go last, and the run starts in the background as soon
    as they are collected, so that the other tests run meanwhile (it is most of the suite's time;
    issue 16)."""
    study = [item for item in items if "study_run" in getattr(item, "fixturenames", ())]
    if not study or not HAVE_STUDY or config.option.collectonly:
        return
    chosen = set(map(id, study))
    items[:] = [item for item in items if id(item) not in chosen] + study
    _start_study_run()


def pytest_sessionfinish(session, exitstatus):
    """The background study run is stopped (a session cut short) and its directory removed."""
    proc = _STUDY.get("proc")
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if "base" in _STUDY:
        shutil.rmtree(_STUDY["base"], ignore_errors=True)


@pytest.fixture(scope="session")
def study_run():
    """The default pipeline on the full study data, once per session (shared by the end-to-end
    checks): the run started in the background at collection, waited for here."""
    if not HAVE_STUDY:
        pytest.skip(NO_STUDY)
    if "proc" not in _STUDY:  # not collected as a user of the run (requested some other way)
        _start_study_run()
    proc, wd = _STUDY["proc"], _STUDY["dir"]
    try:
        proc.wait(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if proc.returncode != 0:
        raise AssertionError(f"the study run in {wd} failed:\n{(wd.parent / 'snakemake.log').read_text()[-6000:]}")
    return wd


def snakemake_call(workdir: Path, *args, env_extra=None) -> tuple[list[str], dict]:
    """(command, environment) of this clone's Snakemake on ``workdir``, the study data as its mirror."""
    env = {**os.environ, "STUDY_DATA_MIRROR": str(STUDY if HAVE_STUDY else STUDY_CUT), **(env_extra or {})}
    return [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args], env


def said_last(res: subprocess.CompletedProcess) -> str:
    """The last line a user reads of a run that stopped: the last non-blank line of its stderr."""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run_snakemake(workdir: Path, *args, check=True, env_extra=None, timeout=900):
    cmd, env = snakemake_call(workdir, *args, env_extra=env_extra)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{res.stdout[-4000:]}\n{res.stderr[-6000:]}")
    return res
