"""collat: latency models of MPI collectives from OSU micro-benchmark measurements.

One module per concept: ``osu`` (raw log parsing), ``published`` (the study's CSV
layout), ``tidy`` (the table schemas), ``quality`` (duplicates and outliers),
``fetch`` (checksummed data download), ``hockney`` (point-to-point fits),
``nbft`` (parallelisation factors), ``regression`` (segmented fits) and
``partitioned`` (MPI-4 partitioned gain).
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
