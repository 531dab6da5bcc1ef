"""The selection stage: the algorithm choice, its regret, the rules file and their figures (rules selection,
selection_what_if, selection_figures)."""
