"""The pt2pt stage: Hockney fits per channel and their figures (rules pt2pt_hockney, pt2pt_figures)."""
