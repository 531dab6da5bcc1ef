"""The pricing modes a config names, built from the earlier stages' outputs."""

from __future__ import annotations

import pandas as pd

from collat.model.calibrated_mode import CalibratedMode
from collat.model.costs import openmpi_costs, paper_costs
from collat.model.openmpi_mode import OpenMPIMode
from collat.model.options import ModelOptions
from collat.model.paper_mode import PaperMode


def build_modes(options: ModelOptions, channels: list[str], sizes, max_receivers: int, hockney: pd.DataFrame,
                hockney_study: pd.DataFrame, nbft_fits: pd.DataFrame, nbft_medians: pd.DataFrame,
                calibration: pd.DataFrame | None = None, names: tuple[str, ...] | None = None,
                shapes=None, cores_per_node: int | None = None) -> list:
    """The pricing modes of ``options.modes`` (of those also in ``names``, when given), in that
    order, from the earlier stages' outputs: the pt2pt stage's Hockney fits (``hockney``; the
    study's weighting: ``hockney_study``), the nbft stage's lines and medians, and the calibration
    table (calibrated mode; ``shapes``, :func:`collat.model.calibration.grid_shapes`: the operations
    whose calibration kept the measured fan-outs' shape; ``cores_per_node``: of the machine the NBFT
    runs measured, :meth:`collat.model.costs.ChannelCosts.from_stage_outputs`). ``hybrid`` is not a pricing mode: it corrects the calibrated grid
    (:func:`collat.model.hybrid_mode.hybrid_predictions`)."""
    modes = []
    for name in options.modes:
        if names is not None and name not in names:
            continue
        if name == "paper":
            modes.append(PaperMode(paper_costs(hockney_study, nbft_fits, options.paper.nbft_target, channels, sizes),
                                   options))
        elif name == "openmpi":
            modes.append(OpenMPIMode(openmpi_costs(hockney, nbft_fits, nbft_medians, options.openmpi, channels,
                                                   sizes, max_receivers, cores_per_node), options))
        elif name == "calibrated":
            if calibration is None:
                raise ValueError("the calibrated mode needs the calibration table (rule model_calibrate)")
            modes.append(CalibratedMode.from_table(calibration, channels, sizes, max_receivers, options, shapes))
    return modes
