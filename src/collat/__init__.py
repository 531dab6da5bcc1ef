"""collat: latency models of MPI collectives from OSU micro-benchmark measurements.

One module per concept: ``osu`` (raw log parsing), ``markers`` (marker lines between runs),
``metadata`` (path patterns and manifests), ``ingest`` (raw logs and the study's CSV layout into
tidy tables), ``tidy`` (the table schemas), ``quality`` (duplicates, outliers, cleaning profiles),
``fetch`` (checksummed data download), ``settings`` (config checks across keys), ``hockney``
(point-to-point fits), ``nbft`` (parallelisation factors), ``placement`` (where ranks sit, which
channel joins two), ``trees`` (OpenMPI's tree shapes), ``schedules`` (OpenMPI's algorithms that
move parts of the message in rounds), ``openmpi`` (OpenMPI's collective ids, fixed decision rules
and fall-backs), ``model`` (the point-to-point model of bcast and reduce: a package with one module
per mode, see its docstring), ``calibration`` (the calibrated mode's costs fitted on collective
measurements), ``correction`` (nearest
measurements: the naive baseline and the hybrid mode), ``validation`` (splits, noise floor,
leaderboard), ``regression`` (segmented fits), ``selection`` (the algorithm choice and its regret),
``rulesfile`` (OpenMPI's dynamic-rules files), ``tables`` and ``figures`` (results),
``partitioned`` (MPI-4 partitioned gain), ``runner`` (logging and worker processes for the
workflow scripts).

Two papers are cited, named apart: "study eq. N" is the collective-latency study (Tallone 2024,
../shared/papers/tallone-2024-mpi-collective-latency-models.md), "Gillis eq. N" the partitioned-
communication paper (Gillis 2023, ../shared/papers/gillis-2023-partitioned-communication.md).

Where each equation lives:

=================  =================================================================
study eq. 1        ``model.openmpi_mode.sequential_fanout`` (never below one message on the slowest channel)
study eq. 2-3      ``model.paper_mode.staged_forest`` / ``staged`` (stages, n_s segments)
study eq. 4, 7     ``nbft.gamma_hat`` (gamma = T_NBFT / T_p2p)
study eq. 5        ``hockney.fit_channel``, ``hockney.t_p2p`` (T = alpha + beta m)
study eq. 6        ``nbft.nbft_line`` (T_NBFT = alpha + beta (P - 1))
study eq. 10       ``hockney.q_ratios`` (Q between channels)
study eq. 11       ``model.paper_mode.folded_fanout`` (folding onto the highest channel)
study eq. 12       ``regression.design`` / ``regression.fit`` (segmented regression)
Gillis eq. 2       ``partitioned.t_bulk``
Gillis eq. 3       ``partitioned.t_pipelined``
Gillis eq. 4       ``partitioned.gain_large``
Gillis eq. 5       ``partitioned.gain_small``
Gillis eq. 6       ``partitioned.computation_rate``
Gillis eq. 7       ``partitioned.noise``
Gillis eq. 8       ``partitioned.delay``
Gillis eq. 9       ``partitioned.delay_rate``
(2-5 unified)      ``partitioned.gain`` (every message pays the link's point-to-point time)
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
