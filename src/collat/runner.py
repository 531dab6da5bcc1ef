"""Small helpers for the workflow scripts: logging to the rule's log file, and this host's
measuring lock."""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path


def setup_log(log_paths, echo: int = logging.INFO) -> logging.Logger:
    """Send this job's log records to its Snakemake log file, and those of level ``echo`` and above to
    stderr too (a job run once per raw log echoes its warnings only: its records stay in its file)."""
    logger = logging.getLogger("collat")
    logger.setLevel(logging.INFO)
    logger.handlers.clear()
    for path in list(log_paths)[:1]:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fh = logging.FileHandler(path, mode="w")
        fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(fh)
    screen = logging.StreamHandler()
    screen.setLevel(echo)
    logger.addHandler(screen)

    def log_uncaught(kind, value, tb):
        from collat import UserError

        if isinstance(value, UserError):  # the user's mistake: its one line, in the log and on stderr
            logger.error("error: %s", value)
        else:  # a bug: the traceback also lands in the rule's log file
            logger.error("failed", exc_info=(kind, value, tb))

    sys.excepthook = log_uncaught
    return logger


def user_errors(log_dir, since: float) -> list[str]:
    """The one-line user errors (:func:`setup_log`'s "error: ..." records) of the rule logs under
    ``log_dir`` written since ``since`` (seconds since the epoch): what a failed run says last."""
    out = []
    for path in sorted(Path(log_dir).rglob("*.log")) if Path(log_dir).is_dir() else []:
        if path.stat().st_mtime < since:
            continue
        for line in path.read_text(errors="replace").splitlines():
            _, sep, message = line.partition(" ERROR error: ")
            if sep and message not in out:
                out.append(message)
    return out


def say_last(lines: list[str]) -> None:
    """Print ``lines`` to stderr as this process exits. Snakemake ends a failed run with its own
    tail (the log's path, the run time, "WorkflowError: At least one job did not complete
    successfully."); printed after it, a user's mistake is the last thing the user reads."""
    if lines:
        atexit.register(_print_lines, list(lines))


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        print(line, file=sys.stderr, flush=True)


_TASK = None


def _call(i: int):
    return _TASK(i)


def fork_map(task, n: int, processes: int = 1) -> list:
    """``[task(i) for i in range(n)]`` in up to ``processes`` forked workers, in order. The workers
    inherit ``task`` (closures over costs and frames included): only ``i`` and the results travel."""
    global _TASK
    if processes <= 1 or n <= 1:
        return [task(i) for i in range(n)]
    import multiprocessing

    _TASK = task
    try:
        with multiprocessing.get_context("fork").Pool(min(processes, n)) as pool:
            return pool.map(_call, range(n), chunksize=1)
    finally:
        _TASK = None


@contextmanager
def measuring(exclusive: bool, lock: str | Path | None = None):
    """Hold this host's measuring lock while the block runs: exclusively for an OSU launch (stage
    measure), shared for a job that may run while a campaign measures (the ingest of a log that
    is done).

    ``snakemake --cores 16`` starts every ready job: measure jobs side by side, and the ingest of
    the first logs beside the next launch, whose ranks would then share cores and memory with
    them: every timing off, silently. With this lock a launch waits until no other launch or
    ingest runs on the host, and holds them off until it ends; ingests still run side by side.
    The lock is a file of this user's in the host's temporary directory (``flock``): SLURM jobs
    on other nodes do not wait for each other."""
    path = Path(lock) if lock is not None else Path(tempfile.gettempdir()) / f"collat-measure-{os.getuid()}.lock"
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
