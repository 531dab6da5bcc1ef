"""Runs that ran one algorithm whatever their logs name (collat.model.forcing), by hand."""

import pandas as pd
import pytest

from collat.model.forcing import forced_separation, one_algorithm_message, one_algorithm_ran

SIZES = [2**k for k in range(12)]


def frames(latency: dict[int, float], priced: dict[int, float], outlier_algorithm=None):
    """bcast under map-by core at P = 8, twelve sizes: each algorithm's measured avg and price."""
    measured = pd.DataFrame([
        {"operation": "bcast", "algorithm": a, "mapping": "core", "P": 8, "size": m, "avg": v,
         "source": f"bcast/core/alg{a}/np8.txt", "outlier": a == outlier_algorithm}
        for a, v in latency.items() for m in SIZES])
    price = pd.DataFrame([{"operation": "bcast", "algorithm": a, "mapping": "core", "P": 8, "size": m,
                           "predicted": v} for a, v in priced.items() for m in SIZES])
    return measured, price


# the default runs the binomial tree here; the linear tree is priced 5x dearer
PRICED = {0: 2.0, 1: 10.0, 6: 2.0}


def test_runs_that_differ_where_the_model_says_they_should_pass():
    measured, priced = frames({0: 3.0, 1: 9.0, 6: 3.0}, PRICED)
    sep = forced_separation(measured, priced)
    # pairs (0, 1) and (1, 6) are priced 5x apart at 12 sizes each; (0, 6) alike, not counted
    assert sep.to_dict("records") == [{"operation": "bcast", "mapping": "core", "pairs": 2, "cells": 24,
                                       "median_ratio": pytest.approx(3.0), "source_a": "bcast/core/alg0/np8.txt",
                                       "source_b": "bcast/core/alg1/np8.txt"}]
    assert one_algorithm_ran(sep).empty


def test_runs_within_their_noise_of_each_other_are_one_algorithm():
    measured, priced = frames({0: 3.0, 1: 3.3, 6: 3.0}, PRICED)  # what a missing use_dynamic_rules records
    sep = forced_separation(measured, priced)
    assert sep["median_ratio"].tolist() == [pytest.approx(1.1)] and sep["cells"].tolist() == [24]
    flagged = one_algorithm_ran(sep)
    assert len(flagged) == 1
    where, expected, found = one_algorithm_message(flagged.iloc[0])
    assert where == "bcast/core/alg0/np8.txt, bcast/core/alg1/np8.txt"
    assert expected.startswith("bcast runs under map-by core that ran the algorithms they name (the openmpi mode "
                               "prices 2 pairs of them at least 2x apart in 24 measured cells)")
    assert found.startswith("within 1.10x of each other there (median): without --mca coll_tuned_use_dynamic_rules 1 "
                            "OpenMPI runs its default whatever coll_tuned_bcast_algorithm says")
    # too few cells for a verdict
    assert one_algorithm_ran(sep, min_cells=25).empty


def test_outliers_and_alike_pairs_are_left_out():
    measured, priced = frames({0: 3.0, 1: 3.3, 6: 3.0}, PRICED, outlier_algorithm=1)
    assert forced_separation(measured, priced).empty  # the linear runs flagged: no pair priced apart is left
    measured, priced = frames({0: 3.0, 1: 3.3, 6: 3.0}, {0: 2.0, 1: 3.0, 6: 2.0})  # nothing priced 2x apart
    assert forced_separation(measured, priced).empty
