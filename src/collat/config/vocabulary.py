"""The names a machine's config allows (channels, mappings, algorithms by operation), and the check of
a log's metadata against them. Light: the workflow builds it when it is parsed."""

from __future__ import annotations

from dataclasses import dataclass

from collat import InputError
from collat.model.placement import one_l3_per_socket


@dataclass(frozen=True)
class Vocabulary:
    """The names a machine's config allows."""

    channels: tuple[str, ...]
    mappings: tuple[str, ...]
    algorithms: dict[str, dict[int, str]]  # operation -> id -> name
    aliases: tuple[tuple[str, str], ...] = ()  # (a log's channel, the config's name of it)

    @classmethod
    def from_config(cls, config: dict) -> "Vocabulary":
        """The config's names; where one L3 serves each socket of its machine and its channels name
        ``cache`` but not ``core``, a log's ``core`` (two cores of one socket, as a study of such a
        machine names them) is read as ``cache``: the socket holds no other L3 a core pair could
        span (:meth:`resolved`)."""
        channels = tuple(config["channels"])
        machine = config.get("machine")  # absent in a bare vocabulary
        one_l3 = machine is not None and one_l3_per_socket(machine)
        return cls(
            channels=channels,
            mappings=tuple(config["mappings"]),
            algorithms={op: {int(a["id"]): a["name"] for a in algs} for op, algs in config["algorithms"].items()},
            aliases=(("core", "cache"),) if one_l3 and "cache" in channels and "core" not in channels else (),
        )

    def resolved(self, meta: dict) -> dict:
        """``meta`` with a channel the config names otherwise (:attr:`aliases`) under the config's
        name; ``meta`` itself where none is."""
        alias = dict(self.aliases).get(meta.get("channel"))
        return {**meta, "channel": alias} if alias is not None else meta

    def check(self, meta: dict, where: str, line: int | None = None) -> None:
        if "channel" in meta and meta["channel"] not in self.channels:
            raise InputError(where, line, f"a channel among {list(self.channels)} (config channels)", meta["channel"])
        if "mapping" in meta and meta["mapping"] not in self.mappings:
            raise InputError(where, line, f"a mapping among {list(self.mappings)} (config mappings)", meta["mapping"])
        op = meta.get("operation")
        if op is not None and op not in self.algorithms:
            raise InputError(where, line, f"an operation among {list(self.algorithms)}", op)
        if "algorithm" in meta and meta["algorithm"] not in self.algorithms[op]:
            raise InputError(where, line, f"a {op} algorithm among {sorted(self.algorithms[op])}", meta["algorithm"])
