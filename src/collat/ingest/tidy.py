"""The tidy tables: one declaration of every column's name, dtype, unit and meaning.

Three tables share one vocabulary (sizes in bytes, latencies in microseconds):

* ``pt2pt``      -- osu_latency / osu_bw between two pinned ranks, per channel;
* ``nbft``       -- a flat-tree collective whose receivers all sit on ONE channel;
* ``collective`` -- osu_bcast / osu_reduce under a mapping policy and a forced algorithm.

:func:`conform` casts a frame to its table's schema and rejects anything else;
:func:`write_parquet` validates and writes atomically, with units in the metadata;
:func:`write_part` does the same for one input file's rows (a part), which :func:`read_part` reads.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # pandas dtype
    unit: str
    nullable: bool
    doc: str


_PCT = [
    Column(f"p{q}", "float64", "us", True, f"{q}th percentile of the per-iteration latency (OSU -z)")
    for q in (50, 90, 95, 99)
]
_PROVENANCE = [
    Column("iterations", "Int64", "1", True, "OSU iterations per size"),
    Column("run", "int64", "1", False, "run index within the source file (0-based, in file order)"),
    Column("source", "string", "", False, "source file name (relative to its data directory)"),
    Column("mpi", "string", "", True, "MPI implementation and version (e.g. openmpi-4.1.5): path pattern, manifest, "
           "marker, the log's version line or data.published.mpi; null where nothing names it"),
    Column("line", "int64", "1", False, "line of the source file the row was read from (1-based)"),
    Column("copies", "int64", "1", False, "how many byte-identical rows were collapsed into this one"),
    Column("outlier", "bool", "", False, "flagged by the robust outlier rule (config quality.outliers); never removed"),
]
_STATS = [
    Column("avg", "float64", "us", True, "OSU 'Avg Latency' (collectives: mean over ranks of each rank's mean) or 'Latency'"),
    Column("min", "float64", "us", True, "fastest rank's mean latency (OSU -f)"),
    Column("max", "float64", "us", True, "slowest rank's mean latency (OSU -f); completion-time proxy"),
]

SCHEMAS: dict[str, list[Column]] = {
    "pt2pt": [
        Column("channel", "string", "", False, "channel between the two ranks (config `channels`)"),
        Column("receiver", "Int64", "core", True, "core id of the receiving rank, when known"),
        Column("size", "int64", "B", False, "message size"),
        Column("avg", "float64", "us", True, "one-way latency (osu_latency 'Latency')"),
        *_PCT,
        Column("bandwidth", "float64", "MB/s", True, "osu_bw bandwidth (null for osu_latency)"),
        *_PROVENANCE,
    ],
    "nbft": [
        Column("operation", "string", "", False, "bcast or reduce"),
        Column("channel", "string", "", False, "the one channel every receiver uses"),
        Column("P", "int64", "processes", False, "communicator size (root included)"),
        Column("size", "int64", "B", False, "message size"),
        *_STATS,
        *_PCT,
        *_PROVENANCE,
    ],
    "collective": [
        Column("operation", "string", "", False, "bcast or reduce"),
        Column("algorithm", "int64", "", False, "OpenMPI coll_tuned_<op>_algorithm number (0 = default rules)"),
        Column("algorithm_name", "string", "", False, "name of that algorithm (config `algorithms`)"),
        Column("mapping", "string", "", False, "mpirun --map-by policy: core, socket or node"),
        Column("P", "int64", "processes", False, "communicator size"),
        Column("size", "int64", "B", False, "message size"),
        *_STATS,
        *_PCT,
        *_PROVENANCE,
    ],
}

TABLES = tuple(SCHEMAS)


def columns(table: str) -> list[str]:
    return [c.name for c in SCHEMAS[table]]


def empty(table: str) -> pd.DataFrame:
    return conform(pd.DataFrame({c: [] for c in columns(table)}), table)


def nulls(n: int, dtype: str):
    """``n`` nulls of a column dtype of the schemas, made at once; the numeric ones as read-only
    views of one value (no memory per row: a raw log may hold millions)."""
    if dtype == "float64":
        return np.broadcast_to(np.nan, n)
    if dtype == "Int64":
        return pd.arrays.IntegerArray(np.broadcast_to(np.int64(0), n), np.broadcast_to(True, n))
    if dtype == "string":
        return pd.array(pa.nulls(n, pa.string()), dtype="string") if n else pd.array([], dtype="string")
    return pd.array([pd.NA] * n, dtype=dtype)


def conform(df: pd.DataFrame, table: str) -> pd.DataFrame:
    """Return ``df`` with exactly the table's columns, in order and with their dtypes.

    Missing nullable columns are added as nulls; a missing required column, an
    unknown column, a null in a required column or a negative size/latency raises
    ``ValueError`` naming the column.
    """
    schema = SCHEMAS[table]
    known = {c.name for c in schema}
    unknown = [c for c in df.columns if c not in known]
    if unknown:
        raise ValueError(f"table {table}: unknown columns {unknown}")
    out, absent = {}, {}
    for col in schema:
        if col.name not in df.columns:
            if not col.nullable:
                raise ValueError(f"table {table}: required column {col.name!r} missing")
            if col.dtype not in absent:  # one array of nulls per dtype, shared by the absent columns (read-only)
                absent[col.dtype] = nulls(len(df), col.dtype)
            out[col.name] = absent[col.dtype]
            continue
        s = df[col.name]
        if not col.nullable and s.isna().any():
            raise ValueError(f"table {table}: column {col.name!r} has nulls")
        target = pd.api.types.pandas_dtype(col.dtype)  # "string" must not match pandas' other str dtype
        out[col.name] = (s if str(s.dtype) == col.dtype and s.dtype == target else s.astype(target)).array
    # the arrays as they are, one block each: a copy of a log's millions of rows is not needed
    res = pd.DataFrame(out, copy=False)
    for name in ("size",):
        if (res[name] < 0).any():
            raise ValueError(f"table {table}: negative {name}")
    for name in ("avg", "min", "max", "bandwidth", "p50", "p90", "p95", "p99"):
        if name in res and (res[name] < 0).any():
            raise ValueError(f"table {table}: negative {name}")
    return res


def arrow_schema(table: str) -> pa.Schema:
    fields = []
    for col in SCHEMAS[table]:
        typ = {
            "string": pa.string(),
            "int64": pa.int64(),
            "Int64": pa.int64(),
            "float64": pa.float64(),
            "bool": pa.bool_(),
        }[col.dtype]
        fields.append(pa.field(col.name, typ, nullable=col.nullable, metadata={"unit": col.unit, "doc": col.doc}))
    return pa.schema(fields, metadata={"collat.table": table})


def write_parquet(df: pd.DataFrame, path: str | os.PathLike, table: str) -> None:
    """Validate ``df`` against the table schema and write it atomically, a row group at a time (a
    raw log's millions of rows are never all copied to Arrow at once)."""
    df = conform(df, table)
    schema = arrow_schema(table)

    def write(tmp):
        first = pa.Table.from_pandas(df.iloc[:PART_ROW_GROUP], schema=schema, preserve_index=False)
        with parquet_writer(tmp, first.schema) as writer:
            writer.write_table(first, row_group_size=PART_ROW_GROUP)
            for start in range(PART_ROW_GROUP, len(df), PART_ROW_GROUP):
                writer.write_table(pa.Table.from_pandas(df.iloc[start:start + PART_ROW_GROUP], schema=schema,
                                                        preserve_index=False), row_group_size=PART_ROW_GROUP)

    atomic_write(path, write)


def parquet_writer(path, schema: pa.Schema) -> pq.ParquetWriter:
    """A Parquet writer of a tidy table: dictionary encoding for its string columns only (a value or
    two per file); on its numeric columns, millions of distinct values, it doubled the write's time
    to save 5 % of its size (benchmarks/ingest_large.py)."""
    strings = [f.name for f in schema if pa.types.is_string(f.type)]
    return pq.ParquetWriter(path, schema, use_dictionary=strings)


PART_ROW_GROUP = 1 << 18  # rows per batch of a part (a quarter of pyarrow's row group): the Arrow copy a quarter too
PART_COMPRESSION = "lz4"  # of a part's buffers (LZ4 frames): a tenth of the bytes, for a fraction of the time


def write_part(df: pd.DataFrame, path: str | os.PathLike, table: str) -> None:
    """One input file's rows of a tidy table (a part), validated, written atomically as an Arrow IPC
    stream: the tidy rule reads it back in a fraction of a Parquet file's time (benchmarks/
    ingest_large.py). A column without a value is left out (:func:`read_part` gives it back as
    nulls), strings are dictionary-encoded, a batch of rows at a time (a raw log's millions of rows
    are never all copied to Arrow at once). The schema's metadata keeps pandas' dtypes of every
    column and the table's name."""
    import pyarrow.ipc as ipc

    df = conform(df, table)
    full = arrow_schema(table)
    kept = pa.schema([f for f in full if df[f.name].notna().any()], metadata=full.metadata)
    pandas_meta = pa.Table.from_pandas(df.iloc[:0], schema=full, preserve_index=False).schema.metadata
    stored = pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type)) if pa.types.is_string(f.type) else f
                        for f in kept], metadata={**full.metadata, **pandas_meta})

    def write(tmp):
        options = ipc.IpcWriteOptions(compression=PART_COMPRESSION)
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_stream(sink, stored, options=options) as writer:
            for start in range(0, len(df), PART_ROW_GROUP):
                rows = pa.Table.from_pandas(df.iloc[start:start + PART_ROW_GROUP][kept.names], schema=kept,
                                            preserve_index=False)
                writer.write_table(pa.Table.from_arrays(
                    [_dictionary(c) if pa.types.is_string(c.type) else c for c in rows.columns], schema=stored))

    atomic_write(path, write)


def _dictionary(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A string column dictionary-encoded (int32 indices); one that holds one value in every row (a
    raw log's source) without hashing each row: a comparison is a third of the time."""
    import pyarrow.compute as pc

    if len(column) and not column.null_count and pc.all(pc.equal(column, column[0])).as_py():
        return pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array(np.zeros(len(column), dtype=np.int32)),
                                                                pa.array([column[0].as_py()], pa.string()))])
    return pc.dictionary_encode(column)


def part_schema(path: str | os.PathLike) -> pa.Schema:
    """The columns a part holds (those with a value) and its metadata, from its first message."""
    import pyarrow.ipc as ipc

    with pa.OSFile(str(path), "rb") as source:
        return ipc.open_stream(source).schema


def read_part(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """A part's ``columns`` (every column of its table when None) as an Arrow table, strings
    dictionary-encoded; a column the part left out comes back as nulls. Only those columns are
    read (and decompressed)."""
    import pyarrow.ipc as ipc

    schema = part_schema(path)
    full = arrow_schema(schema.metadata[b"collat.table"].decode())
    columns = full.names if columns is None else columns
    wanted = [i for i, name in enumerate(schema.names) if name in set(columns)]
    with pa.OSFile(str(path), "rb") as source:
        stored = ipc.open_stream(source, options=ipc.IpcReadOptions(included_fields=wanted)).read_all()
    out = []
    for name in columns:
        f = full.field(name)
        if name in stored.column_names:
            out.append(stored[name])
        else:
            kind = pa.dictionary(pa.int32(), f.type) if pa.types.is_string(f.type) else f.type
            out.append(pa.chunked_array([pa.nulls(stored.num_rows, kind)]) if stored.num_rows else
                       pa.chunked_array([], kind))
    return pa.Table.from_arrays(out, names=list(columns))


def read_parquet(path: str | os.PathLike, table: str) -> pd.DataFrame:
    return conform(pd.read_parquet(path), table)


def atomic_write(path, writer) -> None:
    """Call ``writer(tmp_path)`` then rename to ``path``: no half-written outputs."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        writer(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json(obj, path) -> None:
    def default(o):
        if isinstance(o, (np.integer,)):
            return int(o)
        if isinstance(o, (np.floating,)):
            return float(o)
        raise TypeError(type(o))

    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(obj, indent=1, sort_keys=True, default=default)))


def markdown_doc() -> str:
    """The column reference as Markdown (used by config/README.md and tested against it)."""
    lines = []
    for table, cols in SCHEMAS.items():
        lines += [f"### `results/tidy/{table}.parquet`", "", "| column | dtype | unit | meaning |", "|---|---|---|---|"]
        lines += [f"| `{c.name}` | {c.dtype} | {c.unit} | {c.doc} |" for c in cols]
        lines.append("")
    return "\n".join(lines)
