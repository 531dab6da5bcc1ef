"""The partitioned stage: MPI-4 partitioned-communication gain and its figures (rules partitioned_gillis,
partitioned_gain, partitioned_figures)."""
