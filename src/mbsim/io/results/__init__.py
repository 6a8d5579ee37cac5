"""The HDF5 results file (schema version 1): the schema, a streaming writer and a reader.

* :mod:`~mbsim.io.results.schema`: names, enum codes, column layouts, the size estimate;
* :mod:`~mbsim.io.results.target`: checks on an output path, and the exclusive lock a run
  holds on its file;
* :mod:`~mbsim.io.results.table`: one buffered, crash-safe table (compressed whole chunks plus
  an uncompressed tail);
* :mod:`~mbsim.io.results.chunks`: a whole chunk encoded as HDF5's shuffle and gzip filters
  store it (cheaply: only byte planes that repeat go through zlib);
* :mod:`~mbsim.io.results.writer`: :class:`ResultsWriter`, which streams a run into a file;
* :mod:`~mbsim.io.results.reader`: :func:`load_results`, which reads one back.

docs/hdf5-format.md is the reference for the layout.
"""

from mbsim.io.results.reader import Results, load_results
from mbsim.io.results.schema import (
    EVENT_KINDS,
    FORMAT,
    SCHEMA_VERSION,
    SOLVER_CODES,
    STATUSES,
    ResultsError,
    estimate_bytes,
    model_info,
)
from mbsim.io.results.target import check_output_path
from mbsim.io.results.writer import ResultsWriter

__all__ = [
    "EVENT_KINDS",
    "FORMAT",
    "SCHEMA_VERSION",
    "SOLVER_CODES",
    "STATUSES",
    "Results",
    "ResultsError",
    "ResultsWriter",
    "check_output_path",
    "estimate_bytes",
    "load_results",
    "model_info",
]
