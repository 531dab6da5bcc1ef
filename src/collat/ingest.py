"""From one input file (a raw OSU log or one of the study's published CSVs) to a tidy frame.

Both paths end in :func:`finalise`, which collapses byte-identical rows, numbers the
runs and conforms the frame to its table (see :mod:`collat.tidy`). Each returns the
frame and a quality record for ``results/tidy/quality.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import InputError
from .osu import BENCHMARK_OPERATION, OsuLog
from .tidy import columns, conform

KEYS = {
    "pt2pt": ["channel", "receiver", "size"],
    "nbft": ["operation", "channel", "P", "size"],
    "collective": ["operation", "algorithm", "mapping", "P", "size"],
}


@dataclass(frozen=True)
class Vocabulary:
    """The names a machine's config allows."""

    channels: tuple[str, ...]
    mappings: tuple[str, ...]
    algorithms: dict[str, dict[int, str]]  # operation -> id -> name

    @classmethod
    def from_config(cls, config: dict) -> "Vocabulary":
        return cls(
            channels=tuple(config["channels"]),
            mappings=tuple(config["mappings"]),
            algorithms={op: {int(a["id"]): a["name"] for a in algs} for op, algs in config["algorithms"].items()},
        )

    def check(self, meta: dict, where: str, line: int | None = None) -> None:
        if "channel" in meta and meta["channel"] not in self.channels:
            raise InputError(where, line, f"a channel among {list(self.channels)}", meta["channel"])
        if "mapping" in meta and meta["mapping"] not in self.mappings:
            raise InputError(where, line, f"a mapping among {list(self.mappings)}", meta["mapping"])
        op = meta.get("operation")
        if op is not None and op not in self.algorithms:
            raise InputError(where, line, f"an operation among {list(self.algorithms)}", op)
        if "algorithm" in meta and meta["algorithm"] not in self.algorithms[op]:
            raise InputError(where, line, f"a {op} algorithm among {sorted(self.algorithms[op])}", meta["algorithm"])


def finalise(df: pd.DataFrame, table: str, source: str, run_given: bool) -> tuple[pd.DataFrame, int]:
    """Collapse exact duplicate rows, number runs in file order, conform to the table.

    Returns the frame and the number of rows collapsed away.
    """
    measured = [c for c in df.columns if c not in ("line",)]
    grouped = df.groupby(measured, sort=False, dropna=False)
    copies = grouped["line"].transform("size")
    first = ~df.duplicated(measured, keep="first")
    out = df[first].copy()
    out["copies"] = copies[first].astype("int64")
    collapsed = int(len(df) - len(out))
    for key in KEYS[table]:
        if key not in out:
            out[key] = pd.NA
    if not run_given:
        out["run"] = out.groupby(KEYS[table], sort=False, dropna=False).cumcount()
    out["source"] = source
    out["outlier"] = False
    out = out.sort_values([*KEYS[table], "run"], kind="stable")
    return conform(out[[c for c in columns(table) if c in out.columns]], table), collapsed


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
    vocab.check(meta, where, line)

    def need(*keys):
        missing = [k for k in keys if k not in meta]
        if missing:
            run = "" if line is None else " run"
            raise InputError(where, line, f"metadata {missing} for a {bench} log{run} (from the path pattern, the "
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
    :func:`collat.metadata.read_manifest_rows` (its per-run rows) of this file (runs numbered as in the file,
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
    keys = [k for k in KEYS[table] if k != "size"]
    value = "avg" if "avg" in df.columns and df["avg"].notna().any() else "bandwidth"
    d = df[df[value] > 0]
    if d.empty or d["run"].nunique() < 2:
        return ""
    g = d.groupby([*keys, "size"], dropna=False)[value]
    ratio = (g.max() / g.min())[g.size() > 1]
    if ratio.empty:
        return ""
    per = ratio.groupby(level=list(range(len(keys))), dropna=False).median()
    out = []
    for idx, r in per[per > factor].items():
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, idx if isinstance(idx, tuple) else (idx,)) if not pd.isna(v))
        out.append(f"{label}: runs differ x{r:.1f} at the same size (pooled placements?)")
    return "; ".join(out)


def from_osu_log(log: OsuLog, meta: dict, vocab: Vocabulary, source: str,
                 pooled_factor: float = np.inf, manifest_runs: dict | None = None,
                 manifest_path: str = "manifest") -> tuple[str, pd.DataFrame, dict]:
    """Tidy rows of one raw OSU log with its metadata (the file's, and per run its marker line's or
    its per-run manifest row's)."""
    per_run = (run_metadata(log, meta, manifest_runs, manifest_path)
               if log.run_markers or manifest_runs or log.run_mpi else None)
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
    df = log.data.copy()
    if table == "pt2pt" and "avg" not in df and "bandwidth" not in df:
        raise InputError(log.path, None, "a latency or bandwidth column")
    if table != "pt2pt" and "avg" not in df:
        raise InputError(log.path, None, "an 'Avg Latency(us)' or 'Latency (us)' column")
    for run, (m, _) in runs.items():
        rows = slice(None) if run is None else (df["run"] == run).to_numpy()
        for k, v in m.items():
            if k in columns(table) and k != "benchmark":
                if k not in df:
                    df[k] = pd.Series(pd.NA, index=df.index, dtype=object)
                df.loc[rows, k] = v
        if table == "collective":
            df.loc[rows, "algorithm_name"] = vocab.algorithms[m["operation"]][m["algorithm"]]
    if table == "pt2pt":
        df = df.drop(columns=[c for c in ("min", "max") if c in df])
    out, collapsed = finalise(df, table, source, run_given=True)
    pooled = pooled_runs(out, table, pooled_factor) if np.isfinite(pooled_factor) else ""
    quality = {
        "source": source, "table": table, "benchmark": log.benchmark or meta.get("benchmark"),
        "osu_version": log.version, "datatype": log.datatype,
        "rows_read": len(log.data), "duplicates_collapsed": collapsed, "rows": len(out),
        "runs": log.n_runs, "skipped_lines": len(log.skipped_lines),
        "skipped_runs": "; ".join(f"run {r['run']} at line {r['line']}: {r['reason']}" for r in log.skipped_runs),
        "marker_runs": len(log.run_markers), "pooled_runs": pooled, "mpi": mpi_names(out),
    }
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
    out, collapsed = finalise(df, table, source, run_given=False)
    quality = {
        "source": source, "table": table, "benchmark": None, "osu_version": None, "datatype": None,
        "rows_read": len(raw), "duplicates_collapsed": collapsed, "rows": len(out),
        "runs": int(out["run"].max()) + 1, "skipped_lines": 0, "skipped_runs": "", "mpi": mpi_names(out),
    }
    return out, quality


# ---------------------------------------------------------------- processed CSVs of one's own

TEXT_KEYS = ("operation", "mapping", "channel", "mpi")


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

    @classmethod
    def from_config(cls, entry: dict, index: int) -> "TableSource":
        return cls(f"data.tables[{index}]", entry["table"], dict(entry["columns"]),
                   {k: {str(t): v for t, v in m.items()} for k, m in entry.get("values", {}).items()},
                   dict(entry.get("metadata", {})))


def from_table_csv(path, source: TableSource, vocab: Vocabulary, name: str) -> tuple[pd.DataFrame, dict]:
    """Read a CSV of processed results (``source`` says how) into the tidy schema; every bad cell is an
    error naming the file, its line and what was expected (the config key that says so)."""
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise InputError(path, 1, "a header line naming the columns", "an empty file") from None
    except pd.errors.ParserError as exc:  # e.g. a row with more cells than the header
        raise InputError(path, None, "one cell per header column in every row", str(exc).strip()) from None
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c for c in source.columns if c not in raw.columns]
    if missing:
        raise InputError(path, 1, f"the column {missing[0]!r} ({source.key}.columns)", ",".join(raw.columns))
    lines = np.arange(2, len(raw) + 2, dtype="int64")
    blank = (raw == "").all(axis=1).to_numpy()
    raw, lines = raw[~blank].reset_index(drop=True), lines[~blank]
    if raw.empty:
        raise InputError(path, 2, "data rows after the header", "end of file")
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
    out, collapsed = finalise(df, source.table, name, run_given=False)
    quality = {
        "source": name, "table": source.table, "benchmark": None, "osu_version": None, "datatype": None,
        "rows_read": len(raw), "duplicates_collapsed": collapsed, "rows": len(out),
        "runs": int(out["run"].max()) + 1, "skipped_lines": 0, "skipped_runs": "", "mpi": mpi_names(out),
    }
    return out, quality


# ---------------------------------------------------------------- whole files and the merge

def ingest_raw_log(path, relpath: str, patterns: list[str], manifest_path, vocab: Vocabulary,
                   on_bad_run: str = "error", markers: list | None = None, machine: dict | None = None,
                   pooled_factor: float = np.inf) -> tuple[str, pd.DataFrame, dict]:
    """Parse one raw OSU log, attach its metadata (path pattern and/or manifest, marker lines per
    run: config ``data.raw.markers``), tidy it."""
    from .markers import compile_rules
    from .metadata import read_manifest_rows, resolve
    from .osu import read_osu

    manifest, runs = read_manifest_rows(manifest_path) if manifest_path else (None, {})
    per_run = runs.get(relpath)
    rules = compile_rules(markers or [])
    meta = resolve(relpath, patterns, manifest, str(path), allow_partial=bool(rules) or bool(per_run))
    log = read_osu(path, on_bad_run=on_bad_run, markers=rules, machine=machine)
    return from_osu_log(log, meta, vocab, relpath, pooled_factor, per_run, str(manifest_path))


def one_mpi(parts: list[tuple[str, pd.DataFrame, dict]], mpi: str | None = None,
            where: str = "data.mpi") -> list[tuple[str, pd.DataFrame, dict]]:
    """The parts of one MPI implementation: with ``mpi`` (config ``data.mpi``) the rows that name it
    or name none; without, every part, provided no two name different implementations (their
    channels and algorithms would be fitted as one machine). Rows that name no implementation are
    kept either way."""
    if mpi is not None:
        kept = []
        for table, df, q in parts:
            if "mpi" in df and df["mpi"].notna().any():
                df = df[df["mpi"].isna() | (df["mpi"] == mpi)]
            kept.append((table, df, {**q, "rows": len(df)}))
        if not any("mpi" in df and (df["mpi"] == mpi).any() for _, df, _ in kept):
            found = sorted({m for _, df, _ in parts if "mpi" in df for m in df["mpi"].dropna().unique()})
            raise InputError(where, None, f"an MPI implementation the logs name ({', '.join(found) or 'none'})", mpi)
        return kept
    first: dict[str, str] = {}  # implementation -> the first source that names it
    for _, df, q in parts:
        if "mpi" in df:
            for name in df["mpi"].dropna().unique():
                first.setdefault(str(name), q["source"])
    if len(first) > 1:
        found = "; ".join(f"{name} ({source})" for name, source in sorted(first.items()))
        raise InputError(where, None, "logs of one MPI implementation, or data.mpi naming the one to read "
                         "(another implementation needs its own config)", found)
    return parts


def merge(parts: list[tuple[str, pd.DataFrame, dict]], outliers: dict,
          mpi: str | None = None) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Concatenate per-file tidy frames into the three tables (of one MPI implementation,
    :func:`one_mpi`), flag outliers, build the quality table."""
    from .quality import flag_outliers, quality_table
    from .tidy import TABLES, empty

    parts = one_mpi(parts, mpi)
    tables = {}
    for table in TABLES:
        frames = [df for t, df, _ in parts if t == table and len(df)]
        df = pd.concat(frames, ignore_index=True) if frames else empty(table)
        df = df.sort_values([*KEYS[table], "source", "run"], kind="stable").reset_index(drop=True)
        df["outlier"] = flag_outliers(df, table, **outliers).to_numpy()
        tables[table] = conform(df, table)
    records = [q for _, _, q in parts]
    return tables, quality_table(records, tables)
