"""Cross-key config checks: a key naming what no other key defines is one message with its path."""

import copy

import pytest

from collat.config.settings import ConfigError, check

from conftest import load_config


def test_the_default_config_passes():
    check(load_config())


def _set(path, value):
    def mutate(cfg):
        *head, last = path
        node = cfg
        for k in head:
            node = node[k]
        node[last] = value
    return mutate


@pytest.mark.parametrize("mutate,key,found", [
    (_set(("selection", "mode"), "openmpi_v5"), "selection.mode", "'openmpi_v5'"),
    (lambda c: (_set(("selection", "mode"), "calibrated")(c), _set(("model", "modes"), ["openmpi"])(c)),
     "selection.mode", "'calibrated'"),
    (_set(("model", "modes"), ["paper"]), "selection.mode", "'best'"),
    (_set(("model", "modes"), ["openmpi", "hybrid"]), "model.modes", "['openmpi', 'hybrid']"),
    (_set(("model", "unpinned_channel"), "numa"), "model.unpinned_channel", "'numa'"),
    (_set(("partitioned", "channels"), ["core", "nic"]), "partitioned.channels[1]", "'nic'"),
    (_set(("partitioned", "size_exponents"), [30, 6]), "partitioned.size_exponents", "[30, 6]"),
    (lambda c: c["partitioned"]["figure"].__setitem__("workload", "lulesh"), "partitioned.figure.workload",
     "'lulesh'"),
    (lambda c: c["evaluate"]["summary_crossover"].__setitem__("delay", "gamma7"),
     "evaluate.summary_crossover.delay", "'gamma7'"),
    (lambda c: c["algorithms"]["bcast"].append({"id": 5, "name": "binary_again"}), "algorithms.bcast[10].id", "5"),
    (lambda c: c["algorithms"]["reduce"].append({"id": 42, "name": "linear"}), "algorithms.reduce[8].name",
     "'linear'"),
    (lambda c: c["model"]["openmpi"]["trees"].append({"operation": "reduce", "algorithm": 12, "tree": "linear"}),
     "model.openmpi.trees[16].algorithm", "12"),
    (lambda c: c["model"]["openmpi"]["trees"].append({"operation": "bcast", "algorithm": 1, "tree": "binary"}),
     "model.openmpi.trees[16].algorithm", "1"),
])
def test_a_key_naming_what_is_not_defined(mutate, key, found):
    cfg = copy.deepcopy(load_config())
    mutate(cfg)
    with pytest.raises(ConfigError) as err:
        check(cfg)
    msg = str(err.value)
    assert msg.startswith(f"config key {key}: found {found}, expected "), msg
    assert "\n" not in msg



@pytest.mark.parametrize("key,value", [("cores_per_l3", 5), ("cores_per_l3", 128), ("numa_per_socket", 3)])
def test_a_socket_that_does_not_split_into_whole_l3s_or_numa_domains(key, value):
    cfg = copy.deepcopy(load_config())  # the study's EPYC: 64 cores per socket, L3s of 4, NPS4
    cfg["machine"][key] = value
    with pytest.raises(ConfigError) as err:
        check(cfg)
    msg = str(err.value)
    assert msg.startswith(f"config key machine.{key}: found {value}, expected a divisor of "
                          "machine.cores_per_socket (64): "), msg
    assert "\n" not in msg
    cfg["machine"][key] = 8 if key == "cores_per_l3" else 2  # whole parts: no complaint from the machine
    check(cfg)

AWK = {"dir": "x", "glob": "*.csv", "table": "collective",
       "columns": {"Algorithm": "algorithm", "Processes": "P", "MessageSize": "size", "Avg Latency(us)": "avg"},
       "metadata": {"operation": "bcast", "mapping": "core"}}


@pytest.mark.parametrize("change,key,words", [
    ({"metadata": {"operation": "bcast"}}, "data.tables[0].columns", "for mapping (a collective row needs it)"),
    ({"metadata": {"operation": "bcast", "mapping": "core", "P": 4}}, "data.tables[0].columns", "'P' is given twice"),
    ({"values": {"channel": {"x": "core"}}}, "data.tables[0].values.channel", "a tidy key one of"),
    ({"table": "pt2pt", "columns": {"MessageSize": "size"}, "metadata": {"channel": "core"}},
     "data.tables[0].columns", "for avg or bandwidth"),
])
def test_a_table_source_that_cannot_fill_its_rows(change, key, words):
    cfg = copy.deepcopy(load_config())
    cfg["data"]["tables"] = [{**AWK, **change}]
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert str(err.value).startswith(f"config key {key}: found ") and words in str(err.value), str(err.value)
    cfg["data"]["tables"] = [AWK]
    check(cfg)


def test_a_stage_that_does_not_run_is_not_checked():
    cfg = copy.deepcopy(load_config())
    cfg["stages"] = ["pt2pt", "nbft"]
    cfg["partitioned"]["channels"] = ["nic"]
    cfg["selection"]["mode"] = "nothing"
    check(cfg)


def test_measured_targets_name_every_key_that_asks_for_a_target():
    from collat.config.settings import measured_targets

    asks = measured_targets(load_config())
    assert asks["nbft"] == {"avg": ["nbft.targets", "model.openmpi.link_target", "model.paper.nbft_target"],
                            "max": ["nbft.targets", "model.openmpi.nbft_target"]}
    keys = ["model.calibrated.targets", "validation.targets", "regression.targets", "selection.targets"]
    assert asks["collective"] == {"avg": keys, "max": keys}
    cfg = load_config()
    cfg["stages"] = ["pt2pt", "nbft"]  # no model, regression or selection: the collective table is not read
    cfg["nbft"]["targets"] = ["avg"]
    assert measured_targets(cfg) == {"nbft": {"avg": ["nbft.targets"]}, "collective": {}}


def test_a_channel_the_machine_uses_but_the_config_does_not_name():
    """A 16-core single-L3 machine whose intra-socket log was named 'core': its pinned ranks talk
    over 'cache'; one line at parse time names the key, the channel and a pair of ranks."""
    cfg = copy.deepcopy(load_config())
    cfg["machine"] = {"name": "x", "nodes": 1, "sockets_per_node": 1, "cores_per_socket": 16, "cores_per_l3": 16,
                      "numa_per_socket": 1}
    cfg["mappings"], cfg["channels"] = ["core"], ["core"]
    cfg["model"]["unpinned_channel"], cfg["partitioned"]["channels"] = "core", ["core"]
    cfg["model"]["what_if"] = []
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert str(err.value).startswith("config key channels: found ['core'], expected every channel the ranks of "
                                     "config machine talk over under mappings ['core'], 'cache' too: ranks 0 and 1 "
                                     "of P = 16 under --map-by core talk over 'cache'"), str(err.value)
    # one L3 per socket: the log that names core measures cache, and the line says what to rename
    assert str(err.value).endswith("one L3 serves each socket of this machine, so the log of two cores of one "
                                   "socket that names core measures cache: write cache in channels instead of core, "
                                   "and a log that names core is read as cache")
    cfg["channels"] = ["cache", "core"]
    check(cfg)
    cfg["stages"] = ["pt2pt"]  # no model: no tree to price
    cfg["channels"] = ["core"]
    check(cfg)


def test_an_nbft_target_the_model_prices_with_must_be_fitted():
    cfg = copy.deepcopy(load_config())
    cfg["nbft"]["targets"] = ["avg"]
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert str(err.value).startswith("config key model.openmpi.nbft_target: found 'max', expected one of "
                                     "nbft.targets ['avg']")
    cfg["model"]["openmpi"]["nbft_target"] = "avg"
    check(cfg)


def test_what_if_names_are_unique():
    cfg = copy.deepcopy(load_config())
    cfg["model"]["what_if"] = [{"name": "big", "nodes": 4}, {"name": "big", "nodes": 8}]
    with pytest.raises(ConfigError, match=r"^config key model.what_if\[1\].name: found 'big', expected a name not"):
        check(cfg)


def test_a_what_if_machine_needs_channels_the_config_names():
    """A one-node machine's config cannot price itself on four nodes: no 'node' channel."""
    cfg = copy.deepcopy(load_config())
    cfg["machine"]["nodes"] = 1
    cfg["channels"], cfg["partitioned"]["channels"] = ["cache", "core", "socket"], ["core"]
    cfg["model"]["what_if"] = [{"name": "four", "nodes": 4}]
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert str(err.value).startswith("config key model.what_if[0].nodes: found 4, expected a machine whose channels "
                                     "are among channels ['cache', 'core', 'socket']: ranks 0 and 128 of P = 256 "
                                     "under --map-by core talk over 'node'"), str(err.value)
    cfg["model"]["what_if"] = []
    check(cfg)


def test_a_what_if_machine_needs_a_mode_that_prices_it():
    cfg = copy.deepcopy(load_config())
    cfg["model"]["modes"], cfg["selection"]["mode"] = ["paper"], "paper"
    cfg["model"]["what_if"] = [{"name": "four-nodes", "nodes": 4}]
    with pytest.raises(ConfigError, match=r"^config key model.what_if: found \['four-nodes'\], expected openmpi or "
                                          r"calibrated in model.modes \['paper'\]"):
        check(cfg)


def test_a_null_link_target_is_the_nbft_target():
    """model.openmpi.link_target null (its schema default) means nbft_target, in both checks."""
    from collat.config.settings import measured_targets

    cfg = copy.deepcopy(load_config())
    cfg["model"]["openmpi"]["link_target"] = None
    check(cfg)
    assert measured_targets(cfg)["nbft"]["max"] == ["nbft.targets", "model.openmpi.nbft_target",
                                                    "model.openmpi.link_target"]
    cfg["nbft"]["targets"] = ["avg"]
    with pytest.raises(ConfigError, match=r"^config key model.openmpi.nbft_target: found 'max'"):
        check(cfg)


@pytest.mark.parametrize("raw,ok", [("logs", False), ("logs/osu", False), (".", False), ("results/osu", False),
                                    ("benchmarks/rules", False), ("osu_logs", True), ("benchmarks/data/osu", True),
                                    ("resources/osu_raw", True)])
def test_a_raw_log_folder_apart_from_what_the_workflow_writes(raw, ok, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the working directory's folders: logs/, results/, benchmarks/rules/
    cfg = copy.deepcopy(load_config())
    cfg["data"]["raw"]["dir"] = raw
    if ok:
        check(cfg)
        return
    with pytest.raises(ConfigError) as err:
        check(cfg)
    assert str(err.value).startswith(f"config key data.raw.dir: found {raw!r}, expected a folder apart from")
    assert "osu_logs, say" in str(err.value)


def test_a_results_folder_of_another_machine_is_refused_in_one_line(tmp_path):
    """results/machine.yaml names the machine a folder's outputs describe: a config of another name
    is refused with one line naming the file, both names and what to do; the same name (a corrected
    description) and a folder without the file pass."""
    from collat.config.settings import check_results_machine, stamp_results

    results = tmp_path / "results"
    check_results_machine(results, {"name": "mine"})  # nothing there yet
    orfeo = {"name": "ORFEO EPYC", "nodes": 2, "cores_per_socket": 64}
    stamp_results(results, orfeo)
    assert (results / "machine.yaml").read_text() == "name: ORFEO EPYC\nnodes: 2\ncores_per_socket: 64\n"
    check_results_machine(results, {**orfeo, "nodes": 4})
    with pytest.raises(ValueError) as err:
        check_results_machine(results, {"name": "my cluster"})
    assert str(err.value) == (f"{results}/machine.yaml: {results}/ holds the outputs of machine 'ORFEO EPYC', this "
                              "config describes 'my cluster' (machine.name): run it in another directory (snakemake "
                              f"-d DIR), or move {results}/ away first")
    assert list(results.iterdir()) == [results / "machine.yaml"]  # written whole: no temporary left


def test_files_no_job_of_a_whole_run_makes_are_named_in_one_line(tmp_path, monkeypatch):
    """An earlier config's outputs (a rules file of a mapping the logs no longer have) are the files
    of results/ that no job reads, writes or logs to; a directory output covers its files, and
    machine.yaml, report.html and hidden files are not a config's outputs."""
    from collat.config.settings import leftover_line, leftover_results

    monkeypatch.chdir(tmp_path)
    for name in ("selection/rules_map-by-core.txt", "selection/rules_map-by-node.txt", "plan/jobs/nodes1.sbatch",
                 "tidy/.quality.csv.tmp", "machine.yaml", "report.html", "figures/collective/bcast_1B.png",
                 "figures/collective/bcast_65536B.png"):
        (tmp_path / "results" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "results" / name).write_text("x")
    used = ["results/selection/rules_map-by-core.txt", "results/plan/jobs", "./results/figures/collective/bcast_1B.png",
            "results/tidy/collective.parquet"]
    leftovers = leftover_results("results", used)
    assert leftovers == ["results/figures/collective/bcast_65536B.png", "results/selection/rules_map-by-node.txt"]
    assert leftover_line("results", leftovers) == (
        "results/ also holds 2 files that this config's run does not make (an earlier config's, left as they "
        "were): results/figures/collective/bcast_65536B.png, results/selection/rules_map-by-node.txt; move or "
        "delete them (snakemake --list-untracked lists them all)")
    assert leftover_line("results", [f"results/f{i}" for i in range(7)], shown=2).startswith(
        "results/ also holds 7 files that this config's run does not make (an earlier config's, left as they "
        "were): results/f0, results/f1 and 5 more; ")
    assert leftover_line("results", ["results/a"]) == (
        "results/ also holds 1 file that this config's run does not make (an earlier config's, left as it was): "
        "results/a; move or delete it (snakemake --list-untracked lists them all)")
    assert leftover_results("nothing_here", used) == []
