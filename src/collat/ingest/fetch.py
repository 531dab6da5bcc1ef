"""Obtain a published data file: copy it from a local mirror or download it, then verify its SHA-256.

Nothing is left behind on failure: the file is written to a temporary name in the
destination directory and renamed only after its checksum matched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from collat import UserError

MIRROR_HINT = "set STUDY_DATA_MIRROR=<dir holding the nine CSVs> (e.g. STUDY_DATA_MIRROR=../shared/data/orfeo-epyc-2024 make run)"


class FetchError(UserError, RuntimeError):
    pass


def _unresolvable(exc: OSError) -> bool:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, socket.gaierror)


def _download(url: str, tmp: Path, timeout: float, attempts: int = 3) -> None:
    """Download with up to ``attempts`` tries for transient failures; none more when the host does
    not resolve (no network, or a wrong URL) or the server answered with an HTTP error."""
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:
                shutil.copyfileobj(resp, out)
            return
        except urllib.error.HTTPError:
            raise
        except OSError as exc:
            if _unresolvable(exc) or attempt == attempts:
                raise
            time.sleep(2 ** attempt)


def sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(name: str, dest: str | os.PathLike, expected_sha256: str, url: str | None = None,
          mirror: str | os.PathLike | None = None, timeout: float = 60.0) -> str:
    """Put ``name`` at ``dest``, from ``mirror/name`` when a mirror is given, else from ``url``.

    Returns where it came from. Raises :class:`FetchError` naming the file on a
    missing source, a failed download or a checksum mismatch; ``dest`` then does
    not exist.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part{os.getpid()}")
    try:
        if mirror:
            src = Path(mirror) / name
            if not src.is_file():
                raise FetchError(f"{name}: not found in the data mirror {mirror} (expected the file {src})")
            shutil.copyfile(src, tmp)
            origin = str(src)
        else:
            if not url:
                raise FetchError(f"{name}: no download URL and no mirror; {MIRROR_HINT} or data.published.mirror")
            try:
                _download(url, tmp, timeout)
            except OSError as exc:
                if _unresolvable(exc):
                    host = urllib.parse.urlsplit(url).hostname
                    raise FetchError(f"{name}: cannot download, the host {host} does not resolve (no network?); "
                                     f"{MIRROR_HINT}") from None
                raise FetchError(f"{name}: download from {url} failed ({exc}); {MIRROR_HINT}") from None
            origin = url
        got = sha256(tmp)
        if got != expected_sha256.lower():
            raise FetchError(f"{name}: SHA-256 mismatch for {origin}: expected {expected_sha256}, got {got}")
        os.replace(tmp, dest)
        return origin
    finally:
        if tmp.exists():
            tmp.unlink()


def verify(path: str | os.PathLike, expected_sha256: str, key: str) -> None:
    """Check a fetched copy again before it is read: a copy edited after its download stops the run
    with its path, the config ``key`` of the checksum and what to do, instead of flowing into every
    table."""
    from collat import InputError

    found = sha256(path)
    if found != expected_sha256:
        raise InputError(path, None, f"the SHA-256 of {key} ({expected_sha256[:12]}...): the copy changed after "
                         "its download; delete it and rerun to fetch it again", f"{found[:12]}...")
