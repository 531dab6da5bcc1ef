"""The model stage's options as frozen objects, built once from the validated config ``model``
(schema: workflow/schemas/config.schema.yaml, which fills the defaults)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Contention:
    """Shared resources priced by the openmpi-shaped modes (config ``model.openmpi.contention``)."""

    links: tuple[str, ...]  # channels whose link the messages of one round share (openmpi_mode.shared_link)
    trees: tuple[str, ...]  # tree shapes the shared links are priced for

    def links_for(self, shape: dict) -> tuple[str, ...]:
        return self.links if shape.get("tree") in self.trees else ()


@dataclass(frozen=True)
class PaperOptions:
    """The collective study's model as its code ran it (config ``model.paper``)."""

    hockney_weighting: str     # the point-to-point fit it prices with (the pt2pt stage writes both)
    nbft_target: str           # the NBFT column its lines are fitted to
    algorithms: tuple[dict, ...]  # tree shapes, with the study's n_s per mapping (``segments``)
    max_P: tuple[dict, ...]       # largest P the study scored per (operation, algorithm, mapping)

    def segments(self, spec: dict, mapping: str) -> int:
        return int(spec.get("segments", {}).get(mapping, 1))


@dataclass(frozen=True)
class OpenMPIOptions:
    """What OpenMPI 4.1.5 runs and how its fan-outs are priced (config ``model.openmpi``)."""

    nbft_target: str           # NBFT column that prices a fan-out
    link_target: str           # NBFT column that prices a shared link's queue
    eager_limit: float         # bytes up to which a reduce sender does not wait for its receiver
    concurrent_rendezvous: bool | str  # bcast bytes above eager_limit shared by the receivers; "auto": fitted
    small_limit: float         # bytes up to which the calibrated mode's gap is gap_us_small (-1: none)
    contention: Contention
    trees: tuple[dict, ...]    # the shape of every forced algorithm
    default_rules: dict        # operation -> the fixed decision rules' blocks
    barrier_rules: tuple[dict, ...] = ()  # the barrier run by P (OSU's, before every call): spreads the starts


@dataclass(frozen=True)
class ModelOptions:
    """Config ``model`` (and the top-level ``mappings`` predicted), validated: the schema has filled
    its defaults."""

    modes: tuple[str, ...]
    unpinned_channel: str      # channel between ranks no placement pins apart
    grid_step: int             # the prediction grid's step in P
    extra_sizes: tuple[int, ...]  # sizes predicted beside the measured ones
    mappings: tuple[str, ...]
    cleanings: tuple[str, ...]  # cleanings the scores are computed for
    paper: PaperOptions
    openmpi: OpenMPIOptions
    segment_sizes: tuple[int, ...] = ()  # priced beside whole messages (collat.model.segments)

    @classmethod
    def from_config(cls, model: dict, mappings=("core", "socket", "node"), hockney=None,
                    nbft_fits=None) -> "ModelOptions":
        """From config ``model``; the eager limit as :func:`eager_limit` finds it from the pt2pt
        stage's fits (``hockney``) and the nbft stage's lines (``nbft_fits``) where the config leaves
        it null. Where the small-message limit says auto: the size where the NBFT slopes step below
        the eager limit (:func:`collat.nbft.gamma.slope_step`), else the eager limit where the
        config states it or the data show it (a protocol switch changes what each further receiver
        costs), else none."""
        from collat.nbft.gamma import slope_step

        p, o = model["paper"], model["openmpi"]
        eager, source = eager_limit(o.get("eager_limit"), hockney, nbft_fits)
        small = o["small_limit"]
        if small == "auto":
            small = None if nbft_fits is None else slope_step(nbft_fits, str(o["nbft_target"]), float(eager))
            if small is None and source != "openmpi":
                small = eager
        contention = o["contention"]
        return cls(
            modes=tuple(model["modes"]), unpinned_channel=str(model["unpinned_channel"]),
            grid_step=int(model["grid_step"]), extra_sizes=tuple(int(m) for m in model["extra_sizes"]),
            mappings=tuple(mappings), cleanings=tuple(model["cleanings"]),
            paper=PaperOptions(str(p["hockney_weighting"]), str(p["nbft_target"]), tuple(p["algorithms"]),
                               tuple(p["max_P"])),
            openmpi=OpenMPIOptions(str(o["nbft_target"]), str(o["link_target"] or o["nbft_target"]),  # null: the same
                                   float(eager), _rendezvous(o["concurrent_rendezvous"]),
                                   -1.0 if small is None else float(small),
                                   Contention(tuple(contention["links"]), tuple(contention["trees"])),
                                   tuple(o["trees"]), dict(o["default_rules"]),
                                   tuple(o.get("barrier_rules") or ())),  # absent: no start spread
            segment_sizes=tuple(int(m) for m in model.get("segment_sizes") or ()),
        )


#: where :func:`eager_limit` found the limit, as the summary words it ("The limit is ...")
EAGER_SOURCES = {"config": "the one the config states (`model.openmpi.eager_limit`)",
                 "nbft": "the size after which the NBFT reduce runs' avg / max steps up, as each sender starts to "
                         "wait for the root",
                 "pt2pt": "the protocol switch the intra-node channels' point-to-point latency curves show",
                 "openmpi": "OpenMPI 4.1's btl_vader_eager_limit: no measurement shows the switch"}


def eager_limit(stated, hockney=None, nbft_fits=None) -> tuple[float, str]:
    """The eager limit in bytes and its source (a key of :data:`EAGER_SOURCES`): ``stated`` (config
    ``model.openmpi.eager_limit``) where not None; else the size where the NBFT reduce runs show a
    sender's call start to wait (``nbft_fits``, the nbft stage's lines:
    :func:`collat.nbft.gamma.eager_switch`); else the point-to-point stage's fits (``hockney``:
    :func:`collat.pt2pt.hockney.eager_limit`, OpenMPI's default where they show no switch)."""
    from collat.nbft.gamma import eager_switch
    from collat.pt2pt import hockney as pt2pt

    if stated is not None:
        return float(stated), "config"
    found = None if nbft_fits is None else eager_switch(nbft_fits)
    if found is not None:
        return float(found), "nbft"
    if hockney is None:
        raise ValueError("model.openmpi.eager_limit null: the pt2pt stage's Hockney fits give it")
    return float(pt2pt.eager_limit(hockney)), "pt2pt" if pt2pt.switch_measured(hockney) else "openmpi"


def _rendezvous(value) -> bool | str:
    """Config ``model.openmpi.concurrent_rendezvous``: True, False or "auto"."""
    return "auto" if value == "auto" else bool(value)
