"""modelzoo port's run-time shim (python/port/sitecustomize.py): the CPU baseline's CUDA-on-CPU
mapping and the backward-loss recording of both runs. Each fixture under
port/tests/data/idioms/ is one device idiom of public CUDA scripts; it runs under the shim
(PYTHONPATH = the shim's directory, MODELZOO_PORT_CPU_BASELINE=1, no GPU visible) with its CUDA
idiom, and without the shim with its CPU spelling, and both must compute the same numbers.
Plain unittest:

    PYTHONPATH=python:python/tests .venv/bin/python -m unittest python/tests/test_port_shim.py -v
"""

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIM = os.path.join(ROOT, "python", "port")
IDIOMS = os.path.join(ROOT, "port", "tests", "data", "idioms")
BANNER = "modelzoo port: CPU BASELINE"
# Both sides run the same CPU kernels on the same inputs: they agree to rounding at most.
REL_TOL = 1e-6


def clean_env():
    """The test process's environment without anything that steers the shim or a launcher."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MODELZOO_", "TORCHELASTIC_")) and k not in
           ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "PYTHONPATH", "TORCH_SDAA_BANNER")}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"})
    return env


def run(args, shim=False, baseline=False, backward_dir=None, extra=None, timeout=120):
    """Runs the venv's python (or a tool beside it) with the shim as the port would."""
    env = clean_env()
    if shim:
        env["PYTHONPATH"] = SHIM
    if baseline:
        env["MODELZOO_PORT_CPU_BASELINE"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    if backward_dir:
        env["MODELZOO_PORT_BACKWARD_DIR"] = backward_dir
    env.update(extra or {})
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=IDIOMS)


def python(*args, **kwargs):
    return run([sys.executable, "-W", "ignore", *args], **kwargs)


def result(out):
    """The fixture's RESULT line as a dict; fails with the run's output when there is none."""
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or len(lines) != 1:
        raise AssertionError(f"rc {out.returncode}\nstdout:\n{out.stdout}\nstderr:\n{out.stderr}")
    return json.loads(lines[0][len("RESULT "):])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Close:
    """Assertions on numbers computed on both sides."""

    def assert_close(self, got, want, what):
        self.assertEqual(len(got), len(want), what)
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertTrue(math.isclose(g, w, rel_tol=REL_TOL, abs_tol=1e-7),
                            f"{what}[{i}]: {g} under the shim, {w} on the CPU")


# The CPU spellings of the single-process idioms, all run in one process without the shim (each
# fixture seeds its own generator): one torch import instead of one per fixture.
REFERENCE = """
import contextlib, io, json, runpy, sys
out = {}
for name in sys.argv[1:]:
    sys.argv = [name + ".py", "reference" if name == "torchrun_ddp" else "cpu"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            runpy.run_path(name + ".py", run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                raise
    out[name] = buf.getvalue()
print(json.dumps(out))
"""
# torchrun_ddp's reference is its one-process computation of the two ranks' steps.
SINGLE = ["accelerator_pinned", "device_index", "to_int", "dataparallel", "torchrun_ddp",
          "prefetch_stream", "batched_nms"]


class IdiomTest(Close, unittest.TestCase):
    """Each device idiom runs under the shim and computes what the CPU spelling computes."""

    @classmethod
    def setUpClass(cls):
        out = python("-c", REFERENCE, *SINGLE)
        if out.returncode != 0:
            raise AssertionError(f"the CPU references failed:\n{out.stderr}")
        cls.reference = json.loads(out.stdout.splitlines()[-1])

    def reference_of(self, name):
        return result(subprocess.CompletedProcess([], 0, self.reference[name], ""))

    def both(self, name):
        shimmed = python(f"{name}.py", "cuda", shim=True, baseline=True)
        self.assertIn(BANNER, shimmed.stderr)
        return result(shimmed), self.reference_of(name)

    def test_accelerator_device_and_pinned_loader_workers(self):
        got, want = self.both("accelerator_pinned")
        self.assert_close(got["losses"], want["losses"], "losses")
        self.assertEqual(len(got["losses"]), 4)
        # The script's device is the accelerator, CUDA; its tensors are on the CPU.
        self.assertEqual(got["device_type"], "cuda")
        self.assertEqual(got["tensor_device"], "cpu")
        self.assertEqual((got["count"], got["allocated"], got["pinned"]), (1, 0, False))

    def test_device_with_index_anywhere_a_device_goes(self):
        got, want = self.both("device_index")
        self.assert_close(got["y"], want["y"], "y")
        self.assertEqual(got["script_devices"], ["cuda", "cuda", 1])
        self.assertEqual(got["tensor_devices"], ["cpu"])
        self.assertEqual(got["generators"], [True, True])

    def test_to_int_index(self):
        got, want = self.both("to_int")
        self.assert_close(got["losses"], want["losses"], "losses")
        self.assertEqual(got["tensor_device"], "cpu")

    def test_batched_nms_takes_cudas_branch(self):
        # torchvision's detection reference drifted at step 1 on a faithful port: the CPU
        # baseline's batched_nms ran per class, the port's (and CUDA's) one offset NMS.
        got, want = self.both("batched_nms")
        self.assertNotEqual(got["vanilla"], got["offset"], "the fixture no longer tells them apart")
        self.assertEqual(got["kept"], got["offset"], "the baseline took the CPU's branch")
        self.assertEqual(want["kept"], want["vanilla"], "without the shim: the CPU's branch")
        self.assertEqual(got["device"], "cpu")

    def test_side_stream_prefetcher_records_its_batch_on_the_host_stream(self):
        # Tensor.record_stream(torch.cuda.current_stream()) was "unknown parameter type".
        got, want = self.both("prefetch_stream")
        self.assert_close(got["losses"], want["losses"], "losses")
        self.assertEqual(len(got["losses"]), 3)
        self.assertEqual(got["tensor_device"], "cpu")

    def test_dataparallel_keeps_module(self):
        got, want = self.both("dataparallel")
        self.assert_close(got["losses"], want["losses"], "losses")
        self.assert_close(got["out"], want["out"], "data_parallel output")
        self.assertEqual(got["keys"], want["keys"])
        self.assertTrue(all(k.startswith("module.") for k in got["keys"]), got["keys"])

    def test_device_count_index_and_memory_queries(self):
        code = (
            "import os, json, torch\n"
            "a = [torch.cuda.device_count(), torch.accelerator.device_count()]\n"
            "os.environ['MODELZOO_CPU_BASELINE_DEVICES'] = '4'\n"
            "b = torch.cuda.device_count()\n"
            "os.environ.update(LOCAL_WORLD_SIZE='3', TORCHELASTIC_RUN_ID='x')\n"
            "c = [torch.cuda.device_count(), torch.accelerator.device_count()]\n"
            "torch.cuda.set_device(2); d = torch.accelerator.current_device_index()\n"
            "with torch.accelerator.device_index(1): e = torch.cuda.current_device()\n"
            "import torch.accelerator.memory as m\n"
            "f = [torch.accelerator.memory_allocated(), m.max_memory_reserved(),\n"
            "     torch.cuda.memory_allocated(0), m.memory_stats(), torch.cuda.memory_stats()]\n"
            "torch.accelerator.synchronize(); torch.cuda.synchronize(); torch.cuda.empty_cache()\n"
            "print('RESULT ' + json.dumps([a, b, c, d, e, torch.cuda.current_device(), f]))\n"
        )
        got = result(python("-c", code, shim=True, baseline=True))
        self.assertEqual(got, [[1, 1], 4, [3, 3], 2, 1, 2, [0, 0, 0, {}, {}]])

    def test_torchrun_ddp_two_ranks(self):
        torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
        if not os.path.exists(torchrun):
            self.skipTest(f"no torchrun beside {sys.executable}")

        def launch(mode, **kwargs):
            return result(run([torchrun, "--nproc_per_node", "2", "--master_port",
                               str(free_port()), "torchrun_ddp.py", mode], **kwargs))

        got = launch("cuda", shim=True, baseline=True)
        want = self.reference_of("torchrun_ddp")
        self.assertEqual(got["counts"], [2, 2])
        self.assert_close(got["losses"], want["losses"], "rank 0 losses")
        self.assert_close(got["weight"], want["weight"], "weight after the steps")


class BackwardRecordTest(Close, unittest.TestCase):
    """MODELZOO_PORT_BACKWARD_DIR: the losses backward() saw, as DLLogger lines, and meta."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="port-shim-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def lines(self, rank):
        with open(os.path.join(self.dir, f"backward.rank{rank}.jsonl"), encoding="utf-8") as f:
            raw = f.read().splitlines()
        for line in raw:
            self.assertTrue(line.startswith("DLLL {"), line)
        return [json.loads(line[len("DLLL "):]) for line in raw]

    def meta(self, rank):
        with open(os.path.join(self.dir, f"meta.rank{rank}.json"), encoding="utf-8") as f:
            return json.load(f)

    def check_backward_losses(self, out, rank):
        got = result(out)
        self.assertFalse(got["torch_before"], "the shim imported torch before the script")
        records = self.lines(rank)
        # Calls 0-3 are scalar roots, 4 a non-scalar root (counted, not recorded), 5 a NaN.
        self.assertEqual([r["step"] for r in records], [[0, 0], [0, 1], [0, 2], [0, 3], [0, 5]])
        for r in records:
            self.assertEqual(r["type"], "LOG")
            self.assertEqual(set(r["data"]), {"backward.loss"})
            float(r["timestamp"]), float(r["elapsedtime"])
            self.assertRegex(r["datetime"], r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$")
        values = [r["data"]["backward.loss"] for r in records]
        self.assert_close(values[:4], got["values"], "recorded losses")
        self.assertTrue(math.isnan(values[4]))
        with open(os.path.join(self.dir, f"backward.rank{rank}.jsonl"), encoding="utf-8") as f:
            self.assertIn('"backward.loss": NaN}', f.read().splitlines()[-1])
        self.assertEqual(self.meta(rank), {"backward_calls": 6, "autocast": False})
        self.assertEqual(sorted(os.listdir(self.dir)),
                         [f"backward.rank{rank}.jsonl", f"meta.rank{rank}.json"])
        return got

    def test_baseline_records_per_rank(self):
        out = python("backward_losses.py", shim=True, baseline=True, backward_dir=self.dir,
                     extra={"RANK": "2"})
        got = self.check_backward_losses(out, 2)
        self.assertTrue(got["cuda"])

    def test_candidate_records_without_mapping(self):
        out = python("backward_losses.py", shim=True, backward_dir=self.dir)
        got = self.check_backward_losses(out, 0)
        self.assertFalse(got["cuda"], "CUDA was mapped without MODELZOO_PORT_CPU_BASELINE=1")
        self.assertNotIn(BANNER, out.stderr)

    def test_scaled_loss_is_recorded_unscaled_with_autocast(self):
        out = python("amp_scaler.py", "cuda", shim=True, baseline=True, backward_dir=self.dir)
        got = result(out)
        values = [r["data"]["backward.loss"] for r in self.lines(0)]
        # The fixture's GradScaler starts at 256: a scaled record would be 256x the loss.
        self.assert_close(values, got["losses"], "recorded losses")
        self.assertEqual(self.meta(0), {"backward_calls": 3, "autocast": True})

    def test_unwritable_dir_is_reported_and_the_script_goes_on(self):
        blocker = os.path.join(self.dir, "file")
        open(blocker, "w").close()
        out = python("backward_losses.py", shim=True, backward_dir=os.path.join(blocker, "x"))
        result(out)
        self.assertIn("modelzoo port: cannot record backward losses into", out.stderr)
        self.assertIn("meta.rank0.json", out.stderr)

    def test_nothing_without_the_variables(self):
        out = python("backward_losses.py", shim=True)
        got = result(out)
        self.assertFalse(got["cuda"])
        self.assertFalse(got["torch_before"])
        self.assertNotIn(BANNER, out.stderr)
        self.assertEqual(os.listdir(self.dir), [])


class SeedTest(Close, unittest.TestCase):
    """MODELZOO_PORT_SEED (in port's environment): an unseeded script draws in every run
    what it would draw had it seeded torch, random and numpy itself right after importing."""

    SEED = "5"

    @classmethod
    def setUpClass(cls):
        cls.want = result(python("unseeded.py", "--self-seed", cls.SEED))

    def check(self, got):
        self.assert_close(got["weight"], self.want["weight"], "Linear's initial weight")
        self.assertEqual(got["order"], self.want["order"], "RandomSampler's order")
        self.assert_close([got["random"]], [self.want["random"]], "random.random()")
        self.assert_close(got["numpy"], self.want["numpy"], "np.random.rand(2)")

    def test_baseline_draws_as_if_the_script_seeded_itself(self):
        self.check(result(python("unseeded.py", shim=True, baseline=True,
                                 extra={"MODELZOO_PORT_SEED": self.SEED})))

    def test_seed_alone_installs_the_hook(self):
        # The port's run sets MODELZOO_PORT_BACKWARD_DIR too; the seed must not depend on it.
        self.check(result(python("unseeded.py", shim=True,
                                 extra={"MODELZOO_PORT_SEED": self.SEED})))

    def test_a_bad_seed_stops_the_run_naming_it(self):
        for bad in ("abc", "-1", str(2**32)):
            out = python("unseeded.py", shim=True, extra={"MODELZOO_PORT_SEED": bad})
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertIn(f"MODELZOO_PORT_SEED={bad!r} is not a seed", out.stderr)
            self.assertNotIn("RESULT", out.stdout)


class UnmappableTest(unittest.TestCase):
    def test_error_names_the_call_and_the_other_ways(self):
        out = python("unmappable.py", shim=True, baseline=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertNotIn("captured", out.stdout)
        last = out.stderr.strip().splitlines()[-1]
        self.assertIn("RuntimeError: modelzoo port CPU baseline: torch.cuda.CUDAGraph", last)
        self.assertIn("--baseline-device cuda", last)
        self.assertIn("--baseline-log", last)

    def test_error_names_a_lazy_init_caller(self):
        code = "import torch\ntorch.cuda.current_blas_handle()\n"
        out = python("-c", code, shim=True, baseline=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("modelzoo port CPU baseline: torch.cuda.current_blas_handle()",
                      out.stderr)


if __name__ == "__main__":
    unittest.main()


class OpRouteTest(unittest.TestCase):
    """MODELZOO_PORT_OPS / _OP_STUBS / _OPS_RECORD: a custom autograd Function over an extension
    that is not built here (port/tests/data/custom_op) routed to another implementation."""

    PROJECT = os.path.join(ROOT, "port", "tests", "data", "custom_op")

    def run_routed(self, routes, stubs="ScaledTanhCUDA", record=None):
        env = clean_env()
        env.update({"PYTHONPATH": SHIM, "MODELZOO_PORT_CPU_BASELINE": "1",
                    "CUDA_VISIBLE_DEVICES": "", "MODELZOO_PORT_OPS": routes,
                    "MODELZOO_PORT_OP_STUBS": stubs})
        if record:
            env["MODELZOO_PORT_OPS_RECORD"] = record
        return subprocess.run([sys.executable, "-W", "ignore", "train.py", "--steps", "2"],
                              env=env, capture_output=True, text=True, timeout=120,
                              cwd=self.PROJECT)

    def losses(self, out):
        self.assertEqual(out.returncode, 0, out.stderr)
        return [float(l.split()[-1]) for l in out.stdout.splitlines() if l.startswith("step ")]

    def test_by_name_or_positionally_the_same_op_the_same_losses(self):
        record = tempfile.mkdtemp(prefix="port-ops-")
        self.addCleanup(shutil.rmtree, record, True)
        # The twin takes (x, weight): passed by forward's parameter names, block_size dropped.
        twin = self.losses(self.run_routed(
            "ScaledTanhFunction=ops.scaled_tanh:scaled_tanh_pytorch", record=record))
        with open(os.path.join(record, "ops.rank0.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"ScaledTanhFunction": {
                "impl": "ops.scaled_tanh:scaled_tanh_pytorch", "calls": 2}})
        device = self.losses(self.run_routed(
            "ops.scaled_tanh:ScaledTanhFunction=sdaa_ops:scaled_tanh"))
        self.assertEqual(len(twin), 2)
        for a, b in zip(twin, device):
            self.assertTrue(math.isclose(a, b, rel_tol=1e-6), (twin, device))

    def test_float64_route_computes_the_op_in_float64_and_returns_the_callers_dtype(self):
        # MODELZOO_PORT_OPS_FLOAT64=1 (the original's second run): the routed function sees
        # float64 copies, by forward's parameter names still, and its result and the gradient
        # come back in the caller's dtype.
        import types

        import torch
        sys.path.insert(0, SHIM)
        self.addCleanup(sys.path.remove, SHIM)
        import _modelzoo_port_ops as ops

        seen = []

        def twin(x, weight):
            seen.append((x.dtype, weight.dtype))
            return x + weight * torch.tanh(x)

        module = types.ModuleType("float64_twin_probe")
        module.twin = twin
        sys.modules[module.__name__] = module
        self.addCleanup(sys.modules.pop, module.__name__)

        class ScaledTanhFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight, block_size):
                raise AssertionError("the route must not call the extension")

        x = torch.tensor([0.3, -1.2], requires_grad=True)
        w = torch.tensor([0.7, 0.2])
        for float64, want in ((False, torch.float32), (True, torch.float64)):
            routes = ops._OpRoutes({}, [], None, float64=float64)
            apply = routes._routed("ScaledTanhFunction", ScaledTanhFunction,
                                   "float64_twin_probe:twin")
            out = apply(x, w, 64)
            self.assertEqual(seen[-1], (want, want))
            self.assertEqual(out.dtype, torch.float32)
            torch.testing.assert_close(out, twin(x, w), rtol=1e-6, atol=1e-7)
            (grad,) = torch.autograd.grad(out.sum(), x)
            self.assertEqual(grad.dtype, torch.float32)

    def test_an_unrouted_call_of_the_stub_names_the_extension(self):
        out = self.run_routed("OtherFunction=sdaa_ops:scaled_tanh")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("the extension ScaledTanhCUDA is not built on this machine", out.stderr)
        self.assertIn("ScaledTanhCUDA.scaled_tanh_forward", out.stderr)
