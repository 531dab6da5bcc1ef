"""Config validation against the JSON schema, and the checksummed data fetch."""

import copy
import hashlib

import pytest
from snakemake.utils import validate

from collat.ingest.fetch import FetchError, fetch, sha256

from conftest import REPO, STUDY, STUDY_CUT, load_config, needs_study

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")


def test_default_config_is_valid():
    validate(load_config(), SCHEMA)


@pytest.mark.parametrize("mutate,key", [
    (lambda c: c["machine"].__setitem__("nodes", "two"), "nodes"),
    (lambda c: c.__setitem__("channels", ["cache", "numa"]), "numa"),
    (lambda c: c.__setitem__("mappings", ["core", "hwthread"]), "hwthread"),
    (lambda c: c["machine"].pop("cores_per_socket"), "cores_per_socket"),
    (lambda c: c["data"]["published"]["files"]["bcast_core.csv"].pop("mapping"), "mapping"),
    (lambda c: c["quality"]["outliers"].__setitem__("z", -1), "z"),
    (lambda c: c.__setitem__("colour", "blue"), "colour"),
])
def test_bad_config_names_the_key(mutate, key):
    cfg = copy.deepcopy(load_config())
    mutate(cfg)
    with pytest.raises(Exception) as err:
        validate(cfg, SCHEMA)
    assert key in str(err.value)


@needs_study
def test_published_checksums_match_shared_data():
    sums = dict(line.split()[::-1] for line in (STUDY / "SHA256SUMS").read_text().splitlines() if line.strip())
    files = load_config()["data"]["published"]["files"]
    assert {k: v["sha256"] for k, v in files.items()} == sums
    assert len(files) == 9


def test_fetch_from_mirror(tmp_path):
    dest = tmp_path / "out" / "p2p.csv"
    expected = sha256(STUDY_CUT / "p2p.csv")
    origin = fetch("p2p.csv", dest, expected, url=None, mirror=STUDY_CUT)
    assert origin.endswith("p2p.csv") and sha256(dest) == expected


def test_fetch_mismatch_leaves_nothing(tmp_path):
    dest = tmp_path / "p2p.csv"
    with pytest.raises(FetchError, match="SHA-256 mismatch"):
        fetch("p2p.csv", dest, "0" * 64, mirror=STUDY_CUT)
    assert list(tmp_path.iterdir()) == []


def test_a_copy_edited_after_its_download_is_refused(tmp_path):
    from collat import InputError
    from collat.ingest.fetch import verify

    dest = tmp_path / "p2p.csv"
    expected = sha256(STUDY_CUT / "p2p.csv")
    fetch("p2p.csv", dest, expected, mirror=STUDY_CUT)
    verify(dest, expected, "data.published.files[p2p.csv].sha256")  # untouched: fine
    dest.write_text(dest.read_text().replace("0.1", "0.2", 1))
    before = dest.read_bytes()
    with pytest.raises(InputError) as err:
        verify(dest, expected, "data.published.files[p2p.csv].sha256")
    msg = str(err.value)
    assert msg.startswith(f"{dest}: expected the SHA-256 of data.published.files[p2p.csv].sha256 ({expected[:12]}")
    assert "delete it and rerun" in msg and "\n" not in msg
    assert dest.read_bytes() == before  # nothing touched


def test_fetch_missing_file_in_mirror(tmp_path):
    with pytest.raises(FetchError, match="not found in the data mirror"):
        fetch("nope.csv", tmp_path / "nope.csv", "0" * 64, mirror=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_fetch_download_failure_is_clear(tmp_path, monkeypatch):
    from collat.ingest import fetch as fetch_module

    monkeypatch.setattr(fetch_module.time, "sleep", lambda s: None)  # refused: retried, then reported
    with pytest.raises(FetchError, match="download from .* failed"):
        fetch("p2p.csv", tmp_path / "p2p.csv", "0" * 64, url="http://127.0.0.1:9/none.csv", timeout=5)
    assert list(tmp_path.iterdir()) == []


def test_unresolvable_host_fails_at_once_with_what_to_do(tmp_path, monkeypatch):
    import socket
    import urllib.error

    from collat.ingest import fetch as fetch_module

    calls = []

    def no_dns(url, timeout):
        calls.append(url)
        raise urllib.error.URLError(socket.gaierror(-3, "Temporary failure in name resolution"))

    monkeypatch.setattr(fetch_module.urllib.request, "urlopen", no_dns)
    with pytest.raises(FetchError) as e:
        fetch("p2p.csv", tmp_path / "p2p.csv", "0" * 64, url="https://example.invalid/p2p.csv")
    assert len(calls) == 1  # no retry: the host will not resolve on a second try either
    assert str(e.value) == ("p2p.csv: cannot download, the host example.invalid does not resolve (no network?); "
                            "set STUDY_DATA_MIRROR=<dir holding the nine CSVs> "
                            "(e.g. STUDY_DATA_MIRROR=../shared/data/orfeo-epyc-2024 make run)")
    assert e.value.__cause__ is None and list(tmp_path.iterdir()) == []


def test_transient_failure_is_retried(tmp_path, monkeypatch):
    import io

    from collat.ingest import fetch as fetch_module

    payload = (STUDY_CUT / "p2p.csv").read_bytes()
    calls = []

    def flaky(url, timeout):
        calls.append(url)
        if len(calls) == 1:
            raise TimeoutError("timed out")
        return io.BytesIO(payload)

    monkeypatch.setattr(fetch_module.urllib.request, "urlopen", flaky)
    monkeypatch.setattr(fetch_module.time, "sleep", lambda s: None)
    fetch("p2p.csv", tmp_path / "p2p.csv", sha256(STUDY_CUT / "p2p.csv"), url="https://example.org/p2p.csv")
    assert len(calls) == 2 and (tmp_path / "p2p.csv").read_bytes() == payload
