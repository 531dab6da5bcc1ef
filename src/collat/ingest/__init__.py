"""The ingest stage: raw OSU logs and published tables into the tidy tables (rules fetch_published,
ingest_published, ingest_raw, tidy)."""
