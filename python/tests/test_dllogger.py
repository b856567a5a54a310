"""modelzoo_dllogger against the Rust writer (dllogger/): the exact bytes of its stdout and JSON
lines for the calls of dllogger/tests/writer.rs, the real tcap_dllogger lines kept in
shared/fixtures/tecorigin-modelzoo reproduced byte for byte, loss.py's regex on our output,
verbosity, rank, errors, and the tcap_dllogger shim. Plain unittest (the .venv has no pytest):

    PYTHONPATH=python:python/tests .venv/bin/python -m unittest python/tests/test_dllogger.py -v
"""

import calendar
import contextlib
import io
import json
import math
import os
import re
import sys
import tempfile
import time
import unittest
import warnings
from decimal import Decimal
from unittest import mock

import modelzoo_dllogger as dll
from modelzoo_dllogger import JSONStreamBackend, Logger, StdOutBackend, Verbosity

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# As dllogger/tests/reader.rs finds them: <repo>/../shared/fixtures/tecorigin-modelzoo.
REAL_LOGS = os.path.join(REPO, "..", "shared", "fixtures", "tecorigin-modelzoo")
LOSS_PY = re.compile(r"rank : 0  train.loss : ([\d\.e-]+)")
RANK_VARS = ("WORLD_SIZE", "PADDLE_TRAINERS_NUM", "LOCAL_RANK", "PADDLE_TRAINER_ID")

_saved_tz = None


def setUpModule():
    # Datetimes in the expected lines are UTC (the real logs' machines were too).
    global _saved_tz
    _saved_tz = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()


def tearDownModule():
    if _saved_tz is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = _saved_tz
    time.tzset()


class Clock:
    """Stands in for the logger's clock: wall time and time since the logger was created."""

    def __init__(self, wall_ns=1751610473_195859_000):
        self.wall_ns = wall_ns
        self.mono_ns = 5_000_000_000

    def set(self, wall, elapsed="0.0"):
        """``wall`` seconds since the epoch and ``elapsed`` seconds, as the strings tcap wrote."""
        self.wall_ns = int(Decimal(wall) * 10**9)
        self.mono_ns = 5_000_000_000 + int(Decimal(elapsed) * 10**9)

    def __call__(self):
        return self.wall_ns, self.mono_ns


class LoggerTest(unittest.TestCase):
    def setUp(self):
        self.clock = Clock()
        patches = [
            mock.patch.object(dll, "_clock_ns", self.clock),
            mock.patch.dict(os.environ, {}),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        for var in RANK_VARS:
            os.environ.pop(var, None)
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def logger(self, *backends, **kw):
        log = Logger(backends, **kw)
        for b in backends:
            if isinstance(b, JSONStreamBackend):
                self.addCleanup(b.close)
        return log

    def json_backend(self, verbosity=Verbosity.VERBOSE, name="train.json", **kw):
        return JSONStreamBackend(verbosity, os.path.join(self.tmp.name, name), **kw)

    def stdout_of(self, fn):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            fn()
        return out.getvalue()

    @staticmethod
    def read(backend):
        backend.flush()
        with open(backend._filename, encoding="utf-8") as f:
            return f.read()


class StdOutBytes(LoggerTest):
    def test_tcap_line_shape(self):
        """Lines of writer.rs `stdout_line_has_tcaps_exact_shape` (its regexes with this clock's
        datetime written in)."""
        log = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=1)

        def calls():
            log.metadata("train.ips", {"unit": "imgs/s"})
            d = Verbosity.DEFAULT
            log.log((0, 3), {"train.loss": 0.5533216595649719, "train.ips": 23350.335421016007}, d)
            log.log((1, 2, 7), {"val.top1": 76.0, "n": 3}, d)
            log.log(4, {"val.top1": 0.5}, d)
            log.log("Summary", {"note": "done"}, d)
            log.info("plain text")

        dt = "2025-07-04 06:27:53.195859"
        self.assertEqual(
            self.stdout_of(calls),
            f"TCAPPDLL {dt} - Epoch: 0 Iteration: 3  rank : 1  train.loss : 0.5533216595649719  train.ips : 23350.335421016007 imgs/s\n"
            f"TCAPPDLL {dt} - Epoch: 1 Iteration: 2 Validation Iteration: 7  rank : 1  val.top1 : 76.0  n : 3 \n"
            f"TCAPPDLL {dt} - Epoch: 4  rank : 1  val.top1 : 0.5 \n"
            f"TCAPPDLL {dt} - Summary rank : 1  note : done \n"
            "plain text\n",
        )

    def test_bytes_equal_tcaps_for_the_same_calls(self):
        """writer.rs `stdout_bytes_equal_tcaps_for_the_same_calls`: its `want`, the text after
        `TCAPPDLL <datetime> - `."""
        log = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=None)

        def calls():
            log.metadata("train.ips", {"unit": "imgs/s"})
            log.metadata("val.top1", {"unit": "%"})
            d = Verbosity.DEFAULT
            log.log((0, 3), {"rank": 1, "train.loss": 0.5533216595649719, "train.ips": 23350.335421016007}, d)
            log.log((1, 2, 7), {"rank": 0, "val.top1": 76.0, "n": 3}, d)
            log.log(4, {"rank": 2, "val.top1": 1e-05, "x": 1e16}, d)
            log.log("Summary", {"rank": 0, "note": "done", "val.top1": math.nan}, d)

        want = [
            "Epoch: 0 Iteration: 3  rank : 1  train.loss : 0.5533216595649719  train.ips : 23350.335421016007 imgs/s",
            "Epoch: 1 Iteration: 2 Validation Iteration: 7  rank : 0  val.top1 : 76.0 % n : 3 ",
            "Epoch: 4  rank : 2  val.top1 : 1e-05 % x : 1e+16 ",
            "Summary rank : 0  note : done  val.top1 : nan %",
        ]
        got = [line.split(" - ", 1)[1] for line in self.stdout_of(calls).splitlines()]
        self.assertEqual(got, want)

    def test_rank_from_data_wins_and_none_disables(self):
        """writer.rs `rank_from_data_wins_and_none_disables`."""
        with_rank = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=5)
        without = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=None)
        out = self.stdout_of(
            lambda: (
                with_rank.log((0, 1), {"rank": 2.0, "train.loss": 1.0}, Verbosity.DEFAULT),
                without.log((0, 2), {"train.loss": 1.0}, Verbosity.DEFAULT),
            )
        ).splitlines()
        self.assertTrue(out[0].endswith("Iteration: 1  rank : 2  train.loss : 1.0 "), out[0])
        self.assertTrue(out[1].endswith("Iteration: 2  train.loss : 1.0 "), out[1])

    def test_rank_keeps_its_place_in_the_data_and_defaults_to_the_environment(self):
        os.environ.update(WORLD_SIZE="4", LOCAL_RANK="3")
        log = self.logger(StdOutBackend(Verbosity.DEFAULT))
        out = self.stdout_of(
            lambda: (
                log.log((0, 1), {"train.loss": 1.5}, Verbosity.DEFAULT),
                log.log((0, 2), {"train.loss": 1.5, "rank": "1"}, Verbosity.DEFAULT),
            )
        ).splitlines()
        self.assertTrue(out[0].endswith(" - Epoch: 0 Iteration: 1  rank : 3  train.loss : 1.5 "), out[0])
        self.assertTrue(out[1].endswith(" - Epoch: 0 Iteration: 2  train.loss : 1.5  rank : 1 "), out[1])

    def test_real_demo_log_lines_reproduced(self):
        """Every tcap stdout line of the ModelZoo Demo's sdaa.log (4 torchrun ranks; the Demo
        logs `"rank": os.environ["LOCAL_RANK"]`, a string) comes out byte for byte."""
        path = os.path.join(REAL_LOGS, "demo", "sdaa.log")
        if not os.path.exists(path):
            self.skipTest(f"real log {path} is absent")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        segments = ["TCAPPDLL " + s.split("\n", 1)[0] for s in text.split("TCAPPDLL ")[1:]]
        self.assertEqual(len(segments), 32, "iterations 0-7 of 4 ranks")
        shape = re.compile(
            r"TCAPPDLL (\S+ \S+) - Epoch: (\d+) Iteration: (\d+)  rank : (\d+)  "
            r"train\.loss : (\S+)  train\.ips : (\S+) imgs/s"
        )
        log = self.logger(StdOutBackend(Verbosity.DEFAULT))
        log.metadata("train.loss", {"unit": "", "GOAL": "MINIMIZE", "STAGE": "TRAIN"})
        log.metadata("train.ips", {"unit": "imgs/s", "format": ":.3f", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"})
        for seg in segments:
            dt, epoch, it, rank, loss, ips = shape.fullmatch(seg).groups()
            secs = calendar.timegm(time.strptime(dt[:19], "%Y-%m-%d %H:%M:%S"))
            self.clock.set(f"{secs}{dt[19:]}")
            data = {"rank": rank, "train.loss": float(loss), "train.ips": float(ips)}
            out = self.stdout_of(lambda: log.log((int(epoch), int(it)), data, Verbosity.DEFAULT))
            self.assertEqual(out, seg + "\n")


class JsonBytes(LoggerTest):
    def test_stream_shape(self):
        """The calls of writer.rs `json_stream_shape_and_read_back`, its regexes with this
        clock's values written in."""
        b = self.json_backend()
        log = self.logger(b, rank=0)
        self.clock.set("1751610473.195859", "1.3e-05")
        log.metadata("train.ips", {"unit": "imgs/s", "format": ":.3f", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"})
        self.clock.set("1751610477.806828", "4.610982")
        log.log((0, 1), {"train.loss": 2.5, "train.ips": math.nan, "tag": 'a"b'}, Verbosity.DEFAULT)
        log.log("final", {"val.top1": 76}, Verbosity.DEFAULT)
        log.info('config: {"lr": 0.1}')
        self.assertEqual(
            self.read(b).splitlines(),
            [
                'TCAPPDLL {"timestamp": "1751610473.195859", "elapsedtime": "1.3e-05", "datetime": "2025-07-04 06:27:53.195859", "type": "METADATA", "metric": "train.ips", "metadata": {"unit": "imgs/s", "format": ":.3f", "GOAL": "MAXIMIZE", "STAGE": "TRAIN"}}',
                'TCAPPDLL {"timestamp": "1751610477.806828", "datetime": "2025-07-04 06:27:57.806828", "elapsedtime": "4.610982", "type": "LOG", "step": [0, 1], "data": {"rank": 0, "train.loss": 2.5, "train.ips": "nan", "tag": "a\\"b"}}',
                'TCAPPDLL {"timestamp": "1751610477.806828", "datetime": "2025-07-04 06:27:57.806828", "elapsedtime": "4.610982", "type": "LOG", "step": "final", "data": {"rank": 0, "val.top1": 76}}',
                'INFO {"local_rank": 0, "datetime": "2025-07-04 06:27:57.806828", "type": "INFO", "data": "config: {\\"lr\\": 0.1}"}',
            ],
        )

    def test_every_line_is_json_after_its_prefix(self):
        b = self.json_backend()
        log = self.logger(b)
        log.metadata("m", {"unit": None, "GOAL": "MINIMIZE", "extra": 3})
        log.log((1, 2, 3), {"a": -math.inf, "b": 1e-7, "c": "x\ty\u0001\u00e9", "d": [1, 2], "e": None, "f": True})
        log.log((), {"a": 1.5})
        log.info("multi\nline")
        lines = self.read(b).splitlines()
        self.assertEqual(len(lines), 4)
        parsed = [json.loads(line.split(" ", 1)[1]) for line in lines]
        self.assertEqual(parsed[0]["metadata"], {"GOAL": "MINIMIZE", "extra": "3"})
        self.assertEqual(
            parsed[1]["data"],
            {"rank": 0, "a": "-inf", "b": 1e-7, "c": "x\ty\u0001\u00e9", "d": "[1, 2]", "e": "None", "f": "True"},
        )
        self.assertIn('"c": "x\\ty\\u0001\u00e9"', lines[1], "the Rust writer's escapes, UTF-8 as is")
        self.assertEqual((parsed[2]["step"], parsed[3]["data"]), ([], "multi\nline"))

    def test_real_metadata_lines_reproduced(self):
        """The METADATA lines tcap_dllogger wrote in the facial-expression-recognition logs come
        out byte for byte (LOG lines differ by design: `data` is a JSON object here)."""
        real = []
        for name in ("cuda_loss.json", "sdaa_loss.json"):
            path = os.path.join(REAL_LOGS, "facial-expression-recognition", name)
            if not os.path.exists(path):
                self.skipTest(f"real log {path} is absent")
            with open(path, encoding="utf-8") as f:
                real += [line.rstrip("\n") for line in f if '"type": "METADATA"' in line]
        self.assertEqual(len(real), 6)
        for line in real:
            rec = json.loads(line[len("TCAPPDLL ") :])
            self.clock.set(rec["timestamp"])  # the logger starts now
            b = self.json_backend(name="meta.json")
            log = self.logger(b)
            self.clock.set(rec["timestamp"], rec["elapsedtime"])
            log.metadata(rec["metric"], rec["metadata"])
            self.assertEqual(self.read(b), line + "\n")

    def test_truncate_or_append(self):
        path = os.path.join(self.tmp.name, "a.json")
        with open(path, "w") as f:
            f.write("old\n")
        for append, first in ((True, "old"), (False, "TCAPPDLL")):
            b = JSONStreamBackend(Verbosity.VERBOSE, path, append=append)
            self.logger(b).log((0, 0), {"train.loss": 1.0})
            b.close()
            with open(path) as f:
                self.assertTrue(f.read().startswith(first), append)

    def test_open_error_names_the_path_and_the_fix(self):
        path = os.path.join(self.tmp.name, "missing", "train.json")
        with self.assertRaises(FileNotFoundError) as cm:
            JSONStreamBackend(Verbosity.VERBOSE, path)
        self.assertIn(path, str(cm.exception))
        self.assertIn("check that the directory exists and is writable", str(cm.exception))

    def test_flush_makes_lines_visible_while_the_file_is_open(self):
        b = self.json_backend()
        log = self.logger(b)
        log.log((0, 0), {"train.loss": 1.0})
        log.flush()
        with open(b._filename) as f:
            self.assertEqual(f.read().count("\n"), 1)


class LossPyAndReader(LoggerTest):
    def test_loss_py_regexes_extract_every_logged_loss(self):
        """writer.rs `loss_py_regexes_extract_every_logged_loss`: loss.py's regex and
        compare_losspy's relaxed one read back every loss, across magnitudes."""
        log = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=0)
        logged = [(1.0 + math.sin(i * 0.37)) * 10.0 ** (i % 9 - 6) for i in range(200)]

        def calls():
            for i, loss in enumerate(logged):
                log.log((i // 50, i % 50), {"train.loss": loss, "train.ips": 1234.5}, Verbosity.DEFAULT)

        text = self.stdout_of(calls)
        self.assertEqual([float(x) for x in LOSS_PY.findall(text)], logged)
        relaxed = re.compile(r"train\.(?:loss|loss_avg)\s*:\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)")
        self.assertEqual([float(relaxed.search(line).group(1)) for line in text.splitlines()], logged)

    def test_lines_follow_the_readers_rules(self):
        """What dllogger/src/parse.rs needs: stdout `TCAPPDLL <datetime> - ` then the step labels
        and `key : value` pairs whose value is one token; JSON after `TCAPPDLL ` with the step a
        list of numbers or a string and numbers as JSON numbers. Both backends get the same
        instant."""
        os.environ.update(WORLD_SIZE="2", LOCAL_RANK="1")
        b = self.json_backend()
        log = self.logger(StdOutBackend(Verbosity.VERBOSE), b)
        log.metadata("train.ips", {"unit": "imgs/s"})
        self.clock.set("1751610477.000001", "0.5")
        out = self.stdout_of(
            lambda: log.log([3, 4], {"train.loss": 1e-7, "train.ips": 10.0}, Verbosity.DEFAULT)
        ).rstrip("\n")
        m = re.fullmatch(r"TCAPPDLL (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{6})?) - Epoch: 3 Iteration: 4 (.*)", out)
        self.assertIsNotNone(m, out)
        pairs = re.findall(r"(\S+) : (\S+)", m.group(2))
        self.assertEqual(pairs, [("rank", "1"), ("train.loss", "1e-07"), ("train.ips", "10.0")])
        rec = json.loads(self.read(b).splitlines()[-1][len("TCAPPDLL ") :])
        self.assertEqual((rec["datetime"], rec["step"]), (m.group(1), [3, 4]))
        self.assertEqual(rec["data"], {"rank": 1, "train.loss": 1e-7, "train.ips": 10.0})


class Behaviour(LoggerTest):
    def test_verbosity_filters_like_tcap(self):
        """writer.rs `verbosity_filters_like_tcap`, plus tcap's default `log` verbosity
        (VERBOSE) and integer verbosities."""
        j = self.json_backend()
        log = self.logger(StdOutBackend(Verbosity.DEFAULT), j, StdOutBackend(Verbosity.OFF))

        def calls():
            log.metadata("a", {})
            log.log(0, {"a": 1.0}, Verbosity.DEFAULT)
            log.log(0, {"a": 2.0}, Verbosity.VERBOSE)
            log.log(0, {"a": 3.0}, Verbosity.OFF)
            log.log(0, {"a": 4.0})
            log.log(0, {"a": 5.0}, verbosity=0)
            log.info("hello")

        out = self.stdout_of(calls)
        self.assertEqual(out.count("TCAPPDLL"), 2, "DEFAULT-level calls only; the OFF backend prints nothing")
        self.assertEqual(out.count("hello"), 1)
        text = self.read(j)
        self.assertEqual(text.count('"type": "LOG"'), 4)
        self.assertEqual(text.count('"type": "METADATA"'), 1)
        self.assertEqual(text.count("INFO {"), 1)

    def test_step_forms(self):
        log = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=0)
        steps = [(0, 1), [1, 11], 7, "PARAMETER", "TRAIN_END", (), [], (2, 3, 4, 5)]
        out = self.stdout_of(lambda: [log.log(s, {"x": 1}, Verbosity.DEFAULT) for s in steps])
        self.assertEqual(
            [line.split(" - ", 1)[1] for line in out.splitlines()],
            [
                "Epoch: 0 Iteration: 1  rank : 0  x : 1 ",
                "Epoch: 1 Iteration: 11  rank : 0  x : 1 ",
                "Epoch: 7  rank : 0  x : 1 ",
                "PARAMETER rank : 0  x : 1 ",
                "TRAIN_END rank : 0  x : 1 ",
                " rank : 0  x : 1 ",
                " rank : 0  x : 1 ",
                "Epoch: 2 Iteration: 3 Validation Iteration: 4  rank : 0  x : 1 ",
            ],
        )
        for bad in ((0, -1), (0, 1.5), None, (True,)):
            with self.assertRaisesRegex(TypeError, "non-negative integer"):
                log.log(bad, {"x": 1})
        with self.assertRaisesRegex(TypeError, "must be a dict"):
            log.log((0, 1), [("train.loss", 1.0)])
        with self.assertRaisesRegex(TypeError, "must be a dict"):
            log.metadata("train.ips", "imgs/s")

    def test_scalars_log_as_python_numbers(self):
        """A 0-d tensor or numpy scalar logs as its `.item()`; a numpy float64 (a float
        subclass with its own repr) as the float it is."""

        class Scalar:  # the part of a 0-d torch.Tensor / numpy scalar the logger uses
            ndim = 0

            def __init__(self, v):
                self.v = v

            def item(self):
                return self.v

        class Float64(float):
            def __repr__(self):
                return f"np.float64({float(self)})"

            __str__ = __repr__

        log = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=None)
        out = self.stdout_of(
            lambda: log.log(
                (0, 0),
                {"rank": Scalar(2.0), "train.loss": Scalar(0.5533216595649719), "train.ips": Float64(3.0)},
                Verbosity.DEFAULT,
            )
        )
        self.assertTrue(out.endswith(" - Epoch: 0 Iteration: 0  rank : 2  train.loss : 0.5533216595649719  train.ips : 3.0 \n"), out)

    def test_metadata_replaces_units_and_batch(self):
        log = self.logger(StdOutBackend(Verbosity.DEFAULT), rank=None)

        def calls():
            log.metadata_batch(["a", "b"], {"unit": "s"})
            log.log(0, {"a": 1, "b": 2}, Verbosity.DEFAULT)
            log.metadata("a", {"GOAL": "MINIMIZE"})  # no unit any more, as in the Rust writer
            log.log(0, {"a": 1, "b": 2}, Verbosity.DEFAULT)

        out = [line.split(" - ", 1)[1] for line in self.stdout_of(calls).splitlines()]
        self.assertEqual(out, ["Epoch: 0  a : 1 s b : 2 s", "Epoch: 0  a : 1  b : 2 s"])

    def test_custom_step_and_metric_format(self):
        b = StdOutBackend(
            Verbosity.DEFAULT,
            step_format=lambda step: f"Step: {step} ",
            metric_format=lambda metric, meta, value: f"{metric}={value}",
        )
        log = self.logger(b, rank=None)
        out = self.stdout_of(lambda: log.log((0, 1), {"a": 1, "b": 2}, Verbosity.DEFAULT))
        self.assertTrue(out.endswith(" - Step: (0, 1)  a=1 b=2\n"), out)

    def test_write_errors_do_not_stop_training_and_finish_raises(self):
        """writer.rs `write_errors_are_kept_for_finish`."""

        class Full(dll.Backend):
            def metadata(self, timestamp, elapsedtime, metric, metadata):
                pass

            def log(self, timestamp, elapsedtime, step, data):
                raise OSError(28, "No space left on device")

            def info(self, timestamp, data):
                pass

        j = self.json_backend()
        log = self.logger(Full(Verbosity.DEFAULT), j)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            log.log(0, {"a": 1.0}, Verbosity.DEFAULT)
            log.log(1, {"a": 2.0}, Verbosity.DEFAULT)
        self.assertEqual(err.getvalue().count("backend 0 (Full) failed to write"), 1, err.getvalue())
        self.assertEqual(self.read(j).count('"type": "LOG"'), 2, "the other backend still writes")
        with self.assertRaisesRegex(OSError, "No space left"):
            log.finish()

    def test_rank_rule_follows_tcap(self):
        """writer.rs `rank_rule_follows_tcap`."""
        cases = [
            ({}, None),
            ({"LOCAL_RANK": "3"}, None),
            ({"WORLD_SIZE": "1", "LOCAL_RANK": "3"}, 0),
            ({"WORLD_SIZE": "4", "LOCAL_RANK": "3"}, 3),
            ({"PADDLE_TRAINERS_NUM": "2", "PADDLE_TRAINER_ID": "1"}, 1),
            ({"WORLD_SIZE": "4"}, 0),
        ]
        for env, want in cases:
            self.assertEqual(dll.rank_from_env(env), want, env)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertIsNone(dll.rank_from_env({"WORLD_SIZE": "4", "LOCAL_RANK": "x"}))
        self.assertIn("LOCAL_RANK='x' is not a non-negative integer", str(caught[0].message))


class Shim(unittest.TestCase):
    def test_tcap_dllogger_import_line_of_ported_scripts(self):
        sys.path.insert(0, os.path.join(REPO, "python", "emulator"))
        self.addCleanup(sys.path.remove, sys.path[0])
        sys.modules.pop("tcap_dllogger", None)
        self.addCleanup(sys.modules.pop, "tcap_dllogger", None)
        from tcap_dllogger import JSONStreamBackend as J, Logger as L, StdOutBackend as S, Verbosity as V

        self.assertEqual((J, L, S, V), (JSONStreamBackend, Logger, StdOutBackend, Verbosity))


if __name__ == "__main__":
    unittest.main()
