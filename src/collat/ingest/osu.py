"""Parser for the stdout of OSU micro-benchmarks 5.x-7.x (osu_latency, osu_bw, osu_bcast, osu_reduce).

Columns are recognised by their header names, not their position. A file may hold
several runs, each with its own header or with the header printed once (a run then
starts where the size list starts again). Lines that cannot be data (job banners,
marker lines between runs) are skipped; text from a failed launch (mpirun, srun,
MPI_ABORT, signals) is an error. A persistent or non-blocking variant (osu_bcast_persistent,
osu_ibcast) is an error too, or with ``on_bad_run='skip'`` a skipped run of the file (its block, up
to the next OSU title); so is a run with a size OSU's data validation failed (``-c``). Every error
names the file and the line.
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from collat import InputError

BENCHMARKS = {
    "latency": "osu_latency",
    "bandwidth": "osu_bw",
    "bi-directional bandwidth": "osu_bibw",
    "broadcast latency": "osu_bcast",
    "reduce latency": "osu_reduce",
}
#: benchmark -> (operation or None, tidy tables it can feed)
BENCHMARK_OPERATION = {
    "osu_latency": None,
    "osu_bw": None,
    "osu_bibw": None,
    "osu_bcast": "bcast",
    "osu_reduce": "reduce",
}

_TITLE = re.compile(r"^#\s*OSU\s+MPI(?:[-\w]*)\s+(?P<name>.+?)\s+Test(?:\s+v?(?P<version>[\d.]+\w*))?\s*$", re.I)
_DATATYPE = re.compile(r"^#\s*Datatype:\s*(?P<dt>[\w]+)\.?\s*$", re.I)
_HEADER = re.compile(r"^#\s*Size\b", re.I)

#: OSU's -c: a column saying whether each size's result was checked right ('Pass', 'Fail'), read as
#: 1 and 0; a run with a failed size is a bad run (its collective returned wrong data), and the column
#: is not kept
VALIDATION = "validation"
_WORDS = {"Pass": "1", "Fail": "0"}
#: OSU's -D: the bytes a derived datatype moves at each size; a run whose bytes are its sizes (-D cont)
#: is read without the column, one that moves other bytes (a vector or indexed type) is a bad run
TRANSMIT = "transmit"
_DROPPED = (VALIDATION, TRANSMIT)
#: column -> (which sizes spoil a run, from the column's values and the sizes; what was expected; what was
#: found and the reason a skipped run is given, each formatted with the first such size and its value)
_SPOILERS = {
    VALIDATION: (lambda value, size: value == 0,
                 "every size of a run passing OSU's data validation (-c: 'Pass' in column 'Validation')",
                 "Fail at size {size}", "OSU's data validation failed at size {size}"),
    TRANSMIT: (lambda value, size: value != size,
               "a contiguous datatype (OSU's -D cont: 'Transmit Size' equal to 'Size'); a vector or indexed type "
               "packs other bytes, which the models do not price",
               "{value} bytes moved at size {size}", "a derived datatype (OSU's -D) moves {value} bytes at size {size}"),
}

# (regex anchored at the current header position, column name; {0} = first group)
_COLUMNS = [
    (re.compile(r"Size\b", re.I), "size"),
    (re.compile(r"Avg\s*Latency\s*\(us\)", re.I), "avg"),
    (re.compile(r"Min\s*Latency\s*\(us\)", re.I), "min"),
    (re.compile(r"Max\s*Latency\s*\(us\)", re.I), "max"),
    (re.compile(r"Latency\s*\(us\)", re.I), "avg"),
    (re.compile(r"Iterations\b", re.I), "iterations"),
    (re.compile(r"P(\d{1,2})\s+Tail\s+Lat(?:ency)?\s*\(us\)", re.I), "p{0}"),
    (re.compile(r"P(\d{1,2})(?:\s*\(us\))?(?=\s|$)", re.I), "p{0}"),
    (re.compile(r"Bandwidth\s*\(MB/s\)", re.I), "bandwidth"),
    (re.compile(r"Validation\b", re.I), VALIDATION),
    (re.compile(r"Transmit\s+Size\b", re.I), TRANSMIT),
]
# the columns OSU prints, by benchmark and number of cells, for a log whose header lines were cut
# away (read when the path pattern or manifest names the benchmark); -f adds min, max, iterations
HEADERLESS = {
    "osu_latency": {2: ["size", "avg"], 3: ["size", "avg", VALIDATION]},
    "osu_bw": {2: ["size", "bandwidth"]},
    "osu_bibw": {2: ["size", "bandwidth"]},
    "osu_bcast": {2: ["size", "avg"], 3: ["size", "avg", VALIDATION], 5: ["size", "avg", "min", "max", "iterations"],
                  6: ["size", "avg", "min", "max", "iterations", VALIDATION]},
    "osu_reduce": {2: ["size", "avg"], 3: ["size", "avg", VALIDATION], 5: ["size", "avg", "min", "max", "iterations"],
                   6: ["size", "avg", "min", "max", "iterations", VALIDATION]},
}
KNOWN_COLUMNS = ("Size", "Latency (us)", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)",
                 "Iterations", "P50/P90/P95/P99 Tail Lat(us)", "Bandwidth (MB/s)", "Validation",
                 "Transmit Size")

# Version lines of MPI implementations a job script may print (``mpirun --version``, ``ompi_info``,
# ``mpichversion``, ``mpiexec -V``): the implementation of the runs that follow, named as
# ``<implementation>-<version>``. Matched before the launch-error check ("mpirun (Open MPI) ...").
_MPI_VERSION = [
    (re.compile(r"\bOpen\s?MPI\)?:?\s+v?(\d+(?:\.\d+)+\w*)", re.I), "openmpi"),
    (re.compile(r"\bMVAPICH2?\s+Version:?\s+v?(\d+(?:\.\d+)+\w*)", re.I), "mvapich2"),
    (re.compile(r"\bMPICH\s+Version:?\s+v?(\d+(?:\.\d+)+\w*)", re.I), "mpich"),
    (re.compile(r"\bIntel\(R\) MPI Library\b.*?\bVersion\s+(\d+(?:\.\d+)*\w*)", re.I), "intelmpi"),
]


def mpi_version(line: str) -> str | None:
    """``openmpi-4.1.5`` for ``mpirun (Open MPI) 4.1.5`` and the like (:data:`_MPI_VERSION`), else None."""
    lower = line.lower()
    if "mpi" not in lower and "mvapich" not in lower:  # every name above has one of them
        return None
    for regex, name in _MPI_VERSION:
        m = regex.search(line)
        if m:
            return f"{name}-{m[1]}"
    return None


# Text a failed or aborted launch prints; it is never skipped silently.
_LAUNCH_ERROR = re.compile(
    r"^(mpirun|mpiexec|orterun|prterun|srun|slurmstepd)\b|MPI_ABORT|\bORTE\b|\bPRTE\b|"
    r"Primary job\s+terminated|exited on signal|Segmentation fault|Bus error|"
    r"\bkilled\b|\babort(ed)?\b|\berror\b|^-{20,}\s*$|^\[[\w.-]+:\d+\]",
    re.I,
)

_LAUNCH_WORDS = ("mpirun", "mpiexec", "orterun", "prterun", "srun", "slurmstepd", "mpi_abort", "orte", "prte",
                 "primary job", "exited on signal", "segmentation fault", "bus error", "kill", "abort", "error")


_ANY_LAUNCH_WORD = re.compile("|".join(map(re.escape, _LAUNCH_WORDS)))


#: OpenMPI's help messages come in boxes of dashes; one that says it is a warning (a line opening with
#: WARNING: an OpenFabrics device it could not open; or "disable this warning": another transport used
#: instead) leaves the runs as they are, and so do the notes that say how many more ranks printed it
_RULE = re.compile(r"^-{20,}\s*$")
_WARNING = re.compile(r"^WARNING\b|\bthis warning\b", re.I)
_BOX_LINES = 60  # a help box is a screen at most: more lines than that were no box
_HELP_NOTE = re.compile(r"^\[[\w.-]+:\d+\]\s+(\d+\s+more\s+process(es)?\s+ha(s|ve)\s+sent\s+help\s+message|"
                        r"Set\s+MCA\s+parameter\s+\"?orte_base_help_aggregate)", re.I)


def _launch_error(line: str) -> bool:
    """:data:`_LAUNCH_ERROR` found in ``line``; a line with none of its words is told at once."""
    if not line.startswith(("-", "[")) and not _ANY_LAUNCH_WORD.search(line.lower()):
        return False
    return _LAUNCH_ERROR.search(line) is not None


@dataclass
class OsuLog:
    """A parsed OSU output file."""

    path: str
    benchmark: str | None
    version: str | None
    datatype: str | None
    data: pd.DataFrame  # size, the measured columns, run, line
    skipped_lines: list[int] = field(default_factory=list)
    skipped_runs: list[dict] = field(default_factory=list)
    run_markers: dict = field(default_factory=dict)  # run -> (line, metadata) of the marker before it
    run_mpi: dict = field(default_factory=dict)  # run -> (line, {"mpi": ...}) of the MPI version line before it

    @property
    def n_runs(self) -> int:
        return int(self.data["run"].nunique()) if len(self.data) else 0


#: what a launcher may put before each line of a rank's output: OpenMPI's --tag-output ('[1,0]<stdout>:')
#: and --timestamp-output (a date, then '<stdout>:'), srun's --label ('0: '), MPICH's -prepend-rank
#: ('[0] '); a log whose OSU title carries one has it taken off every line that starts with it
_TAGS = [rb"[^\n<#]{0,64}<std(?:out|err)>: ?", rb" *\d+: ", rb"\[\d+\] "]


def _launcher_tag(head: bytes) -> re.Pattern | None:
    """The tag (:data:`_TAGS`) before the first OSU title in ``head``, as a pattern that takes it off a
    line's start; None where the title starts its line or has no tag this knows."""
    m = re.search(rb"(?m)^(.+?)# OSU MPI", head[:1 << 16])
    if m is None:
        return None
    for tag in _TAGS:
        if re.fullmatch(tag, m[1]):
            return re.compile(rb"(?m)^" + tag)
    return None


#: compressed logs, told by their first bytes, read as the text they hold
_COMPRESSED = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ\x00": "lzma"}


def _decompression_errors() -> tuple:
    """What reading a corrupt or cut compressed log raises (gzip: BadGzipFile or EOFError; bz2: OSError;
    xz: LZMAError or EOFError)."""
    import lzma

    return OSError, EOFError, lzma.LZMAError


def _compressed(path) -> bool:
    """Whether the file at ``path`` starts as a compressed log does (False where it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(6)
    except OSError:
        return False
    return any(head.startswith(magic) for magic in _COMPRESSED)


def open_log(path):
    """A raw log opened for reading its bytes: decompressed where it is gzip, bzip2 or xz (told by
    its first bytes, not its name: an archived campaign keeps its logs as they were written)."""
    import importlib

    fh = open(path, "rb")
    head = fh.read(6)
    fh.seek(0)
    for magic, module in _COMPRESSED.items():
        if head.startswith(magic):
            fh.close()
            return importlib.import_module(module).open(path, "rb")
    return fh


def title_benchmark(path, head: int = 4096) -> str | None:
    """The benchmark an OSU log names in its first title line ('# OSU MPI Latency Test v7.3':
    osu_latency), read from its first ``head`` bytes; None for a log without one there (headerless,
    empty, a launcher's error first) or a benchmark this tool does not read. What the workflow
    knows of a log before it is read, where its path and the manifest do not name the benchmark."""
    try:
        with open_log(path) as fh:
            raw = fh.read(head)
    except _decompression_errors():  # unreadable, or a compressed file cut short
        return None
    tag = _launcher_tag(raw)
    text = (raw if tag is None else tag.sub(b"", raw)).decode("utf-8", errors="replace")
    for line in text.splitlines():
        m = _TITLE.match(line.strip())
        if m:
            return BENCHMARKS.get(re.sub(r"\s+", " ", m["name"].lower()))
    return None


def parse_header(line: str, path: str, lineno: int) -> list[str]:
    """Column names of a '# Size ...' header line, recognised by name (a log repeats its header
    before each run: each distinct line is read once)."""
    if line in _HEADERS:
        return list(_HEADERS[line])
    names = _parse_header(line, path, lineno)
    if len(_HEADERS) < 1024:
        _HEADERS[line] = tuple(names)
    return names


_HEADERS: dict[str, tuple] = {}


def _parse_header(line: str, path: str, lineno: int) -> list[str]:
    text = line.lstrip("#").strip()
    pos, names = 0, []
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        for rx, name in _COLUMNS:
            m = rx.match(text, pos)
            if m:
                names.append(name.format(*m.groups()))
                pos = m.end()
                break
        else:
            raise InputError(path, lineno, f"an OSU column name ({', '.join(KNOWN_COLUMNS)})", text[pos:])
    if names[0] != "size" or "size" in names[1:]:
        raise InputError(path, lineno, "a header whose first column is 'Size'", line.strip())
    if len(set(names)) != len(names):
        raise InputError(path, lineno, "each column once in the header", line.strip())
    return names


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


_CHUNK = 1 << 21  # bytes read at a time: memory stays bounded whatever the log's size
_SPACE = np.zeros(256, bool)
_SPACE[[9, 11, 12, 13, 32]] = True
_DIGIT = np.zeros(256, bool)
_DIGIT[48:58] = True


@dataclass(frozen=True, slots=True)
class _Text:
    """What a (stripped, non-empty) text line is, before any state of the parse: read once per
    distinct line (:func:`_text_kind`)."""

    title: tuple | None      # an OSU title: (its name, lower case, single spaces; the version or None)
    datatype: str | None     # '# Datatype: MPI_CHAR.'
    header: bool             # '# Size ...'
    data: bool               # a digit first, or a sign or point and a digit
    mpi: str | None          # an MPI version line (:func:`mpi_version`)
    launch: bool             # launcher or error text (:func:`_launch_error`)
    cells: int               # whitespace-separated cells
    number_cells: bool       # a digit in the first cell and numbers in the others: a data row with a bad size


def _text_kind(line: str) -> _Text:
    """The :class:`_Text` of one stripped, non-empty line."""
    m = _TITLE.match(line)
    title = None if m is None else (re.sub(r"\s+", " ", m["name"].lower()), m["version"])
    dt = _DATATYPE.match(line)
    cells = line.split()
    return _Text(title, None if dt is None else dt["dt"], _HEADER.match(line) is not None,
                 line[0].isdigit() or (line[0] in "+-." and len(line) > 1 and line[1].isdigit()),
                 mpi_version(line), _launch_error(line), len(cells),
                 any(ch.isdigit() for ch in cells[0]) and all(map(_is_number, cells[1:])))


_SKIP, _CLOSE, _NOTE, _OTHER = 0, 1, 2, 3  # what a text line does in a chunk read at once (parse_osu)
_KINDS_KEPT = 4096  # distinct text lines remembered per log (a log's banners may all differ)


@dataclass(slots=True)
class _Rows:
    """Consecutive data lines of a log (blank lines may sit between them): their line numbers and
    their bytes, from the first to the last, each ending with its newline (the last one perhaps not)."""

    lines: np.ndarray
    text: bytes
    parsed: tuple | None = None  # parsed with the rest of their chunk: (rows, integer columns, any bad row,
    #                              any size not above the one before it, word columns)

    def line(self, lineno: int) -> str:
        """The text of one of the lines."""
        return self.text.split(b"\n")[lineno - int(self.lines[0])].decode().strip()


@dataclass(slots=True)
class _Chunk:
    """A block of whole lines of a log, classified with numpy (:func:`_chunks`): where each line
    starts and ends, which lines are text (not blank, not data), which are data rows, and every
    data row parsed at once (``parsed``: see :func:`_chunk_values`; None where they could not be)."""

    buf: bytes
    lineno: int            # lines before the chunk
    starts: np.ndarray     # per line, where it starts in buf
    ends: np.ndarray       # per line, where its newline is (len(buf) for a last line without one)
    lines: object          # the lines as an Arrow string array (each with its newline)
    others: np.ndarray     # the text lines (index in the chunk)
    rows: np.ndarray       # the data rows (index in the chunk)
    parsed: tuple | None
    before: np.ndarray     # per text line, the data rows before it in the chunk

    def items(self):
        """The chunk's lines in order: (line number, text) for a text line, :class:`_Rows` for each
        stretch of data rows."""
        buf, first_byte, last_byte, n = self.buf, self.starts.tolist(), (self.ends + 1).tolist(), len(self.starts)
        row_lines, at_row = self.rows + (self.lineno + 1), self.rows.tolist()
        values, integer, bad, falls, words = self.parsed if self.parsed is not None else (None,) * 5
        if values is not None:
            bad, falls = bad.tolist(), falls.tolist()
        pos = 0
        for i, stop in zip([*self.others.tolist(), n], [*self.before.tolist(), len(at_row)]):
            if stop > pos:
                yield _Rows(row_lines[pos:stop], buf[first_byte[at_row[pos]]:last_byte[at_row[stop - 1]]],
                            None if values is None else (values[pos:stop], integer, bad[stop] > bad[pos],
                                                         falls[stop] > falls[pos + 1], words))
            pos = stop
            if i < n:
                yield self.lineno + 1 + i, buf[first_byte[i]:last_byte[i]].decode("utf-8")

    def texts(self) -> tuple[list[str], np.ndarray]:
        """The distinct text lines, stripped, and per text line its index among them (Arrow's
        dictionary encoding: a log repeats a few banners, titles and headers many times)."""
        coded = pc.ascii_trim_whitespace(self.lines.take(pa.array(self.others))).dictionary_encode()
        return coded.dictionary.to_pylist(), coded.indices.to_numpy(zero_copy_only=False)


def _chunks(stream):
    """The lines of a binary stream as :class:`_Chunk` s of about :data:`_CHUNK` bytes, so that a file
    of millions of rows is never a Python object per row; then ``(last line number, last line's text)``.
    A data row is a line with a digit first, or a sign or point and a digit. A lone carriage return
    ends a line, as a newline does; a byte sequence that is not UTF-8 raises :class:`UnicodeDecodeError`.
    A launcher's tag before the lines (:func:`_launcher_tag`, found in the first chunk) is taken off."""
    lineno, carry, last, tag = 0, b"", "", None
    while True:
        chunk = stream.read(_CHUNK)
        buf = carry + chunk
        if not chunk:
            carry = b""
        else:
            cut = buf.rfind(b"\n") + 1
            buf, carry = buf[:cut], buf[cut:]
        if not buf:
            if not chunk:
                break
            continue
        if b"\r" in buf:
            buf = re.sub(rb"\r(?!\n)", b"\n", buf)
        if lineno == 0:
            tag = _launcher_tag(buf)
        if tag is not None:
            buf = tag.sub(b"", buf)
        a = np.frombuffer(buf, np.uint8)
        if (a >= 128).any():
            buf.decode("utf-8")  # raises where the bytes are not UTF-8
        ends = np.flatnonzero(a == 10)
        if not len(ends) or ends[-1] != len(a) - 1:
            ends = np.append(ends, len(a))  # the file's last line, without a newline
        starts = np.concatenate(([0], ends[:-1] + 1))
        # each line's first byte that is not white space (len(a) where none is left in the chunk):
        # its first byte for most lines, searched for only in the lines that start with a space
        first = np.minimum(starts, len(a) - 1)
        indented = _SPACE[a[first]]  # (an empty line is blank as it is: it starts at its newline)
        if indented.any():
            text = np.flatnonzero(~_SPACE[a] & (a != 10))
            k = np.searchsorted(text, starts[indented])
            first = first.copy()
            first[indented] = text[np.minimum(k, len(text) - 1)] if len(text) else len(a)
            first[np.flatnonzero(indented)[k >= len(text)]] = len(a)
        blank = first >= ends
        at = np.minimum(first, len(a) - 1)
        nxt = a[np.minimum(at + 1, len(a) - 1)]
        c = a[at]
        sign = ((c == 43) | (c == 45) | (c == 46)) & (at + 1 < ends) & _DIGIT[nxt]
        data = ~blank & (_DIGIT[c] | sign)
        others = np.flatnonzero(~blank & ~data)
        rows = np.flatnonzero(data)
        offsets = np.append(starts, len(a))  # the chunk's lines as Arrow strings over its bytes, not copied
        kind, width = (pa.StringArray, np.int32) if len(a) < 1 << 31 else (pa.LargeStringArray, np.int64)
        lines = kind.from_buffers(len(starts), pa.py_buffer(offsets.astype(width)), pa.py_buffer(buf))
        parsed = _chunk_values(lines, rows, rows + (lineno + 1)) if len(rows) else None
        yield _Chunk(buf, lineno, starts, ends, lines, others, rows, parsed, np.searchsorted(rows, others))
        lineno += len(starts)
        last = buf[starts[-1]:ends[-1] + 1].decode("utf-8")
        if not chunk:
            break
    yield lineno, last


def _numbers(text) -> tuple[np.ndarray, np.ndarray, tuple] | None:
    """Data lines (an Arrow string array) as numbers, with Arrow's string kernels instead of a Python
    object per cell: (values [rows, cells], per cell column whether every cell is a plain integer,
    digits only, per cell column whether it held one of OSU's validation words, :data:`_WORDS`,
    read as 1 and 0), or None when the lines do not all hold the same number of cells, or one is
    not such a word nor a number that Python's float() reads too (Arrow's cast reads hexadecimal
    as an integer)."""
    cells = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(text))
    counts = pc.list_value_length(cells).to_numpy()
    k = int(counts[0]) if len(counts) else 0
    if not k or (counts != k).any():
        return None
    tokens = pc.list_flatten(cells)
    words = (False,) * k
    try:
        flat = pc.cast(tokens, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        is_word = pc.is_in(tokens, value_set=pa.array(list(_WORDS)))
        if not pc.any(is_word).as_py():
            return None
        tokens = pc.replace_substring_regex(tokens, "^Pass$", _WORDS["Pass"])
        tokens = pc.replace_substring_regex(tokens, "^Fail$", _WORDS["Fail"])
        try:
            flat = pc.cast(tokens, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            return None
        words = tuple(is_word.to_numpy(zero_copy_only=False).reshape(-1, k).any(axis=0).tolist())
    integer = pc.ascii_is_decimal(tokens).to_numpy(zero_copy_only=False).reshape(-1, k).all(axis=0)
    return flat.reshape(-1, k), integer, words


def _words_fit(words: tuple, cols) -> bool:
    """Whether OSU's validation words sit in its validation column only."""
    return all(not w or c == VALIDATION for w, c in zip(words, cols))


def _chunk_values(text, rows: np.ndarray, lines: np.ndarray):
    """Every data line of a chunk parsed at once (:func:`_numbers`, not one read per run): (rows:
    line, then the values; which columns held only integers; the running count of rows with a
    value that is negative or not finite, from 0; the running count of rows whose size is not above
    the row before's), or None when the lines do not all hold the same number of numbers or a size
    is not an integer (runs with different headers in one chunk, a malformed row: each stretch is
    then read alone); last, which columns held OSU's validation words. ``text``: the chunk's lines
    (an Arrow string array); ``rows``: which are data rows; ``lines``: their line numbers."""
    parsed = _numbers(text.take(pa.array(rows)))
    if parsed is None or not parsed[1][0]:
        return None
    values, integer, words = parsed
    out = np.empty((len(rows), 1 + values.shape[1]))
    out[:, 0] = lines
    out[:, 1:] = values
    if np.isfinite(values).all() and (values >= 0).all():  # the common case, without a pass per row
        bad = np.zeros(len(rows) + 1, dtype=np.int64)
    else:
        bad = np.concatenate(([0], np.cumsum(~np.isfinite(values).all(axis=1) | (values < 0).any(axis=1))))
    falls = np.concatenate(([0, 0], np.cumsum(out[1:, 1] <= out[:-1, 1])))  # falls[i]: sizes not rising before row i
    return out, tuple(integer.tolist()), bad, falls, words


@functools.lru_cache(maxsize=64)
def _integer_columns(cols: tuple) -> tuple[int, ...]:
    """Where the columns that hold integers (size, iterations) sit among ``cols``."""
    return tuple(i for i, name in enumerate(cols) if name in ("size", "iterations", TRANSMIT))


def _values(rows: _Rows, cols: list[str]) -> np.ndarray | None:
    """The rows as an array (line, then one value per column), or None when any row is not a clean
    OSU data row (a cell missing or extra, not a number, negative, not finite, a size or iteration
    count that is not an integer): the caller then reads them one by one for the exact error."""
    integer = _integer_columns(tuple(cols))
    if rows.parsed is not None:  # read with the rest of its chunk
        out, integers, bad, _, words = rows.parsed
        if out.shape[1] == 1 + len(cols) and all(integers[i] for i in integer) and not bad and _words_fit(words, cols):
            return out
    lines = [line for line in rows.text.split(b"\n") if line.strip()]
    parsed = _numbers(pa.array(lines, pa.binary()).cast(pa.string())) if len(lines) == len(rows.lines) else None
    if parsed is None or parsed[0].shape[1] != len(cols) or not all(parsed[1][i] for i in integer) \
            or not _words_fit(parsed[2], cols):
        return None
    values = parsed[0]
    if not np.isfinite(values).all() or (values < 0).any():
        return None
    out = np.empty((len(values), 1 + len(cols)))
    out[:, 0] = rows.lines
    out[:, 1:] = values
    return out


def parse_osu(text, path: str, on_bad_run: str = "error", markers: tuple = (),
              machine: dict | None = None, carry_over: bool = False, benchmark_hint: str | None = None) -> OsuLog:
    """Parse OSU stdout. ``on_bad_run='skip'`` drops (and reports) truncated runs instead of failing,
    and takes launcher or scheduler text (a job killed at its time limit, an aborted step) as the end of
    the run it interrupts; ``error`` refuses both with the file and line. ``text`` is the whole
    output (str or bytes) or a binary stream: read :data:`_CHUNK` bytes at a time (:func:`_chunks`),
    each chunk's data rows parsed at once, a chunk of plain runs read at once, else its text lines one
    by one. ``markers``
    (:func:`collat.ingest.markers.compile_rules`) read the lines between runs as the metadata of the runs
    that follow (``run_markers``); an MPI version line (:func:`mpi_version`) names the implementation
    of the runs that follow (``run_mpi``). Once a marker has labelled a run, a later run preceded
    by text that matches no marker rule, and by no marker, is an error naming both (the previous
    marker would label it silently), unless ``carry_over``. A log whose header lines were cut away
    is read with the columns OSU prints for its benchmark (``benchmark_hint``, from the path pattern
    or manifest; :data:`HEADERLESS`), told apart by their number."""
    from collat.ingest import markers as mk

    benchmark = version = datatype = None
    datatype_line = 0  # where the datatype in effect was stated
    run_datatype: tuple[int, str] | None = None  # (line, datatype) stated before the file's first run
    cols: list[str] | None = None
    runs: list[np.ndarray] = []  # per run [rows, 1 + columns]: line, values...
    run_cols: list[list[str]] = []
    current: list[np.ndarray] = []  # the open run's rows, in pieces: [rows, 1 + columns]: line, values...
    skipped: list[int] = []
    aborted: dict[int, tuple[int, str]] = {}  # run index -> (line, text) of launcher text that ended it
    marker: tuple[int, dict] | None = None  # the last marker line seen: (line, metadata)
    run_marker: list = []  # per closed run: the marker in effect when it started
    mpi: tuple[int, dict] | None = None  # the last MPI version line seen: (line, {"mpi": ...})
    run_mpi: list = []  # per closed run: the version line in effect when it started
    variants: dict[int, tuple[int, str]] = {}  # run index -> (line, title) of a variant's block, not read
    in_variant = False  # inside such a block: every line up to the next OSU title is passed over
    box: list[tuple[int, str]] | None = None  # an OpenMPI help box being read: (line, text) from its dashes on
    last_line = 0
    unmatched: list[tuple[int, str]] = []  # text lines since the last run that no marker rule matched
    marker_since_run = False  # a marker matched since the last run began

    def close_run():
        nonlocal current
        if current:
            runs.append(current[0] if len(current) == 1 else np.concatenate(current))
            run_cols.append(cols)
            run_marker.append(current_marker)
            run_mpi.append(current_mpi)
        current = []

    found_markers: dict[str, dict | None] = {}  # line -> what the marker rules read from it

    def read_marker(line, lineno):
        if line in found_markers:
            return found_markers[line]
        try:
            found = mk.match(markers, line, machine)
        except ValueError as exc:  # says what it expected and what it found
            raise InputError(path, lineno, str(exc)) from None
        if len(found_markers) < _KINDS_KEPT:
            found_markers[line] = found
        return found

    def context_line(line, lineno, kind: _Text) -> bool:
        """An MPI version line (e.g. 'mpirun (Open MPI) 4.1.5') or a marker the job script printed:
        it ends the run before it and names the implementation (the metadata) of the runs that
        follow. False for any other line."""
        nonlocal mpi, marker, marker_since_run
        version_line = kind.mpi
        if version_line is not None:
            close_run()
            mpi = (lineno, {"mpi": version_line})
            return True
        found = read_marker(line, lineno) if markers else None
        if found is not None:
            close_run()
            marker = (lineno, found)
            marker_since_run = True
            return True
        return False

    current_marker = current_mpi = None

    first_size: list[float] = []  # the file's first size: a run may start again from it

    def add_rows(rows: np.ndarray, text, rising: bool = False) -> None:
        """Append data rows (line, values...) to the open run, closing it wherever the size list
        starts again (the header printed once); ``text(lineno)`` gives a row's line for errors;
        ``rising``: the rows' sizes are known to rise."""
        if rising and (not current or rows[0, 1] > current[-1][-1, 1]):  # one run, or the open one going on
            if not current:
                start_run(rows, 0, text)
            current.append(rows)
            return
        sizes = rows[:, 1]
        prev = np.empty_like(sizes)
        prev[0] = current[-1][-1, 1] if current else -np.inf
        prev[1:] = sizes[:-1]
        pos = 0
        for i in [*np.flatnonzero(sizes <= prev).tolist(), len(rows)]:
            if i > pos:
                if not current:
                    start_run(rows, pos, text)
                current.append(rows[pos:i])
            if i == len(rows):
                break
            size, last = sizes[i], current[-1][-1, 1]
            if size == current[0][0, 1] or size == first_size[0]:
                close_run()  # header printed once: the size list starts again
            else:
                raise InputError(path, int(rows[i, 0]), f"sizes in increasing order (previous size {int(last)})",
                                 text(int(rows[i, 0])))
            pos = i

    def start_run(rows: np.ndarray, pos: int, text) -> None:
        """A run starts at row ``pos``: the marker and version line in effect label it; a marker that
        would label it across text no marker rule matched is an error."""
        nonlocal current_marker, current_mpi, marker_since_run, run_datatype
        if markers and marker is not None and unmatched and not marker_since_run and not carry_over:
            texts = "; ".join(f"line {n}: {t[:60]!r}" for n, t in unmatched[:3])
            raise InputError(path, int(rows[pos, 0]), f"a marker line before this run (data.raw.markers): "
                             f"the text since the previous run matches no marker rule ({texts}), so the "
                             f"marker of line {marker[0]} would label it; add a rule for that text, or "
                             "set data.raw.marker_carry_over: true", text(int(rows[pos, 0])))
        current_marker, current_mpi = marker, mpi
        unmatched.clear()
        marker_since_run = False
        if not first_size:
            first_size.append(rows[pos, 1])
            if datatype is not None:
                run_datatype = (datatype_line, datatype)

    def data_row(lineno: int, line: str) -> None:
        """One data row read cell by cell: what a row the fast path refused is told by."""
        nonlocal cols
        cells = line.split()
        if cols is None:
            known = HEADERLESS.get(benchmark or benchmark_hint or "", {})
            found = known.get(len(cells))
            if found is not None and found[-1] == VALIDATION and cells[-1] not in _WORDS:
                found = None  # -c's last cell is a word: numbers alone are another column set
            if found is None:
                raise InputError(path, lineno, "an OSU header ('# Size ...') before the first data row (or, for "
                                 "a log without one, the benchmark named by the path pattern or manifest and "
                                 "the cells OSU prints for it: "
                                 f"{', '.join(f'{n} ({c})' for n, c in known.items()) or 'unknown'})", line)
            cols = list(found)
        if len(cells) != len(cols):
            raise InputError(path, lineno, f"{len(cols)} values ({', '.join(cols)})", line)
        values = []
        for name, cell in zip(cols, cells):
            if name == VALIDATION:
                if cell not in _WORDS:
                    raise InputError(path, lineno, f"{' or '.join(_WORDS)} in column {name!r} (OSU's -c)", cell)
                values.append(float(_WORDS[cell]))
                continue
            try:
                v = int(cell) if name in ("size", "iterations", TRANSMIT) else float(cell)
            except ValueError:
                kind = "an integer" if name in ("size", "iterations", TRANSMIT) else "a number"
                raise InputError(path, lineno, f"{kind} in column {name!r}", cell) from None
            if v < 0 or v != v:
                raise InputError(path, lineno, f"a non-negative number in column {name!r}", cell)
            if v == float("inf"):  # 'inf', or a number beyond the float range such as 1e400
                raise InputError(path, lineno, f"a finite number in column {name!r}", cell)
            values.append(v)
        add_rows(np.array([[lineno, *values]], dtype=float), lambda n: line)

    def data_rows(rows: _Rows) -> None:
        """A stretch of data lines: parsed at once when every row is clean, else line by line."""
        flush_box()
        if in_variant:  # inside a persistent or non-blocking variant's block: passed over
            skipped.extend(rows.lines.tolist())
            return
        if cols is None:  # the first row says which columns a log without a header has
            data_row(int(rows.lines[0]), rows.line(int(rows.lines[0])))
            if len(rows.lines) == 1:
                return
            cut = rows.text.index(b"\n") + 1
            rows = _Rows(rows.lines[1:], rows.text[cut:].lstrip(b"\r\n \t\f\v"),
                         None if rows.parsed is None else (rows.parsed[0][1:], rows.parsed[1], rows.parsed[2], True,
                                                           rows.parsed[4]))
        values = _values(rows, cols)
        rising = rows.parsed is not None and values is rows.parsed[0] and not rows.parsed[3]
        if values is None:
            texts = rows.text.split(b"\n")
            for lineno in rows.lines.tolist():
                data_row(lineno, texts[lineno - int(rows.lines[0])].decode().strip())
            return
        add_rows(values, rows.line, rising)

    kinds: dict[str, _Text] = {}  # a log repeats its text lines (titles, headers, banners): each read once

    def warning_line(lineno: int, line: str) -> bool:
        """True for a line of an OpenMPI help box (between two lines of dashes) or a help note
        (:data:`_HELP_NOTE`): held until the box closes, then passed over where the box is a warning
        (:data:`_WARNING`), else read as launcher text named by the box's first line."""
        nonlocal box
        if box is not None:
            if line[0] == "#" or len(box) > _BOX_LINES:  # no box after all: an OSU line, or too long for one
                flush_box()
                return False
            box.append((lineno, line))
            if len(box) > 1 and _RULE.match(line):
                flush_box()
            return True
        if _RULE.match(line):
            box = [(lineno, line)]
            return True
        if _HELP_NOTE.match(line):
            skipped.append(lineno)
            return True
        return False

    def launch_text(lineno: int, line: str) -> None:
        """Launcher or error text: an error, or with on_bad_run skip the end of the run (or of the
        variant's block) it interrupts."""
        nonlocal in_variant
        in_variant = False
        if on_bad_run != "skip":
            raise InputError(path, lineno, "OSU output, not MPI launcher or error text", line)
        if current:  # e.g. a job killed at its time limit in the middle of a run
            aborted[len(runs)] = (lineno, line)
        close_run()
        skipped.append(lineno)

    def flush_box() -> None:
        """The held box: passed over where it is a warning that closed; else its first line of words
        (the dashes where it has none) is launcher text."""
        nonlocal box
        if box is None:
            return
        held, box = box, None
        closed = len(held) > 1 and _RULE.match(held[-1][1]) is not None
        if closed and any(_WARNING.search(line) for _, line in held):
            skipped.extend(n for n, _ in held)
            return
        words = [(n, line) for n, line in held if not _RULE.match(line)]
        n, line = words[0] if words else held[0]
        skipped.extend(m for m, _ in held if m != n)
        launch_text(n, line)

    def text_line(lineno: int, raw: str) -> None:
        nonlocal benchmark, version, datatype, datatype_line, cols, in_variant
        line = raw.strip()
        if not line:
            return
        kind = kinds.get(line)
        if kind is None:
            kind = _text_kind(line)
            if len(kinds) < _KINDS_KEPT:
                kinds[line] = kind
        if warning_line(lineno, line):
            return
        if in_variant and kind.title is None:
            if kind.launch:  # the block ends as any run does: launcher text is never passed over
                in_variant = False
            else:  # a marker or a version line still names the runs that follow
                context_line(line, lineno, kind)
                skipped.append(lineno)
                return
        if line[0] == "#":
            if kind.title is not None:
                title, found_version = kind.title
                name = BENCHMARKS.get(title)
                in_variant = False
                if name is None and re.search(r"\b(persistent|non-blocking|nonblocking)\b", title):
                    # MPI_Bcast_init / MPI_Ibcast run through OpenMPI's coll/libnbc, not the coll/tuned
                    # algorithms this tool models: pooling them with osu_bcast would mislead every fit
                    if on_bad_run != "skip":
                        raise InputError(path, lineno, "a blocking collective (osu_bcast, osu_reduce): persistent "
                                         "and non-blocking variants run other code paths (OpenMPI: its non-blocking "
                                         "collectives, coll/libnbc by default, not the coll/tuned algorithms "
                                         "modelled here) and are not read (with on_bad_run: skip, their runs are "
                                         "passed over and reported)", line)
                    # skip: the block up to the next OSU title is one run of the file, reported, not read
                    close_run()
                    variants[len(runs)] = (lineno, f"{line.lstrip('#').strip()}: a persistent or non-blocking variant "
                                           "(OpenMPI's coll/libnbc, not the coll/tuned algorithms modelled), not read")
                    runs.append(np.zeros((0, 2)))
                    run_cols.append(None)
                    run_marker.append(marker)
                    run_mpi.append(mpi)
                    in_variant = True
                    skipped.append(lineno)
                    return
                if name is None:
                    raise InputError(path, lineno, f"an OSU benchmark this tool reads ({', '.join(BENCHMARKS.values())})", line)
                if benchmark is not None and name != benchmark:
                    raise InputError(path, lineno, f"the same benchmark as earlier in the file ({benchmark})", line)
                benchmark, version = name, found_version or version
                close_run()
                return
            if kind.datatype is not None:
                if run_datatype is not None and kind.datatype != run_datatype[1]:
                    # OSU's -T all: the same sizes in bytes, other elements (a reduce adds them otherwise)
                    raise InputError(path, lineno, f"one datatype per log (OSU's -T): runs of {run_datatype[1]} "
                                     f"(line {run_datatype[0]}) and of another datatype would be pooled as repeats "
                                     "of one configuration", line)
                datatype, datatype_line = kind.datatype, lineno
                return
            if kind.header:
                close_run()
                cols = parse_header(line, path, lineno)
                return
            context_line(line, lineno, kind)
            return  # a version line, a marker or another OSU comment
        if kind.data:
            data_row(lineno, line)
            return
        if context_line(line, lineno, kind):
            skipped.append(lineno)
            return
        if cols is not None and kind.cells == len(cols) > 1 and kind.number_cells:
            # a data row whose size has letters in it ('2x', 'O4'); a marker such as 'BROADCAST 1' has no digit
            raise InputError(path, lineno, "an integer in column 'size'", line.split()[0])
        if kind.launch:
            launch_text(lineno, line)
            return
        skipped.append(lineno)  # a banner or marker line: it cannot be data
        if markers:
            unmatched.append((lineno, line))

    # text line -> (what it does in a chunk read at once: _SKIP, _CLOSE, ...; its kind), for plain_state
    plain: dict[str, tuple[int, _Text]] = {}
    plain_state = None  # the (benchmark, columns) those codes hold for

    def plain_code(text: str, kind: _Text) -> int:
        """What a text line does where the parse is plain (no markers, no variant, the columns and
        benchmark known): _SKIP a banner, _CLOSE a title of the same benchmark or the same header,
        _NOTE a datatype or another OSU comment, _OTHER anything else (read line by line)."""
        if text[0] == "#":
            if kind.title is not None:
                return _CLOSE if BENCHMARKS.get(kind.title[0]) == benchmark else _OTHER
            if kind.datatype is not None:
                return _NOTE
            if kind.header:
                try:
                    return _CLOSE if parse_header(text, path, 0) == cols else _OTHER
                except InputError:
                    return _OTHER
            return _NOTE if kind.mpi is None else _OTHER
        if kind.data or kind.mpi is not None or kind.launch or (kind.cells == len(cols) > 1 and kind.number_cells):
            return _OTHER
        return _SKIP

    def last_stated(distinct: list[str], index: np.ndarray, of) -> str | None:
        """What the last text line that states one states, ``of(kind)`` (a version, a datatype); the
        lines as their ``distinct`` values and, per line, its ``index`` among them."""
        found = [i for i, line in enumerate(distinct) if of(plain[line][1]) is not None]
        if len(found) <= 1:  # the common case, without a pass over the lines
            return of(plain[distinct[found[0]]][1]) if found else None
        last = int(index[np.isin(index, found)][-1])
        return of(plain[distinct[last]][1])

    def at_once(chunk: _Chunk) -> bool:
        """Read a chunk's runs with a few array operations instead of line by line, where that is
        plain: every data row clean and of the open columns, every text line a banner, a comment, or
        a title or header that repeats the open one, and the sizes rising within each run. False
        (nothing changed) where anything else is in the chunk: it is then read line by line."""
        nonlocal benchmark, version, datatype, current, current_marker, current_mpi, plain_state
        if chunk.parsed is None or markers or in_variant or box is not None or cols is None \
                or benchmark is None or not first_size:
            return False
        values, integer, bad, _, words = chunk.parsed
        if values.shape[1] != 1 + len(cols) or bad[-1] or not all(integer[i] for i in _integer_columns(tuple(cols))) \
                or not _words_fit(words, cols):
            return False
        if plain_state != (benchmark, tuple(cols)) or len(plain) > _KINDS_KEPT:
            plain.clear()
            plain_state = (benchmark, tuple(cols))
        distinct, index = chunk.texts()
        for text in distinct:
            if text not in plain:
                kind = kinds.get(text) or _text_kind(text)
                plain[text] = (plain_code(text, kind), kind)
        codes = np.array([plain[text][0] for text in distinct], dtype=np.int8)[index]
        if (codes == _OTHER).any():
            return False
        if any(plain[text][1].datatype not in (None, datatype) for text in distinct):
            return False  # another datatype stated: read line by line, which refuses it
        before = chunk.before
        closes = np.unique(before[codes == _CLOSE])  # a run ends before these rows (len(values): at the end)
        sizes = values[:, 1]
        falls = np.flatnonzero(sizes[1:] <= sizes[:-1]) + 1
        if not np.isin(falls, closes).all():  # a size list starting again without a header
            return False
        goes_on = bool(current) and not (len(closes) and closes[0] == 0)  # the open run goes on into the chunk
        if goes_on and sizes[0] <= current[-1][-1, 1]:
            return False
        new = closes[closes < len(values)].tolist()
        if not current and (not new or new[0] != 0):
            new.insert(0, 0)
        if goes_on:
            current.append(values[:new[0] if new else len(values)])
        if new or (len(closes) and closes[-1] == len(values)):
            close_run()
        bounds = new + [len(values)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            runs.append(values[a:b])
        if new:
            run_cols.extend([cols] * len(new))
            run_marker.extend([marker] * len(new))
            run_mpi.extend([mpi] * len(new))
            if not (len(closes) and closes[-1] == len(values)):  # the last run stays open
                current = [runs.pop()]
                run_cols.pop(), run_marker.pop(), run_mpi.pop()
                current_marker, current_mpi = marker, mpi
        skipped.extend((chunk.others[codes == _SKIP] + (chunk.lineno + 1)).tolist())
        version = last_stated(distinct, index, lambda kind: None if kind.title is None else kind.title[1]) or version
        datatype = last_stated(distinct, index, lambda kind: kind.datatype) or datatype
        return True

    if isinstance(text, str):
        text = text.encode("utf-8")
    stream = io.BytesIO(text) if isinstance(text, (bytes, bytearray)) else text
    first_text = last_raw = ""
    for chunk in _chunks(stream):
        if not isinstance(chunk, _Chunk):
            last_line, last_raw = chunk
            break
        if chunk.lineno > 0 and at_once(chunk):
            continue
        for item in chunk.items():
            if isinstance(item, _Rows):
                if not first_text and item.lines[0] == 1:
                    first_text = item.line(1)[:80]
                data_rows(item)
            else:
                if item[0] == 1:
                    first_text = item[1].strip()[:80]
                text_line(*item)
    flush_box()
    if current and not last_raw.endswith(("\n", "\r")) and current[-1][-1, 0] == last_line:
        # OSU ends every row with a newline: a file ending inside a data row was cut while writing
        if on_bad_run != "skip":
            raise InputError(path, last_line, "a complete last row (the file ends inside it, without a newline: "
                             "cut while being written?)", last_raw.strip())
        current[-1] = current[-1][:-1]
        if not len(current[-1]):
            current.pop()
        skipped.append(last_line)
    close_run()

    if variants and len(variants) == len(runs):
        line, reason = variants[min(variants)]
        raise InputError(path, line, "runs of a blocking collective (osu_bcast, osu_reduce) or point-to-point "
                         "benchmark", reason)
    if benchmark is None and cols is None:
        raise InputError(path, None if last_line == 0 else 1,
                         "an OSU header ('# OSU MPI ... Test' and '# Size ...')",
                         "an empty file" if last_line == 0 else first_text)
    if not runs:
        raise InputError(path, last_line, "data rows after the OSU header", "end of file")

    # the runs as arrays of all of them at once, not a loop per run (a large log holds 10^5 runs)
    lengths = np.array([len(run) for run in runs])
    real = np.ones(len(runs), bool)
    real[list(variants)] = False
    skipped_runs = [{"run": i, "line": line, "reason": reason} for i, (line, reason) in variants.items()]
    keep = real.copy()
    for i in np.flatnonzero(keep).tolist():  # a run a size of spoils: OSU's -c failed, or -D moved other bytes
        for column, (spoilt, expected, found, reason) in _SPOILERS.items():
            if column not in run_cols[i]:
                continue
            run = runs[i]
            value = run[:, 1 + run_cols[i].index(column)]
            bad = np.flatnonzero(spoilt(value, run[:, 1]))
            if not len(bad):
                continue
            line, size, v = int(run[bad[0], 0]), int(run[bad[0], 1]), int(value[bad[0]])
            if on_bad_run != "skip":
                raise InputError(path, line, f"{expected} (with on_bad_run: skip, such a run is passed over and "
                                 "reported)", found.format(size=size, value=v))
            skipped_runs.append({"run": i, "line": int(run[0, 0]),
                                 "reason": f"{reason.format(size=size, value=v)} (line {line})"})
            keep[i] = False
            break
    if not keep.any():  # every run of the file spoilt (skip): nothing to read
        first = min(skipped_runs, key=lambda r: r["run"])
        raise InputError(path, first["line"], "a run that can be read", first["reason"])
    full = runs[int(np.argmax(np.where(keep, lengths, -1)))][:, 1].astype(np.int64)  # the longest run's sizes
    for i in np.flatnonzero(keep & (lengths < len(full))).tolist():  # a short run that stops where others go on
        run = runs[i]
        sizes = run[:, 1].astype(np.int64)
        if not np.array_equal(full[: len(run)], sizes):
            continue
        if on_bad_run != "skip":
            raise InputError(path, int(run[-1][0]),
                             f"a complete run up to size {full[-1]} (run {i} stops at size {sizes[-1]}: truncated)")
        reason = f"truncated at size {sizes[-1]}"
        if i in aborted:
            reason += f", then line {aborted[i][0]}: {aborted[i][1][:100]}"
        skipped_runs.append({"run": i, "line": int(run[0][0]), "reason": reason})
        keep[i] = False
    skipped_runs.sort(key=lambda r: r["run"])
    kept = np.flatnonzero(keep).tolist()  # a kept run's new index is its place here
    kept_markers = {n: run_marker[i] for n, i in enumerate(kept) if run_marker[i] is not None}
    kept_mpi = {n: run_mpi[i] for n, i in enumerate(kept) if run_mpi[i] is not None}
    by_columns: dict[tuple, list[int]] = {}  # one frame per column set, not per run
    for n, i in enumerate(kept):
        by_columns.setdefault(tuple(run_cols[i]), []).append(n)
    frames, silent = [], []  # silent: (kept index, first line) of each run whose every latency is 0
    for columns, members in by_columns.items():
        block = np.concatenate([runs[kept[n]] for n in members])
        frame = {name: block[:, j].astype(np.int64 if name in ("line", "size", "iterations") else np.float64)
                 for j, name in enumerate(["line", *columns]) if name not in _DROPPED}
        del block
        group_lengths = lengths[[kept[n] for n in members]]
        index = np.array(members, dtype=np.int64)
        frame["run"] = np.repeat(index, group_lengths)
        latency = [frame[name] for name in columns if name in ("avg", "min", "max")]
        if latency:
            starts = np.concatenate(([0], np.cumsum(group_lengths)[:-1]))
            zero = np.add.reduceat(np.any([v != 0 for v in latency], axis=0), starts) == 0
            silent += [(int(i), int(frame["line"][s])) for i, s in zip(index[zero], starts[zero])]
        frames.append(pd.DataFrame(frame, copy=False))
    if silent:
        new_index, line = min(silent)
        raise InputError(path, line, f"latencies above 0 (every latency of run {kept[new_index]} is 0)")
    del runs, by_columns
    data = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True).sort_values("line", ignore_index=True)
    return OsuLog(path, benchmark, version, datatype, data, skipped, skipped_runs, kept_markers, kept_mpi)


def read_osu(path, on_bad_run: str = "error", markers: tuple = (), machine: dict | None = None,
             carry_over: bool = False, benchmark: str | None = None) -> OsuLog:
    """Parse the OSU log at ``path``, read a block of lines at a time."""
    try:
        with open_log(path) as fh:
            return parse_osu(fh, str(path), on_bad_run=on_bad_run, markers=markers, machine=machine,
                             carry_over=carry_over, benchmark_hint=benchmark)
    except UnicodeDecodeError as exc:
        raise InputError(path, None, "a UTF-8 text file of OSU output",
                         f"undecodable byte {exc.object[exc.start:exc.start + 1]!r}") from None
    except _decompression_errors() as exc:  # a compressed log that is corrupt or cut; any other OSError as it is
        if not _compressed(path):
            raise
        raise InputError(path, None, "a compressed log that decompresses whole (gzip, bzip2, xz)",
                         str(exc) or type(exc).__name__) from None
