"""Runs that ran one algorithm, or one placement, whatever their logs name (collat.model.forcing), by hand."""

import pandas as pd
import pytest

from collat import InputError
from collat.model.forcing import (check_placements, forced_separation, measured_as_one, one_algorithm_message,
                                  one_placement_message, placement_separation)

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
    assert measured_as_one(sep).empty


def test_runs_within_their_noise_of_each_other_are_one_algorithm():
    measured, priced = frames({0: 3.0, 1: 3.3, 6: 3.0}, PRICED)  # what a missing use_dynamic_rules records
    sep = forced_separation(measured, priced)
    assert sep["median_ratio"].tolist() == [pytest.approx(1.1)] and sep["cells"].tolist() == [24]
    flagged = measured_as_one(sep)
    assert len(flagged) == 1
    where, expected, found = one_algorithm_message(flagged.iloc[0])
    assert where == "bcast/core/alg0/np8.txt, bcast/core/alg1/np8.txt"
    assert expected.startswith("bcast runs under map-by core that ran the algorithms they name (the openmpi mode "
                               "prices 2 pairs of them at least 2x apart in 24 measured cells)")
    assert found.startswith("within 1.10x of each other there (median): without --mca coll_tuned_use_dynamic_rules 1 "
                            "OpenMPI runs its default whatever coll_tuned_bcast_algorithm says")
    # too few cells for a verdict
    assert measured_as_one(sep, min_cells=25).empty


def test_outliers_and_alike_pairs_are_left_out():
    measured, priced = frames({0: 3.0, 1: 3.3, 6: 3.0}, PRICED, outlier_algorithm=1)
    assert forced_separation(measured, priced).empty  # the linear runs flagged: no pair priced apart is left
    measured, priced = frames({0: 3.0, 1: 3.3, 6: 3.0}, {0: 2.0, 1: 3.0, 6: 2.0})  # nothing priced 2x apart
    assert forced_separation(measured, priced).empty


def placed(latency: dict[str, float], priced: dict[str, float], algorithms=(0, 6)):
    """bcast of ``algorithms`` at P = 8, twelve sizes, under each mapping: measured avg and price."""
    measured = pd.DataFrame([
        {"operation": "bcast", "algorithm": a, "mapping": mp, "P": 8, "size": m, "avg": v,
         "source": f"bcast/{mp}/alg{a}/np8.txt", "outlier": False}
        for a in algorithms for mp, v in latency.items() for m in SIZES])
    price = pd.DataFrame([{"operation": "bcast", "algorithm": a, "mapping": mp, "P": 8, "size": m, "predicted": v}
                          for a in algorithms for mp, v in priced.items() for m in SIZES])
    return measured, price


# one node against two: the node link priced 3x dearer; two sockets of one node priced as two nodes
PLACED = {"core": 2.0, "node": 6.0, "socket": 6.0}


def test_mappings_that_differ_where_the_model_says_they_should_pass():
    measured, priced = placed({"core": 3.0, "node": 9.0, "socket": 9.0}, PLACED)
    sep = placement_separation(measured, priced)
    # core against node and against socket: priced 3x apart, 2 algorithms x 12 sizes each; node
    # against socket priced alike, not counted
    assert sep[["mapping_a", "mapping_b", "algorithms", "cells"]].values.tolist() == [["core", "node", 2, 24],
                                                                                     ["core", "socket", 2, 24]]
    assert sep["median_ratio"].tolist() == [pytest.approx(3.0)] * 2
    assert measured_as_one(sep).empty and check_placements(measured, priced).equals(sep)


def test_one_placement_under_two_names_is_refused_and_the_other_pair_is_not_pooled_with_it():
    # the node runs made within one node: they measure as the core runs, 1.1x, while socket stays 3x
    measured, priced = placed({"core": 3.0, "node": 3.3, "socket": 9.0}, PLACED)
    sep = placement_separation(measured, priced)
    flagged = measured_as_one(sep)
    assert flagged[["mapping_a", "mapping_b"]].values.tolist() == [["core", "node"]]
    assert flagged["median_ratio"].tolist() == [pytest.approx(1.1)]
    where, expected, found = one_placement_message(flagged.iloc[0])
    assert where == "bcast/core/alg0/np8.txt, bcast/node/alg0/np8.txt"
    assert expected == ("bcast runs under map-by core and map-by node placed as they name (the openmpi mode prices "
                        "the two placements of 2 algorithms at least 2x apart in 24 measured cells)")
    assert found.startswith("within 1.10x of each other there (median): one placement ran under both names")
    with pytest.raises(InputError, match="quality.placement_check: false"):
        check_placements(measured, priced, name=lambda s: f"raw/{s}")
    assert len(check_placements(measured, priced, stop=False)) == 2  # the key false: reported, not refused
    # one algorithm of 12 cells: too few for a verdict
    measured, priced = placed({"core": 3.0, "node": 3.3}, PLACED, algorithms=(6,))
    assert measured_as_one(placement_separation(measured, priced)).empty
