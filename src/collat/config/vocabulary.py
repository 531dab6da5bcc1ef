"""The names a machine's config allows (channels, mappings, algorithms by operation), and the check of
a log's metadata against them. Light: the workflow builds it when it is parsed."""

from __future__ import annotations

from dataclasses import dataclass

from collat import InputError


@dataclass(frozen=True)
class Vocabulary:
    """The names a machine's config allows."""

    channels: tuple[str, ...]
    mappings: tuple[str, ...]
    algorithms: dict[str, dict[int, str]]  # operation -> id -> name

    @classmethod
    def from_config(cls, config: dict) -> "Vocabulary":
        return cls(
            channels=tuple(config["channels"]),
            mappings=tuple(config["mappings"]),
            algorithms={op: {int(a["id"]): a["name"] for a in algs} for op, algs in config["algorithms"].items()},
        )

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
