"""From one input file (a raw OSU log or one of the study's published CSVs) to a tidy frame.

Both paths end in :func:`finalise`, which collapses byte-identical rows, numbers the
runs and conforms the frame to its table (see :mod:`collat.ingest.tidy`). Each returns the
frame and a quality record for ``results/tidy/quality.csv``.
"""

from __future__ import annotations

from collections import Counter

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from collat import InputError
from collat.ingest.osu import BENCHMARK_OPERATION, OsuLog
from collat.ingest.tidy import SCHEMAS, columns, conform, nulls, parquet_writer
from collat.config.vocabulary import Vocabulary  # noqa: F401  (ingest checks names with it; the workflow builds it)

KEYS = {
    "pt2pt": ["channel", "receiver", "size"],
    "nbft": ["operation", "channel", "P", "size"],
    "collective": ["operation", "algorithm", "mapping", "P", "size"],
}


def finalise(df: pd.DataFrame, table: str, source: str, run_given: bool,
             collapse: bool = True, sort: bool = True) -> tuple[pd.DataFrame, int, int]:
    """Leave out a collective's or NBFT's rows at size 0 (OSU 5.x starts its sweeps there; every
    model of a collective is in log size, and a zero-byte collective moves no data), collapse exact
    duplicate rows (with ``collapse``: the study's published files repeat whole blocks byte for
    byte), number runs in file order, sort by the table's keys and run (with ``sort``; a raw log's
    rows stay in file order: its tidy table sorts every part), conform to the table.

    Returns the frame, the number of rows collapsed away and the number left out at size 0 (the
    quality table's ``zero_size_rows``).
    """
    zero = 0
    if table in ("collective", "nbft") and "size" in df:
        at_zero = (df["size"] == 0).to_numpy()
        zero = int(at_zero.sum())
        if zero:
            df = df[~at_zero]
    if collapse:
        measured = [c for c in df.columns if c not in ("line",)]
        grouped = df.groupby(measured, sort=False, dropna=False)
        copies = grouped["line"].transform("size")
        first = ~df.duplicated(measured, keep="first")
        out = df[first].copy()
        out["copies"] = copies[first].astype("int64")
    else:  # every row of the input stays a row: a repetition is data
        out = df.copy(deep=False)
        out["copies"] = np.broadcast_to(np.int64(1), len(out))  # one value for every row: a read-only view
    collapsed = int(len(df) - len(out))
    dtypes = {c.name: c.dtype for c in SCHEMAS[table]}
    for key in KEYS[table]:
        if key not in out:
            out[key] = nulls(len(out), dtypes[key])
    if not run_given:
        out["run"] = out.groupby(KEYS[table], sort=False, dropna=False).cumcount()
    out["source"] = run_strings(np.zeros(len(out), dtype=np.int64), [source]).set_axis(out.index)  # one value
    out["outlier"] = np.zeros(len(out), dtype=bool)
    if sort:
        out = out.sort_values([*KEYS[table], "run"], kind="stable")
    return conform(out[[c for c in columns(table) if c in out.columns]], table), collapsed, zero


def run_strings(codes: np.ndarray, values: list) -> pd.Series:
    """The string column whose row ``i`` holds ``values[codes[i]]`` (None: null); one value repeated
    where every row holds the same (a log's source: a fraction of a dictionary's decoding)."""
    import pyarrow as pa

    if len(codes) and bool((codes == codes[0]).all()):
        arr = pa.repeat(pa.scalar(values[int(codes[0])], pa.string()), len(codes))
    else:
        arr = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)),
                                             pa.array(values, pa.string())).cast(pa.string())
    return pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([arr])))


def route(log: OsuLog, meta: dict, vocab: Vocabulary, where: str, line: int | None = None) -> tuple[str, dict]:
    """Decide the tidy table of a raw log (or of one of its runs, starting at ``line``) and complete
    its metadata; contradictions are errors."""
    meta = dict(meta)
    bench = log.benchmark
    if "benchmark" in meta:
        if bench is not None and meta["benchmark"] != bench:
            raise InputError(where, 1, f"the benchmark named by the metadata ({meta['benchmark']})", bench)
        bench = meta["benchmark"]
    if bench is None:
        if "operation" not in meta:
            raise InputError(where, 1, "an OSU title line ('# OSU MPI ... Test') or a benchmark/operation in the metadata")
        bench = f"osu_{meta['operation']}"
    if bench not in BENCHMARK_OPERATION:
        raise InputError(where, 1, f"a benchmark among {list(BENCHMARK_OPERATION)}", bench)
    op = BENCHMARK_OPERATION[bench]
    if "operation" in meta and meta["operation"] != op:
        raise InputError(where, 1, f"a {meta['operation']} benchmark (metadata says operation={meta['operation']})", bench)
    if op is not None:
        meta["operation"] = op
    meta = vocab.resolved(meta)  # a channel the config names otherwise (one L3 a socket: core is cache)
    vocab.check(meta, where, line)

    def need(*keys):
        missing = [k for k in keys if k not in meta]
        if missing:
            run = "" if line is None else " run"
            raise InputError(where, line, f"metadata {missing} for an {bench} log{run} (from the path pattern, the "
                             "manifest or a marker line before it: data.raw.markers)")

    if op is None:
        need("channel")
        return "pt2pt", meta
    if "channel" in meta and "mapping" in meta:
        raise InputError(where, line, "either a channel (NBFT log) or a mapping (collective log), not both")
    if "channel" in meta:
        need("P")
        return "nbft", meta
    need("mapping", "P", "algorithm")
    return "collective", meta


def run_metadata(log: OsuLog, meta: dict, manifest_runs: dict | None = None,
                 manifest_path: str = "manifest") -> dict[int, tuple[dict, int]]:
    """Per run: (the file's metadata with its marker's, its manifest row's or its MPI version line's,
    the run's first line). A marker, a per-run manifest row or a version line that contradicts the
    path pattern or the file's manifest row is an error naming its line; ``manifest_runs`` is
    :func:`collat.ingest.metadata.read_manifest_rows` (its per-run rows) of this file (runs numbered as in the file,
    truncated ones included)."""
    first = log.data.groupby("run")["line"].min()
    skipped = {r["run"] for r in log.skipped_runs}
    total = len(first) + len(skipped)
    in_file = [r for r in range(total) if r not in skipped]  # kept run -> the file's run number
    for run, (line, _) in sorted((manifest_runs or {}).items()):
        if run >= total:
            raise InputError(manifest_path, line, f"a run of {log.path} (it holds {total} OSU runs, numbered "
                             "from 0)", run)
    out = {}
    for run, line in first.items():
        merged = dict(meta)
        for where, what, row in ((manifest_path, "a run row", (manifest_runs or {}).get(in_file[int(run)])),
                                 (log.path, "a marker", log.run_markers.get(run)),
                                 (log.path, "an MPI version line", log.run_mpi.get(run))):
            if row is None:
                continue
            at, fields = row
            for k, v in fields.items():
                if k in meta and meta[k] != v:
                    raise InputError(where, at, f"{what} that agrees with the file's metadata ({k}={meta[k]!r})",
                                     f"{k}={v!r}")
                merged[k] = v
        out[int(run)] = (merged, int(line))
    return out


def pooled_runs(df: pd.DataFrame, table: str, factor: float) -> str:
    """The sign of placements pooled under one label: runs with the same metadata whose latencies
    at the same size differ by more than ``factor`` (median over sizes of slowest / fastest run).
    One description per offending group, or ''."""
    keys = [k for k in KEYS[table] if k != "size" and k in df]  # a key the log lacks groups nothing
    value = "avg" if "avg" in df.columns and df["avg"].notna().any() else "bandwidth"
    varying = [k for k in keys if df[k].nunique(dropna=False) > 1]  # a key with one value groups nothing
    v = df[value].to_numpy(dtype=float, na_value=np.nan)
    keep = v > 0  # arrays, not a copy of the frame: a raw log may hold millions of rows
    if not keep.any():
        return ""
    keep = slice(None) if keep.all() else keep  # views, not copies, where every row counts
    run = df["run"].to_numpy()[keep]
    if run.min() == run.max():
        return ""
    v = v[keep]
    # one integer code per (varying keys, size) group; max / min per group with ufunc.at
    code, uniques = np.zeros(len(v), dtype=np.int64), []
    for k in [*varying, "size"]:
        c, u = pd.factorize(df[k].to_numpy()[keep] if k == "size" else df[k][keep].to_numpy(), use_na_sentinel=False)
        code *= len(u)
        code += c
        uniques.append(u)
    total = int(np.prod([len(u) for u in uniques]))
    if total <= 4 * len(code):  # the codes index a small product space as they are
        groups = np.arange(total)
    else:
        groups, code = np.unique(code, return_inverse=True)
    hi, lo = np.full(len(groups), -np.inf), np.full(len(groups), np.inf)
    np.maximum.at(hi, code, v)
    np.minimum.at(lo, code, v)
    several = np.bincount(code, minlength=len(groups)) > 1
    if not several.any():
        return ""
    index = np.array(np.unravel_index(groups, [len(u) for u in uniques])).T  # per group: code of each key
    labels = [tuple(uniques[j][i[j]] for j in range(len(varying))) for i in index[several]]
    ratio = pd.Series(hi[several] / lo[several], index=pd.MultiIndex.from_tuples(labels) if varying else None)
    if varying:
        per = ratio.groupby(level=list(range(len(varying))), dropna=False).median()
    else:
        per = pd.Series([ratio.median()], index=[()])
    constant = {k: df[k].iloc[0] for k in keys if k not in varying}
    out = []
    for idx, r in per[per > factor].items():
        values = {**constant, **dict(zip(varying, idx if isinstance(idx, tuple) else (idx,)))}
        label = ", ".join(f"{k}={values[k]}" for k in keys if not pd.isna(values[k]))
        out.append(f"{label}: runs differ x{r:.1f} at the same size (pooled placements?)")
    return "; ".join(out)


#: the measured columns two logs of one run would share to the last digit
MEASURED = ("avg", "min", "max", "p50", "p90", "p95", "p99", "bandwidth")


def copied_parts(parts: list[tuple[str, str, dict]]) -> list[tuple[int, int]]:
    """(copy, original) indices of the parts (table, path, quality record) whose rows hold what an
    earlier part's do, configuration, size and every measured value, whatever their runs' numbers
    and lines: one log read twice (a compressed copy beside it, a backup under a name the path
    pattern still matches), whose runs would count as repeats of themselves and pull the noise
    floor of repeats towards zero."""
    import hashlib

    from collat.ingest.tidy import part_schema, read_part

    count = [(table, q.get("rows")) for table, _, q in parts]  # a copy has as many rows: read only those
    times = Counter(count)
    alike = {c for c in count if times[c] > 1 or c[1] is None}
    seen, out = {}, []
    for i, (table, path, _) in enumerate(parts):
        if count[i] not in alike:
            continue
        have = set(part_schema(path).names)
        columns = [c for c in [*KEYS[table], *MEASURED] if c in have]
        rows = read_part(path, columns).to_pandas()
        if rows.empty:
            continue
        rows = rows.sort_values(columns, kind="stable", ignore_index=True)
        digest = hashlib.blake2b(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes(),
                                 digest_size=16).digest()
        key = (table, tuple(columns), len(rows), digest)
        if key in seen:
            out.append((i, seen[key]))
        else:
            seen[key] = i
    return out


def without_copies(parts: list[tuple[str, str, dict]], on_bad_run: str, where: str) -> tuple[list, list[dict]]:
    """The ``parts`` less the copies of an earlier one (:func:`copied_parts`), and the quality record
    of each copy passed over (no rows; ``skipped_file`` names the log it copies) under ``on_bad_run:
    skip``; otherwise one line naming the first copy and its original. ``where``: the folder the
    sources are in."""
    pairs = copied_parts(parts)
    if pairs and on_bad_run != "skip":
        copy, original = pairs[0]
        raise InputError(f"{where.rstrip('/')}/{parts[copy][2]['source']}", None,
                         "a log whose runs are its own (data.raw.on_bad_run: skip passes over a copy)",
                         f"the same runs as {parts[original][2]['source']}")
    gone = {c: o for c, o in pairs}
    records = [{**parts[c][2], "rows": 0, "skipped_file": f"the same runs as {parts[o][2]['source']}"}
               for c, o in pairs]
    return [part for i, part in enumerate(parts) if i not in gone], records


def with_records(quality: pd.DataFrame, records: list[dict]) -> pd.DataFrame:
    """A table's quality rows with the records of files passed over (:func:`without_copies`) added,
    in the order of the sources."""
    from collat.ingest.quality import quality_table

    if not records:
        return quality
    return pd.concat([quality, quality_table(records, {})], ignore_index=True).sort_values("source", ignore_index=True)


def pooled_files(df: pd.DataFrame, table: str, factor: float) -> list[tuple[str, str, str]]:
    """The sign of placements, or states of the machine, pooled under one label across files: a
    configuration (the table's keys but size) that several files measure, whose medians at the
    same size lie more than ``factor`` apart (median over the sizes two files or more measure, of the
    slowest file's median over the fastest's). Per offending configuration (in the table's order):
    the slowest file, the fastest, and a line that names both. Runs of one file are
    :func:`pooled_runs`' business."""
    keys = [k for k in KEYS[table] if k != "size" and k in df]
    value = next((c for c in ("avg", "bandwidth") if c in df.columns and df[c].notna().any()), None)
    if value is None or "source" not in df.columns:
        return []
    d = df.loc[df[value].to_numpy(dtype=float, na_value=np.nan) > 0, keys + ["size", "source", value]]
    if d["source"].nunique() < 2:
        return []
    med = d.groupby(keys + ["size", "source"], dropna=False, observed=True, sort=True)[value].median().reset_index()
    at = med.groupby(keys + ["size"], dropna=False, observed=True, sort=False)[value]
    med = med[at.transform("size").to_numpy() > 1]
    if med.empty:
        return []
    at = med.groupby(keys + ["size"], dropna=False, observed=True, sort=False)[value]
    hi, lo = med.loc[at.idxmax()].reset_index(drop=True), med.loc[at.idxmin()].reset_index(drop=True)
    per_size = hi[keys].assign(ratio=hi[value].to_numpy() / lo[value].to_numpy(), slow=hi["source"].to_numpy(),
                               fast=lo["source"].to_numpy())
    out = []
    for label, g in per_size.groupby(keys, dropna=False, observed=True, sort=True):
        r = float(np.median(g["ratio"]))
        if r <= factor:
            continue
        slow, fast = g["slow"].mode().iloc[0], g["fast"].mode().iloc[0]
        values = dict(zip(keys, label if isinstance(label, tuple) else (label,)))
        named = ", ".join(f"{k}={v}" for k, v in values.items() if not pd.isna(v))
        out.append((slow, fast, f"{named}: {slow} is {r:.1f} times as slow as {fast} at the same sizes (median "
                                f"over them): two placements, or two states of the machine, under one label?"))
    return out


def pooled_files_of(path, table: str, factor: float) -> list[tuple[str, str, str]]:
    """:func:`pooled_files` of a tidy table file, read a few columns only."""
    import pyarrow.parquet as pq

    names = set(pq.read_schema(path).names)
    wanted = [c for c in [*KEYS[table], "source", "avg", "bandwidth"] if c in names]
    return pooled_files(pd.read_parquet(path, columns=wanted), table, factor)


def note_pooled_files(quality: pd.DataFrame, pooled: list[tuple[str, str, str]]) -> pd.DataFrame:
    """The quality table with each line of :func:`pooled_files` added to the ``pooled_runs`` of both
    files it names."""
    out = quality.copy()
    for slow, fast, line in pooled:
        at = out["source"].isin([slow, fast])
        text = out.loc[at, "pooled_runs"].fillna("").astype(str)
        out.loc[at, "pooled_runs"] = text.where(text == "", text + "; ") + line
    return out


def from_osu_log(log: OsuLog, meta: dict, vocab: Vocabulary, source: str,
                 pooled_factor: float = np.inf, manifest_runs: dict | None = None,
                 manifest_path: str = "manifest") -> tuple[str, pd.DataFrame, dict]:
    """Tidy rows of one raw OSU log with its metadata (the file's, and per run its marker line's or
    its per-run manifest row's)."""
    per_run = (run_metadata(log, meta, manifest_runs, manifest_path)
               if log.run_markers or manifest_runs or log.run_mpi else None)
    given = {meta.get("channel")} if per_run is None else {m.get("channel") for m, _ in per_run.values()}
    if per_run is None:
        table, meta = route(log, meta, vocab, log.path)
        runs = {None: (meta, None)}
    else:
        routed = {run: route(log, m, vocab, log.path, line) for run, (m, line) in per_run.items()}
        tables = {t for t, _ in routed.values()}
        if len(tables) > 1:
            raise InputError(log.path, None, "runs of one kind (point-to-point, NBFT or collective)",
                             ", ".join(sorted(tables)))
        table = tables.pop()
        runs = {run: (m, per_run[run][1]) for run, (_, m) in routed.items()}
    df = log.data.copy(deep=False)
    if table == "pt2pt" and "avg" not in df and "bandwidth" not in df:
        raise InputError(log.path, None, "a latency or bandwidth column")
    if table != "pt2pt" and "avg" not in df:
        raise InputError(log.path, None, "an 'Avg Latency(us)' or 'Latency (us)' column")
    if table == "collective":
        for m, _ in runs.values():
            m["algorithm_name"] = vocab.algorithms[m["operation"]][m["algorithm"]]
    # each metadata column built at once from its value per run (a log may hold 10^5 runs, 10^7 rows)
    order = list(runs)
    at = (np.zeros(len(df), dtype=np.int64) if order == [None]
          else pd.Index(order).get_indexer(df["run"].to_numpy()))
    dtypes = {c.name: c.dtype for c in SCHEMAS[table]}
    for k in dict.fromkeys(k for m, _ in runs.values() for k in m):
        if k not in dtypes or k == "benchmark":
            continue
        per_run = [m.get(k) for m, _ in runs.values()]
        if dtypes[k] == "string":
            distinct = list(dict.fromkeys(per_run))
            df[k] = run_strings(pd.Index(distinct).get_indexer(per_run)[at], distinct).set_axis(df.index)
        else:
            df[k] = pd.Series(pd.array(per_run, dtype=dtypes[k]).take(at), index=df.index)
    if table == "pt2pt":
        df = df.drop(columns=[c for c in ("min", "max") if c in df])
    # before the columns finalise adds: its arrays and these are never in memory together
    pooled = pooled_runs(df, table, pooled_factor) if np.isfinite(pooled_factor) else ""
    # every row is its own line; the file's order kept (the tidy table sorts its parts)
    out, collapsed, zero = finalise(df, table, source, run_given=True, collapse=False, sort=False)
    quality = {
        "source": source, "table": table, "benchmark": log.benchmark or meta.get("benchmark"),
        "osu_version": log.version, "datatype": log.datatype,
        "rows_read": len(log.data), "duplicates_collapsed": collapsed, "zero_size_rows": zero, "rows": len(out),
        "runs": log.n_runs, "skipped_lines": len(log.skipped_lines),
        "skipped_runs": "; ".join(f"run {r['run']} at line {r['line']}: {r['reason']}" for r in log.skipped_runs),
        "marker_runs": len(log.run_markers), "pooled_runs": pooled, "mpi": mpi_names(out),
    }
    read_as = sorted(f"channel {a} read as {b}" for a, b in vocab.aliases if a in given)
    if read_as:  # said on the screen by the ingest (one L3 a socket: its pairs share it)
        quality["read_as"] = "; ".join(read_as) + " (one L3 serves each socket of config machine)"
    return table, out, quality


def mpi_names(df: pd.DataFrame) -> str:
    """The MPI implementations a part's rows name, joined by ', ' ('' when none)."""
    return ", ".join(sorted(df["mpi"].dropna().unique())) if "mpi" in df else ""


# ---------------------------------------------------------------- published CSVs

#: the study's column layouts -> tidy names
PUBLISHED_LAYOUTS = {
    "pt2pt": {"mapby": "channel", "size": "size", "latency": "avg", "iterations": "iterations",
              "p50": "p50", "p95": "p95", "p99": "p99", "recv": "receiver"},
    "nbft": {"mapby": "channel", "p": "P", "comm": None, "size": "size", "latency": "avg", "min": "min",
             "max": "max", "iterations": "iterations", "p50": "p50", "p95": "p95", "p99": "p99"},
    "collective": {"algorithm": "algorithm", "cores": "P", "iterations": "iterations", "size": "size",
                   "latency": "avg", "min": "min", "max": "max"},
}
_INTEGRAL = {"size", "P", "receiver", "algorithm", "iterations", "comm"}


def _numbers(text: pd.Series, key: str, col: str, path, lines: np.ndarray) -> pd.Series:
    """A CSV column as non-negative finite numbers (integers for the integral keys); the first bad
    cell is an error naming its line."""
    num = pd.to_numeric(text.str.strip(), errors="coerce")
    bad = num.isna() | (num < 0) | ~np.isfinite(num.fillna(0))
    if key in _INTEGRAL:
        bad |= num.notna() & (num != np.floor(num.fillna(0)))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        kind = "a non-negative integer" if key in _INTEGRAL else "a non-negative number"
        raise InputError(path, int(lines[i]), f"{kind} in column {col!r}", text.iloc[i])
    return num.astype("int64") if key in _INTEGRAL else num.astype("float64")


def from_published_csv(path, table: str, meta: dict, vocab: Vocabulary, source: str) -> tuple[pd.DataFrame, dict]:
    """Read one of the study's CSV files (its own column layout) into the tidy schema."""
    layout = PUBLISHED_LAYOUTS[table]
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False)
    if list(raw.columns) != list(layout):
        raise InputError(path, 1, f"the header {','.join(layout)}", ",".join(raw.columns))
    lines = np.arange(2, len(raw) + 2, dtype="int64")
    blank = (raw.fillna("") == "").all(axis=1).to_numpy()
    raw, lines = raw[~blank].reset_index(drop=True).fillna(""), lines[~blank]
    if raw.empty:
        raise InputError(path, 2, "data rows after the header", "end of file")
    df = pd.DataFrame({"line": lines})
    for col, name in layout.items():
        key = name or col
        if col == "mapby":
            df[key] = raw[col].str.strip()
            continue
        df[key] = _numbers(raw[col], key, col, path, lines)
    if table == "nbft":
        wrong = df["comm"] != df["P"] - 1
        if wrong.any():
            i = int(np.flatnonzero(wrong.to_numpy())[0])
            raise InputError(path, int(lines[i]), "comm = p - 1 (receivers of the flat tree)", int(df["comm"].iloc[i]))
        df = df.drop(columns="comm")
    for k, v in meta.items():
        df[k] = v
    if "channel" in df:
        for i, ch in enumerate(df["channel"]):
            if ch not in vocab.channels:
                raise InputError(path, int(lines[i]), f"a channel among {list(vocab.channels)}", ch)
    vocab.check({k: v for k, v in meta.items() if k != "channel"}, str(path))
    if table == "collective":
        names = vocab.algorithms[meta["operation"]]
        unknown = ~df["algorithm"].isin(list(names))
        if unknown.any():
            i = int(np.flatnonzero(unknown.to_numpy())[0])
            raise InputError(path, int(lines[i]), f"a {meta['operation']} algorithm among {sorted(names)}",
                             int(df["algorithm"].iloc[i]))
        df["algorithm_name"] = df["algorithm"].map(names)
    out, collapsed, zero = finalise(df, table, source, run_given=False)
    quality = {
        "source": source, "table": table, "benchmark": None, "osu_version": None, "datatype": None,
        "rows_read": len(raw), "duplicates_collapsed": collapsed, "zero_size_rows": zero, "rows": len(out),
        "runs": int(out["run"].max()) + 1, "skipped_lines": 0, "skipped_runs": "", "mpi": mpi_names(out),
    }
    return out, quality


# ---------------------------------------------------------------- processed CSVs of one's own

TEXT_KEYS = ("operation", "mapping", "channel", "mpi")


DELIMITERS = {",": ",", "\t": "\t", ";": ";", "whitespace": r"\s+"}


def _delimiter(header: str, option: str, path) -> str:
    """The separator of a table's cells: ``option`` (config ``data.tables[i].delimiter``), or with
    ``auto`` the first of a tab, a comma and a semicolon the header line holds, else runs of spaces."""
    if option != "auto":
        return DELIMITERS[option]
    for sep in ("\t", ",", ";"):
        if sep in header:
            return sep
    if len(header.split()) > 1:
        return DELIMITERS["whitespace"]
    raise InputError(path, None, "a header line of several column names (separated by tabs, commas, semicolons or "
                     "spaces)", header.strip())


@dataclass(frozen=True)
class TableSource:
    """Config ``data.tables[i]``: CSV files of processed results (one row per measurement) with the
    file's column names mapped to the tidy keys, text values (algorithm names such as ``binary_tree``)
    mapped to the config's, and metadata every row shares."""

    key: str  # "data.tables[i]", for messages
    table: str
    columns: dict  # CSV column -> tidy key
    values: dict  # tidy key -> {text in the file: value}
    metadata: dict  # tidy key -> value of every row
    delimiter: str = "auto"  # ",", "\t", ";", "whitespace" or auto
    comment: str | None = "#"  # a line starting with it is a comment
    where: dict = field(default_factory=dict)  # column -> the texts a kept row holds there

    @classmethod
    def from_config(cls, entry: dict, index: int) -> "TableSource":
        return cls(f"data.tables[{index}]", entry["table"], dict(entry["columns"]),
                   {k: {str(t): v for t, v in m.items()} for k, m in entry.get("values", {}).items()},
                   dict(entry.get("metadata", {})), entry.get("delimiter", "auto"), entry.get("comment", "#"),
                   {c: [str(v) for v in vs] for c, vs in entry.get("where", {}).items()})


def from_table_csv(path, source: TableSource, vocab: Vocabulary, name: str) -> tuple[pd.DataFrame, dict]:
    """Read a table of processed results (``source`` says how: its columns, values, delimiter,
    comment lines and row filter) into the tidy schema. Every row stays a row (repetitions are
    data); every bad cell is an error naming the file, its line and what was expected (the config
    key that says so)."""
    import io

    with open(path, encoding="utf-8", errors="replace") as fh:
        numbered = [(n, line) for n, line in enumerate(fh, start=1)
                    if line.strip() and not (source.comment and line.lstrip().startswith(source.comment))]
    if not numbered:
        raise InputError(path, 1, "a header line naming the columns", "an empty file")
    sep = _delimiter(numbered[0][1], source.delimiter, path)
    try:
        raw = pd.read_csv(io.StringIO("".join(line for _, line in numbered)), sep=sep, dtype=str,
                          keep_default_na=False, skipinitialspace=True, engine="python" if len(sep) > 1 else "c")
    except pd.errors.ParserError as exc:  # e.g. a row with more cells than the header
        raise InputError(path, None, "one cell per header column in every row", str(exc).strip()) from None
    raw.columns = [str(c).strip() for c in raw.columns]
    for key, wanted in (("columns", source.columns), ("where", source.where)):
        missing = [c for c in wanted if c not in raw.columns]
        if missing:
            raise InputError(path, numbered[0][0], f"the column {missing[0]!r} ({source.key}.{key})",
                             ",".join(raw.columns))
    lines = np.array([n for n, _ in numbered[1:]], dtype="int64")
    keep = np.ones(len(raw), dtype=bool)
    for col, texts in source.where.items():  # rows of what the config does not read: passed over
        keep &= raw[col].str.strip().isin(texts).to_numpy()
    filtered = int((~keep).sum())
    raw, lines = raw[keep].reset_index(drop=True), lines[keep]
    if raw.empty:
        raise InputError(path, numbered[0][0] + 1, f"data rows after the header{' that ' + source.key + '.where keeps' if source.where else ''}",
                         "none")
    df = pd.DataFrame({"line": lines})
    for col, key in source.columns.items():
        text = raw[col].str.strip()
        if key in source.values:
            table = source.values[key]
            unknown = ~text.isin(list(table))
            if unknown.any():
                i = int(np.flatnonzero(unknown.to_numpy())[0])
                raise InputError(path, int(lines[i]), f"a value of {source.key}.values.{key} in column {col!r} "
                                 f"({', '.join(sorted(table))})", text.iloc[i])
            text = text.map(table)
        df[key] = text if key in TEXT_KEYS else _numbers(text.astype(str), key, col, path, lines)
    for key, value in source.metadata.items():
        df[key] = value
    for key in ("channel", "mapping", "operation"):
        if key in df:
            allowed = {"channel": vocab.channels, "mapping": vocab.mappings, "operation": tuple(vocab.algorithms)}[key]
            bad = ~df[key].isin(list(allowed))
            if bad.any():
                i = int(np.flatnonzero(bad.to_numpy())[0])
                raise InputError(path, int(lines[i]), f"a {key} among {list(allowed)}", df[key].iloc[i])
    if source.table == "collective":
        known = {(op, a) for op, ids in vocab.algorithms.items() for a in ids}
        bad = np.array([(op, a) not in known for op, a in zip(df["operation"], df["algorithm"])], bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            op = df["operation"].iloc[i]
            raise InputError(path, int(lines[i]), f"a {op} algorithm among {sorted(vocab.algorithms[op])}",
                             int(df["algorithm"].iloc[i]))
        df["algorithm_name"] = [vocab.algorithms[op][a] for op, a in zip(df["operation"], df["algorithm"])]
    out, collapsed, zero = finalise(df, source.table, name, run_given=False, collapse=False)
    quality = {
        "source": name, "table": source.table, "benchmark": None, "osu_version": None, "datatype": None,
        "rows_read": len(raw), "duplicates_collapsed": collapsed, "zero_size_rows": zero, "rows": len(out),
        "runs": int(out["run"].max()) + 1, "skipped_lines": filtered, "skipped_runs": "", "mpi": mpi_names(out),
    }
    return out, quality


# ---------------------------------------------------------------- whole files and the merge

def ingest_raw_log(path, relpath: str, patterns: list[str], manifest_path, vocab: Vocabulary,
                   on_bad_run: str = "error", markers: list | None = None, machine: dict | None = None,
                   pooled_factor: float = np.inf, carry_over: bool = False,
                   constant: list | None = None) -> tuple[str, pd.DataFrame, dict]:
    """Parse one raw OSU log, attach its metadata (path pattern and/or manifest, marker lines per
    run: config ``data.raw.markers``; ``carry_over``: a marker may label runs after text no rule
    matches, config ``data.raw.marker_carry_over``; ``constant``: config ``data.raw.metadata``, the
    metadata of every log under a glob), tidy it."""
    from collat.ingest.markers import compile_rules
    from collat.ingest.metadata import UnlabelledLog, constant_metadata, read_manifest_rows, resolve
    from collat.ingest.osu import read_osu

    manifest, runs = read_manifest_rows(manifest_path) if manifest_path else (None, {})
    per_run = runs.get(relpath)
    rules = compile_rules(markers or [])
    try:
        meta = resolve(relpath, patterns, manifest, str(path), allow_partial=bool(rules) or bool(per_run),
                       constant=constant_metadata(relpath, constant))
    except UnlabelledLog as err:  # notes, a copy named np4.txt.bak: passed over under skip, never labelled
        if on_bad_run != "skip":
            raise
        return skipped_file(relpath, {}, str(err))
    try:
        hint = meta.get("benchmark") or (f"osu_{meta['operation']}" if "operation" in meta else None)
        log = read_osu(path, on_bad_run=on_bad_run, markers=rules, machine=machine, carry_over=carry_over,
                       benchmark=hint)
    except InputError as err:  # no readable run: an empty file, a launcher's error, a cancelled job
        if on_bad_run != "skip":
            raise
        return skipped_file(relpath, meta, str(err))
    return from_osu_log(log, meta, vocab, relpath, pooled_factor, per_run, str(manifest_path))


def table_of(meta: dict) -> str | None:
    """The tidy table a log's metadata (path pattern, manifest, data.raw.metadata) sends it to, or
    None when the metadata do not say (its runs' benchmark or marker lines will): what the workflow
    feeds each table's rule with before the log is read, and a skipped file's table."""
    bench = meta.get("benchmark") or (f"osu_{meta['operation']}" if "operation" in meta else None)
    if bench not in BENCHMARK_OPERATION:
        return None
    if BENCHMARK_OPERATION[bench] is None:
        return "pt2pt"
    if "channel" in meta:
        return "nbft"
    return "collective" if "mapping" in meta else None


def skipped_file(source: str, meta: dict, reason: str) -> tuple[str, pd.DataFrame, dict]:
    """The part of a log that holds no readable run, under ``on_bad_run: skip``: no rows, and a
    quality record whose ``skipped_file`` says why (the table is the metadata's, else pt2pt)."""
    from collat.ingest.tidy import empty

    bench = meta.get("benchmark") or (f"osu_{meta['operation']}" if "operation" in meta else None)
    table = table_of(meta) or ("pt2pt" if BENCHMARK_OPERATION.get(bench) is None else
                               "nbft" if "channel" in meta else "collective")
    quality = {"source": source, "table": table, "benchmark": bench, "osu_version": None, "datatype": None,
               "rows_read": 0, "duplicates_collapsed": 0, "rows": 0, "runs": 0, "skipped_lines": 0,
               "skipped_runs": "", "marker_runs": 0, "pooled_runs": "", "mpi": "", "skipped_file": reason}
    return table, empty(table), quality


def check_one_mpi(named: list[tuple[str, list[str]]], mpi: str | None = None, where: str = "data.mpi") -> None:
    """``named``: (source, the MPI implementations its rows name) per part. Without ``mpi`` (config
    ``data.mpi``) no two parts may name different implementations (their channels and algorithms
    would be fitted as one machine); with it, some part must name it."""
    if mpi is not None:
        if not any(mpi in names for _, names in named):
            found = sorted({n for _, names in named for n in names})
            raise InputError(where, None, f"an MPI implementation the logs name ({', '.join(found) or 'none'})", mpi)
        return
    first: dict[str, str] = {}  # implementation -> the first source that names it
    for source, names in named:
        for name in names:
            first.setdefault(str(name), source)
    if len(first) > 1:
        found = "; ".join(f"{name} ({source})" for name, source in sorted(first.items()))
        raise InputError(where, None, "logs of one MPI implementation, or data.mpi naming the one to read "
                         "(another implementation needs its own config)", found)


ROW_GROUP = 1 << 20  # rows per row group of a tidy table file (pyarrow's default)


def _of_mpi(piece, mpi: str | None):
    """The rows of an Arrow table that name ``mpi`` or no implementation (all rows when None)."""
    import pyarrow.compute as pc

    if mpi is None or piece.num_rows == 0 or "mpi" not in piece.column_names:  # not read: null everywhere
        return piece
    return piece.filter(pc.or_kleene(pc.is_null(piece["mpi"]), pc.equal(piece["mpi"], mpi)))


def _one_value(column) -> bool:
    """Whether an Arrow column holds one value in every row, no null (a raw log's source, channel,
    copies): from its integers' minimum and maximum, or its dictionaries, without hashing its rows.
    False where unsure."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count or not len(column):
        return False
    if pa.types.is_dictionary(column.type):
        # one value in every dictionary: every row holds it (a dictionary that lists a value no row
        # takes, as after a filter, only costs the permutation)
        values = {v for chunk in column.chunks if len(chunk) for v in chunk.dictionary.to_pylist()}
        return len(values) == 1
    if not (pa.types.is_integer(column.type) or pa.types.is_boolean(column.type)):  # (NaN: not a null)
        return False
    bounds = pc.min_max(column)
    return bounds["min"] == bounds["max"]


def _one_table(read, n: int, table: str, outliers: dict, mpi: str | None, absent=frozenset()):
    """The tidy table from its ``n`` parts, ``read(i, columns)`` giving part i's columns as an Arrow
    table (strings may come dictionary-encoded): the rows of ``mpi`` (and rows naming none) when
    given, sorted by the table's keys, source and run (stable, nulls last), outliers flagged.
    Returns (Arrow table without the columns ``absent``, which hold no value in any part, rows kept
    per part, per-row source and outlier flag as a frame).

    Two passes bound the memory: the sort order and the flags from the columns they need, then
    every column, permuted one at a time (about one copy of the table, not two)."""
    import pyarrow as pa

    from collat.ingest.quality import SERIES, VALUES, _rank_codes, flag_outliers, stable_order
    from collat.ingest.tidy import arrow_schema

    schema = arrow_schema(table)
    order_by = [*KEYS[table], "source", "run"]
    # a column without a value anywhere sorts and groups nothing: left out (and out of the keys)
    order_by = [c for c in order_by if c not in absent]
    needed = [c for c in dict.fromkeys([*order_by, "mpi", *(c for k, a in SERIES[table] for c in (*k, *a)),
                                        *VALUES[table]]) if c not in absent]
    pieces = [_of_mpi(read(i, needed), mpi) for i in range(n)]
    rows = [p.num_rows for p in pieces]
    if not sum(rows):
        return schema.empty_table(), rows, pd.DataFrame({"source": [], "outlier": []})
    merged = pa.concat_tables([p for p in pieces if p.num_rows], promote_options="permissive")
    del pieces
    # one block per column, Arrow's freed; strings as categories, which sort and group by their codes
    frame = merged.to_pandas(self_destruct=True, split_blocks=True, strings_to_categorical=True)
    del merged
    release = pa.default_memory_pool().release_unused  # the pool keeps freed memory from the OS otherwise
    release()
    ranks = {c: _rank_codes(frame[c]) for c in order_by}
    order = stable_order([ranks[c] for c in order_by])  # = sort_values(order_by, kind="stable")
    flags = flag_outliers(frame, table, **outliers, ranks=ranks).to_numpy()  # the rows' order does not change them
    del ranks
    source = frame["source"].cat  # categorical when read so
    counts = pd.DataFrame({"source": np.asarray(source.categories, dtype=object),  # flags per source
                           "outlier": np.bincount(source.codes, weights=flags, minlength=len(source.categories))
                           .astype(np.int64)})
    flags = flags[order]
    del frame, source
    release()
    present = [c for c in schema.names if c not in absent]
    kept = [p for p in (_of_mpi(read(i, present), mpi) for i in range(n)) if p.num_rows]
    merged = pa.concat_tables(kept, promote_options="permissive")
    kept.clear()
    arrays, names = list(merged.columns), merged.column_names
    del merged
    for i in range(len(arrays)):  # each assignment frees the unsorted column
        if names[i] == "outlier":
            arrays[i] = pa.array(flags)
        elif not _one_value(arrays[i]):  # a column of one value is its own permutation
            arrays[i] = arrays[i].take(order)
        release()
    merged = pa.Table.from_arrays(arrays, names=names)
    return merged, rows, counts


def _parts_by_table(parts: list) -> dict[str, list[int]]:
    from collat.ingest.tidy import TABLES

    return {table: [i for i, part in enumerate(parts) if part[0] == table] for table in TABLES}


def _quality(parts: list, kept_rows: dict, counts: dict) -> pd.DataFrame:
    """The quality table of the merged parts (``counts``: per table, each row's source and flag)."""
    from collat.ingest.quality import quality_table

    records = [dict(q) for _, _, q in parts]
    for i, n in kept_rows.items():
        records[i]["rows"] = n
    return quality_table(records, {name: c for name, c in counts.items() if len(c)})


def merge(parts: list[tuple[str, pd.DataFrame, dict]], outliers: dict,
          mpi: str | None = None) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Concatenate per-file tidy frames into the three tables (of one MPI implementation,
    :func:`check_one_mpi`), flag outliers, build the quality table. :func:`merge_files` does the
    same from part files to table files."""
    import pyarrow as pa

    from collat.ingest.tidy import arrow_schema, conform

    check_one_mpi([(q["source"], sorted(df["mpi"].dropna().unique()) if "mpi" in df else [])
                   for _, df, q in parts], mpi)
    tables, kept_rows, counts = {}, {}, {}
    for table, members in _parts_by_table(parts).items():
        pieces = [pa.Table.from_pandas(conform(parts[i][1], table), schema=arrow_schema(table), preserve_index=False)
                  for i in members]
        merged, rows, counts[table] = _one_table(lambda i, cols: pieces[i].select(cols), len(pieces), table,
                                                 outliers, mpi)
        tables[table] = conform(merged.to_pandas(), table)
        kept_rows.update(zip(members, rows))
    return tables, _quality(parts, kept_rows, counts)


def distinct_strings(path, column: str) -> list[str]:
    """The distinct values of a string column of a part file, sorted, nulls left out: read as a
    dictionary, so that a column of millions of rows holding one value is never millions of strings."""
    import pyarrow.compute as pc

    from collat.ingest.tidy import part_schema, read_part

    if column not in part_schema(path).names:  # no value in it
        return []
    return sorted(pc.unique(read_part(path, [column])[column]).drop_null().to_pylist())


def _null_columns(path) -> set[str]:
    """The columns without a value in a part file: those it leaves out (read from its schema, not
    its data)."""
    from collat.ingest.tidy import arrow_schema, part_schema

    schema = part_schema(path)
    return set(arrow_schema(schema.metadata[b"collat.table"].decode()).names) - set(schema.names)


TARGET_COLUMNS = {"avg": "Avg Latency(us)", "max": "Max Latency(us)"}  # OSU's header names of the targets


def check_measured_targets(parts: list[tuple[str, str, dict]], asks: dict[str, dict[str, list[str]]]
                           ) -> list[str]:
    """Each table measures every target the config asks of it (``asks``:
    :func:`collat.config.settings.measured_targets`) in some part; else one line naming a part's file, the
    column and the config keys: OSU prints the max column with ``-f`` only, and logs without it would
    leave the max-target stages to fail later on an empty fit, far from the cause. Returns a line per
    part that lacks a target its table's other parts measure (those stages then use the cells that
    have it): for the log."""
    lacking: dict[tuple[str, str], list[dict]] = {}
    counts: dict[str, int] = {}
    for table, path, quality in parts:
        if quality.get("skipped_file"):  # passed over (on_bad_run: skip): it measures nothing
            continue
        counts[table] = counts.get(table, 0) + 1
        null = _null_columns(path)
        for target in asks.get(table, {}):
            if target in null:
                lacking.setdefault((table, target), []).append(quality)
    notes = []
    for (table, target), qualities in lacking.items():
        keys = asks[table][target]
        if len(qualities) == counts[table]:
            quality = qualities[0]
            raise InputError(quality["source"], None,
                             f"a '{TARGET_COLUMNS.get(target, target)}' column in its runs, which config "
                             f"{', '.join(keys)} ask{'s' if len(keys) == 1 else ''} for (OSU prints it with -f: "
                             f"rerun with -f, or leave {target} out of {'that key' if len(keys) == 1 else 'those keys'})",
                             f"no {target} value in {quality.get('rows', 'its')} rows of {table}, nor in any other "
                             f"{table} log")
        notes += [f"{q['source']}: no {target} column (run without -f?): its {table} cells are left out of "
                  f"{', '.join(keys)}" for q in qualities]
    return notes


# the tidy table each stage cannot run without (the nbft stage assumes lines where nothing was measured)
STAGE_NEEDS = {"model": "collective", "regression": "collective", "evaluate": "collective", "figures": "collective",
               "selection": "collective", "pt2pt": "pt2pt", "partitioned": "pt2pt"}
TABLE_BENCHMARKS = {"pt2pt": "osu_latency", "nbft": "flat-tree osu_bcast/osu_reduce", "collective": "osu_bcast/osu_reduce"}


def check_stages_have_data(parts: list[tuple[str, str, dict]], stages: list[str], where: str) -> None:
    """Every stage of ``stages`` has rows of the table it needs among the ingested ``parts`` (table,
    path, quality record); else one line naming the stages that lack them and the stages that can run."""
    rows = {}
    for table, _, quality in parts:
        rows[table] = rows.get(table, 0) + int(quality.get("rows", 0) or 0)
    lacking = {s: STAGE_NEEDS[s] for s in stages if s in STAGE_NEEDS and not rows.get(STAGE_NEEDS[s])}
    if lacking:
        tables = sorted(set(lacking.values()))
        can = [s for s in stages if s not in lacking]
        raise InputError(where, None, f"{' and '.join(TABLE_BENCHMARKS[t] for t in tables)} logs for the stages "
                         f"{', '.join(lacking)} (or leave them out: stages: [{', '.join(can)}])",
                         f"no {' or '.join(tables)} rows in {len(parts)} input file(s)")


def check_channels_measured(parts: list[tuple[str, str, dict]], needed: dict[str, str]) -> None:
    """The point-to-point parts measure every channel in ``needed`` (channel -> a pair of ranks that
    talks over it: :func:`collat.config.settings.needed_channels`); else one line naming the channel, the
    pair and the config keys, before the model stage fails on a tree it cannot price."""
    have = set()
    for table, path, _ in parts:
        if table == "pt2pt":
            have |= set(distinct_strings(path, "channel"))
    missing = [c for c in needed if c not in have]
    if missing:
        c = missing[0]
        raise InputError("results/tidy/pt2pt.parquet", None,
                         f"an osu_latency log of every channel the model's trees use, {c!r} too ({needed[c]} talk "
                         f"over it: config machine, mappings, model.unpinned_channel); add its log (data.raw "
                         f"patterns or manifest), or leave model out of config stages",
                         f"point-to-point logs of {sorted(have)}")


def check_P_fits_machine(parts: list[tuple[str, str, dict]], cores: int, where: str) -> None:
    """Every collective run of the ``parts`` (table, path, quality record) has at most ``cores``
    ranks, the machine's (config machine); else one line naming the first log that has more, before
    the model stage fails on a placement it cannot make. ``where``: the folder the sources are in."""
    import pyarrow.compute as pc

    from collat.ingest.tidy import read_part

    for table, path, quality in parts:
        if table != "collective" or not int(quality.get("rows", 0) or 0):
            continue
        largest = pc.max(read_part(path, ["P"])["P"]).as_py()
        if largest is not None and largest > cores:
            source = quality.get("source")  # a raw log's path under the raw folder; else the part's own name
            named = f"{where.rstrip('/')}/{source}" if source and "ingest/raw/" in str(path) else (source or path)
            raise InputError(named, None,
                             f"at most {cores} ranks, the cores of config machine (nodes x sockets_per_node x "
                             "cores_per_socket): a run on more cores than the machine has cannot be placed; "
                             "describe the machine the logs ran on", f"P = {largest}")


def check_one_datatype(parts: list[tuple[str, str, dict]], where: str) -> None:
    """The logs of one benchmark in the ``parts`` (table, path, quality record) state one datatype
    (OSU's -T; a log that states none counts with any); else one line naming a log of each, before
    their runs are pooled as repeats of one configuration (a reduce adds other elements, and
    OpenMPI splits a message by elements). ``where``: the folder the sources are in."""
    first: dict[tuple, str] = {}  # (benchmark, datatype) -> the first log that states it
    for _, path, quality in parts:
        if quality.get("datatype"):
            first.setdefault((quality.get("benchmark"), quality["datatype"]), quality.get("source") or path)
    for benchmark in dict.fromkeys(b for b, _ in first):
        found = [(d, source) for (b, d), source in first.items() if b == benchmark]
        if len(found) > 1:
            (d1, s1), (d2, s2) = found[:2]
            raise InputError(f"{where.rstrip('/')}/{s2}", None,
                             f"the datatype of the other {benchmark} logs (OSU's -T), {d1} as in {s1}: runs of "
                             "two datatypes would be pooled as repeats of one configuration", d2)


def merge_files(parts: list[tuple[str, str, dict]], outputs: dict[str, str], outliers: dict,
                mpi: str | None = None, check_mpi: bool = True) -> pd.DataFrame:
    """:func:`merge` from part files (table, path, quality record; :func:`collat.ingest.tidy.write_part`)
    to the tidy table files ``outputs`` (table -> path), with the memory of about one copy of the
    largest table: the parts stay Arrow tables and only the columns the outlier rule reads become
    pandas. Returns the quality
    table. (What the stages need of the parts is checked before: :func:`check_measured_targets`,
    :func:`check_channels_measured`.)"""
    import pyarrow as pa

    from collat.ingest.tidy import arrow_schema, atomic_write, empty, part_schema, read_part, write_parquet

    if check_mpi:  # else the caller checks across every table's parts (rule tidy)
        check_one_mpi([(q["source"], distinct_strings(path, "mpi")) for _, path, q in parts], mpi)

    kept_rows, counts = {}, {}
    for table, members in _parts_by_table(parts).items():
        if table not in outputs:
            continue
        paths = [parts[i][1] for i in members]

        absent = set.intersection(*(_null_columns(p) for p in paths)) if paths else set()
        merged, rows, counts[table] = _one_table(lambda i, cols: read_part(paths[i], cols), len(paths), table,
                                                 outliers, mpi, absent)
        kept_rows.update(zip(members, rows))
        if merged.num_rows == 0:
            write_parquet(empty(table), outputs[table], table)
            continue
        # the pandas metadata of a part, so that pandas reads the dtypes back (Int64, string); strings
        # decoded and the columns without a value filled a slice at a time
        schema = arrow_schema(table)
        schema = schema.with_metadata({**schema.metadata, b"pandas": part_schema(paths[0]).metadata[b"pandas"]})

        def write(tmp, t=merged, schema=schema):
            with parquet_writer(tmp, schema) as writer:
                for start in range(0, t.num_rows, ROW_GROUP):
                    part = t.slice(start, ROW_GROUP)
                    columns = [part[f.name] if f.name in part.column_names else pa.nulls(part.num_rows, f.type)
                               for f in schema]
                    writer.write_table(pa.Table.from_arrays(columns, names=schema.names).cast(schema),
                                       row_group_size=ROW_GROUP)

        atomic_write(outputs[table], write)
        del merged
    return _quality(parts, kept_rows, counts)
