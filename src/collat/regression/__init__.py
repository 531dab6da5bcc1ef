"""The regression stage: segmented regressions of latency against P (rule regression_fit)."""
