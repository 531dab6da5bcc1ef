"""Run one accepted launch with OSU and write its raw log (the launcher's version line, then OSU's
stdout and stderr) into data.raw.dir; nothing is written when the run fails (the log's last lines
say why)."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from collat import UserError
from collat.plan.jobs import MeasureOptions, command, in_allocation, rankfile, version_line
from collat.runner import measuring, setup_log

log = setup_log(snakemake.log)
p = snakemake.params
launch, out = p.launch, Path(snakemake.output[0])
opts = MeasureOptions.from_config(p.measure)
out.parent.mkdir(parents=True, exist_ok=True)
with tempfile.TemporaryDirectory() as tmp:
    rf = None
    if launch["kind"] != "collective" and opts.bind:
        rf = os.path.join(tmp, "rankfile")
        try:
            Path(rf).write_text(rankfile(p.machine, launch, in_allocation(os.environ)))
        except ValueError as exc:
            raise UserError(f"{out}: {exc}") from None
    words = command(launch, p.machine, opts, rf, p.trees)
    log.info("%s", " ".join(words))
    if shutil.which(words[0]) is None:
        raise UserError(f"config key measure.launcher: {words[0]} not found on PATH for {out}")
    part = Path(tmp) / "log"
    version = subprocess.run([words[0], "--version"], capture_output=True, text=True, timeout=120)
    with open(part, "w") as fh, measuring(exclusive=True):  # alone on this host: no launch, no ingest beside
        named = version_line(version.stdout + version.stderr)  # which MPI ran it, above OSU's output
        fh.write(f"{named}\n" if named else "")
        fh.flush()
        done = subprocess.run(words, stdout=fh, stderr=subprocess.STDOUT)
    text = part.read_text(errors="replace")
    if done.returncode != 0:
        tail = " | ".join(text.strip().splitlines()[-3:])
        raise UserError(f"{out}: {words[0]} exited with {done.returncode} running {launch['kind']} launch "
                        f"{' '.join(words)}; its output ends: {tail}")
    tmp_out = out.with_name(f".{out.name}.part")
    tmp_out.write_text(text)
    os.replace(tmp_out, out)
log.info("%s: %d lines", out, text.count("\n"))
