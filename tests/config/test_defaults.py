"""What a config may leave out: the MPI version's facts from the package, the channels from the machine."""

import pytest

from collat.config.defaults import complete, machine_channels, openmpi_facts, stages_without_input, unpinned_channel

EPYC = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 64, "cores_per_l3": 4}


def test_the_channels_a_machine_has():
    assert machine_channels(EPYC) == ["cache", "core", "socket", "node"]
    # one node, one socket, one L3 for every 16 cores: ranks share the L3 or nothing else
    assert machine_channels({"nodes": 1, "sockets_per_node": 1, "cores_per_socket": 16, "cores_per_l3": 16}) == \
        ["cache"]
    # a socket per L3 of one core each, two nodes
    assert machine_channels({"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 12, "cores_per_l3": 1}) == \
        ["core", "socket", "node"]


def test_two_unpinned_ranks_of_a_socket_talk_over_its_l3_only_where_it_has_one():
    assert unpinned_channel(EPYC) == "core"  # 16 L3s per socket
    one_l3 = {"nodes": 1, "sockets_per_node": 1, "cores_per_socket": 16, "cores_per_l3": 16}
    assert unpinned_channel(one_l3) == "cache"
    config = complete({"machine": one_l3, "model": {"openmpi": {}}})
    assert config["model"]["unpinned_channel"] in config["channels"] == ["cache"]  # a single-L3 node's only channel
    # a one-L3 socket whose logs call its pairs core (the THIN config): the config's word
    thin = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 12, "cores_per_l3": 12}
    assert unpinned_channel(thin, ["core", "socket", "node"]) == "core"
    assert complete({"machine": thin, "channels": ["core", "socket", "node"],
                     "model": {"openmpi": {}}})["model"]["unpinned_channel"] == "core"
    stated = complete({"machine": one_l3, "model": {"openmpi": {}, "unpinned_channel": "core"}})
    assert stated["model"]["unpinned_channel"] == "core"  # a stated value stays (and is checked against channels)


def test_a_config_without_the_mpi_facts_gets_openmpi_4_1s():
    config = complete({"machine": EPYC, "model": {"openmpi": {"nbft_target": "max"}}})
    facts = openmpi_facts("4.1")
    assert config["algorithms"] == facts["algorithms"] and len(config["algorithms"]["bcast"]) == 10
    assert config["model"]["openmpi"]["trees"] == facts["trees"]
    assert config["model"]["openmpi"]["default_rules"]["reduce"][0] == \
        {"P_below": 4, "sizes": [[8, 7], [16, 4], [32, 3], [262144, 1], [524288, 3], [1048576, 2], [None, 3]]}
    assert config["channels"] == ["cache", "core", "socket", "node"]


def test_fewer_algorithms_get_the_trees_of_those_only_and_a_stated_fact_stays():
    algorithms = {"bcast": [{"id": 0, "name": "default"}, {"id": 6, "name": "binomial"}],
                  "reduce": [{"id": 0, "name": "default"}]}
    config = complete({"machine": EPYC, "channels": ["core"], "algorithms": algorithms,
                       "model": {"openmpi": {"default_rules": {}}}})
    assert config["model"]["openmpi"]["trees"] == [{"operation": "bcast", "algorithm": 6, "tree": "binomial",
                                                     "segmented": True}]
    assert config["model"]["openmpi"]["default_rules"] == {} and config["channels"] == ["core"]


def test_an_unknown_version_names_the_known_ones():
    with pytest.raises(ValueError, match=r"model.openmpi.version: found '3.0', expected one of \['4.1'\]"):
        complete({"machine": EPYC, "model": {"openmpi": {"version": "3.0"}}})


def test_a_stage_no_input_feeds_is_left_out_with_one_line_each():
    stages = ["pt2pt", "nbft", "model", "regression", "partitioned", "evaluate", "figures", "selection"]
    notes = stages_without_input(stages, {"pt2pt"})  # osu_latency logs only
    assert stages == ["pt2pt", "partitioned"]
    assert notes[0] == "stage nbft left out: no input feeds the nbft table"
    assert notes[1] == "stage model left out: no input feeds the nbft and collective tables"
    assert len(notes) == 6
    stages = ["pt2pt", "nbft", "regression"]
    assert stages_without_input(stages, {"collective", "pt2pt"}) == ["stage nbft left out: no input feeds the nbft table"]
    assert stages == ["pt2pt", "regression"]


def test_an_assumed_nbft_line_needs_no_nbft_input():
    """With config nbft.unmeasured_slope set, the collectives and osu_latency logs alone keep every
    stage: the nbft stage assumes a line where it has no run."""
    stages = ["pt2pt", "nbft", "model", "regression", "evaluate", "figures", "selection", "plan"]
    assert stages_without_input(stages, {"collective", "pt2pt"}, nbft_assumed=True) == []
    assert stages == ["pt2pt", "nbft", "model", "regression", "evaluate", "figures", "selection", "plan"]
    # osu_latency logs alone: nothing for an assumed line to price, the nbft stage is left out too
    assert stages_without_input(stages, {"pt2pt"}, nbft_assumed=True)[0] == (
        "stage nbft left out: no input feeds the nbft table")
    stages = ["pt2pt", "model"]
    assert stages_without_input(stages, set(), nbft_assumed=True) == [] and stages == []
    stages = ["nbft", "regression"]  # NBFT runs without osu_latency: gamma = T_NBFT / T_p2p has no denominator
    assert stages_without_input(stages, {"nbft", "collective"}) == ["stage nbft left out: no input feeds the pt2pt table"]


@pytest.mark.parametrize("tables", [None])
def test_nothing_is_left_out_when_a_logs_table_is_known_only_once_read(tables):
    stages = ["pt2pt", "model"]
    assert stages_without_input(stages, tables) == [] and stages == ["pt2pt", "model"]


def test_without_any_input_every_stage_goes_without_a_word():
    stages = ["pt2pt", "model"]
    assert stages_without_input(stages, set()) == [] and stages == []


def test_mappings_not_given_are_the_logs_own_in_the_placements_order():
    from collat.config.defaults import derived_mappings

    default = ["core", "socket", "node"]
    assert derived_mappings(default, {"node", "core"}) == ["core", "node"]
    assert derived_mappings(default, None) == default  # a log's mapping is known only once read
    assert derived_mappings(default, {"l3cache"}) == default  # the ingest refuses it, naming the three
    one = {"nodes": 1, "sockets_per_node": 2, "cores_per_socket": 8, "cores_per_l3": 4, "numa_per_socket": 1}
    # one node: map-by node spreads the ranks over the sockets as map-by socket does, so nothing names
    # it unless a log does; with NUMA domains in a socket it spreads them over those, a placement of its own
    assert derived_mappings(default, set(), one) == ["core", "socket"]
    assert derived_mappings(default, {"node"}, one) == ["node"]
    assert derived_mappings(default, set(), {**one, "numa_per_socket": 2}) == default
    assert derived_mappings(default, set(), {**one, "nodes": 2}) == default
