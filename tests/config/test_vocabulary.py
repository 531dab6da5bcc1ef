"""The names a machine's config allows, and the light import the workflow parses with."""

import subprocess
import sys

import pytest

from collat import InputError
from collat.config.vocabulary import Vocabulary

CONFIG = {"channels": ["core", "node"], "mappings": ["core"],
          "algorithms": {"bcast": [{"id": 0, "name": "default"}, {"id": 1, "name": "linear"}]}}


def test_from_config_and_check():
    v = Vocabulary.from_config(CONFIG)
    assert v == Vocabulary(("core", "node"), ("core",), {"bcast": {0: "default", 1: "linear"}})
    v.check({"channel": "node", "mapping": "core", "operation": "bcast", "algorithm": 1}, "log.txt", 3)
    with pytest.raises(InputError, match="log.txt.*3.*a bcast algorithm among \\[0, 1\\]"):
        v.check({"operation": "bcast", "algorithm": 5}, "log.txt", 3)
    with pytest.raises(InputError, match="a channel among"):
        v.check({"channel": "socket"}, "log.txt")


def test_the_workflow_parses_without_pandas():
    """What workflow/rules/common.smk imports leaves pandas out (half a second of every start)."""
    code = ("import sys; import collat.config.vocabulary, collat.ingest.markers, collat.model.placement, collat.config.settings; "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_socket_of_one_l3_reads_a_logs_core_as_cache():
    """One L3 serves each socket: two cores of one socket always share it, so a log that names their
    channel core (as a study of such a machine names it) is read as cache where the config names
    cache and not core; where it names core, or the socket holds several L3s, nothing is read
    otherwise."""
    one = {**CONFIG, "channels": ["cache", "node"],
           "machine": {"nodes": 2, "sockets_per_node": 1, "cores_per_socket": 12, "cores_per_l3": 12}}
    v = Vocabulary.from_config(one)
    assert v.aliases == (("core", "cache"),)
    assert v.resolved({"channel": "core", "P": 2}) == {"channel": "cache", "P": 2}
    meta = {"channel": "node"}
    assert v.resolved(meta) is meta
    assert Vocabulary.from_config({**one, "channels": ["cache", "core", "node"]}).aliases == ()
    assert Vocabulary.from_config({**one, "machine": {**one["machine"], "cores_per_l3": 4}}).aliases == ()
