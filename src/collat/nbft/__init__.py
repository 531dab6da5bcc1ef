"""The nbft stage: NBFT lines and parallelisation factors, and their figures (rules nbft_gamma, nbft_figures)."""
