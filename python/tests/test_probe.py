"""modelzoo_probe against torch's own results: keys, call indices, phases, scopes, statistics,
.npy contents, module records, refusal to overwrite. Plain unittest (the .venv has no pytest):

    PYTHONPATH=python:python/tests .venv/bin/python -m unittest discover -s python/tests
"""

import json
import math
import os
import struct
import tempfile
import unittest

import torch

import modelzoo_probe
import tiny_step


def records(step_dir):
    with open(os.path.join(step_dir, "records.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_npy(path):
    """(descr, shape, raw bytes) of an .npy file, parsed by hand (no numpy here)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x93NUMPY\x01\x00", data[:8]
    (n,) = struct.unpack("<H", data[8:10])
    header = eval(data[10 : 10 + n].decode("latin1"))  # a Python dict literal by definition
    return header["descr"], header["shape"], data[10 + n :]


def dump_step(root, **kw):
    net, x, y = tiny_step.build()
    w1 = net.conv1.weight.detach().clone()
    b1 = net.conv1.bias.detach().clone()
    with modelzoo_probe.dump(root, model=net, step=1, **kw) as step_dir:
        tiny_step.step(net, x, y)
    return step_dir, x, w1, b1


class ProbeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_keys_calls_phases_scopes(self):
        step_dir, _, _, _ = dump_step(self.root, tensors="stats")
        self.assertEqual(step_dir, os.path.join(self.root, "rank0", "step1"))
        meta = json.load(open(os.path.join(step_dir, "meta.json")))
        self.assertEqual(
            {k: meta[k] for k in ("format", "version", "framework", "model", "step", "rank", "level", "tensors", "dtype", "device")},
            {"format": "modelzoo-dump", "version": 1, "framework": "pytorch", "model": "Tiny", "step": 1,
             "rank": 0, "level": "op", "tensors": "stats", "dtype": "float32", "device": "cpu"},
        )
        recs = records(step_dir)
        for r in recs:
            self.assertEqual(
                r["key"], f"{r['op']}#{r['call']}.{r['phase']}.{r['io']}.{r['index']}"
            )
        convs = [r for r in recs if r["op"] == "aten::convolution" and r["io"] == "output"]
        self.assertEqual([(r["call"], r["phase"], r["scope"]) for r in convs],
                         [(0, "forward", "conv1"), (1, "forward", "conv2")])
        # Call indices count per op, in execution order, with no gaps.
        for op in {r["op"] for r in recs}:
            calls = sorted({r["call"] for r in recs if r["op"] == op})
            self.assertEqual(calls, list(range(len(calls))), op)
        phases = [r["phase"] for r in recs]
        first_bwd = phases.index("backward")
        self.assertTrue(all(p == "forward" for p in phases[:first_bwd]))
        bwd = {(r["op"], r["scope"]) for r in recs if r["phase"] == "backward"}
        # Backward ops carry the scope of the module whose forward made their autograd node.
        self.assertIn(("aten::convolution_backward", "conv2"), bwd)
        self.assertIn(("aten::convolution_backward", "conv1"), bwd)
        self.assertIn(("aten::mm", "fc"), bwd)
        # The optimizer's in-place updates run after backward, outside any module: forward.
        adds = [r for r in recs if r["op"] == "aten::add_"]
        self.assertTrue(adds and all(r["phase"] == "forward" for r in adds[-3:]))
        # relu is called as torch.relu inside forward: captured at the dispatcher all the same.
        self.assertEqual(len({r["call"] for r in recs if r["op"] == "aten::relu"}), 2)

    def test_stats_match_torch(self):
        step_dir, x, w1, b1 = dump_step(self.root, tensors="stats")
        recs = {r["key"]: r for r in records(step_dir)}
        want = torch.nn.functional.conv2d(x, w1, b1).double()
        r = recs["aten::convolution#0.forward.output.0"]
        self.assertEqual(r["shape"], list(want.shape))
        self.assertEqual(r["dtype"], "float32")
        for field, value in (("min", want.min()), ("max", want.max()), ("mean", want.mean()),
                             ("l2", torch.linalg.vector_norm(want))):
            self.assertTrue(math.isclose(r[field], float(value), rel_tol=1e-6, abs_tol=1e-9), (field, r[field], float(value)))
        self.assertEqual((r["nan"], r["inf"]), (0, 0))
        self.assertRegex(r["checksum"], r"^crc32:[0-9a-f]{8}$")
        # Inputs are recorded before the op runs: the SGD update's add_ sees the old weight.
        upd = [v for v in recs.values() if v["op"] == "aten::add_" and v["io"] == "input"
               and v["index"] == 0 and v["shape"] == list(w1.shape)]
        self.assertTrue(upd)
        self.assertTrue(math.isclose(upd[-1]["l2"], float(torch.linalg.vector_norm(w1.double())), rel_tol=1e-9))

    def test_full_tensors_are_npy_of_the_tensor(self):
        step_dir, x, _, _ = dump_step(self.root, tensors="full")
        r = next(v for v in records(step_dir) if v["key"] == "aten::convolution#0.forward.input.0")
        descr, shape, data = read_npy(os.path.join(step_dir, r["file"]))
        self.assertEqual((descr, list(shape)), ("<f4", r["shape"]))
        self.assertEqual(data, struct.pack(f"<{x.numel()}f", *x.flatten().tolist()))
        # bfloat16 (NumPy has none) is written as float32, its dtype kept in the record.
        with modelzoo_probe.dump(os.path.join(self.root, "bf16"), name="bf16", tensors="full") as d:
            torch.full((3,), 1.5, dtype=torch.bfloat16) * 2
        r = next(v for v in records(d) if v["key"] == "aten::mul#0.forward.output.0")
        self.assertEqual(r["dtype"], "bfloat16")
        descr, shape, data = read_npy(os.path.join(d, r["file"]))
        self.assertEqual((descr, shape, struct.unpack("<3f", data)), ("<f4", (3,), (3.0, 3.0, 3.0)))

    def test_module_level(self):
        step_dir, _, _, _ = dump_step(self.root, tensors="stats", level="module")
        recs = records(step_dir)
        self.assertTrue(all(r["key"].startswith("module::") for r in recs))
        keys = [r["key"] for r in recs]
        self.assertIn("module::conv1#0.forward.output.0", keys)
        self.assertIn("module::root#0.forward.output.0", keys)
        mix = os.path.join(self.root, "mix")
        step_dir, _, _, _ = dump_step(mix, tensors="stats", level="mix")
        ops = {r["key"].split("::")[0] for r in records(step_dir)}
        self.assertEqual(ops, {"aten", "module"})

    def test_never_overwrites_and_unfinished_has_no_meta(self):
        dump_step(self.root, tensors="stats")
        with self.assertRaisesRegex(FileExistsError, "never overwrites"):
            dump_step(self.root, tensors="stats")
        other = os.path.join(self.root, "crash")
        net, x, y = tiny_step.build()
        with self.assertRaises(RuntimeError):
            with modelzoo_probe.dump(other, model=net, step=1) as step_dir:
                net(x)
                raise RuntimeError("the step failed")
        self.assertTrue(os.path.exists(os.path.join(step_dir, "records.jsonl")))
        self.assertFalse(os.path.exists(os.path.join(step_dir, "meta.json")))


if __name__ == "__main__":
    unittest.main()
