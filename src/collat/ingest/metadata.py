"""Run metadata of raw OSU logs: from path patterns or a manifest CSV beside the logs.

A pattern such as ``{operation}/{mapping}/alg{algorithm}/np{P}.txt`` is matched
against a log's path relative to the log directory. Fields:

============  =========================================================
benchmark     osu_latency, osu_bw, osu_bcast, osu_reduce (``osu_`` optional)
operation     bcast or reduce
channel       a channel name from config (point-to-point and NBFT logs)
mapping       a mapping name from config (collective logs)
mpi           MPI implementation and version, e.g. openmpi-4.1.5 (any text without a slash)
algorithm     OpenMPI algorithm number (integer)
P             number of processes (integer)
receiver      receiving core of a point-to-point log (integer)
_anything     matched and ignored (names starting with ``_``)
============  =========================================================
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from collat import InputError

INT_FIELDS = ("algorithm", "P", "receiver")
TEXT_FIELDS = ("benchmark", "operation", "channel", "mapping", "mpi")
FIELDS = TEXT_FIELDS + INT_FIELDS


def pattern_regex(pattern: str) -> re.Pattern:
    """Compile a path pattern with ``{field}`` placeholders to an anchored regex."""
    out, pos = [], 0
    seen = set()
    for m in re.finditer(r"\{(\w+)\}", pattern):
        out.append(re.escape(pattern[pos:m.start()]))
        name = m[1]
        if name not in FIELDS and not name.startswith("_"):
            raise ValueError(f"path pattern {pattern!r}: unknown field {{{name}}} (known: {', '.join(FIELDS)}, or _name to ignore)")
        if name in seen:
            out.append(f"(?P={name})")
        else:
            out.append(f"(?P<{name}>\\d+)" if name in INT_FIELDS else f"(?P<{name}>[^/]+?)")
            seen.add(name)
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("^" + "".join(out) + "$")


def normalise_benchmark(value: str) -> str:
    v = value.lower()
    return v if v.startswith("osu_") else f"osu_{v}"


COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")  # a compressed log (collat.ingest.osu.open_log) matches as its text


def from_path(relpath: str, patterns: list[str]) -> dict | None:
    """Metadata from the first pattern that matches ``relpath`` (POSIX, relative), or None; a
    compressed log's name matches without its suffix too (np16.txt.gz as np16.txt)."""
    names = [relpath] + [relpath[:-len(x)] for x in COMPRESSED_SUFFIXES if relpath.endswith(x)]
    for pattern, name in ((p, n) for p in patterns for n in names):
        m = pattern_regex(pattern).match(name)
        if m:
            meta = {k: v for k, v in m.groupdict().items() if not k.startswith("_")}
            for k in INT_FIELDS:
                if k in meta:
                    meta[k] = int(meta[k])
            if "benchmark" in meta:
                meta["benchmark"] = normalise_benchmark(meta["benchmark"])
            return meta
    return None


def read_manifest(path: Path) -> dict[str, dict]:
    """Read ``manifest.csv``: a column ``file`` (path relative to the log directory) plus metadata
    columns; the rows of the whole file (no ``run``, or ``run`` empty). With the per-run rows too:
    :func:`read_manifest_rows`."""
    return read_manifest_rows(path)[0]


def read_manifest_rows(path: Path) -> tuple[dict[str, dict], dict[str, dict[int, tuple[int, dict]]]]:
    """(file -> metadata of the whole file, file -> run -> (manifest line, metadata)): a ``run``
    column numbers the OSU runs of a file from 0 in file order (truncated runs included), for a
    file holding several placements without marker lines."""
    import pandas as pd  # here: the workflow imports this module (markers) when it is parsed

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if "file" not in df.columns:
        raise InputError(path, 1, "a header with a 'file' column", ",".join(df.columns))
    unknown = [c for c in df.columns if c not in ("file", "run") and c not in FIELDS]
    if unknown:
        raise InputError(path, 1, f"metadata columns among run, {', '.join(FIELDS)}", ",".join(unknown))
    out, runs = {}, {}
    for i, row in enumerate(df.to_dict("records"), start=2):
        meta = {}
        run = row.get("run", "").strip()
        if run and not run.isdigit():
            raise InputError(path, i, "a run number (0 for the file's first OSU run) in column 'run'", run)
        for k, v in row.items():
            if k in ("file", "run") or v == "":
                continue
            if k in INT_FIELDS:
                if not v.strip().isdigit():
                    raise InputError(path, i, f"an integer in column {k!r}", v)
                v = int(v)
            elif k == "benchmark":
                v = normalise_benchmark(v)
            meta[k] = v
        if run:
            if int(run) in runs.setdefault(row["file"], {}):
                raise InputError(path, i, "each run of a file listed once", f"{row['file']} run {run}")
            runs[row["file"]][int(run)] = (i, meta)
            continue
        if row["file"] in out:
            raise InputError(path, i, "each file listed once", row["file"])
        out[row["file"]] = meta
    return out, runs


def check_manifest_files(path, root) -> None:
    """Every file a manifest names must be a file under the log directory ``root``: a row that names
    none is a typo or a missing log, never something to ignore silently."""
    import pandas as pd  # here: the workflow imports this module (markers) when it is parsed

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    for i, name in enumerate(df.get("file", []), start=2):
        if not (Path(root) / name).is_file():
            raise InputError(path, i, "a log under data.raw.dir (a path relative to it)", name)


def constant_metadata(relpath: str, entries: list[dict] | None) -> dict | None:
    """The metadata config ``data.raw.metadata`` sets for every log whose path (relative to the log
    directory) matches an entry's glob (fnmatch: ``*`` also crosses folders); None when no entry
    matches. Two entries that disagree on a field are an error naming both."""
    from fnmatch import fnmatchcase

    out, given = None, {}
    for i, entry in enumerate(entries or []):
        if not fnmatchcase(relpath, entry["glob"]):
            continue
        out = out or {}
        for k, v in entry["values"].items():
            v = normalise_benchmark(str(v)) if k == "benchmark" else (int(v) if k in INT_FIELDS else v)
            if k in out and out[k] != v:
                raise InputError(relpath, None, f"one {k} from data.raw.metadata, found {out[k]!r} "
                                 f"(data.raw.metadata[{given[k]}]) and {v!r} (data.raw.metadata[{i}])")
            out[k], given[k] = v, i
    return out


class UnlabelledLog(InputError):
    """A log no path pattern, manifest entry or data.raw.metadata glob describes."""


def resolve(relpath: str, patterns: list[str], manifest: dict[str, dict] | None, where: str,
            allow_partial: bool = False, constant: dict | None = None) -> dict:
    """Combine pattern, manifest and constant (config ``data.raw.metadata``) metadata for one log;
    they must not contradict each other. ``allow_partial``: a log none names may still get its
    metadata from marker lines."""
    from_pattern = from_path(relpath, patterns)
    from_manifest = (manifest or {}).get(relpath)
    if from_pattern is None and from_manifest is None and constant is None and not allow_partial:
        raise UnlabelledLog(where, None, f"a path matching one of the patterns {patterns}, a manifest entry or "
                            "a data.raw.metadata glob", relpath)
    meta, said = dict(from_pattern or {}), {k: "path" for k in (from_pattern or {})}
    for source, values in (("manifest", from_manifest), ("data.raw.metadata", constant)):
        for k, v in (values or {}).items():
            if k in meta and meta[k] != v:
                raise InputError(where, None, f"metadata that agree: {said[k]} says {k}={meta[k]!r}, "
                                 f"{source} says {k}={v!r}")
            meta[k], said[k] = v, source
    return meta


def batch_of(relpath: str, kind: str, batches: int) -> str:
    """The ingest job that reads a raw log (rule ingest_raw): ``{kind}/{k}``, ``kind`` the tidy table
    it feeds ('any' where only its runs say, 'passed_over' where it is not read) and ``k`` its
    path's CRC-32 modulo ``batches`` (config ``data.raw.batches``). The path alone fixes it, so a
    new log joins one job of its table and leaves every other job's parts as they are."""
    return f"{kind}/{zlib.crc32(relpath.encode()) % batches:02d}"
