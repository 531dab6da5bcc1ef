"""What OpenMPI version the logs say ran them, against the facts the model applies
(collat.model.shapes.openmpi.check_mpi_version)."""

import pandas as pd
import pytest

from collat import InputError
from collat.model.shapes.openmpi import check_mpi_version


def runs(*named):
    return pd.DataFrame({"source": [f"bcast/core/alg{i}/np8.txt" for i in range(len(named))],
                         "mpi": pd.array(list(named), dtype="string")})


@pytest.mark.parametrize("named", [
    ("openmpi-4.1.5", "openmpi-4.1.6"),  # any 4.1 release: the same trees and fixed rules
    ("openmpi-4.1.4", None),  # a log that names nothing passes
    (None, None),
    ("cluster-a", "openmpi-4.1"),  # a label of another form says nothing
])
def test_runs_of_the_version_whose_facts_apply_pass(named):
    check_mpi_version(runs(*named), "4.1")


@pytest.mark.parametrize("named,source", [
    (("openmpi-4.1.5", "openmpi-5.0.3"), "bcast/core/alg1/np8.txt"),
    (("OpenMPI-4.0.7",), "bcast/core/alg0/np8.txt"),  # 4.0 has other fixed rules
    (("mpich-4.0.2",), "bcast/core/alg0/np8.txt"),
    ((None, "intelmpi-2021.6"), "bcast/core/alg1/np8.txt"),
])
def test_runs_another_mpi_made_are_one_line_naming_a_log(named, source):
    with pytest.raises(InputError) as err:
        check_mpi_version(runs(*named), "4.1")
    found = next(n for n in named if n and not n.startswith("openmpi-4.1"))
    assert str(err.value) == (
        f"{source}: expected runs of OpenMPI 4.1, whose trees and fixed decision rules the model applies (config "
        "model.openmpi.version), or config model.openmpi.trees and model.openmpi.default_rules stated for the MPI "
        f"that ran them, found '{found}'")


def test_a_config_that_states_the_trees_and_rules_is_not_checked():
    check_mpi_version(runs("openmpi-5.0.3"), None)
