"""Copy (from STUDY_DATA_MIRROR) or download one published file and verify its SHA-256."""

import os

from collat.ingest.fetch import fetch
from collat.runner import setup_log

log = setup_log(snakemake.log)
origin = fetch(
    name=snakemake.wildcards.file,
    dest=snakemake.output[0],
    expected_sha256=snakemake.params.sha256,
    url=snakemake.params.url,
    mirror=os.environ.get("STUDY_DATA_MIRROR") or snakemake.config["data"]["published"]["mirror"],
)
log.info("%s: from %s, SHA-256 %s verified", snakemake.wildcards.file, origin, snakemake.params.sha256)
