"""Marker lines between OSU runs as per-run metadata (collat.ingest.markers, its use by the parser and ingest)."""

from pathlib import Path

import pandas as pd
import pytest

from collat import InputError
from collat.ingest import markers as mk
from collat.ingest.read import Vocabulary, from_osu_log, ingest_raw_log
from collat.ingest.osu import parse_osu

FIXTURES = Path(__file__).parents[1] / "fixtures" / "osu"
# 2 nodes x 2 sockets x 12 cores, one core per L3 (THIN-like)
MACHINE = {"nodes": 2, "sockets_per_node": 2, "cores_per_socket": 12, "cores_per_l3": 1, "numa_per_socket": 1}
VOCAB = Vocabulary(("cache", "core", "socket", "node"), ("core", "socket", "node"),
                   {"bcast": {0: "default", 1: "linear"}, "reduce": {0: "default"}})
PLACEMENTS = [{"regex": r"^Testing (?P<channel>Same socket|Different node)$",
               "values": {"channel": {"Same socket": "core", "Different node": "node"}}}]
CORES = [{"regex": r"between core (?P<sender>\d+) and core (?P<receiver>\d+)"}]


def test_channel_between_two_cores_from_the_machine_description():
    machine = {**MACHINE, "cores_per_l3": 4}
    assert mk.core_channel(0, 3, machine) == "cache"   # same L3 (cores 0-3)
    assert mk.core_channel(0, 4, machine) == "core"    # same socket (cores 0-11)
    assert mk.core_channel(0, 17, machine) == "socket"  # same node (cores 0-23)
    assert mk.core_channel(0, 24, machine) == "node"


def test_a_marker_sets_fields_through_its_lookup_table():
    rules = mk.compile_rules(PLACEMENTS + CORES)
    assert mk.match(rules, "Testing Different node", MACHINE) == {"channel": "node"}
    assert mk.match(rules, "Running latency between core 0 and core 17 on thin006...", MACHINE) == \
        {"receiver": 17, "channel": "socket"}
    assert mk.match(rules, "Nodi utilizzati: thin[006-007]", MACHINE) is None
    rules = mk.compile_rules([{"regex": r"^Testing (?P<channel>.+)$", "values": {"channel": {"Same CCX": "cache"}}}])
    with pytest.raises(ValueError, match=r"a channel among the marker's values \['Same CCX'\], found 'Same NUMA'"):
        mk.match(rules, "Testing Same NUMA", MACHINE)


@pytest.mark.parametrize("rule, message", [
    ({"regex": "(?P<channel>"}, r"data.raw.markers\[0\].regex: not a regular expression"),
    ({"regex": r"(?P<colour>\w+)"}, r"named groups must be metadata fields .* found colour"),
    ({"regex": r"Testing \w+"}, "at least one named group"),
    ({"regex": r"(?P<channel>\w+)", "values": {"mapping": {"a": "core"}}}, "no group for: mapping"),
    ({"regex": r"core (?P<sender>\d+)"}, "a sender group needs a receiver group"),
])
def test_a_bad_rule_names_its_config_key(rule, message):
    with pytest.raises(ValueError, match=message):
        mk.compile_rules([rule])


def test_each_run_takes_the_marker_before_it_and_the_killed_run_is_dropped():
    path = FIXTURES / "slurm_markers_latency.out"
    log = parse_osu(path.read_text(), str(path), "skip", mk.compile_rules(PLACEMENTS), MACHINE)
    assert log.n_runs == 3 and len(log.skipped_runs) == 1  # the fourth run was cut by the time limit
    assert {run: m[1]["channel"] for run, m in log.run_markers.items()} == {0: "core", 1: "node", 2: "core"}
    assert {run: m[0] for run, m in log.run_markers.items()} == {0: 3, 1: 31, 2: 59}  # the markers' lines
    table, df, quality = from_osu_log(log, {"benchmark": "osu_latency"}, VOCAB, "slurm.out", pooled_factor=2.0)
    assert table == "pt2pt" and quality["marker_runs"] == 3 and quality["pooled_runs"] == ""
    one = df[df["size"] == 1].set_index("run")["avg"]
    assert df.groupby("run")["channel"].first().to_dict() == {0: "core", 1: "node", 2: "core"}
    assert one[0] == pytest.approx(0.25) and one[2] == pytest.approx(0.26) and one[1] == pytest.approx(1.1)


def test_without_markers_the_placements_are_pooled_and_the_quality_table_says_so(tmp_path):
    log = tmp_path / "job-core.out"  # the user labelled the whole file "core"
    log.write_text((FIXTURES / "slurm_markers_latency.out").read_text())
    table, df, quality = ingest_raw_log(log, "job-core.out", ["{_name}-{channel}.out"], None, VOCAB, "skip", [],
                                        MACHINE, 2.0)
    assert quality["marker_runs"] == 0 and (df["channel"] == "core").all()
    assert quality["pooled_runs"].startswith("channel=core: runs differ x")
    assert quality["pooled_runs"].endswith("at the same size (pooled placements?)")


def test_sender_and_receiver_cores_give_the_channel(tmp_path):
    log = tmp_path / "cores.out"
    log.write_text((FIXTURES / "slurm_cores_latency.out").read_text())
    table, df, quality = ingest_raw_log(log, "cores.out", [], None, VOCAB, "error", CORES, MACHINE, 2.0)
    runs = df.groupby("run")[["channel", "receiver"]].first()
    assert runs.to_dict("list") == {"channel": ["core", "socket", "core"], "receiver": [1, 17, 1]}
    assert quality["pooled_runs"] == ""  # runs 0 and 2 agree within 1 %


def test_a_run_without_its_metadata_or_contradicting_the_path_names_the_line(tmp_path):
    text = (FIXTURES / "slurm_markers_latency.out").read_text().replace("Testing Same socket\n", "", 1)
    log = parse_osu(text, "job.out", "skip", mk.compile_rules(PLACEMENTS), MACHINE)
    with pytest.raises(InputError, match=r"job.out, line 6: expected metadata \['channel'\] for an osu_latency log run"):
        from_osu_log(log, {}, VOCAB, "job.out")
    log = parse_osu((FIXTURES / "slurm_markers_latency.out").read_text(), "job.out", "skip",
                    mk.compile_rules(PLACEMENTS), MACHINE)
    with pytest.raises(InputError, match=r"job.out, line 31: expected a marker that agrees with the file's "
                                         r"metadata \(channel='core'\), found \"channel='node'\""):
        from_osu_log(log, {"channel": "core"}, VOCAB, "job.out")


def test_a_marker_value_outside_the_lookup_is_an_error_with_its_line():
    text = (FIXTURES / "slurm_markers_latency.out").read_text()
    rules = mk.compile_rules([{"regex": r"^Testing (?P<channel>.+)$", "values": {"channel": {"Same socket": "core"}}}])
    with pytest.raises(InputError, match=r"line 31: expected a channel among the marker's values"):
        parse_osu(text, "job.out", "skip", rules, MACHINE)


def test_pooled_runs_reports_each_group():
    from collat.ingest.read import pooled_runs

    df = pd.DataFrame({"channel": ["core"] * 4 + ["node"] * 4, "receiver": pd.NA, "size": [1, 2, 1, 2] * 2,
                       "run": [0, 0, 1, 1] * 2, "avg": [1.0, 1.0, 1.1, 1.2, 1.0, 2.0, 5.0, 8.0]})
    # node: ratios 5 and 4 at sizes 1 and 2 -> median 4.5; core: 1.1, 1.2 -> below the factor
    assert pooled_runs(df, "pt2pt", 2.0) == "channel=node: runs differ x4.5 at the same size (pooled placements?)"


LATENCY = "# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n1                       {a}\n2                       {b}\n"


def test_every_rule_that_matches_a_line_applies_and_two_that_disagree_are_an_error():
    rules = mk.compile_rules([{"regex": r"on (?P<_host>thin\d+) to (?P<channel>node|core)"},
                              {"regex": r"receiver (?P<receiver>\d+)"}])
    assert mk.match(rules, "latency on thin006 to node, receiver 3", MACHINE) == {"channel": "node", "receiver": 3}
    rules = mk.compile_rules([{"regex": r"to (?P<channel>node|core)"}, CORES[0]])
    # the second rule places cores 0 and 17 on one node's two sockets: channel socket, not node
    with pytest.raises(ValueError, match=r"one channel from the marker rules that match this line, found 'node' "
                                         r"\(data.raw.markers\[0\]\) and 'socket' \(data.raw.markers\[1\]\)"):
        mk.match(rules, "to node between core 0 and core 17", MACHINE)


def test_a_run_after_text_no_rule_matches_is_not_labelled_by_the_previous_marker():
    """The docs' regex matches 'Testing Same socket', not the line a later job step printed: its runs
    would have been the same-socket runs silently. Now an error naming that run's line and the text;
    data.raw.marker_carry_over lets the marker carry over; runs with nothing between them do."""
    text = ("Testing Same socket\n" + LATENCY.format(a=0.4, b=0.41) + LATENCY.format(a=0.42, b=0.43)
            + "Running latency between core 0 on thin006 and core 3 on thin007\n" + LATENCY.format(a=1.8, b=1.9))
    rules = mk.compile_rules(PLACEMENTS)
    with pytest.raises(InputError, match=r"log.txt, line 13: expected a marker line before this run .*"
                                         r"line 10: 'Running latency between core 0 on thin006"):
        parse_osu(text, "log.txt", markers=rules, machine=MACHINE)
    log = parse_osu(text, "log.txt", markers=rules, machine=MACHINE, carry_over=True)
    assert [m for _, m in log.run_markers.values()] == [{"channel": "core"}] * 3
    log = parse_osu(text.replace("Running latency between core 0 on thin006 and core 3 on thin007",
                                 "Testing Different node"), "log.txt", markers=rules, machine=MACHINE)
    assert [m for _, m in log.run_markers.values()] == [{"channel": "core"}] * 2 + [{"channel": "node"}]
