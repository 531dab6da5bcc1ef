"""Metadata, routing of raw logs, the published-CSV adapter and the tidy tables on the study's data."""

import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from collat import InputError
from collat.ingest.read import from_osu_log, from_published_csv, ingest_raw_log
from collat.ingest.metadata import from_path, pattern_regex, read_manifest, resolve
from collat.ingest.osu import parse_osu, read_osu
from collat.ingest.tidy import SCHEMAS, conform, markdown_doc, read_parquet, write_parquet, write_part

from conftest import RAW_SAMPLES, REPO, STUDY, needs_samples

PATTERNS = ["{operation}/{mapping}/alg{algorithm}/np{P}.txt", "pt2pt/{channel}/recv{receiver}.txt"]


def test_path_pattern_metadata():
    assert from_path("bcast/core/alg5/np64.txt", PATTERNS) == {"operation": "bcast", "mapping": "core", "algorithm": 5, "P": 64}
    assert from_path("pt2pt/node/recv17.txt", PATTERNS) == {"channel": "node", "receiver": 17}
    assert from_path("bcast/core/algX/np64.txt", PATTERNS) is None
    assert from_path("thin-osu_latency-core.txt", ["{_site}-{benchmark}-{channel}.txt"]) == {"benchmark": "osu_latency", "channel": "core"}


def test_unknown_pattern_field():
    with pytest.raises(ValueError, match="unknown field"):
        pattern_regex("{operation}/{colour}.txt")


def test_path_not_matching_pattern():
    with pytest.raises(InputError, match="a path matching one of the patterns"):
        resolve("misc/notes.txt", PATTERNS, None, "resources/osu_raw/misc/notes.txt")


def test_manifest_and_contradiction(tmp_path):
    m = tmp_path / "manifest.csv"
    m.write_text("file,mapping,algorithm\nbcast/core/alg5/np64.txt,socket,\nx.txt,node,1\n")
    manifest = read_manifest(m)
    assert manifest["x.txt"] == {"mapping": "node", "algorithm": 1}
    with pytest.raises(InputError, match="metadata that agree: path says mapping='core', manifest says mapping='socket'"):
        resolve("bcast/core/alg5/np64.txt", PATTERNS, manifest, "f")
    m.write_text("file,P\nx.txt,many\n")
    with pytest.raises(InputError, match=r"line 2: expected an integer in column 'P'"):
        read_manifest(m)


@needs_samples
def test_benchmark_must_agree_with_metadata(vocab):
    log = read_osu(RAW_SAMPLES / "amd-openmpi-osu_reduce-np128.txt")
    with pytest.raises(InputError, match="expected a bcast benchmark"):
        from_osu_log(log, {"operation": "bcast", "mapping": "core", "algorithm": 0, "P": 128}, vocab, "x")
    with pytest.raises(InputError, match="a mapping among"):
        from_osu_log(log, {"mapping": "numa", "algorithm": 0, "P": 128}, vocab, "x")
    with pytest.raises(InputError, match=r"metadata \['algorithm'\]"):
        from_osu_log(log, {"mapping": "core", "P": 128}, vocab, "x")


@needs_samples
def test_raw_samples_into_tidy(vocab, tmp_path):
    for ch in ("core", "socket", "node"):
        table, df, q = ingest_raw_log(RAW_SAMPLES / f"thin-osu_latency-{ch}.txt", f"thin-osu_latency-{ch}.txt",
                                      ["thin-{benchmark}-{channel}.txt"], None, vocab)
        assert table == "pt2pt" and len(df) == 230 and q["runs"] == 10 and set(df["channel"]) == {ch}
    table, df, q = ingest_raw_log(RAW_SAMPLES / "amd-openmpi-osu_bcast-np128.txt", "amd-openmpi-osu_bcast-np128.txt",
                                  ["amd-openmpi-osu_{operation}-np{P}.txt"], _amd_manifest(tmp_path), vocab)
    assert table == "collective" and len(df) == 24
    assert df[["operation", "algorithm", "algorithm_name", "mapping", "P"]].drop_duplicates().values.tolist() == [["bcast", 0, "default", "core", 128]]
    assert df.loc[df["size"] == 8, "max"].item() == 17.73


def _amd_manifest(tmp_path):
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("file,mapping,algorithm\namd-openmpi-osu_bcast-np128.txt,core,0\n")
    return manifest


def test_nbft_routing(vocab):
    log = parse_osu("# OSU MPI Broadcast Latency Test v7.3\n# Size  Avg Latency(us)\n1 2.0\n2 2.1\n", "n.txt")
    table, df, _ = from_osu_log(log, {"channel": "node", "P": 9}, vocab, "n.txt")
    assert table == "nbft" and df["operation"].unique().tolist() == ["bcast"]


# ------------------------------------------------------------------ the study's published files

def test_every_row_less_duplicates(study_tables):
    tables, quality = study_tables
    raw_rows = {f.name: sum(1 for line in open(f) if line.strip()) - 1 for f in STUDY.glob("*.csv")}
    q = quality.set_index("source")
    for name, n in raw_rows.items():
        assert q.loc[name, "rows_read"] == n
        assert q.loc[name, "rows"] == n - q.loc[name, "duplicates_collapsed"]
    assert len(tables["pt2pt"]) == 5129
    assert len(tables["nbft"]) == 8043 + 5355
    assert len(tables["collective"]) == sum(q.loc[f, "rows"] for f in q.index if f.startswith(("bcast", "reduce")))
    assert q.loc["bcast_socket.csv", "duplicates_collapsed"] == 4032
    assert q.loc["bcast_core.csv", "duplicates_collapsed"] == 1931


def test_triplicated_rows_collapsed(study_tables):
    tables, _ = study_tables
    c = tables["collective"]
    sock = c[(c.operation == "bcast") & (c.mapping == "socket") & (c.algorithm.isin([0, 1, 2]))]
    assert not sock.duplicated(["algorithm", "P", "size", "avg", "min", "max", "iterations"]).any()
    raw = pd.read_csv(STUDY / "bcast_socket.csv")
    assert sock["copies"].sum() == raw["algorithm"].isin([0, 1, 2]).sum()
    assert (sock["copies"] == 2).sum() == 4032


def test_concrete_values(study_tables):
    tables, _ = study_tables
    p = tables["pt2pt"]
    assert p[(p.channel == "node") & (p["size"] == 1)]["avg"].median() == pytest.approx(1.83, abs=0.005)
    c = tables["collective"]
    row = c[(c.operation == "bcast") & (c.mapping == "core") & (c.algorithm == 0) & (c.P == 206) & (c["size"] == 1)]
    assert row[["avg", "min", "max"]].values.tolist() == [[5.24, 1.07, 12.97]]
    assert row["algorithm_name"].item() == "default"
    assert set(c[c.operation == "reduce"]["algorithm"]) == {0, 1, 2, 4}
    assert set(c[c.operation == "bcast"]["algorithm"]) == {0, 1, 2, 5, 6}
    n = tables["nbft"]
    assert n.groupby(["operation", "channel"])["P"].max().to_dict() == {
        ("bcast", "cache"): 4, ("bcast", "core"): 61, ("bcast", "node"): 257, ("bcast", "socket"): 65,
        ("reduce", "cache"): 4, ("reduce", "core"): 61, ("reduce", "node"): 129, ("reduce", "socket"): 65}
    # bcast_core algorithm 1: dense sweep plus a 10000-iteration sweep, kept apart as runs
    lin = c[(c.operation == "bcast") & (c.mapping == "core") & (c.algorithm == 1) & (c.P == 6) & (c["size"] == 1)]
    assert set(lin["iterations"]) == {1000, 10000} and lin["run"].is_unique


def test_warmup_outliers_flagged_and_share_small(study_tables):
    tables, quality = study_tables
    c = tables["collective"]
    sel = c[(c.operation == "bcast") & (c.mapping == "socket") & (c.algorithm == 2) & (c.P == 254)].set_index("size")
    assert sel.loc[1, "outlier"] and sel.loc[2, "outlier"]
    assert not sel.loc[[4, 8, 16], "outlier"].any()
    # nothing is removed
    assert sel.loc[1, "avg"] == 1313.86
    # clean files: under 1 %; the two noisy map-by socket files (spikes of 10-1000x on the
    # second node, see the note on the issue) under 8 %
    share = quality.set_index("source")["outlier_share"]
    assert (share.drop(["bcast_socket.csv", "reduce_socket.csv"]) < 0.01).all()
    assert share.max() < 0.08


BAD_CSV = {
    "header": ("mapby,size,latency\ncore,1,0.3\n", 1, "the header"),
    "non-numeric": ("mapby,size,latency,iterations,p50,p95,p99,recv\ncore,1,0.3,1000,0.3,0.3,0.3,4\ncore,2,fast,1000,0.3,0.3,0.3,4\n", 3, "non-negative number in column 'latency'"),
    "fractional size": ("mapby,size,latency,iterations,p50,p95,p99,recv\ncore,1.5,0.3,1000,0.3,0.3,0.3,4\n", 2, "integer in column 'size'"),
    "unknown channel": ("mapby,size,latency,iterations,p50,p95,p99,recv\nnuma,1,0.3,1000,0.3,0.3,0.3,4\n", 2, "a channel among"),
    "empty": ("mapby,size,latency,iterations,p50,p95,p99,recv\n", 2, "data rows"),
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_bad_published_csv(tmp_path, vocab, case):
    text, line, words = BAD_CSV[case]
    f = tmp_path / "p2p.csv"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        from_published_csv(f, "pt2pt", {}, vocab, "p2p.csv")
    assert err.value.line == line and words in str(err.value) and str(f) in str(err.value)


def test_unknown_algorithm_in_published_csv(tmp_path, vocab):
    f = tmp_path / "bcast_core.csv"
    f.write_text("algorithm,cores,iterations,size,latency,min,max\n42,2,1000,1,1.0,0.5,1.5\n")
    with pytest.raises(InputError, match="line 2: expected a bcast algorithm among"):
        from_published_csv(f, "collective", {"operation": "bcast", "mapping": "core"}, vocab, "bcast_core.csv")


def test_schema_validation_on_write(tmp_path, study_tables):
    tables, _ = study_tables
    path = tmp_path / "t.parquet"
    write_parquet(tables["pt2pt"], path, "pt2pt")
    back = read_parquet(path, "pt2pt")
    pd.testing.assert_frame_equal(back, tables["pt2pt"])
    import pyarrow.parquet as pq

    assert pq.read_schema(path).field("avg").metadata[b"unit"] == b"us"
    bad = tables["pt2pt"].assign(size=-1)
    with pytest.raises(ValueError, match="negative size"):
        write_parquet(bad, tmp_path / "x.parquet", "pt2pt")
    assert not (tmp_path / "x.parquet").exists()
    with pytest.raises(ValueError, match="unknown columns"):
        conform(tables["pt2pt"].assign(colour=1), "pt2pt")


def test_a_part_reads_back_as_written(tmp_path, study_tables):
    """A part (Arrow IPC stream, strings dictionary-encoded) leaves out the columns without a value
    and gives them back as nulls; its rows read back equal, in any column selection; a frame the
    table refuses writes nothing."""
    from collat.ingest.read import _null_columns, distinct_strings
    from collat.ingest.tidy import part_schema, read_part

    tables, _ = study_tables
    df = tables["nbft"]
    path = tmp_path / "nbft.arrows"
    write_part(df, path, "nbft")
    empty = [c for c in conform(df, "nbft") if df.get(c, pd.Series([None])).isna().all()]
    assert "p90" in empty  # the study's nbft file has no 90th percentile
    assert _null_columns(path) == set(empty) and not set(empty) & set(part_schema(path).names)
    back = read_part(path)
    assert back.schema.field("channel").type == pa.dictionary(pa.int32(), pa.string())
    pd.testing.assert_frame_equal(conform(back.to_pandas(), "nbft"), conform(df, "nbft"))
    two = read_part(path, ["size", "p90"])
    assert two.column_names == ["size", "p90"] and two["p90"].null_count == len(df)
    assert distinct_strings(path, "channel") == sorted(df["channel"].unique())
    assert distinct_strings(path, "mpi") == ["openmpi-4.1.5"]
    write_part(df.assign(mpi=None), tmp_path / "no-mpi.arrows", "nbft")
    assert distinct_strings(tmp_path / "no-mpi.arrows", "mpi") == [] and "mpi" in _null_columns(tmp_path / "no-mpi.arrows")
    with pytest.raises(ValueError, match="negative size"):
        write_part(df.assign(size=-1), tmp_path / "x.arrows", "nbft")
    assert not (tmp_path / "x.arrows").exists()
    write_part(df.iloc[:0], tmp_path / "empty.arrows", "nbft")
    assert read_part(tmp_path / "empty.arrows").num_rows == 0


def test_columns_documented():
    text = (REPO / "config" / "README.md").read_text()
    for table, cols in SCHEMAS.items():
        for c in cols:
            assert f"| `{c.name}` |" in text, f"{table}.{c.name} not documented in config/README.md"
    assert markdown_doc().split("\n")[0] in text


# ---------------------------------------------------------------- processed CSVs (data.tables)

AWK = REPO / "tests" / "fixtures" / "tables" / "bcast_awk.csv"


def awk_source(**changes):
    from collat.ingest.read import TableSource

    entry = {"table": "collective",
             "columns": {"Algorithm": "algorithm", "Allocation": "mapping", "Processes": "P", "MessageSize": "size",
                         "Avg Latency(us)": "avg"},
             "values": {"algorithm": {"def": 0, "ignore": 0, "linear": 1, "basic_linear": 1, "bintree": 5,
                                      "binary_tree": 5}},
             "metadata": {"operation": "bcast"}}
    entry.update(changes)
    return TableSource.from_config(entry, 0)


def vocab():
    from collat.ingest.read import Vocabulary

    return Vocabulary(("core", "socket", "node"), ("core", "socket", "node"),
                      {"bcast": {0: "default", 1: "linear", 5: "binary"}, "reduce": {0: "default", 1: "linear"}})


def test_a_processed_csv_with_its_own_columns_and_names():
    from collat.ingest.read import from_table_csv

    df, quality = from_table_csv(AWK, awk_source(), vocab(), "awk/bcast_awk.csv")
    assert len(df) == 36 and quality["rows"] == 36 and quality["table"] == "collective"
    row = df[(df["algorithm"] == 5) & (df["mapping"] == "socket") & (df["P"] == 4) & (df["size"] == 1024)].iloc[0]
    # bintree socket: 1.3 x 1.6 x (1 + 0.4) x (1 + 1024/4096) = 3.64
    assert row["avg"] == pytest.approx(3.64) and row["algorithm_name"] == "binary" and row["operation"] == "bcast"
    assert set(df["algorithm_name"]) == {"default", "linear", "binary"} and (df["source"] == "awk/bcast_awk.csv").all()


@pytest.mark.parametrize("edit,line,words", [
    (lambda t: t.replace("bintree,core,2,1,", "flat_tree,core,2,1,"), 14,
     "a value of data.tables[0].values.algorithm in column 'Algorithm'"),
    (lambda t: t.replace("Allocation", "Alloc"), 1, "the column 'Allocation' (data.tables[0].columns)"),
    (lambda t: t.replace("linear,core,4,1,1.40", "linear,core,4,1,n/a"), 10, "a non-negative number in column 'Avg Latency(us)'"),
    (lambda t: t.replace("linear,core,4,1,1.40", "linear,core,4.5,1,1.40"), 10, "a non-negative integer in column 'Processes'"),
    (lambda t: t.replace("linear,core,4,1,1.40", "linear,hwthread,4,1,1.40"), 10, "a mapping among"),
    (lambda t: t.replace("linear,core,4,1,1.40", "linear,core,4,1,inf"), 10, "a non-negative number"),
    (lambda t: t.splitlines()[0] + "\n", 2, "data rows after the header"),
    (lambda t: "", 1, "a header line"),
])
def test_a_bad_cell_of_a_processed_csv_names_its_line(tmp_path, edit, line, words):
    from collat.ingest.read import from_table_csv

    text = AWK.read_text()
    assert "linear,core,4,1,1.40" in text
    path = tmp_path / "bad.csv"
    path.write_text(edit(text))
    with pytest.raises(InputError) as err:
        from_table_csv(path, awk_source(), vocab(), "bad.csv")
    msg = str(err.value)
    assert msg.startswith(f"{path}, line {line}: expected ") and words in msg, msg


def test_a_processed_csv_naming_an_algorithm_the_config_lacks():
    from collat.ingest.read import from_table_csv

    source = awk_source(values={"algorithm": {"def": 0, "linear": 1, "bintree": 7}})
    with pytest.raises(InputError, match=r"line 14: expected a bcast algorithm among \[0, 1, 5\], found 7"):
        from_table_csv(AWK, source, vocab(), "x")


# ---------------------------------------------------------------- per-run manifest rows

SLURM = REPO / "tests" / "fixtures" / "osu" / "slurm_markers_latency.out"


def test_manifest_rows_per_run_give_each_placement_its_channel(tmp_path):
    """A SLURM stdout with four runs (the last cut at the time limit) and no marker rule: the
    manifest's `run` column (the file's runs from 0, the cut one included) names each run's channel."""
    from collat.ingest.read import Vocabulary

    (tmp_path / "slurm-4242.out").write_text(SLURM.read_text())
    m = tmp_path / "manifest.csv"
    m.write_text("file,run,benchmark,channel\nslurm-4242.out,,osu_latency,\nslurm-4242.out,0,,core\n"
                 "slurm-4242.out,1,,node\nslurm-4242.out,2,,core\nslurm-4242.out,3,,node\n")
    vocab = Vocabulary(("core", "socket", "node"), ("core",), {"bcast": {0: "default"}})
    table, df, quality = ingest_raw_log(tmp_path / "slurm-4242.out", "slurm-4242.out", [], m, vocab,
                                       on_bad_run="skip")
    assert table == "pt2pt" and quality["runs"] == 3
    by_run = df.groupby("run")["channel"].first()
    assert set(df["channel"]) == {"core", "node"} and len(by_run) == 3
    small = df[df["size"] == 1].set_index("channel")["avg"]
    assert small["core"].max() < small["node"].min()  # the node runs are the slow ones


def test_a_persistent_run_in_a_slurm_log_is_passed_over_and_keeps_its_run_number(tmp_path):
    """osu_bcast at P = 4, then osu_bcast_persistent, then osu_bcast at P = 8 in one job's stdout: with
    on_bad_run: skip the persistent block is reported as the file's run 1, and the manifest's per-run
    rows (numbered as in the file) still give each osu_bcast run its P."""
    from collat.ingest.read import Vocabulary

    bcast = "# OSU MPI Broadcast Latency Test v7.3\n# Size  Avg Latency(us)\n1  {a}\n2  {b}\n"
    persistent = "# OSU MPI Broadcast Persistent Latency Test v7.4\n# Size  Avg Latency(us)\n1  0.5\n2  0.6\n"
    (tmp_path / "slurm-7.out").write_text(bcast.format(a=1.0, b=1.1) + persistent + bcast.format(a=2.0, b=2.1))
    m = tmp_path / "manifest.csv"
    m.write_text("file,run,benchmark,operation,algorithm,mapping,P\n"
                 "slurm-7.out,,osu_bcast,bcast,0,core,\nslurm-7.out,0,,,,,4\nslurm-7.out,2,,,,,8\n")
    vocab = Vocabulary(("core", "socket", "node"), ("core",), {"bcast": {0: "default"}})
    table, df, quality = ingest_raw_log(tmp_path / "slurm-7.out", "slurm-7.out", [], m, vocab, on_bad_run="skip")
    assert table == "collective" and quality["runs"] == 2
    assert df.sort_values(["P", "size"])[["P", "avg"]].values.tolist() == [[4, 1.0], [4, 1.1], [8, 2.0], [8, 2.1]]
    assert "run 1 at line 5: OSU MPI Broadcast Persistent Latency Test v7.4" in quality["skipped_runs"]
    with pytest.raises(InputError, match="persistent and non-blocking variants"):
        ingest_raw_log(tmp_path / "slurm-7.out", "slurm-7.out", [], m, vocab, on_bad_run="error")


@pytest.mark.parametrize("rows,line,words", [
    ("slurm-4242.out,7,,core\n", 3, "a run of"),
    ("slurm-4242.out,0,,core\nslurm-4242.out,0,,node\n", 4, "each run of a file listed once"),
    ("slurm-4242.out,x,,core\n", 3, "a run number"),
    ("slurm-4242.out,1,osu_bw,\n", 3, "a run row that agrees with the file's metadata (benchmark='osu_latency')"),
])
def test_a_bad_per_run_manifest_row_names_its_line(tmp_path, rows, line, words):
    from collat.ingest.read import Vocabulary

    (tmp_path / "slurm-4242.out").write_text(SLURM.read_text())
    m = tmp_path / "manifest.csv"
    m.write_text("file,run,benchmark,channel\nslurm-4242.out,,osu_latency,\n" + rows)
    vocab = Vocabulary(("core", "socket", "node"), ("core",), {"bcast": {0: "default"}})
    with pytest.raises(InputError) as err:
        ingest_raw_log(tmp_path / "slurm-4242.out", "slurm-4242.out", [], m, vocab, on_bad_run="skip")
    assert str(err.value).startswith(f"{m}, line {line}: expected ") and words in str(err.value), str(err.value)


# ------------------------------------------------------------------ which MPI

def _latency_part(source, mpi, avg=1.0):
    from collat.ingest.tidy import conform

    df = pd.DataFrame({"channel": "core", "size": [1, 2], "avg": avg, "run": 0, "source": source, "line": [2, 3],
                       "copies": 1, "outlier": False, "mpi": mpi})
    quality = {"source": source, "table": "pt2pt", "benchmark": "osu_latency", "osu_version": "7.3",
               "datatype": "MPI_CHAR", "rows_read": 2, "duplicates_collapsed": 0, "rows": 2, "runs": 1,
               "skipped_lines": 0, "skipped_runs": "", "mpi": "" if pd.isna(mpi) else mpi}
    return "pt2pt", conform(df, "pt2pt"), quality


def test_mpi_from_pattern_manifest_and_version_line(tmp_path, vocab):
    assert from_path("openmpi-4.1.5/lat-core.txt", ["{mpi}/lat-{channel}.txt"]) == {"mpi": "openmpi-4.1.5",
                                                                                   "channel": "core"}
    log = tmp_path / "lat-core.txt"
    log.write_text("mpirun (Open MPI) 4.1.5\n# OSU MPI Latency Test v7.3\n# Size Latency (us)\n1 0.2\n2 0.3\n")
    table, df, q = ingest_raw_log(log, "lat-core.txt", ["lat-{channel}.txt"], None, vocab)
    assert set(df["mpi"]) == {"openmpi-4.1.5"} and q["mpi"] == "openmpi-4.1.5"
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("file,mpi\nlat-core.txt,mpich-4.0.2\n")
    with pytest.raises(InputError) as err:  # the manifest and the log's own version line disagree
        ingest_raw_log(log, "lat-core.txt", ["lat-{channel}.txt"], manifest, vocab)
    assert str(err.value).startswith(f"{log}, line 1: expected an MPI version line that agrees with the file's "
                                     "metadata (mpi='mpich-4.0.2')")


def test_two_mpi_implementations_are_not_merged():
    from collat.ingest.read import merge

    parts = [_latency_part("a.out", "openmpi-4.1.5"), _latency_part("b.out", "mpich-4.0.2", 9.0),
             _latency_part("c.out", pd.NA, 5.0)]
    with pytest.raises(InputError) as err:
        merge(parts, {"window": 3, "z": 6.0, "min_relative": 1.0})
    assert str(err.value) == ("data.mpi: expected logs of one MPI implementation, or data.mpi naming the one to "
                              "read (another implementation needs its own config), found "
                              "'mpich-4.0.2 (b.out); openmpi-4.1.5 (a.out)'")
    tables, quality = merge(parts, {"window": 3, "z": 6.0, "min_relative": 1.0}, mpi="mpich-4.0.2")
    t = tables["pt2pt"]
    assert sorted(t["source"].unique()) == ["b.out", "c.out"]  # c.out names no implementation: kept
    assert quality.set_index("source").loc["a.out", "rows"] == 0
    with pytest.raises(InputError, match=r"data.mpi: expected an MPI implementation the logs name \(mpich-4.0.2, "
                                         r"openmpi-4.1.5\), found 'mpich-4.1'"):
        merge(parts, {"window": 3, "z": 6.0, "min_relative": 1.0}, mpi="mpich-4.1")
    tables, _ = merge(parts[:1] + parts[2:], {"window": 3, "z": 6.0, "min_relative": 1.0})  # one and unknown
    assert len(tables["pt2pt"]) == 4


def test_merge_files_equals_merge(tmp_path, study_tables):
    """The tidy rule's merge from part files (Arrow, two passes, columns without a value left out)
    gives the tables and quality of the in-memory merge, on the study's parts and a raw log."""
    from collat.ingest.read import merge, merge_files
    from collat.ingest.tidy import write_part

    tables, _ = study_tables
    parts = []
    for name, df in tables.items():  # each tidy table cut into two parts by source
        for k, (_, g) in enumerate(df.groupby(df["source"].str.len() % 2)):
            path = tmp_path / f"{name}{k}.arrows"
            write_part(g, path, name)
            q = {"source": f"{name}{k}", "table": name, "benchmark": None, "osu_version": None, "datatype": None,
                 "rows_read": len(g), "duplicates_collapsed": 0, "rows": len(g), "runs": 1, "skipped_lines": 0,
                 "skipped_runs": "", "mpi": ""}
            parts.append((name, path, q, g))
    outliers = {"window": 3, "z": 6.0, "min_relative": 1.0}
    want, want_q = merge([(t, g, q) for t, _, q, g in parts], outliers)
    outputs = {name: tmp_path / f"out_{name}.parquet" for name in tables}
    got_q = merge_files([(t, str(p), q) for t, p, q, _ in parts], outputs, outliers)
    for name in tables:
        got = read_parquet(outputs[name], name)
        assert got.equals(want[name]), name
        assert int(got["outlier"].sum()) == {"pt2pt": 3, "nbft": 44, "collective": 1107}[name]
    assert got_q.equals(want_q)


def test_a_log_without_the_max_column_stops_the_tidy_stage_naming_the_keys_that_ask_for_it(vocab, tmp_path):
    """osu_bcast without -f prints the Avg column only: when no collective log has max and the
    config's stages read it, one line names a log, the column and the keys; when other logs have it,
    the one without is named in a note (its cells leave the max-target stages) and the run goes on."""
    from collat.ingest.read import check_measured_targets

    def part(name, header, rows):
        log = tmp_path / f"{name}.out"
        log.write_text(f"# OSU MPI Broadcast Latency Test v7.3\n{header}\n" + "".join(f"{r}\n" for r in rows))
        meta = {"benchmark": "osu_bcast", "algorithm": 1, "mapping": "core", "P": 4}
        table, df, quality = from_osu_log(read_osu(log), meta, vocab, f"{name}.out")
        write_part(df, tmp_path / f"{name}.arrows", table)
        return table, str(tmp_path / f"{name}.arrows"), quality

    avg_only = part("bcast", "# Size       Avg Latency(us)", ["1      1.50", "2      1.60"])
    full = part("bcast-f", "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations",
                ["1   1.5   1.0   2.0   1000"])
    asks = {"collective": {"max": ["validation.targets", "selection.targets"]}}
    assert check_measured_targets([avg_only], {"collective": {"avg": ["validation.targets"]}}) == []  # avg is there
    assert check_measured_targets([avg_only], {"nbft": {"max": ["nbft.targets"]}}) == []  # another table's ask
    with pytest.raises(InputError) as err:
        check_measured_targets([avg_only], asks)
    assert str(err.value) == (
        "bcast.out: expected a 'Max Latency(us)' column in its runs, which config validation.targets, "
        "selection.targets ask for (OSU prints it with -f: rerun with -f, or leave max out of those keys), "
        "found 'no max value in 2 rows of collective, nor in any other collective log'")
    assert check_measured_targets([avg_only, full], asks) == [
        "bcast.out: no max column (run without -f?): its collective cells are left out of validation.targets, "
        "selection.targets"]
    # a file passed over (on_bad_run: skip) measures nothing: neither named nor counted
    from collat.ingest.read import skipped_file
    from collat.ingest.tidy import write_part as write

    table, df, quality = skipped_file("np7.txt", {"benchmark": "osu_bcast", "mapping": "core"}, "an empty file")
    write(df, tmp_path / "np7.arrows", table)
    skipped = (table, str(tmp_path / "np7.arrows"), quality)
    assert check_measured_targets([skipped, full], asks) == []
    with pytest.raises(InputError, match="^bcast.out: expected a 'Max Latency"):
        check_measured_targets([skipped, avg_only], asks)


def test_a_channel_the_trees_use_without_a_point_to_point_log_is_one_line(vocab, tmp_path):
    from collat.ingest.read import check_channels_measured

    log = tmp_path / "lat.out"
    log.write_text("# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n1                       0.20\n"
                   "2                       0.21\n")
    table, df, quality = from_osu_log(read_osu(log), {"benchmark": "osu_latency", "channel": "core"}, vocab, "lat.out")
    part = tmp_path / "lat.arrows"
    write_part(df, part, table)
    parts = [(table, str(part), quality)]
    check_channels_measured(parts, {"core": "ranks 0 and 4"})
    with pytest.raises(InputError) as err:
        check_channels_measured(parts, {"core": "ranks 0 and 4", "cache": "ranks 0 and 1 of P = 2 under --map-by core"})
    assert str(err.value).startswith("results/tidy/pt2pt.parquet: expected an osu_latency log of every channel the "
                                     "model's trees use, 'cache' too (ranks 0 and 1 of P = 2 under --map-by core")
    assert str(err.value).endswith("found \"point-to-point logs of ['core']\"")


def test_a_collectives_rows_at_size_0_are_left_out_and_counted(vocab, tmp_path):
    """OSU 5.x starts a sweep at size 0: a collective's row there is left out (its models are in log
    size) and counted in the quality record; an osu_latency row at 0 stays (alpha of the line)."""
    log = tmp_path / "np4.txt"
    log.write_text("# OSU MPI Broadcast Latency Test v5.6.3\n# Size       Avg Latency(us)\n0    0.9\n1    1.5\n"
                   "2    1.6\n")
    meta = {"benchmark": "osu_bcast", "operation": "bcast", "algorithm": 0, "mapping": "core", "P": 4}
    table, df, quality = from_osu_log(read_osu(log), meta, vocab, "np4.txt")
    assert list(df["size"]) == [1, 2] and quality["zero_size_rows"] == 1 and quality["rows_read"] == 3
    lat = tmp_path / "lat.txt"
    lat.write_text("# OSU MPI Latency Test v5.6.3\n# Size          Latency (us)\n0    0.18\n1    0.20\n")
    table, df, quality = from_osu_log(read_osu(lat), {"benchmark": "osu_latency", "channel": "core"}, vocab, "l")
    assert list(df["size"]) == [0, 1] and quality["zero_size_rows"] == 0


def test_a_collective_run_on_more_ranks_than_the_machine_has_cores_is_one_line(vocab, tmp_path):
    """A machine described smaller than the logs ran on (16 ranks, 8 cores): one line naming the log
    under the raw folder, before the model fails on a placement it cannot make."""
    from collat.ingest.read import check_P_fits_machine

    log = tmp_path / "np16.txt"
    log.write_text("# OSU MPI Broadcast Latency Test v7.3\n# Size       Avg Latency(us)\n1    1.5\n2    1.6\n")
    meta = {"benchmark": "osu_bcast", "operation": "bcast", "algorithm": 0, "mapping": "core", "P": 16}
    table, df, quality = from_osu_log(read_osu(log), meta, vocab, "bcast/np16.txt")
    part = tmp_path / "ingest/raw/np16.arrows"
    part.parent.mkdir(parents=True)
    write_part(df, part, table)
    parts = [(table, str(part), quality)]
    check_P_fits_machine(parts, 16, "raw")  # as many ranks as cores: placed
    with pytest.raises(InputError) as err:
        check_P_fits_machine(parts, 8, "raw")
    assert str(err.value).startswith("raw/bcast/np16.txt: expected at most 8 ranks, the cores of config machine")
    assert str(err.value).endswith("found 'P = 16'")


@pytest.mark.parametrize("text,found", [
    ("", "an empty file"),
    ("--------------------------------------------------------------------------\n"
     "mpirun was unable to launch the specified application\n", "------"),
    ("slurmstepd: error: *** JOB 1234 ON node01 CANCELLED AT 2026-01-01T00:00:00 ***\n", "CANCELLED"),
    ("bash: osu_latency: command not found\n", "command not found"),
    ("# OSU MPI Broadcast Persistent Latency Test v7.4\n# Size  Avg Latency(us)\n1  0.5\n", "persistent"),
])
def test_with_skip_a_file_without_a_readable_run_is_passed_over_with_its_reason(tmp_path, text, found):
    """on_bad_run: skip, for a whole file: no rows, its table from the metadata, the reason kept for
    quality.csv; on_bad_run: error stops with the same line."""
    from collat.ingest.read import Vocabulary

    vocab = Vocabulary(("core", "node"), ("core",), {"bcast": {0: "default"}})
    (tmp_path / "lat-core.txt").write_text(text)
    args = (tmp_path / "lat-core.txt", "lat-core.txt", ["lat-{channel}.txt"], None, vocab)
    table, df, quality = ingest_raw_log(*args, on_bad_run="skip")
    assert table == "pt2pt" and len(df) == 0 and quality["rows"] == 0
    assert quality["skipped_file"].startswith(str(tmp_path / "lat-core.txt")) and found in quality["skipped_file"]
    with pytest.raises(InputError) as err:
        ingest_raw_log(*args, on_bad_run="error")
    assert str(err.value).startswith(str(tmp_path / "lat-core.txt"))  # the file and, where it has one, the line
    # a collective log's skipped file goes to the collective table (its metadata say so)
    (tmp_path / "bcast-core-0-8.txt").write_text(text)
    table, _, _ = ingest_raw_log(tmp_path / "bcast-core-0-8.txt", "bcast-core-0-8.txt",
                                 ["{operation}-{mapping}-{algorithm}-{P}.txt"], None, vocab, on_bad_run="skip")
    assert table == "collective"


def test_with_skip_a_file_nothing_describes_is_passed_over_never_labelled(tmp_path):
    """A readable run that no path pattern, manifest or data.raw.metadata describes (a backup copy
    named np8.txt.bak, notes): under skip no rows and the reason; under error the same one line."""
    from collat.ingest.read import Vocabulary

    vocab = Vocabulary(("core", "node"), ("core",), {"bcast": {0: "default"}})
    (tmp_path / "np8.txt.bak").write_text("# OSU MPI Broadcast Latency Test v7.3\n# Size  Avg Latency(us)\n1  1.5\n")
    args = (tmp_path / "np8.txt.bak", "np8.txt.bak", ["np{P}.txt"], None, vocab)
    table, df, quality = ingest_raw_log(*args, on_bad_run="skip")
    assert len(df) == 0 and quality["rows"] == 0 and quality["benchmark"] is None
    want = (f"{tmp_path / 'np8.txt.bak'}: expected a path matching one of the patterns ['np{{P}}.txt'], a manifest "
            "entry or a data.raw.metadata glob, found 'np8.txt.bak'")
    assert quality["skipped_file"] == want
    with pytest.raises(InputError) as err:
        ingest_raw_log(*args, on_bad_run="error")
    assert str(err.value) == want
    # metadata that contradict each other are a labelling mistake: refused under skip too
    (tmp_path / "manifest.csv").write_text("file,benchmark,operation,algorithm,mapping,P\n"
                                           "np8.txt,osu_bcast,bcast,0,core,16\n")
    shutil.copy(tmp_path / "np8.txt.bak", tmp_path / "np8.txt")
    with pytest.raises(InputError, match="metadata that agree: path says P=8, manifest says P=16"):
        ingest_raw_log(tmp_path / "np8.txt", "np8.txt", ["np{P}.txt"], tmp_path / "manifest.csv", vocab,
                       on_bad_run="skip")


TABS = REPO / "tests" / "fixtures" / "tables" / "collectives_tabs.tsv"


@pytest.mark.parametrize("delimiter,convert", [("auto", lambda t: t), ("\t", lambda t: t),
                                               ("auto", lambda t: t.replace("Avg Latency(us)", "Avg_Latency")
                                                .replace("\t", "   ")),
                                               ("whitespace", lambda t: t.replace("Avg Latency(us)", "Avg_Latency")
                                                .replace("\t", " \t "))])
def test_a_table_with_tabs_comments_and_another_collective_keeps_every_repetition(tmp_path, delimiter, convert):
    """Tab- or space-separated, '#' comment rows, a scatter row the row filter passes over: the four
    bcast rows stay four rows (two repetitions of each size: runs 0 and 1), none collapsed, and a
    bad cell still names its line in the file."""
    from collat.ingest.read import from_table_csv

    path = tmp_path / "t.tsv"
    path.write_text(convert(TABS.read_text()))
    latency = "Avg_Latency" if "Avg_Latency" in path.read_text() else "Avg Latency(us)"
    source = awk_source(columns={"Algorithm": "algorithm", "Allocation": "mapping", "Processes": "P",
                                 "MessageSize": "size", latency: "avg"},
                        delimiter=delimiter, where={"collective": ["bcast"]})
    df, quality = from_table_csv(path, source, vocab(), "t.tsv")
    assert len(df) == 4 and quality["duplicates_collapsed"] == 0 and quality["skipped_lines"] == 1
    assert df.sort_values(["size", "run"])[["size", "run", "avg"]].values.tolist() == \
        [[1, 0, 1.5], [1, 1, 1.5], [2, 0, 1.6], [2, 1, 1.7]]
    path.write_text(path.read_text().replace("1.70", "fast"))
    with pytest.raises(InputError, match=r"t.tsv, line 8: expected a non-negative number"):
        from_table_csv(path, source, vocab(), "t.tsv")


def test_constant_metadata_per_glob_and_a_manifest_naming_a_file_the_glob_leaves_out(tmp_path):
    """A read-only directory of logs whose path holds only the channel: the mapping-free point-to-point
    logs under node/ take channel node from data.raw.metadata, the others core; a glob's value that
    contradicts the path pattern is an error naming both."""
    from collat.ingest.metadata import constant_metadata
    from collat.ingest.read import Vocabulary

    entries = [{"glob": "node/*", "values": {"channel": "node"}}, {"glob": "*.txt", "values": {"benchmark": "latency"}}]
    assert constant_metadata("node/run1/a.txt", entries) == {"channel": "node", "benchmark": "osu_latency"}
    assert constant_metadata("core/a.out", entries) is None
    with pytest.raises(InputError, match=r"one channel from data.raw.metadata, found 'node' \(data.raw.metadata\[0\]\) "
                                         r"and 'core' \(data.raw.metadata\[1\]\)"):
        constant_metadata("node/a.txt", [entries[0], {"glob": "*", "values": {"channel": "core"}}])
    vocab = Vocabulary(("core", "node"), ("core",), {"bcast": {0: "default"}})
    log = tmp_path / "node" / "a.txt"
    log.parent.mkdir()
    log.write_text("# OSU MPI Latency Test v7.3\n# Size  Latency (us)\n1  1.8\n2  1.9\n")
    table, df, _ = ingest_raw_log(log, "node/a.txt", [], None, vocab, constant=entries)
    assert table == "pt2pt" and set(df["channel"]) == {"node"}
    with pytest.raises(InputError, match=r"path says channel='node', data.raw.metadata says channel='core'"):
        ingest_raw_log(log, "node/a.txt", ["{channel}/{_name}.txt"], None, vocab,
                       constant=[{"glob": "*", "values": {"channel": "core"}}])


def test_a_column_of_one_value_is_told_without_hashing_its_rows():
    """The tidy merge leaves a column of one value unpermuted: integers whose minimum is their
    maximum, dictionaries that all list the same one value; nulls, NaN-able floats and a dictionary
    listing a second value are permuted (False: unsure)."""
    from collat.ingest.read import _one_value

    one = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["a.txt"]))
    other = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["a.txt", "b.txt"]))
    assert _one_value(pa.chunked_array([one, one]))
    assert not _one_value(pa.chunked_array([one, other]))  # "b.txt" listed, taken by no row: unsure
    assert _one_value(pa.chunked_array([[1, 1], [1]])) and not _one_value(pa.chunked_array([[1, 1], [2]]))
    assert not _one_value(pa.chunked_array([[1, None]])) and not _one_value(pa.chunked_array([[0.5, 0.5]]))
    assert not _one_value(pa.chunked_array([], pa.int64()))


def test_run_strings_repeats_one_value_and_decodes_several():
    """Row i holds values[codes[i]] (None: null), whether every row holds one value (repeated, not
    decoded) or several."""
    from collat.ingest.read import run_strings

    assert run_strings(np.array([0, 0, 0]), ["a.txt"]).tolist() == ["a.txt"] * 3
    assert run_strings(np.array([1, 1]), ["a.txt", None]).isna().all()
    assert run_strings(np.array([0, 1, 0]), ["a.txt", "b.txt"]).tolist() == ["a.txt", "b.txt", "a.txt"]
    assert run_strings(np.array([], dtype=np.int64), ["a.txt"]).empty
    assert str(run_strings(np.array([0]), ["a.txt"]).dtype) == "string"


def test_logs_of_one_benchmark_in_two_datatypes_are_one_line(vocab, tmp_path):
    """Two reduce logs, one of MPI_CHAR and one of MPI_FLOAT (OSU's -T): their runs would pool as
    repeats of one configuration; one line names the second log, both datatypes and the first log.
    A log that states no datatype (OSU 5.x) goes with either."""
    from collat.ingest.read import check_one_datatype

    parts = []
    for name, datatype in (("np4.txt", "MPI_CHAR"), ("np8.txt", None), ("np16.txt", "MPI_FLOAT")):
        log = tmp_path / name
        stated = f"# Datatype: {datatype}.\n" if datatype else ""
        log.write_text(f"# OSU MPI Reduce Latency Test v7.3\n{stated}# Size       Avg Latency(us)\n4    1.5\n8    1.6\n")
        meta = {"benchmark": "osu_reduce", "operation": "reduce", "algorithm": 0, "mapping": "core", "P": 4}
        table, _, quality = from_osu_log(read_osu(log), meta, vocab, f"reduce/{name}")
        parts.append((table, str(log), quality))
    check_one_datatype(parts[:2], "raw")
    with pytest.raises(InputError) as err:
        check_one_datatype(parts, "raw")
    assert str(err.value) == ("raw/reduce/np16.txt: expected the datatype of the other osu_reduce logs (OSU's -T), "
                              "MPI_CHAR as in reduce/np4.txt: runs of two datatypes would be pooled as repeats of "
                              "one configuration, found 'MPI_FLOAT'")


def test_a_compressed_log_matches_the_path_patterns_without_its_suffix():
    from collat.ingest.metadata import from_path

    patterns = ["{operation}/{mapping}/alg{algorithm}/np{P}.txt"]
    want = {"operation": "bcast", "mapping": "core", "algorithm": 3, "P": 16}
    assert from_path("bcast/core/alg3/np16.txt.gz", patterns) == want
    assert from_path("bcast/core/alg3/np16.txt.xz", patterns) == want
    assert from_path("bcast/core/alg3/np16.txt.zip", patterns) is None


def test_two_files_of_one_configuration_far_apart_are_named_with_their_factor():
    """pooled_files: channel core measured by two files, one 3x the other at 1 B and 4x at 2 B and 8 B
    (median over sizes 4.0 > 2); channel node by one file alone; channel socket by two files 1.5x
    apart (under the factor): one line, for core, naming the slow file first."""
    from collat.ingest.read import note_pooled_files, pooled_files

    rows = []
    for size, a, b in ((1, 1.0, 3.0), (2, 1.0, 4.0), (8, 2.0, 8.0)):
        rows += [("core", size, a, "a.txt"), ("core", size, a, "a.txt"), ("core", size, b, "b.txt"),
                 ("socket", size, 2.0, "c.txt"), ("socket", size, 3.0, "d.txt"), ("node", size, 9.0, "e.txt")]
    df = pd.DataFrame(rows, columns=["channel", "size", "avg", "source"]).assign(receiver=np.nan)
    found = pooled_files(df, "pt2pt", 2.0)
    assert found == [("b.txt", "a.txt", "channel=core: b.txt is 4.0 times as slow as a.txt at the same sizes "
                      "(median over them): two placements, or two states of the machine, under one label?")]
    assert pooled_files(df, "pt2pt", 4.0) == []  # the factor is a bound: 4.0 is not above it
    assert pooled_files(df[df["source"] != "b.txt"], "pt2pt", 1.2)[0][:2] == ("d.txt", "c.txt")
    quality = pd.DataFrame({"source": ["a.txt", "b.txt", "c.txt"], "pooled_runs": ["", "run 2: x", ""]})
    noted = note_pooled_files(quality, found)
    assert list(noted["pooled_runs"]) == [found[0][2], "run 2: x; " + found[0][2], ""]


def test_a_log_read_twice_stops_or_is_passed_over_and_recorded(tmp_path):
    """copied_parts: a part whose rows (configuration, size, every measured value) are an earlier
    part's, whatever its runs' numbers and lines, is a copy (a compressed copy of a log beside it);
    a part of the same configuration with other values is not. without_copies stops with one line
    naming both, or, under on_bad_run: skip, drops the copy and gives its quality record."""
    from collat.ingest.read import copied_parts, with_records, without_copies

    rows = pd.DataFrame({"channel": "core", "size": [1, 2, 4] * 2, "avg": [0.2, 0.21, 0.22, 0.25, 0.2, 0.3],
                         "run": [0, 0, 0, 1, 1, 1], "line": range(6), "copies": 1, "outlier": False})
    other = rows.assign(avg=rows["avg"] * 1.01)
    shuffled = rows.iloc[::-1].assign(run=[7, 7, 7, 9, 9, 9], line=range(10, 16))  # the same runs, renumbered
    parts = []
    for name, df in (("a.txt", rows), ("c.txt", other), ("a.txt.gz", shuffled)):
        path = tmp_path / f"{name}.arrows"
        write_part(df.assign(source=name), path, "pt2pt")
        parts.append(("pt2pt", str(path), {"source": name, "table": "pt2pt", "rows": 6, "rows_read": 6, "runs": 2,
                                           "duplicates_collapsed": 0, "skipped_lines": 0, "skipped_runs": "",
                                           "benchmark": "osu_latency", "osu_version": "7.3", "datatype": None}))
    assert copied_parts(parts) == [(2, 0)]
    with pytest.raises(InputError) as err:
        without_copies(parts, "error", "logs/")
    assert str(err.value) == ("logs/a.txt.gz: expected a log whose runs are its own (data.raw.on_bad_run: skip "
                              "passes over a copy), found 'the same runs as a.txt'")
    kept, records = without_copies(parts, "skip", "logs")
    assert [q["source"] for _, _, q in kept] == ["a.txt", "c.txt"]
    assert records == [{**parts[2][2], "rows": 0, "skipped_file": "the same runs as a.txt"}]
    from collat.ingest.quality import quality_table

    quality = quality_table([q for _, _, q in kept], {})
    both = with_records(quality, records)
    assert list(both["source"]) == ["a.txt", "a.txt.gz", "c.txt"] and both["rows"].tolist() == [6, 0, 6]
    assert without_copies(parts[:2], "error", "logs") == (parts[:2], [])


def test_a_log_that_names_core_on_a_socket_of_one_l3_is_read_as_cache_and_says_so(tmp_path):
    """A socket served by one L3: the osu_latency log of two of its cores, named core by its path,
    lands in the cache channel, and its quality record says so (the ingest prints it); the same
    log under a vocabulary that names core keeps its name and says nothing."""
    from collat.config.vocabulary import Vocabulary

    (tmp_path / "lat-core.txt").write_text("# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n"
                                           "1                       0.20\n2                       0.21\n")
    one_l3 = Vocabulary(("cache", "node"), ("core",), {"bcast": {0: "default"}}, (("core", "cache"),))
    table, df, quality = ingest_raw_log(tmp_path / "lat-core.txt", "lat-core.txt", ["lat-{channel}.txt"], None,
                                       one_l3)
    assert table == "pt2pt" and set(df["channel"]) == {"cache"}
    assert quality["read_as"] == "channel core read as cache (one L3 serves each socket of config machine)"
    named = Vocabulary(("core", "node"), ("core",), {"bcast": {0: "default"}})
    _, df, quality = ingest_raw_log(tmp_path / "lat-core.txt", "lat-core.txt", ["lat-{channel}.txt"], None, named)
    assert set(df["channel"]) == {"core"} and "read_as" not in quality
