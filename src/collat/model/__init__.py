"""The point-to-point stage model of MPI_Bcast and MPI_Reduce: one interface per mode.

A collective algorithm is a tree of fan-outs (or rounds of messages) laid on the machine; each
mode prices the fan-outs from the channel costs the earlier stages wrote and adds them up:

=======================  ===================================================================
module                   concept
=======================  ===================================================================
:mod:`.options`          the model's options as frozen objects, from config ``model``
:mod:`.placement`        where OpenMPI puts each rank, which channel joins two ranks
:mod:`.shapes`           OpenMPI's trees, schedules, ids, fixed decision rules and fall-backs
:mod:`.costs`            channel costs from the pt2pt and nbft stages' outputs (no fit here)
:mod:`.waits`            a reduce sender's share of its wait, from the nbft stage's flat fan-ins
:mod:`.forest`           the schedule core: trees on the machine, census, per-rank event times
:mod:`.kernels`          the forest's and schedules' passes as compiled loops (numba)
:mod:`.paper_mode`       the collective study's model (study eq. 2-3, 10-11): :class:`PaperMode`
:mod:`.openmpi_mode`     what OpenMPI 4.1.5 runs, priced from the measurements: :class:`OpenMPIMode`
:mod:`.calibrated_mode`  the same shapes with fitted costs: :class:`CalibratedMode`
:mod:`.calibration`      the calibrated mode's fit (rule ``model_calibrate``)
:mod:`.hybrid_mode`      the hybrid mode: the calibrated grid corrected by nearest measured residuals
:mod:`.bend`             how much of the model's bend between measured P the hybrid keeps (``model_bend``)
:mod:`.transfer`         how far the calibration carries to an algorithm nobody measured (``model_transfer``)
:mod:`.modes`            the modes a config names, built from the earlier stages' outputs
:mod:`.predict`          the prediction grid of every mode
:mod:`.scoring`          scores of the grid on the measured cells
:mod:`.validation`       every model outside the data it was fitted or tuned on (rule ``model_validate``)
=======================  ===================================================================
"""

from __future__ import annotations

import importlib

# name -> module: imported on first use, so that importing one module of the package (the placement,
# read when the workflow is parsed) does not load every mode, numba and pandas
_EXPORTS = {"CalibratedMode": "calibrated_mode", "ChannelCosts": "costs", "openmpi_costs": "costs",
            "paper_costs": "costs", "Placements": "forest", "OpenMPIMode": "openmpi_mode",
            "ModelOptions": "options", "PaperMode": "paper_mode", "PREDICTION_COLUMNS": "predict",
            "grid_axes": "predict", "predict_all": "predict", "what_if_machine": "predict",
            "what_if_P": "predict", "score": "scoring", "build_modes": "modes"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
