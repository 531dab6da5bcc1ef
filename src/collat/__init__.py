"""collat: latency models of MPI collectives from OSU micro-benchmark measurements.

One folder per stage of the workflow (workflow/rules/<stage>.smk), one module per concept:

===============  ====================================================================================
``ingest``       raw OSU logs (``osu``), marker lines (``markers``), path patterns and manifests
                 (``metadata``), one input file into a tidy frame (``read``), the tidy tables'
                 schemas (``tidy``), outlier flags and cleaning (``quality``), checksummed download
                 (``fetch``)
``config``       config checks across keys (``settings``), the names a machine allows (``vocabulary``)
``pt2pt``        Hockney fits per channel (``hockney``) and their figures
``nbft``         NBFT lines and parallelisation factors (``gamma``) and their figures
``model``        the point-to-point model of bcast and reduce: placement, OpenMPI's shapes
                 (``shapes``: trees, schedules, decision rules), every mode with its fit (paper,
                 openmpi, calibrated with ``calibration``, hybrid), the prediction grid and the
                 validation; its docstring lists the modules
``regression``   segmented regressions against P (``segmented``)
``evaluate``     the study's R² tables and the summary (``tables``)
``figures``      the study's Figures 3-4 (``collective``), accuracy and validation figures, and what
                 every figure shares (``style``)
``selection``    the algorithm choice and its regret (``choice``), OpenMPI's rules files
                 (``rulesfile``) and their figures
``partitioned``  MPI-4 partitioned-communication gain (``gain``) and its figures
``plan``         the next OSU launches of a campaign: candidates and the first design (``design``),
                 the picks by expected regret and error removed (``acquisition``), one round
                 (``campaign``), OSU commands, batch scripts and manifests (``jobs``)
``runner``       logging and worker processes for the workflow scripts
===============  ====================================================================================

Two papers are cited, named apart: "study eq. N" is the collective-latency study (Tallone 2024,
../shared/papers/tallone-2024-mpi-collective-latency-models.md), "Gillis eq. N" the partitioned-
communication paper (Gillis 2023, ../shared/papers/gillis-2023-partitioned-communication.md).

Where each equation lives:

=================  =================================================================
study eq. 1        ``model.openmpi_mode.sequential_fanout`` (never below one message on the slowest channel)
study eq. 2-3      ``model.paper_mode.staged_forest`` / ``staged`` (stages, n_s segments)
study eq. 4, 7     ``nbft.gamma.gamma_hat`` (gamma = T_NBFT / T_p2p)
study eq. 5        ``pt2pt.hockney.fit_channel``, ``pt2pt.hockney.t_p2p`` (T = alpha + beta m)
study eq. 6        ``nbft.gamma.nbft_line`` (T_NBFT = alpha + beta (P - 1))
study eq. 10       ``pt2pt.hockney.q_ratios`` (Q between channels)
study eq. 11       ``model.paper_mode.folded_fanout`` (folding onto the highest channel)
study eq. 12       ``regression.segmented.design`` / ``regression.segmented.fit`` (segmented regression)
Gillis eq. 2       ``partitioned.gain.t_bulk``
Gillis eq. 3       ``partitioned.gain.t_pipelined``
Gillis eq. 4       ``partitioned.gain.gain_large``
Gillis eq. 5       ``partitioned.gain.gain_small``
Gillis eq. 6       ``partitioned.gain.computation_rate``
Gillis eq. 7       ``partitioned.gain.noise``
Gillis eq. 8       ``partitioned.gain.delay``
Gillis eq. 9       ``partitioned.gain.delay_rate``
(2-5 unified)      ``partitioned.gain.gain`` (every message pays the link's point-to-point time)
=================  =================================================================
"""

__version__ = "0.1.0"


class UserError(Exception):
    """A problem with the user's input or environment: reported as its one-line message, no traceback."""


class InputError(UserError, ValueError):
    """Bad input data: the message names the file, the line and what was expected."""

    def __init__(self, path, line, expected, found=None):
        self.path = str(path)
        self.line = line
        self.expected = expected
        self.found = found
        where = f"{self.path}, line {line}" if line is not None else self.path
        msg = f"{where}: expected {expected}"
        if found is not None:
            msg += f", found {found!r}"
        super().__init__(msg)
