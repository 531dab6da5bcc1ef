"""The evaluate stage: the study's R² tables and the summary (rules evaluate_tables, evaluate_summary)."""
