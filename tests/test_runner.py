"""What the workflow scripts share: the one-line user errors a failed run says last."""

import os
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
