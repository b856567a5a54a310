"""The tcap_dllogger API (Tecorigin's fork of NVIDIA's dllogger) for Python training scripts,
writing byte for byte the lines of the kit's Rust writer (``dllogger/``), so the Rust reader,
``modelzoo compare`` and the ModelZoo's loss.py regex ``rank : 0  train.loss : ([\\d\\.e-]+)``
read them:

    from modelzoo_dllogger import Logger, StdOutBackend, JSONStreamBackend, Verbosity
    log = Logger([StdOutBackend(Verbosity.DEFAULT), JSONStreamBackend(Verbosity.VERBOSE, "log.json")])
    log.metadata("train.ips", {"unit": "imgs/s", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"})
    log.log(step=(epoch, it), data={"train.loss": loss.item(), "train.ips": ips},
            verbosity=Verbosity.DEFAULT)

prints ``TCAPPDLL 2025-05-15 14:20:10.930607 - Epoch: 0 Iteration: 3  rank : 0  train.loss :
0.55  train.ips : 9718.9 imgs/s`` and appends ``TCAPPDLL {json}`` lines to log.json
(docs/python_logger.md; docs/dllogger.md describes the format).

Where the Rust writer and tcap_dllogger differ, this follows the Rust writer: every log
carries the rank first unless the data has its own ``rank``; the JSON ``data`` is a JSON
object, not a Python-repr string; a metric called ``loss`` keeps its name.
"""

import atexit
import math
import operator
import os
import re
import sys
import time
import warnings
from collections.abc import Mapping
from datetime import datetime

__all__ = [
    "Backend",
    "JSONStreamBackend",
    "Logger",
    "StdOutBackend",
    "Verbosity",
    "default_metric_format",
    "format_step",
    "rank_from_env",
]


class Verbosity:
    """How much a backend writes (tcap's integers, so scripts may pass 0 or 1 too).

    A backend writes a ``log`` call whose verbosity is at most its own; an ``OFF`` backend
    writes nothing at all, and a ``log`` at ``OFF`` is never written.
    """

    OFF = -1
    DEFAULT = 0
    VERBOSE = 1


def rank_from_env(environ=None):
    """The process's rank, found the way tcap_dllogger finds it, or None when not distributed.

    Neither WORLD_SIZE nor PADDLE_TRAINERS_NUM set: None (tcap uses 0). WORLD_SIZE=1: 0.
    Else LOCAL_RANK (torchrun), else PADDLE_TRAINER_ID (Paddle), else 0. A rank variable that
    is not a non-negative integer gives None and a warning (tcap would crash).
    """
    env = os.environ if environ is None else environ
    world = env.get("WORLD_SIZE")
    if world is None and env.get("PADDLE_TRAINERS_NUM") is None:
        return None
    if world is not None and world.strip() == "1":
        return 0
    for var in ("LOCAL_RANK", "PADDLE_TRAINER_ID"):
        value = env.get(var)
        if value is None:
            continue
        text = value.strip()
        if re.fullmatch(r"\+?[0-9]+", text) and int(text) <= 0xFFFFFFFF:
            return int(text)
        warnings.warn(
            f"{var}={value!r} is not a non-negative integer; dllogger logs as rank 0",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return 0


# ---------------------------------------------------------------------------------------------
# Values, written the way the Rust writer writes its Value::Int / Float / Str


def _scalar(value):
    """The value as the Rust writer would hold it: numpy scalars and 0-d tensors become the
    Python number ``.item()`` gives (so ``loss`` and ``loss.item()`` log alike); anything that
    is not a number or a string is kept and written as its ``str()``."""
    if not isinstance(value, (bool, int, float, str)) and getattr(value, "ndim", None) == 0:
        item = getattr(value, "item", None)
        if callable(item):
            return item()
    return value


def _value(key, value):
    """Normalised value of ``key``: tcap writes a numeric ``rank`` as an integer."""
    v = _scalar(value)
    if key == "rank" and isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return v


def _py_text(v):
    """Python's ``str()`` of a number (``float.__repr__``: ``3.0``, ``1e-05``, ``nan``; never
    numpy's ``np.float64(3.0)``), or ``str()`` of anything else."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float):
        return float.__repr__(v)
    return str(v)


# The Rust writer's JSON string escapes: `"`, `\`, \n, \r, \t by name, other control characters
# as \u00XX; everything else (non-ASCII included) written as is.
_JSON_ESCAPES = {c: "\\u%04x" % c for c in range(0x20)}
_JSON_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def _json_str(s):
    return '"' + s.translate(_JSON_ESCAPES) + '"'


def _json_value(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _json_str(_py_text(v))
    if isinstance(v, float) and not math.isfinite(v):
        return '"' + float.__repr__(v) + '"'  # JSON has no literal for nan/inf
    return _py_text(v)


def _json_float_str(x):
    """Python's ``str(float)`` as a JSON string (tcap's timestamps): ``"1751620651.86237"``."""
    return '"' + float.__repr__(float(x)) + '"'


# ---------------------------------------------------------------------------------------------
# Steps


def _normalise_step(step):
    """A string, or a tuple of step numbers: tcap's ``(epoch, iteration[, validation
    iteration])`` tuples (lists too), ``()`` for a summary, and an int for ``(epoch,)``."""
    if isinstance(step, str):
        return step
    if isinstance(step, (tuple, list)):
        numbers = step
    else:
        numbers = (step,)
    out = []
    for n in numbers:
        try:
            i = operator.index(n)
        except TypeError:
            i = -1
        if isinstance(n, bool) or i < 0:
            raise TypeError(
                f"dllogger step {step!r}: expected a string such as 'PARAMETER', an epoch "
                "number, or a tuple/list of non-negative integers such as (epoch, iteration); "
                f"{n!r} is not a non-negative integer (the log reader reads steps as such)"
            )
        out.append(i)
    return tuple(out)


def format_step(step):
    """tcap's step text: ``Epoch: 0 Iteration: 3 `` (each number followed by a space; numbers
    after the third are not printed), or a string step as given."""
    if isinstance(step, str):
        return step
    labels = ("Epoch: ", "Iteration: ", "Validation Iteration: ")
    return "".join(f"{label}{n} " for label, n in zip(labels, _normalise_step(step)))


def default_metric_format(metric, metadata, value):
    """tcap's ``metric : value unit``; with no unit the trailing space stays, which makes the
    two spaces between fields that loss.py's regex expects."""
    unit = metadata.get("unit")
    return f"{metric} : {_py_text(_value(metric, value))} {'' if unit is None else unit}"


# ---------------------------------------------------------------------------------------------
# Backends


class Backend:
    """A destination for log records, with tcap_dllogger's interface so tcap-style backends
    work with this ``Logger`` too. ``timestamp`` is the call's local ``datetime``,
    ``elapsedtime`` the seconds since the logger was created."""

    def __init__(self, verbosity):
        self._verbosity = verbosity

    @property
    def verbosity(self):
        return self._verbosity

    def metadata(self, timestamp, elapsedtime, metric, metadata):
        raise NotImplementedError(f"{type(self).__name__} must implement metadata()")

    def log(self, timestamp, elapsedtime, step, data):
        raise NotImplementedError(f"{type(self).__name__} must implement log()")

    def info(self, timestamp, data):
        raise NotImplementedError(f"{type(self).__name__} must implement info()")

    def flush(self):
        """Nothing is buffered unless a backend says so."""


class StdOutBackend(Backend):
    """Prints tcap's stdout lines:
    ``TCAPPDLL 2025-05-15 14:20:10.934968 - Epoch: 0 Iteration: 3  rank : 1  train.loss : 0.55``.

    Each line goes out in one write and is flushed, so it is visible at once and lines of
    concurrent ranks are not cut inside a line. METADATA is not printed (it gives the units);
    ``info`` prints its text as given. ``step_format`` and ``metric_format`` replace
    ``format_step`` and ``default_metric_format``, as in tcap_dllogger.
    """

    def __init__(self, verbosity, step_format=format_step, metric_format=default_metric_format):
        super().__init__(verbosity)
        self.step_format = step_format
        self.metric_format = metric_format
        self._metadata = {}

    def metadata(self, timestamp, elapsedtime, metric, metadata):
        # Each call replaces the metric's metadata (as the Rust writer does; tcap merges).
        self._metadata[metric] = metadata

    def log(self, timestamp, elapsedtime, step, data):
        fields = " ".join(self.metric_format(k, self._metadata.get(k, {}), v) for k, v in data.items())
        self._write(f"TCAPPDLL {timestamp} - {self.step_format(step)} {fields}\n")

    def info(self, timestamp, data):
        self._write(f"{data}\n")

    @staticmethod
    def _write(line):
        out = sys.stdout  # looked up per line, so redirect_stdout() and reassignment work
        out.write(line)
        out.flush()


class JSONStreamBackend(Backend):
    """Writes tcap_dllogger's JSON stream: ``TCAPPDLL {json}`` lines of type METADATA and LOG
    and ``INFO {json}`` lines, keys in tcap's order, except that ``data`` is a JSON object
    with numbers as numbers (``{"rank": 0, "train.loss": 0.55}``); nan and infinities are the
    strings ``"nan"``, ``"inf"``, ``"-inf"``.

    ``append=False`` truncates the file (tcap's effective behaviour), ``append=True`` appends.
    Lines are buffered (64 KiB) and reach the file when the buffer fills, at the first call
    more than a second after the last flush, on ``flush()``/``close()``, and at exit through
    the ``Logger``. The stream is appended live, so it is not written through a temporary file.
    """

    def __init__(self, verbosity, filename, append=False):
        super().__init__(verbosity)
        self._filename = os.fspath(filename)
        try:
            self.file = open(
                self._filename,
                "a" if append else "w",
                encoding="utf-8",
                errors="backslashreplace",  # an odd string never stops training
                newline="\n",
                buffering=64 * 1024,
            )
        except OSError as e:
            raise OSError(
                e.errno,
                f"cannot open JSON log {self._filename}: {e.strerror} "
                "(check that the directory exists and is writable)",
            ) from e
        self._local_rank = rank_from_env() or 0
        self._last_flush = time.monotonic()

    def metadata(self, timestamp, elapsedtime, metric, metadata):
        self._write(
            'TCAPPDLL {"timestamp": %s, "elapsedtime": %s, "datetime": %s, "type": "METADATA", '
            '"metric": %s, "metadata": {%s}}\n'
            % (
                _json_float_str(timestamp.timestamp()),
                _json_float_str(elapsedtime),
                _json_str(str(timestamp)),
                _json_str(str(metric)),
                ", ".join(f"{_json_str(k)}: {_json_str(_py_text(v))}" for k, v in _metadata_items(metadata)),
            )
        )

    def log(self, timestamp, elapsedtime, step, data):
        # The Logger hands a string or a tuple of step numbers (see _normalise_step).
        step_json = _json_str(step) if isinstance(step, str) else "[" + ", ".join(map(str, step)) + "]"
        self._write(
            'TCAPPDLL {"timestamp": %s, "datetime": %s, "elapsedtime": %s, "type": "LOG", '
            '"step": %s, "data": {%s}}\n'
            % (
                _json_float_str(timestamp.timestamp()),
                _json_str(str(timestamp)),
                _json_float_str(elapsedtime),
                step_json,
                ", ".join(f"{_json_str(str(k))}: {_json_value(_value(k, v))}" for k, v in data.items()),
            )
        )

    def info(self, timestamp, data):
        self._write(
            'INFO {"local_rank": %d, "datetime": %s, "type": "INFO", "data": %s}\n'
            % (self._local_rank, _json_str(str(timestamp)), _json_str(str(data)))
        )

    def flush(self):
        if not self.file.closed:
            self.file.flush()
        self._last_flush = time.monotonic()

    def close(self):
        """Flushes and closes the file; later calls to this backend fail."""
        self.file.close()

    def _write(self, line):
        self.file.write(line)
        now = time.monotonic()
        if now - self._last_flush >= 1.0:
            self.file.flush()
            self._last_flush = now


# The METADATA keys the Rust writer knows, in its order; other keys follow in the given order.
_METADATA_KEYS = ("unit", "format", "GOAL", "STAGE")


def _metadata_items(metadata):
    """(key, value) pairs of a metadata dict in the Rust writer's order, None values left out."""
    known = [(k, metadata[k]) for k in _METADATA_KEYS if k in metadata]
    other = [(str(k), v) for k, v in metadata.items() if k not in _METADATA_KEYS]
    return [(k, v) for k, v in known + other if v is not None]


# ---------------------------------------------------------------------------------------------
# Logger

_RANK_FROM_ENV = object()


def _clock_ns():
    """(wall-clock ns, monotonic ns) of a logger call, read once and shared by every backend."""
    return time.time_ns(), time.monotonic_ns()


class Logger:
    """The logger every ModelZoo model uses: ``metadata``, ``log``, ``info``, ``flush`` go to
    each backend.

    Each ``log`` carries the process's rank first (as ``rank``) unless the data has a ``rank``
    of its own, so loss.py's ``rank : 0  train.loss : ...`` always matches. The rank is
    ``rank_from_env()`` or 0; ``rank=N`` sets it, ``rank=None`` adds none (exactly like tcap).

    Writing never interrupts training: a backend's I/O error is reported once on stderr and
    kept; ``finish()`` flushes and raises the first one. Backends are flushed at exit.
    """

    def __init__(self, backends, rank=_RANK_FROM_ENV):
        self.backends = list(backends)
        if rank is _RANK_FROM_ENV:
            rank = rank_from_env() or 0
        self.rank = None if rank is None else operator.index(rank)
        self._failed = [False] * len(self.backends)
        self._first_error = None
        self._start_ns = _clock_ns()[1]
        atexit.register(self.flush)

    def metadata(self, metric, metadata):
        """Declares a metric's unit, format, goal and stage:
        ``metadata("train.ips", {"unit": "imgs/s", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"})``."""
        if not isinstance(metadata, Mapping):
            raise TypeError(
                f"dllogger metadata for {metric!r} must be a dict such as "
                f"{{'unit': 'imgs/s', 'GOAL': 'MAXIMIZE'}}, not {type(metadata).__name__}"
            )
        ts, elapsed = self._now()
        for i, b in enumerate(self.backends):
            if b.verbosity != Verbosity.OFF:
                self._call(i, b.metadata, ts, elapsed, metric, dict(metadata))

    def metadata_batch(self, metrics, metadata):
        """tcap's ``metadata`` for several metrics sharing one metadata dict."""
        for metric in metrics:
            self.metadata(metric, metadata)

    def log(self, step, data, verbosity=Verbosity.VERBOSE):
        """Logs one step's values to every backend whose verbosity admits ``verbosity``
        (tcap's default, VERBOSE, is not printed by a DEFAULT stdout backend)."""
        if verbosity == Verbosity.OFF:
            return
        step = _normalise_step(step)
        if not isinstance(data, Mapping):
            raise TypeError(
                f"dllogger data at step {step!r} must be a dict of metric name to value such "
                f"as {{'train.loss': 0.5}}, not {type(data).__name__}"
            )
        if self.rank is not None and "rank" not in data:
            data = {"rank": self.rank, **data}
        ts, elapsed = self._now()
        for i, b in enumerate(self.backends):
            if b.verbosity != Verbosity.OFF and b.verbosity >= verbosity:
                self._call(i, b.log, ts, elapsed, step, data)

    def info(self, data):
        """Writes a free-form message (stdout: as is; JSON: an ``INFO {json}`` line)."""
        ts, _ = self._now()
        for i, b in enumerate(self.backends):
            if b.verbosity != Verbosity.OFF:
                self._call(i, b.info, ts, data)

    def flush(self):
        """Pushes every backend's buffered lines out."""
        for i, b in enumerate(self.backends):
            self._call(i, b.flush)

    def finish(self):
        """Flushes, and raises the first I/O error any backend hit, so a script can fail the
        run when its metrics did not all reach disk."""
        self.flush()
        if self._first_error is not None:
            raise self._first_error

    def _now(self):
        wall_ns, mono_ns = _clock_ns()
        secs, micros = divmod(wall_ns // 1000, 1_000_000)
        ts = datetime.fromtimestamp(secs).replace(microsecond=micros)
        return ts, (mono_ns - self._start_ns) // 1000 / 1e6

    def _call(self, i, fn, *args):
        try:
            fn(*args)
        except OSError as e:
            if not self._failed[i]:
                self._failed[i] = True
                sys.stderr.write(
                    f"dllogger: backend {i} ({type(self.backends[i]).__name__}) failed to "
                    f"write: {e}; metrics may be missing from it\n"
                )
            if self._first_error is None:
                self._first_error = e
