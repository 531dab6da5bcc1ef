"""What the workflow scripts share: the one-line user errors a failed run says last, the host's
measuring lock."""

import os
import sys
import time

from collat.runner import user_errors


def test_user_errors_are_the_one_lines_of_logs_written_since_the_run_began(tmp_path):
    old = tmp_path / "ingest" / "old.log"
    old.parent.mkdir()
    old.write_text("2026-01-01 00:00:00,000 ERROR error: a.txt: expected x\n")
    os.utime(old, (time.time() - 100, time.time() - 100))  # an earlier run's
    new = tmp_path / "ingest" / "raw" / "b.txt.log"
    new.parent.mkdir()
    new.write_text("2026-01-01 00:00:00,000 INFO read\n2026-01-01 00:00:01,000 ERROR error: b.txt, line 3: expected y\n"
                   "2026-01-01 00:00:01,000 ERROR failed\nTraceback (most recent call last):\n")
    assert user_errors(tmp_path, time.time() - 10) == ["b.txt, line 3: expected y"]
    assert user_errors(tmp_path / "absent", 0) == []


def test_the_lines_said_last_come_after_everything_else_the_process_prints():
    """Snakemake prints its own tail after the workflow's onerror hook: lines handed to say_last are
    printed at exit, after it, and the exit status is kept."""
    import subprocess

    code = ("import sys; from collat.runner import say_last\n"
            "say_last(['a.txt, line 3: expected y']); say_last([])\n"
            "print('WorkflowError:', file=sys.stderr); sys.exit(1)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 1 and res.stderr.splitlines() == ["WorkflowError:", "a.txt, line 3: expected y"]


PROBE = ("import fcntl, sys; fh = open(sys.argv[1], 'a')\n"
         "try:\n    fcntl.flock(fh, (fcntl.LOCK_EX if sys.argv[2] == 'x' else fcntl.LOCK_SH) | fcntl.LOCK_NB); print('got')\n"
         "except BlockingIOError:\n    print('waits')")


def probe(lock, kind):
    import subprocess

    return subprocess.run([sys.executable, "-c", PROBE, str(lock), kind], capture_output=True, text=True).stdout.strip()


def test_a_launch_runs_alone_and_ingests_run_side_by_side(tmp_path):
    """The host's measuring lock: while a launch holds it, another launch and an ingest wait; while
    an ingest holds it, another ingest runs and a launch waits; once let go, a launch runs."""
    from collat.runner import measuring

    lock = tmp_path / "measure.lock"
    with measuring(exclusive=True, lock=lock):
        assert (probe(lock, "x"), probe(lock, "s")) == ("waits", "waits")
    with measuring(exclusive=False, lock=lock):
        assert (probe(lock, "x"), probe(lock, "s")) == ("waits", "got")
    assert probe(lock, "x") == "got"


def test_a_job_log_echoes_only_the_records_it_is_asked_to(tmp_path, capsys):
    import logging

    from collat.runner import setup_log

    log = setup_log([tmp_path / "job.log"], echo=logging.WARNING)
    log.info("quality record")
    log.warning("skipped, no readable run")
    for h in log.handlers:
        h.flush()
    assert capsys.readouterr().err == "skipped, no readable run\n"
    written = (tmp_path / "job.log").read_text()
    assert "INFO quality record" in written and "WARNING skipped, no readable run" in written
