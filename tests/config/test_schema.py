"""A config the schema refuses is named in one line: file, key path, value found, what was expected."""

import copy
from pathlib import Path

import pytest
import yaml

from collat.config.schema import first_mistake

from conftest import REPO, load_config

SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())


@pytest.mark.parametrize("mutate,line", [
    (lambda c: c["machine"].__setitem__("cores_per_socket", "sixteen"),
     "mine.yaml: machine.cores_per_socket: expected an integer >= 1, found 'sixteen'"),
    (lambda c: c.__setitem__("regresion", c.pop("regression")),
     "mine.yaml: regresion: unknown key; did you mean 'regression'?"),
    (lambda c: c["regression"].__setitem__("cv_folds", 1),
     "mine.yaml: regression.cv_folds: expected a number >= 2, found 1"),
    (lambda c: c.__setitem__("mappings", ["core", "hwthread"]),
     "mine.yaml: mappings[1]: expected one of 'core', 'socket', 'node', found 'hwthread'"),
    (lambda c: c["machine"].pop("nodes"), "mine.yaml: machine.nodes: missing; expected"),
    (lambda c: c["model"]["openmpi"].__setitem__("small_limit", "small"),
     "mine.yaml: model.openmpi.small_limit: expected an integer >= 0 or nothing (null) or 'auto', found 'small'"),
    # a key an enabled switch asks for is described as its object describes it
    (lambda c: c["data"]["published"].pop("base_url"),
     "mine.yaml: data.published.base_url: missing; expected where the files are downloaded from"),
    # a key a branch asks for, defined elsewhere: its values
    (lambda c: c["data"]["published"]["files"]["bcast_core.csv"].pop("mapping"),
     "mine.yaml: data.published.files.bcast_core.csv.mapping: missing; expected one of 'core', 'socket', 'node'"),
])
def test_the_first_mistake_is_one_line_naming_the_key(mutate, line):
    cfg = copy.deepcopy(load_config())
    mutate(cfg)
    said = first_mistake(cfg, SCHEMA, "mine.yaml")
    assert said.startswith(line) and "\n" not in said


def test_a_valid_config_has_no_mistake():
    assert first_mistake(load_config(), SCHEMA, "config.yaml") is None


def test_published_files_switched_off_need_nothing_else():
    """``published: {enabled: false}`` (the study's config with its files turned off) is a whole
    config: the mirror, the address and the files are asked for only when the files are read."""
    cfg = copy.deepcopy(load_config())
    cfg["data"]["published"] = {"enabled": False}
    assert first_mistake(cfg, SCHEMA, "mine.yaml") is None


def test_the_workflow_prints_the_mistake_as_its_last_line(tmp_path):
    """Snakemake's schema dump and traceback are gone: the user sees the profile line and the mistake."""
    import subprocess
    import sys

    cfg = copy.deepcopy(load_config())
    cfg["machine"]["cores_per_socket"] = "sixteen"
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(cfg))
    snakemake = Path(sys.executable).with_name("snakemake")
    res = subprocess.run([str(snakemake), "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "-n",
                          "--configfile", str(tmp_path / "mine.yaml")], capture_output=True, text=True)
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert res.returncode == 1 and len(lines) <= 2
    assert lines[-1] == f"{tmp_path / 'mine.yaml'}: machine.cores_per_socket: expected an integer >= 1, found 'sixteen'"


def test_every_key_but_the_machine_has_a_description_and_only_the_machine_is_required():
    """A user's config states the machine and what differs: every other key says what it is, and
    none is required at the top (each has a default, or the package or the machine gives it)."""
    undescribed = []

    def walk(node, path):
        for key, sub in node.get("properties", {}).items():
            p = f"{path}.{key}" if path else key
            if not isinstance(sub, dict) or p.startswith("machine"):
                continue
            if "description" not in sub:
                undescribed.append(p)
            walk(sub, p)

    walk(SCHEMA, "")
    assert undescribed == [] and SCHEMA["required"] == ["machine"]
