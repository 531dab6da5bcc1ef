"""The raw OSU parser: real samples, every dialect, and bad input."""

import pytest

from collat import InputError
from collat.ingest.osu import parse_osu, read_osu

from conftest import FIXTURES, RAW_SAMPLES, needs_samples


@needs_samples
@pytest.mark.parametrize("channel", ["core", "socket", "node"])
def test_thin_latency_samples_have_ten_runs(channel):
    log = read_osu(RAW_SAMPLES / f"thin-osu_latency-{channel}.txt")
    assert log.benchmark == "osu_latency" and log.version == "7.3" and log.datatype == "MPI_CHAR"
    assert log.n_runs == 10
    assert len(log.data) == 230
    assert set(log.data.groupby("run").size()) == {23}
    assert list(log.data.columns) == ["line", "size", "avg", "run"]
    first = log.data[log.data.run == 0]
    assert first["size"].tolist() == [2**k for k in range(23)]


@needs_samples
def test_thin_values_read_exactly():
    log = read_osu(RAW_SAMPLES / "thin-osu_latency-node.txt")
    row = log.data.iloc[0]
    assert (row["line"], row["size"], row["avg"]) == (4, 1, 1.01)
    last = log.data.iloc[-1]
    assert (last["run"], last["size"], last["avg"]) == (9, 4194304, 353.66)


@needs_samples
@pytest.mark.parametrize("op", ["bcast", "reduce"])
def test_amd_collective_samples(op):
    log = read_osu(RAW_SAMPLES / f"amd-openmpi-osu_{op}-np128.txt")
    assert log.benchmark == f"osu_{op}" and log.version == "7.4" and log.datatype == "MPI_FLOAT"
    assert log.n_runs == 1 and len(log.data) == 24
    assert {"avg", "min", "max", "iterations"} <= set(log.data.columns)
    assert log.data["size"].iloc[0] == 8 and log.data["size"].iloc[-1] == 67108864
    assert log.data["iterations"].iloc[-1] == 100


def test_osu5_keeps_size_zero():
    log = read_osu(FIXTURES / "osu" / "osu5_latency.txt")
    assert log.version == "5.6.3"
    assert log.data["size"].tolist() == [0, 1, 2, 4, 8]


def test_header_per_run_and_banner_lines():
    log = read_osu(FIXTURES / "osu" / "osu5_bcast_per_run_header.txt")
    assert log.n_runs == 2
    assert log.data.groupby("run")["avg"].first().tolist() == [2.10, 2.20]
    assert log.skipped_lines == [1, 7]


def test_percentiles_min_max_iterations():
    log = read_osu(FIXTURES / "osu" / "osu7_reduce_full.txt")
    assert list(log.data.columns) == ["line", "size", "avg", "min", "max", "iterations", "p50", "p90", "p99", "run"]
    assert log.data["p99"].tolist() == [2.90, 2.95, 3.00]


def test_validation_column_of_real_osu_runs_is_read_and_dropped():
    # OSU 7.3 built from ../shared/tools/osu, run with -c under Debian's OpenMPI 4.1.4 (np 2)
    log = read_osu(FIXTURES / "osu" / "osu7_reduce_validation.txt")
    assert list(log.data.columns) == ["line", "size", "avg", "min", "max", "iterations", "run"]
    assert log.data["size"].tolist() == [1, 2, 4, 8]
    assert log.data["max"].tolist() == [0.91, 1.25, 1.25, 0.70]
    log = read_osu(FIXTURES / "osu" / "osu7_latency_validation.txt")
    assert list(log.data.columns) == ["line", "size", "avg", "run"]
    assert log.data["avg"].tolist() == [0.45, 0.43, 0.44, 0.47, 0.51]


def test_a_run_whose_validation_failed_is_skipped_and_reported():
    head = "# OSU MPI Broadcast Latency Test v7.3\n# Size  Avg Latency(us)  Validation\n"
    text = head + "1  2.0  Pass\n2  2.1  Pass\n" + head + "1  2.0  Pass\n2  9.1  Fail\n"
    log = parse_osu(text, "x.txt", on_bad_run="skip")
    assert log.n_runs == 1 and log.data["avg"].tolist() == [2.0, 2.1]
    assert log.skipped_runs == [{"run": 1, "line": 7, "reason": "OSU's data validation failed at size 2 (line 8)"}]
    # a log whose header lines were cut away: three cells are osu_bcast's size, avg and validation
    log = parse_osu("1  2.0  Pass\n2  2.1  Pass\n", "x.txt", benchmark_hint="osu_bcast")
    assert log.data["avg"].tolist() == [2.0, 2.1]


def test_runs_of_two_datatypes_in_one_log_are_refused():
    # OSU 7.3's -T all, run under Debian's OpenMPI 4.1.4: MPI_CHAR, then MPI_INT and MPI_FLOAT at the same bytes
    head = "\n# OSU MPI Broadcast Latency Test v7.3\n# Datatype: MPI_CHAR.\n# Size       Avg Latency(us)\n"
    text = head + "1   0.44\n2   0.18\n4   0.24\n# Datatype: MPI_INT.\n# Size       Avg Latency(us)\n4   0.25\n"
    with pytest.raises(InputError, match=r"x.txt, line 8: expected one datatype per log .*MPI_CHAR \(line 3\)"):
        parse_osu(text, "x.txt")
    assert parse_osu(text.replace("MPI_INT", "MPI_CHAR"), "x.txt").n_runs == 2


@pytest.mark.parametrize("name", ["osu7_bcast_tag_output.txt", "osu7_bcast_timestamp_output.txt"])
def test_lines_tagged_by_the_launcher_are_read(name):
    # OSU 7.3 under Debian's OpenMPI 4.1.4: mpirun --tag-output ('[1,0]<stdout>:') and --timestamp-output
    from collat.ingest.osu import title_benchmark

    log = read_osu(FIXTURES / "osu" / name)
    assert log.benchmark == "osu_bcast" and log.datatype == "MPI_CHAR" and log.n_runs == 1
    assert log.data["size"].tolist() == [1, 2, 4] and log.data["line"].tolist() == [5, 6, 7]
    assert title_benchmark(FIXTURES / "osu" / name) == "osu_bcast"


@pytest.mark.parametrize("tag", ["0: ", "  0: ", "[0] "])
def test_lines_labelled_by_srun_or_mpich_are_read(tag):
    text = "".join(tag + line for line in ("# OSU MPI Reduce Latency Test v7.3\n", "# Size  Avg Latency(us)\n",
                                           "1  2.0\n", "2  2.5\n"))
    log = parse_osu("job 17 on node 3\n" + text + f"{tag}srun: error: node 3: task 1: Killed\n", "x.txt",
                    on_bad_run="skip")
    assert log.data["avg"].tolist() == [2.0, 2.5] and log.data["line"].tolist() == [4, 5]
    # a log without a tag before its title keeps its lines as they are
    assert parse_osu("# OSU MPI Reduce Latency Test v7.3\n# Size  Avg Latency(us)\n1  2.0\n", "x.txt").n_runs == 1


def test_a_contiguous_derived_datatype_is_read_and_a_vector_refused():
    # OSU 7.3 under Debian's OpenMPI 4.1.4: -D cont moves the size's bytes, -D vect:4:2 half of them
    log = read_osu(FIXTURES / "osu" / "osu7_bcast_ddt_cont.txt")
    assert list(log.data.columns) == ["line", "size", "avg", "run"] and log.data["size"].tolist() == [1, 2, 4, 8, 16]
    with pytest.raises(InputError) as err:
        read_osu(FIXTURES / "osu" / "osu7_bcast_ddt_vector.txt")
    assert err.value.line == 5 and "expected a contiguous datatype (OSU's -D cont" in str(err.value)
    assert str(err.value).endswith("found '0 bytes moved at size 1'")
    text = (FIXTURES / "osu" / "osu7_bcast_ddt_cont.txt").read_text() + \
        (FIXTURES / "osu" / "osu7_bcast_ddt_vector.txt").read_text()
    log = parse_osu(text, "x.txt", on_bad_run="skip")
    assert log.n_runs == 1 and log.skipped_runs[0]["reason"].startswith("a derived datatype (OSU's -D) moves 0 bytes")


BOX = "-" * 74 + "\n"
OPENIB = (BOX + "WARNING: There was an error initializing an OpenFabrics device.\n\n  Local host:   node01\n"
          "  Local device: mlx5_0\n" + BOX)


def test_an_openmpi_warning_box_and_its_help_notes_leave_the_runs_as_they_are():
    """OpenMPI 4 on InfiniBand prints this box (to stderr, which SLURM writes into the same file)
    before, between or after the runs; a box that opens with WARNING is passed over, and so are the
    notes that more ranks printed the same message. A box of anything else is launcher text."""
    notes = ("[node01:12345] 1 more process has sent help message help-mpi-btl-openib.txt / error in device init\n"
             '[node01:12345] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / error messages\n')
    text = OPENIB + BCAST + OPENIB + BCAST + notes
    log = parse_osu(text, "x.txt")
    assert log.n_runs == 2 and log.skipped_lines == [1, 2, 4, 5, 6, 11, 12, 14, 15, 16, 21, 22]
    # OpenMPI 4's note that it fell back to another transport: a warning that does not open with WARNING
    unused = (BOX + "[[58319,1],0]: A high-performance Open MPI point-to-point messaging module\nwas unable to find "
              "any relevant network interfaces:\n\nModule: OpenFabrics (openib)\n  Host: node01\n\nAnother transport "
              "will be used instead, although this may result in\nlower performance.\n\nNOTE: You can disable this "
              "warning by setting the MCA parameter\nbtl_base_warn_component_unused to 0.\n" + BOX)
    assert parse_osu(unused + BCAST, "x.txt").n_runs == 1
    with pytest.raises(InputError, match=r"x.txt, line 6: expected OSU output, not MPI launcher or error text, "
                                         r"found 'There are not enough slots available in the system"):
        parse_osu(BCAST + BOX + "There are not enough slots available in the system to satisfy the 4\n" + BOX, "x.txt")


def test_bandwidth():
    log = read_osu(FIXTURES / "osu" / "osu7_bw.txt")
    assert log.benchmark == "osu_bw"
    assert log.data["bandwidth"].tolist() == [3.12, 6.30, 12.55]


def test_columns_recognised_by_name_not_position():
    text = "# OSU MPI Reduce Latency Test v7.3\n# Size  Max Latency(us)  Avg Latency(us)\n1  3.0  2.0\n"
    log = parse_osu(text, "x.txt")
    assert log.data["max"].iloc[0] == 3.0 and log.data["avg"].iloc[0] == 2.0


HEAD = "# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n"
GOOD = "1  0.2\n2  0.2\n4  0.3\n"

BAD = {
    "truncated run": (HEAD + GOOD + "1  0.2\n2  0.2\n", 7, "truncated"),
    "truncated line": (HEAD + GOOD + "1  0.2\n2\n", 7, "2 values"),
    "non-numeric cell": (HEAD + "1  0.2\n2  abc\n", 4, "a number in column 'avg'"),
    "non-integer size": (HEAD + "1.5  0.2\n", 3, "an integer in column 'size'"),
    "negative latency": (HEAD + "1  -0.2\n", 3, "non-negative"),
    "nan latency": (HEAD + "1  nan\n", None, None),
    "sizes out of order": (HEAD + "1  0.2\n4  0.2\n2  0.3\n", 5, "increasing order"),
    "repeated size": (HEAD + "1  0.2\n2  0.2\n2  0.3\n", 5, "increasing order"),
    "no OSU header": ("1  0.2\n2  0.3\n", 1, "an OSU header"),
    "empty file": ("", None, "an empty file"),
    "only blank lines": ("\n\n", 1, "an OSU header"),
    "header without data": (HEAD, 2, "data rows"),
    "mpirun error in the middle": (HEAD + "1  0.2\n" + "-" * 74 + "\nmpirun noticed that process rank 3 exited on signal 9 (Killed).\n", 5, "not MPI launcher"),
    "MPI_ABORT text": (HEAD + "1  0.2\nMPI_ABORT was invoked on rank 0\n", 4, "not MPI launcher"),
    "srun error": (HEAD + "1  0.2\nsrun: error: node01: task 0: Killed\n", 4, "not MPI launcher"),
    "extra column": (HEAD + "1  0.2  7\n", 3, "2 values"),
    "unknown column": ("# OSU MPI Latency Test v7.3\n# Size   Latency (us)   Frobs (x)\n1 0.2 3\n", 2, "an OSU column name"),
    "unsupported benchmark": ("# OSU MPI Allgather Latency Test v7.3\n# Size  Avg Latency(us)\n1 2.0\n", 1, "an OSU benchmark"),
    "two benchmarks in one file": (HEAD + GOOD + "# OSU MPI Bandwidth Test v7.3\n# Size  Bandwidth (MB/s)\n1 3.0\n", 6, "the same benchmark"),
    "persistent variant": ("# OSU MPI Broadcast Persistent Latency Test v7.4\n# Size  Avg Latency(us)\n1 2.0\n", 1,
                           "persistent and non-blocking variants run other code paths"),
    "persistent variant, skip: nothing else": None,
    "non-blocking variant": ("# OSU MPI Non-blocking Broadcast Latency Test v7.3\n# Size  Overall(us)\n1 2.0\n", 1,
                             "coll/libnbc"),
    "infinite latency": (HEAD + "1  0.2\n2  inf\n", 4, "a finite number in column 'avg'"),
    "latency beyond the float range": (HEAD + "1  0.2\n2  1e400\n", 4, "a finite number in column 'avg'"),
    "letters in the size column": (HEAD + "1  0.2\n2x  0.3\n", 4, "an integer in column 'size'"),
    "letters before the size": (HEAD + "1  0.2\nO4  0.3\n", 4, "an integer in column 'size'"),
    "last row cut without a newline": (HEAD + GOOD + "8  3", 6, "a complete last row"),
    "every latency 0": (HEAD + "1  0.00\n2  0.00\n", 3, "every latency of run 0 is 0"),
    "header without Size first": ("# OSU MPI Latency Test v7.3\n# Size\n", None, None),
    "a size whose validation failed (-c)": ("# OSU MPI Latency Test v7.3\n# Size  Latency (us)  Validation\n"
                                           "1  0.2  Pass\n2  0.2  Fail\n", 4, "Fail at size 2"),
    "a word other than Pass or Fail in the validation column": (
        "# OSU MPI Latency Test v7.3\n# Size  Latency (us)  Validation\n1  0.2  Pass\n2  0.2  Maybe\n", 4,
        "Pass or Fail in column 'validation'"),
    "a validation word in a latency column": (
        "# OSU MPI Latency Test v7.3\n# Size  Latency (us)  Validation\n1  0.2  Pass\n2  Pass  Pass\n", 4,
        "a number in column 'avg'"),
}


BAD = {k: v for k, v in BAD.items() if v is not None}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_file_line_and_expectation(case):
    text, line, words = BAD[case]
    with pytest.raises(InputError) as err:
        parse_osu(text, "logs/run.txt")
    msg = str(err.value)
    assert msg.startswith("logs/run.txt")
    if line is not None:
        assert err.value.line == line, msg
        assert f"line {line}" in msg
    if words:
        assert words in msg, msg


BCAST = "# OSU MPI Broadcast Latency Test v7.3\n# Size  Avg Latency(us)\n1  2.0\n2  2.1\n"
PERSISTENT = "# OSU MPI Broadcast Persistent Latency Test v7.4\n# Size  Avg Latency(us)\n1  1.0\n2  1.1\n"
IBCAST = ("# OSU MPI Non-blocking Broadcast Latency Test v7.3\n# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait\n"
          "# Size  Overall(us)  Compute(us)  Pure Comm.(us)  Overlap(%)\n1  5.0  2.0  3.0  10.0\n")


def test_persistent_and_non_blocking_runs_are_passed_over_when_skipping():
    # a SLURM log of one job: osu_bcast, then the persistent and the non-blocking variant, then
    # osu_bcast again after a marker printed inside the variant's block
    text = BCAST + PERSISTENT + IBCAST + "Testing Same CCX\n" + BCAST.replace("2.0", "3.0")
    from collat.ingest.markers import compile_rules

    rules = compile_rules([{"regex": r"^Testing (?P<channel>.+)$", "values": {"channel": {"Same CCX": "cache"}}}])
    log = parse_osu(text, "slurm-1.out", on_bad_run="skip", markers=rules)
    assert log.benchmark == "osu_bcast" and log.n_runs == 2
    assert log.data["avg"].tolist() == [2.0, 2.1, 3.0, 2.1]
    assert [(r["run"], r["line"]) for r in log.skipped_runs] == [(1, 5), (2, 9)]
    assert all("not read" in r["reason"] for r in log.skipped_runs)
    assert log.run_markers == {1: (13, {"channel": "cache"})}  # kept run 1: the marker still counts
    with pytest.raises(InputError) as err:  # only variants: nothing to read, said with the first one's line
        parse_osu(PERSISTENT + IBCAST, "slurm-2.out", on_bad_run="skip")
    assert err.value.line == 1 and "not read" in str(err.value)


def test_truncated_run_can_be_skipped_and_reported():
    log = parse_osu(HEAD + GOOD + "1  0.2\n2  0.2\n" + GOOD, "x.txt", on_bad_run="skip")
    assert log.n_runs == 2
    assert log.skipped_runs == [{"run": 1, "line": 6, "reason": "truncated at size 2"}]


def test_a_marker_line_shaped_like_a_row_is_not_a_bad_size():
    log = parse_osu(HEAD + GOOD + "BROADCAST 1\n" + GOOD, "x.txt")
    assert log.n_runs == 2 and log.skipped_lines == [6]


def test_a_last_row_cut_while_writing_is_dropped_when_skipping():
    # the cut row is dropped, which leaves its run truncated: skipped and reported like any other
    log = parse_osu(HEAD + GOOD + "1  0.2\n2  0.2\n4  0", "x.txt", on_bad_run="skip")
    assert log.n_runs == 1 and log.skipped_runs[0]["reason"] == "truncated at size 2"
    assert parse_osu(HEAD + GOOD.rstrip("\n") + "\n", "x.txt").n_runs == 1  # a newline at the end: complete
    assert parse_osu(HEAD + GOOD + "# end of job", "x.txt").n_runs == 1  # no newline after a comment: fine


def test_undecodable_file(tmp_path):
    p = tmp_path / "bin.txt"
    p.write_bytes(b"# OSU MPI Latency Test\n\xff\xfe\n")
    with pytest.raises(InputError, match="UTF-8"):
        read_osu(p)


def test_job_killed_at_its_time_limit():
    """A SLURM job killed mid-run: with on_bad_run: skip the complete runs before it are kept and the
    cut run is reported with the scheduler's line; with error, the file and line of that text."""
    trailer = "slurmstepd: error: *** JOB 821238 ON thin006 CANCELLED AT 2024-03-01T12:00:00 DUE TO TIME LIMIT ***\n"
    text = HEAD + GOOD + GOOD + "1  0.2\n2  0.2\n" + trailer
    log = parse_osu(text, "slurm-821238.out", on_bad_run="skip")
    assert log.n_runs == 2
    (cut,) = log.skipped_runs
    assert cut["run"] == 2 and cut["reason"].startswith("truncated at size 2, then line ")
    assert "DUE TO TIME LIMIT" in cut["reason"]
    with pytest.raises(InputError, match=r"slurm-821238.out, line \d+: expected OSU output, not MPI launcher"):
        parse_osu(text, "slurm-821238.out")


@pytest.mark.parametrize("line,expected", [
    ("mpirun (Open MPI) 4.1.5", "openmpi-4.1.5"),
    ("                Open MPI: 4.1.4", "openmpi-4.1.4"),
    ("MPICH Version:      4.0.2", "mpich-4.0.2"),
    ("MVAPICH2 Version:     \t2.3.7", "mvapich2-2.3.7"),
    ("Intel(R) MPI Library for Linux* OS, Version 2021.6 Build 20220227 (id: 28877f3f32)", "intelmpi-2021.6"),
    ("Open MPI repo revision: v4.1.5", None),
    ("# OSU MPI Latency Test v7.3", None),
])
def test_mpi_version_lines(line, expected):
    from collat.ingest.osu import mpi_version

    assert mpi_version(line) == expected


def test_a_version_line_names_the_implementation_of_the_runs_after_it():
    """`mpirun --version` printed by the job script is not launcher error text; it names the MPI of
    the runs that follow it, up to the next version line."""
    run = "# Size          Latency (us)\n1 0.25\n2 0.26\n"
    text = ("mpirun (Open MPI) 4.1.5\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
            "# OSU MPI Latency Test v7.3\n" + run + run + "MPICH Version:      4.0.2\n" + run)
    log = parse_osu(text, "slurm.out")
    assert log.n_runs == 3 and log.run_markers == {}
    assert log.run_mpi == {0: (1, {"mpi": "openmpi-4.1.5"}), 1: (1, {"mpi": "openmpi-4.1.5"}),
                           2: (11, {"mpi": "mpich-4.0.2"})}
    assert parse_osu("# OSU MPI Latency Test v7.3\n" + run, "plain.txt").run_mpi == {}


def test_a_log_without_its_header_lines_is_read_with_the_benchmarks_columns():
    """Repetitions whose '# OSU ...' and '# Size ...' lines were cut away (grep -v '#'): with the
    benchmark known from the path pattern or manifest, the cells OSU prints for it (2, or 5 with -f)
    name the columns, and each new size list is a new run; without it, the first row's line says so."""
    from collat.ingest.osu import parse_osu

    text = "1  0.40\n2  0.41\n4  0.42\n1  0.39\n2  0.41\n4  0.43\n"
    log = parse_osu(text, "x.txt", benchmark_hint="osu_latency")
    assert log.n_runs == 2 and log.data["avg"].tolist() == [0.40, 0.41, 0.42, 0.39, 0.41, 0.43]
    log = parse_osu("1 1.5 1.0 2.0 1000\n2 1.6 1.1 2.1 1000\n", "y.txt", benchmark_hint="osu_bcast")
    assert list(log.data.columns[1:6]) == ["size", "avg", "min", "max", "iterations"] and log.data["max"].tolist() == [2.0, 2.1]
    with pytest.raises(InputError, match=r"x.txt, line 1: expected an OSU header .* 2 \(\['size', 'avg'\]\), "
                                         r"3 \(\['size', 'avg', 'validation'\]\), 5 \(\['size', 'avg', 'min', 'max', 'iterations'\]\), "
                                         r"6 .*\), found '1 1.5 1.0'"):
        parse_osu("1 1.5 1.0\n", "x.txt", benchmark_hint="osu_reduce")
    with pytest.raises(InputError, match=r"before the first data row .*: unknown\)"):
        parse_osu(text, "x.txt")


def _runs(n, header_once=False, sizes=(1, 2, 4, 8)):
    text = "# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n"
    for r in range(n):
        if r and not header_once:
            text += f"Running latency, pair {r}\n# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n"
        text += "".join(f"{s:<8d}{0.25 * (r + 1) + s / 100:>10.2f}\n" for s in sizes)
    return text


@pytest.mark.parametrize("header_once", [False, True])
@pytest.mark.parametrize("chunk", [16, 37, 1 << 21])
def test_blocks_read_the_same_at_any_chunk_size(monkeypatch, chunk, header_once):
    """The parser reads a chunk of lines at a time and every data row of a chunk at once: wherever a
    chunk ends (inside a row, between runs), the rows, their lines and values are the same."""
    import collat.ingest.osu as osu

    text = _runs(7, header_once)
    monkeypatch.setattr(osu, "_CHUNK", chunk)
    log = parse_osu(text, "x.txt")
    assert log.n_runs == 7 and len(log.data) == 28
    assert log.data["size"].tolist() == [1, 2, 4, 8] * 7
    assert log.data["avg"].iloc[5] == 0.52 and log.data["run"].iloc[5] == 1  # 0.25 * 2 + 2 / 100
    lines = [i for i, line in enumerate(text.splitlines(), start=1) if line[:1].isdigit()]
    assert log.data["line"].tolist() == lines


def test_a_chunk_of_runs_with_other_columns_and_a_bad_row_is_read_row_by_row():
    """Runs with different headers in one chunk (two or five columns) cannot be read as one block;
    each stretch is then read alone, and a bad row still names its line."""
    five = ("# OSU MPI Broadcast Latency Test v7.3\n# Size       Avg Latency(us)\n1  2.0\n2  2.1\n"
            "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
            "1  2.0  1.0  3.0  1000\n2  2.1  1.1  3.1  1000\n")
    log = parse_osu(five, "x.txt")
    assert log.n_runs == 2 and log.data["iterations"].dropna().tolist() == [1000, 1000]
    with pytest.raises(InputError, match=r"x.txt, line 6: expected an integer in column 'iterations', found '1000.5'"):
        parse_osu(five.replace("3.0  1000", "3.0  1000.5"), "x.txt")
    with pytest.raises(InputError, match=r"x.txt, line 4: expected a non-negative number in column 'avg', found '-2.1'"):
        parse_osu(five.replace("2  2.1\n#", "2  -2.1\n#"), "x.txt")


def test_carriage_returns_end_lines():
    """Windows (CR LF) and old Mac (CR) line ends read as newlines do."""
    text = _runs(2)
    for ending in ("\r\n", "\r"):
        log = parse_osu(text.replace("\n", ending), "x.txt")
        assert log.n_runs == 2 and log.data["line"].tolist() == parse_osu(text, "x.txt").data["line"].tolist()


def test_the_benchmark_a_log_names_before_it_is_read(tmp_path):
    """What the workflow reads of a log at parse time: its first title line, after any banner."""
    from collat.ingest.osu import title_benchmark

    cases = {"lat.out": "SLURM_JOB_ID=1\n# OSU MPI Latency Test v7.3\n# Size  Latency (us)\n1 0.2\n",
             "bcast.txt": "# OSU MPI Broadcast Latency Test v7.3\n", "none.txt": "1  0.2\n2  0.3\n",
             "ibcast.txt": "# OSU MPI Non-blocking Broadcast Latency Test v7.3\n", "empty.txt": ""}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    got = {name: title_benchmark(tmp_path / name) for name in cases}
    assert got == {"lat.out": "osu_latency", "bcast.txt": "osu_bcast", "none.txt": None, "ibcast.txt": None,
                   "empty.txt": None}
    assert title_benchmark(tmp_path / "missing.txt") is None


def _read_at(monkeypatch, chunk, path, **kw):
    """A log read with chunks of ``chunk`` bytes: (benchmark, version, datatype, rows, skipped lines,
    skipped runs, markers, MPI lines), or the error it raises."""
    import collat.ingest.osu as osu
    from collat.ingest.osu import read_osu

    monkeypatch.setattr(osu, "_CHUNK", chunk)
    try:
        log = read_osu(path, **kw)
    except InputError as exc:
        return str(exc)
    return (log.benchmark, log.version, log.datatype, log.data.to_dict("list"), log.skipped_lines, log.skipped_runs,
            log.run_markers, log.run_mpi)


def test_chunks_read_at_once_equal_line_by_line(monkeypatch, tmp_path):
    """A chunk of plain runs (banners, repeated titles and headers, clean rows) is read with array
    operations, anything else line by line: every log of the test data reads the same when most of
    its chunks are read at once (chunks of 512 bytes; the first chunk is always read line by line)
    as when the whole file is one chunk, errors included."""
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    logs = sorted(p for d in ("fixtures/osu", "data/osu_raw", "data/osu_16core") for p in (here / d).rglob("*")
                  if p.is_file() and p.suffix in (".txt", ".out", ".log"))
    # a plain log whose version changes, one whose size list starts again without a header, and one
    # whose datatype changes (refused both ways, at the same line)
    def runs(datatype):
        return "".join(f"job banner {r}\n# OSU MPI Broadcast Latency Test v7.{r // 20}\n# Datatype: MPI_{datatype(r)}.\n"
                       "# Size       Avg Latency(us)\n" + "".join(f"{s:<8d}{1 + r / 10 + s / 100:>10.2f}\n"
                                                               for s in (1, 2, 4)) for r in range(60))
    plain = runs(lambda r: "INT")
    (tmp_path / "plain.txt").write_text(plain)
    (tmp_path / "datatypes.txt").write_text(runs(lambda r: "CHAR" if r < 30 else "INT"))
    assert "one datatype per log" in _read_at(monkeypatch, 512, tmp_path / "datatypes.txt")
    (tmp_path / "restart.txt").write_text(plain.replace("# Size       Avg Latency(us)\n", "", 59)
                                          .replace("# Size", "# Size       Avg Latency(us)\n# Size", 1))
    logs += [tmp_path / "plain.txt", tmp_path / "restart.txt", tmp_path / "datatypes.txt"]
    assert len(logs) > 100
    for path in logs:
        for on_bad_run in ("error", "skip"):
            whole = _read_at(monkeypatch, 1 << 24, path, on_bad_run=on_bad_run)
            assert _read_at(monkeypatch, 512, path, on_bad_run=on_bad_run) == whole, path
    import collat.ingest.osu as osu

    line_by_line = []  # the chunks read line by line: the others were read at once
    items = osu._Chunk.items
    monkeypatch.setattr(osu._Chunk, "items", lambda chunk: line_by_line.append(chunk.lineno) or items(chunk))
    plain_log = _read_at(monkeypatch, 512, tmp_path / "plain.txt")
    assert plain_log[1:3] == ("7.2", "MPI_INT") and len(set(plain_log[3]["run"])) == 60
    chunks = -(-(tmp_path / "plain.txt").stat().st_size // 512)
    assert 0 in line_by_line and len(line_by_line) < chunks // 2  # the first chunk, and a few where a title changes


def test_a_chunk_read_at_once_refuses_what_python_refuses(monkeypatch):
    """Arrow's cast reads '0x10' as an integer and '1e3' as a number; neither is an OSU size. A chunk
    read at once that holds one is read row by row, and the row is refused with its line."""
    import collat.ingest.osu as osu

    text = _runs(3, header_once=True)
    monkeypatch.setattr(osu, "_CHUNK", 40)  # most chunks after the first are read at once
    assert parse_osu(text, "x.txt").n_runs == 3
    for bad in ("0x10", "1e3"):
        cut = text.replace("\n8  ", f"\n{bad}", 2)  # the second run's size 8
        line = next(i for i, row in enumerate(cut.splitlines(), start=1) if row.startswith(bad))
        with pytest.raises(InputError, match=rf"x.txt, line {line}: expected an integer in column 'size', found '{bad}'"):
            parse_osu(cut, "x.txt")


@pytest.mark.parametrize("module", ["gzip", "bz2", "lzma"])
def test_a_compressed_log_is_read_as_its_text(module, tmp_path):
    """An archived campaign keeps its logs gzip-, bzip2- or xz-compressed: told by the first bytes, not
    the name; one cut short is one line naming it."""
    import importlib

    from collat.ingest.osu import title_benchmark

    text = (FIXTURES / "osu" / "osu7_reduce_validation.txt").read_bytes()
    path = tmp_path / "np2.txt.z"
    path.write_bytes(importlib.import_module(module).compress(text))
    log = read_osu(path)
    assert log.benchmark == "osu_reduce" and log.data["max"].tolist() == [0.91, 1.25, 1.25, 0.70]
    assert title_benchmark(path) == "osu_reduce"
    packed = path.read_bytes()
    path.write_bytes(packed[:40])
    with pytest.raises(InputError, match=r"np2.txt.z: expected a compressed log that decompresses whole"):
        read_osu(path)
    path.write_bytes(packed[:12] + bytes(len(packed) - 12))  # corrupt after the header
    with pytest.raises(InputError, match=r"np2.txt.z: expected a compressed log that decompresses whole"):
        read_osu(path)


def test_an_unreadable_plain_log_is_not_called_a_corrupt_archive(tmp_path):
    # a folder where a log was expected: the system's own error, not one about decompression
    with pytest.raises(IsADirectoryError):
        read_osu(tmp_path)
