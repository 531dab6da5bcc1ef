"""The point-to-point stage model of MPI_Bcast and MPI_Reduce: one interface per mode.

A collective algorithm is a tree of fan-outs (or rounds of messages) laid on the machine; each
mode prices the fan-outs from the channel costs the earlier stages wrote and adds them up:

=====================  =====================================================================
module                 concept
=====================  =====================================================================
:mod:`.options`        the model's options as frozen objects, from config ``model``
:mod:`.costs`          channel costs from the pt2pt and nbft stages' outputs (no fit here)
:mod:`.forest`         the schedule core: trees on the machine, census, per-rank event times
:mod:`.paper_mode`     the collective study's model (study eq. 2-3, 10-11): :class:`PaperMode`
:mod:`.openmpi_mode`   what OpenMPI 4.1.5 runs, priced from the measurements: :class:`OpenMPIMode`
:mod:`.calibrated_mode` the same shapes with fitted costs: :class:`CalibratedMode`
:mod:`.predict`        the prediction grid of every mode
:mod:`.scoring`        scores of the grid on the measured cells
=====================  =====================================================================

OpenMPI's ids, decision rules and fall-backs are in :mod:`collat.openmpi` (shared with the
selection stage); the calibrated mode's fit is :mod:`collat.calibration`, the hybrid mode's
residual correction of its grid :mod:`collat.correction`.
"""

from __future__ import annotations

import pandas as pd

from .calibrated_mode import CalibratedMode
from .costs import ChannelCosts, openmpi_costs, paper_costs
from .forest import Placements
from .openmpi_mode import OpenMPIMode
from .options import ModelOptions
from .paper_mode import PaperMode
from .predict import PREDICTION_COLUMNS, grid_axes, predict_all, what_if_machine, what_if_P
from .scoring import score

__all__ = ["CalibratedMode", "ChannelCosts", "ModelOptions", "OpenMPIMode", "PREDICTION_COLUMNS", "PaperMode",
           "Placements", "build_modes", "grid_axes", "openmpi_costs", "paper_costs", "predict_all", "score",
           "what_if_machine", "what_if_P"]


def build_modes(options: ModelOptions, channels: list[str], sizes, max_receivers: int, hockney: pd.DataFrame,
                hockney_study: pd.DataFrame, nbft_fits: pd.DataFrame, nbft_medians: pd.DataFrame,
                calibration: pd.DataFrame | None = None, names: tuple[str, ...] | None = None) -> list:
    """The pricing modes of ``options.modes`` (of those also in ``names``, when given), in that
    order, from the earlier stages' outputs: the pt2pt stage's Hockney fits (``hockney``; the
    study's weighting: ``hockney_study``), the nbft stage's lines and medians, and the calibration
    table (calibrated mode). ``hybrid`` is not a pricing mode: it corrects the calibrated grid
    (:func:`collat.correction.hybrid_predictions`)."""
    modes = []
    for name in options.modes:
        if names is not None and name not in names:
            continue
        if name == "paper":
            modes.append(PaperMode(paper_costs(hockney_study, nbft_fits, options.paper.nbft_target, channels, sizes),
                                   options))
        elif name == "openmpi":
            modes.append(OpenMPIMode(openmpi_costs(hockney, nbft_fits, nbft_medians, options.openmpi, channels,
                                                   sizes, max_receivers), options))
        elif name == "calibrated":
            if calibration is None:
                raise ValueError("the calibrated mode needs the calibration table (rule model_calibrate)")
            modes.append(CalibratedMode.from_table(calibration, channels, sizes, max_receivers, options))
    return modes
