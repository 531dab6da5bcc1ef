"""Marker lines: the text a job script prints between OSU runs, read as metadata of the runs that follow.

Real SLURM stdout holds several OSU runs, each preceded by a line the job script printed, e.g.
``Testing Same CCX``, ``Running latency between core 0 and core 17 on thin006...`` or
``BROADCAST 1``. Config ``data.raw.markers`` declares rules for them: a regular expression whose
named groups are metadata fields (:data:`collat.ingest.metadata.FIELDS`), searched in every line that is
not OSU output, with optional lookup tables from the matched text to the value (``Same CCX`` ->
``cache``). A rule with groups ``sender`` and ``receiver`` (core numbers on one node) gives the
channel between the two cores from the machine description, when it names no channel itself.
Every rule that matches a line applies. The values apply to every run after the marker line, up to
the next marker; a run preceded by text that matches no rule, after a marker labelled the runs
before it, is an error (:func:`collat.ingest.osu.parse_osu`), unless ``data.raw.marker_carry_over``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from collat.ingest.metadata import FIELDS, INT_FIELDS, normalise_benchmark

MARKER_ONLY = ("sender",)  # groups a rule may use that are not metadata columns


@dataclass(frozen=True)
class MarkerRule:
    regex: re.Pattern
    lookup: dict  # field -> {matched text: value}

    @classmethod
    def from_config(cls, rule: dict, where: str) -> "MarkerRule":
        try:
            rx = re.compile(rule["regex"])
        except re.error as exc:
            raise ValueError(f"{where}.regex: not a regular expression ({exc})") from None
        groups = set(rx.groupindex)
        unknown = sorted(g for g in groups if g not in FIELDS and g not in MARKER_ONLY and not g.startswith("_"))
        if unknown:
            raise ValueError(f"{where}.regex: named groups must be metadata fields ({', '.join(FIELDS)}), "
                             f"sender, or _name to ignore; found {', '.join(unknown)}")
        if not groups - {g for g in groups if g.startswith("_")}:
            raise ValueError(f"{where}.regex: at least one named group, e.g. (?P<channel>...)")
        lookup = {k: {str(t): v for t, v in table.items()} for k, table in rule.get("values", {}).items()}
        missing = sorted(set(lookup) - groups)
        if missing:
            raise ValueError(f"{where}.values: names fields the regex has no group for: {', '.join(missing)}")
        if "sender" in groups and "receiver" not in groups:
            raise ValueError(f"{where}.regex: a sender group needs a receiver group (the channel between two cores)")
        return cls(rx, lookup)


def compile_rules(rules: list[dict]) -> tuple[MarkerRule, ...]:
    """Config ``data.raw.markers`` -> rules; a bad rule is a ValueError naming its config key."""
    return tuple(MarkerRule.from_config(r, f"data.raw.markers[{i}]") for i, r in enumerate(rules or []))


def core_channel(sender: int, receiver: int, machine: dict) -> str:
    """The channel between two cores numbered across the machine description's nodes (0, 1, ...):
    cache (same L3), core (same socket), socket (same node), node."""
    per_l3, per_socket = int(machine["cores_per_l3"]), int(machine["cores_per_socket"])
    per_node = per_socket * int(machine["sockets_per_node"])
    if sender // per_node != receiver // per_node:
        return "node"
    if sender // per_socket != receiver // per_socket:
        return "socket"
    return "cache" if sender // per_l3 == receiver // per_l3 else "core"


def _values(rule: MarkerRule, m: re.Match, machine: dict | None) -> dict:
    """The metadata one rule's match sets. A matched text with no entry in the rule's lookup table is
    a ValueError saying what was expected."""
    out = {}
    for name, text in m.groupdict().items():
        if text is None or name.startswith("_"):
            continue
        text = text.strip()
        if name in rule.lookup:
            if text not in rule.lookup[name]:
                raise ValueError(f"a {name} among the marker's values {sorted(rule.lookup[name])}, "
                                 f"found {text!r}")
            value = rule.lookup[name][text]
        else:
            value = text
        if name in INT_FIELDS or name in MARKER_ONLY:
            if not str(value).isdigit():
                raise ValueError(f"an integer for marker field {name}, found {value!r}")
            value = int(value)
        elif name == "benchmark":
            value = normalise_benchmark(str(value))
        out[name] = value
    sender = out.pop("sender", None)
    if sender is not None and "channel" not in out:
        if machine is None:
            raise ValueError("a machine description to place the cores of a sender/receiver marker")
        out["channel"] = core_channel(sender, out["receiver"], machine)
    return out


def match(rules: tuple[MarkerRule, ...], line: str, machine: dict | None) -> dict | None:
    """The metadata a marker line sets, or None when no rule matches it. Every rule that matches
    applies (one may give the channel, another the receiver); two rules that give one field
    different values are a ValueError naming both."""
    out: dict = {}
    matched = False
    for i, rule in enumerate(rules):
        m = rule.regex.search(line)
        if m is None:
            continue
        matched = True
        for name, value in _values(rule, m, machine).items():
            if name in out and out[name][0] != value:
                raise ValueError(f"one {name} from the marker rules that match this line, found {out[name][0]!r} "
                                 f"(data.raw.markers[{out[name][1]}]) and {value!r} (data.raw.markers[{i}])")
            out.setdefault(name, (value, i))
    return {name: value for name, (value, _) in out.items()} if matched else None
