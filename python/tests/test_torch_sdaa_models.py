"""torch_sdaa on the SDAA EMULATOR running what real models run, against the CPU: recurrent
layers (LSTM, GRU, RNN and their cells, the CPU's path), scaled_dot_product_attention (the
CPU's kernel choice), nn.DataParallel over the emulated devices, the op inventory of a run that
died on an op, and settings that are not valid. Plain unittest, discovered with
test_torch_sdaa.py:

    PYTHONPATH=python:python/tests .venv/bin/python -m unittest discover -s python/tests

What runs the CPU's kernels on the CPU's values is compared bit for bit (torch.equal), in fp32,
fp16 and bf16; attention under fp16 autocast, against the CPU's fp32, with a stated tolerance.
"""

import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

os.environ["TORCH_SDAA_BANNER"] = "0"
import torch_sdaa  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))


def run_python(args, env=None, timeout=120):
    """The project's python with the emulator's torch_sdaa, in a fresh process."""
    full_env = dict(os.environ)
    full_env.update({"PYTHONDONTWRITEBYTECODE": "1", "TORCH_SDAA_BANNER": "0", **(env or {})})
    return subprocess.run([sys.executable, "-W", "ignore", *args], env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def run_both(module, make_inputs, seed=0):
    """Forward + backward of copies of `module` on the CPU and on sdaa from the same inputs and
    the same random state; returns ((outputs, input grads, param grads) on cpu, same for sdaa),
    everything on the CPU."""
    results = []
    for device in ("cpu", "sdaa"):
        torch.manual_seed(seed)
        m = copy.deepcopy(module).to(device)
        inputs = [t.to(device).requires_grad_(t.is_floating_point()) for t in make_inputs()]
        out = m(*inputs)
        flat = [o for o in _flatten(out) if o.is_floating_point()]
        sum(o.float().sin().sum() for o in flat).backward()
        results.append((
            [o.detach().cpu() for o in flat],
            [i.grad.cpu() for i in inputs if i.grad is not None],
            [p.grad.cpu() for p in m.parameters()],
        ))
    return results


def _flatten(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, torch.nn.utils.rnn.PackedSequence):
        return [out.data]
    return [t for o in out for t in _flatten(o)]


class RecurrentTest(unittest.TestCase):
    """LSTM and GRU take the CPU's path on sdaa (not the CUDA-only fused cells): forward and
    backward are bit-identical to the CPU's."""

    def assert_identical(self, module, make_inputs):
        (cpu_out, cpu_gin, cpu_gp), (dev_out, dev_gin, dev_gp) = run_both(module, make_inputs)
        self.assertEqual(len(cpu_out), len(dev_out))
        self.assertEqual(len(cpu_gp), len(dev_gp))
        for name, a, b in ([("out", *p) for p in zip(cpu_out, dev_out)] + [("input grad", *p) for p in zip(cpu_gin, dev_gin)]
                           + [("param grad", *p) for p in zip(cpu_gp, dev_gp)]):
            self.assertEqual(a.shape, b.shape, name)
            self.assertTrue(torch.equal(a, b), f"{module}: {name} differs by {(a - b).abs().max()}")

    def test_lstm_gru_rnn_layers(self):
        torch.manual_seed(0)
        seq = lambda batch_first=False: [torch.randn(3, 5, 4) if batch_first else torch.randn(5, 3, 4)]  # noqa: E731
        cases = [
            (torch.nn.LSTM(4, 6), seq),
            (torch.nn.LSTM(4, 6, num_layers=2, dropout=0.3, bidirectional=True), seq),
            (torch.nn.LSTM(4, 6, batch_first=True, proj_size=3), lambda: seq(True)),
            (torch.nn.GRU(4, 6, num_layers=2, dropout=0.3), seq),
            (torch.nn.GRU(4, 6, batch_first=True, bidirectional=True, bias=False), lambda: seq(True)),
            (torch.nn.RNN(4, 6, nonlinearity="tanh", num_layers=2), seq),
            (torch.nn.RNN(4, 6, nonlinearity="relu", bidirectional=True), seq),
        ]
        for module, make_inputs in cases:
            with self.subTest(module=str(module)):
                self.assert_identical(module, make_inputs)

    def test_lstm_with_initial_state_and_eval(self):
        torch.manual_seed(1)
        lstm = torch.nn.LSTM(4, 6, num_layers=2)
        inputs = lambda: [torch.randn(5, 2, 4), torch.randn(2, 2, 6), torch.randn(2, 2, 6)]  # noqa: E731
        self.assert_identical(_WithState(lstm), inputs)
        x = torch.randn(5, 2, 4)
        with torch.no_grad():
            self.assertTrue(torch.equal(lstm.eval()(x)[0], copy.deepcopy(lstm).to("sdaa")(x.to("sdaa"))[0].cpu()))
        with torch.inference_mode():
            self.assertTrue(torch.equal(lstm(x)[0], copy.deepcopy(lstm).to("sdaa")(x.to("sdaa"))[0].cpu()))

    def test_cells(self):
        torch.manual_seed(2)
        x = lambda: [torch.randn(3, 4)]  # noqa: E731
        for cell in (torch.nn.LSTMCell(4, 5), torch.nn.GRUCell(4, 5), torch.nn.RNNCell(4, 5),
                     torch.nn.RNNCell(4, 5, nonlinearity="relu"), torch.nn.GRUCell(4, 5, bias=False)):
            with self.subTest(cell=str(cell)):
                self.assert_identical(cell, x)

    def test_packed_sequence(self):
        torch.manual_seed(3)
        lstm = torch.nn.LSTM(4, 6, bidirectional=True)
        gru = torch.nn.GRU(4, 6)

        class Packed(torch.nn.Module):
            def __init__(self, rnn):
                super().__init__()
                self.rnn = rnn

            def forward(self, x):
                packed = torch.nn.utils.rnn.pack_padded_sequence(x, [5, 3, 2], enforce_sorted=True)
                out, _ = self.rnn(packed)
                return torch.nn.utils.rnn.pad_packed_sequence(out)[0]

        for rnn in (lstm, gru):
            with self.subTest(rnn=str(rnn)):
                self.assert_identical(Packed(rnn), lambda: [torch.randn(5, 3, 4)])

    def test_on_the_second_device(self):
        torch.manual_seed(4)
        lstm = torch.nn.LSTM(4, 6)
        x = torch.randn(5, 2, 4)
        out, (h, c) = copy.deepcopy(lstm).to("sdaa:1")(x.to("sdaa:1"))
        self.assertEqual({out.device, h.device, c.device}, {torch.device("sdaa", 1)})
        self.assertTrue(torch.equal(out.cpu(), lstm(x)[0]))


class ModuleConversionTest(unittest.TestCase):
    """Module.to("sdaa") keeps the Parameter objects, as .cuda() does."""

    def test_tied_weights_and_an_earlier_optimizer_survive(self):
        torch.manual_seed(9)
        enc, dec = torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10)
        dec.weight = enc.weight  # word_language_model's --tied
        net = torch.nn.ModuleDict({"enc": enc, "dec": dec})
        weight = enc.weight
        opt = torch.optim.SGD(net.parameters(), lr=0.5)  # made before the move, as scripts do
        net.to("sdaa")
        self.assertIs(net["enc"].weight, weight)
        self.assertIs(net["dec"].weight, net["enc"].weight)
        self.assertEqual(weight.device, torch.device("sdaa", 0))
        before = weight.detach().cpu().clone()
        net["dec"](net["enc"](torch.tensor([1, 2], device="sdaa"))).sum().backward()
        opt.step()
        self.assertFalse(torch.equal(weight.detach().cpu(), before))
        net.cpu()
        self.assertIs(net["dec"].weight, weight)
        self.assertTrue(weight.is_cpu)


class _WithState(torch.nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h, c):
        return self.rnn(x, (h, c))


class AttentionTest(unittest.TestCase):
    """scaled_dot_product_attention on sdaa takes the kernel the CPU takes for the same inputs."""

    CASES = [
        dict(),
        dict(is_causal=True),
        dict(mask="bool"),
        dict(mask="float"),
        dict(dropout_p=0.0, scale=0.3),
    ]

    def run_sdpa(self, dtype, case):
        torch.manual_seed(5)
        q, k, v = (torch.randn(2, 3, 7, 8, dtype=dtype) for _ in range(3))
        mask = None
        if case.get("mask") == "bool":
            mask = torch.rand(7, 7) > 0.3
            mask.fill_diagonal_(True)
        elif case.get("mask") == "float":
            mask = torch.randn(2, 1, 7, 7, dtype=dtype)
        kwargs = {k_: v_ for k_, v_ in case.items() if k_ != "mask"}
        results = []
        for device in ("cpu", "sdaa"):
            ins = [t.detach().clone().to(device).requires_grad_() for t in (q, k, v)]
            out = torch.nn.functional.scaled_dot_product_attention(
                *ins, attn_mask=None if mask is None else mask.to(device), **kwargs)
            out.float().sin().sum().backward()
            results.append([out.detach().cpu()] + [t.grad.cpu() for t in ins])
        return results

    def test_fp32_is_bit_identical(self):
        for case in self.CASES:
            with self.subTest(case=case):
                cpu, dev = self.run_sdpa(torch.float32, case)
                for what, a, b in zip(("out", "dq", "dk", "dv"), cpu, dev):
                    self.assertTrue(torch.equal(a, b), f"{case} {what}: {(a - b).abs().max()}")

    def test_the_kernel_is_the_cpus(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Ops(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.names = set()

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.names.add(str(func))
                return func(*args, **(kwargs or {}))

        q = torch.randn(1, 2, 4, 8)
        seen = []
        for device in ("cpu", "sdaa"):
            with Ops() as ops:
                torch.nn.functional.scaled_dot_product_attention(*(q.to(device),) * 3)
            seen.append({n for n in ops.names if "attention" in n})
        self.assertEqual(seen[0], {"aten._scaled_dot_product_flash_attention_for_cpu.default"})
        self.assertEqual(seen[1], seen[0])

    def test_low_precision_is_bit_identical_too(self):
        # fp16/bf16 run the same CPU kernel on the same values (no GEMM of the emulator's
        # tensor-core scope is involved): identical as well.
        for dtype in (torch.float16, torch.bfloat16):
            for case in self.CASES:
                with self.subTest(dtype=dtype, case=case):
                    cpu, dev = self.run_sdpa(dtype, case)
                    for what, a, b in zip(("out", "dq", "dk", "dv"), cpu, dev):
                        self.assertEqual(b.dtype, dtype)
                        self.assertTrue(torch.equal(a, b), f"{case} {what}: {(a.float() - b.float()).abs().max()}")

    def test_autocast_fp16_within_tolerance_of_fp32(self):
        # Autocast casts q, k, v to fp16 (CUDA's list): fp16 rounding of the inputs and the
        # output, so against the CPU in fp32: |diff| <= 5e-3 + 5e-3 |x| (fp16 eps is 9.8e-4).
        torch.manual_seed(8)
        q, k, v = (torch.randn(2, 3, 7, 8) for _ in range(3))
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        with torch.autocast("sdaa", dtype=torch.float16):
            got = torch.nn.functional.scaled_dot_product_attention(
                q.to("sdaa"), k.to("sdaa"), v.to("sdaa"), is_causal=True)
        self.assertEqual(got.dtype, torch.float16)
        self.assertTrue(torch.allclose(got.float().cpu(), want, rtol=5e-3, atol=5e-3),
                        (got.float().cpu() - want).abs().max())

    def test_transformer_layer_matches_the_cpu(self):
        torch.manual_seed(6)
        layer = torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
        (cpu_out, _, cpu_gp), (dev_out, _, dev_gp) = run_both(
            _Masked(layer, mask), lambda: [torch.randn(2, 5, 16)])
        self.assertTrue(torch.equal(cpu_out[0], dev_out[0]), (cpu_out[0] - dev_out[0]).abs().max())
        for a, b in zip(cpu_gp, dev_gp):
            self.assertTrue(torch.equal(a, b), (a - b).abs().max())


class _Masked(torch.nn.Module):
    def __init__(self, layer, mask):
        super().__init__()
        self.layer = layer
        self.register_buffer("mask", mask)

    def forward(self, x):
        return self.layer(x, src_mask=self.mask, is_causal=True)


class DataParallelTest(unittest.TestCase):
    """nn.DataParallel over the emulated devices, as over CUDA devices: the batch is split, the
    module replicated, the outputs gathered on the first device, the gradients summed back."""

    def model(self):
        torch.manual_seed(7)
        return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                                   torch.nn.Linear(8, 2))

    def test_splits_over_two_devices(self):
        self.assertGreaterEqual(torch.sdaa.device_count(), 2)
        net = self.model()
        ref = copy.deepcopy(net)
        dp = torch.nn.DataParallel(net).to("sdaa")
        self.assertEqual((dp.device_ids, dp.output_device), ([0, 1], 0))
        self.assertIs(dp.module, net)
        self.assertEqual(list(dp.state_dict()), ["module." + k for k in ref.state_dict()])
        x = torch.randn(6, 3)
        y = dp(x.to("sdaa"))
        self.assertEqual(y.device, torch.device("sdaa", 0))
        y.sin().sum().backward()
        # Each replica computed its half of the batch with the CPU's kernels (BatchNorm over its
        # half, as on two GPUs); replica 0 updated the module's own running statistics.
        want = torch.cat([ref(x[:3]), ref(x[3:])])
        self.assertTrue(torch.equal(y.detach().cpu(), want.detach()))
        want.sin().sum().backward()
        for (name, p), q in zip(dp.module.named_parameters(), ref.parameters()):
            self.assertEqual(p.grad.device, torch.device("sdaa", 0), name)
            self.assertTrue(torch.equal(p.grad.cpu(), q.grad), name)
        ref_half = copy.deepcopy(self.model())
        ref_half(x[:3])
        self.assertTrue(torch.equal(dp.module[1].running_mean.cpu(), ref_half[1].running_mean))
        # CPU inputs are scattered to the devices; the functional form works the same way.
        self.assertTrue(torch.equal(dp(x).detach().cpu(), y.detach().cpu()))
        out = torch.nn.parallel.data_parallel(dp.module, x.to("sdaa"), device_ids=[0, 1])
        self.assertTrue(torch.equal(out.detach().cpu(), y.detach().cpu()))

    def test_replicas_run_under_the_callers_sdaa_autocast(self):
        dp = torch.nn.DataParallel(torch.nn.Linear(3, 2)).to("sdaa")
        x = torch.randn(4, 3, device="sdaa")
        for dtype in (torch.float16, torch.bfloat16):
            with torch.autocast("sdaa", dtype=dtype):
                self.assertEqual(dp(x).dtype, dtype)
        self.assertEqual(dp(x).dtype, torch.float32)

    def test_one_device_equals_the_cpu(self):
        net = self.model()
        ref = copy.deepcopy(net)
        dp = torch.nn.DataParallel(net, device_ids=[0])
        x = torch.randn(6, 3)
        y = dp(x.to("sdaa"))
        want = ref(x)
        self.assertTrue(torch.equal(y.detach().cpu(), want.detach()))
        y.sum().backward()
        want.sum().backward()
        for p, q in zip(dp.module.parameters(), ref.parameters()):
            self.assertTrue(torch.equal(p.grad.cpu(), q.grad))

    def test_comm_functions(self):
        from torch.nn.parallel import comm

        t = torch.arange(10.0).reshape(5, 2)
        a, b = comm.scatter(t.to("sdaa"), [0, 1], chunk_sizes=[2, 3])
        self.assertEqual((a.device, b.device), (torch.device("sdaa", 0), torch.device("sdaa", 1)))
        self.assertTrue(torch.equal(comm.gather([a, b], 0, -1), t))
        self.assertEqual(comm.gather([a, b], 0, 1).device, torch.device("sdaa", 1))
        c0, c1 = comm.broadcast(a, [0, 1])
        self.assertIs(c0, a)
        self.assertTrue(torch.equal(c1.cpu(), a.cpu()) and c1.device.index == 1)
        self.assertTrue(torch.equal(comm.reduce_add([a, c1], 1).cpu(), 2 * a.cpu()))


class FailedOpInventoryTest(unittest.TestCase):
    def test_a_run_that_died_on_an_op_is_not_fully_covered(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_dir = os.path.join(tmp, "inventory")
            proc = run_python([os.path.join(HERE, "tsdaa_failing_op.py")],
                              env={"SDAA_EMULATOR_OP_INVENTORY": out_dir})
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("_thnn_fused_lstm_cell", proc.stderr)
            with open(os.path.join(out_dir, "op_inventory.rank0.json"), encoding="utf-8") as f:
                inv = json.load(f)
            with open(os.path.join(out_dir, "coverage.rank0.txt"), encoding="utf-8") as f:
                lines = f.read().splitlines()

        failed = {o["op"]: o for o in inv["failed_ops"]}
        self.assertEqual(list(failed), ["aten::_thnn_fused_lstm_cell"])
        self.assertEqual(failed["aten::_thnn_fused_lstm_cell"]["count"], 1)
        self.assertIn("no CPU kernel for the emulator to run", failed["aten::_thnn_fused_lstm_cell"]["reason"])
        device = {o["op"]: o for o in inv["device_ops"]}
        self.assertTrue(device["aten::_thnn_fused_lstm_cell"]["failed"])
        self.assertFalse(device["aten::addmm"]["failed"])
        all_api = inv["coverage"]["all_api"]
        self.assertIn("_thnn_fused_lstm_cell", all_api)
        self.assertEqual(inv["coverage"]["failed_op"], ["_thnn_fused_lstm_cell"])
        self.assertEqual(lines[2], "failed op: ['_thnn_fused_lstm_cell'], total: 1")
        rate = 100 * (len(all_api) - 1) / len(all_api)
        self.assertEqual(lines[3], f"coverage rate: {rate:.2f}%")
        self.assertLess(inv["coverage"]["rate_percent"], 100)


class SettingsTest(unittest.TestCase):
    """A setting that is set but not valid is an error naming it, its value and what is allowed."""

    BAD = [
        ("SDAA_EMULATOR_DEVICES", "abc", "an integer from 0 to 64"),
        ("SDAA_EMULATOR_DEVICES", "-1", "an integer from 0 to 64"),
        ("SDAA_EMULATOR_MEMORY_MB", "-5", "an integer from 1 to 1073741824"),
        ("SDAA_EMULATOR_MEMORY_MB", "0", "an integer from 1 to 1073741824"),
        ("SDAA_VISIBLE_DEVICES", "one", "device indices separated by commas"),
        ("TCCL_EMULATOR_TIMEOUT_S", "soon", "a number of seconds > 0"),
        ("TCCL_EMULATOR_TIMEOUT_S", "0", "a number of seconds > 0"),
        ("TORCH_SDAA_BANNER", "off", "0 (no version table on import) or 1"),
    ]

    def test_each_bad_setting_is_named(self):
        check = torch_sdaa._lib.runtime.check_settings
        for var, value, allowed in self.BAD:
            with self.subTest(var=var, value=value), _env(var, value):
                with self.assertRaises(torch_sdaa._lib.SettingError) as raised:
                    check()
                self.assertIn(f"{var}='{value}' is not valid", str(raised.exception))
                self.assertIn(allowed, str(raised.exception))
        with tempfile.NamedTemporaryFile() as f, _env("SDAA_EMULATOR_OP_INVENTORY", f.name):
            with self.assertRaisesRegex(torch_sdaa._lib.SettingError, "SDAA_EMULATOR_OP_INVENTORY=.* not a directory"):
                check()
            with _env("SDAA_EMULATOR_OP_INVENTORY", os.path.dirname(f.name)), _env("RANK", "x"):
                with self.assertRaisesRegex(torch_sdaa._lib.SettingError, "RANK='x' is not valid: expected an integer >= 0"):
                    check()
        check()  # valid again

    def test_first_device_use_after_a_bad_change(self):
        with _env("SDAA_EMULATOR_DEVICES", "two"):
            with self.assertRaisesRegex(RuntimeError, "SDAA_EMULATOR_DEVICES='two' is not valid"):
                torch.sdaa.device_count()
        with _env("SDAA_EMULATOR_MEMORY_MB", "lots"):
            with self.assertRaisesRegex(RuntimeError, "SDAA_EMULATOR_MEMORY_MB='lots' is not valid"):
                torch.empty(4, device="sdaa")
        self.assertEqual(torch.empty(4, device="sdaa").device.type, "sdaa")

    def test_local_devices_follow_torchruns_local_world_size(self):
        # `modelzoo port` sets SDAA_EMULATOR_DEVICES=local so the port sees as many devices as
        # its CPU baseline: LOCAL_WORLD_SIZE under torchrun, else one.
        count = ["-c", "import torch, torch_sdaa; print(torch.sdaa.device_count())"]
        for local, want in ((None, "1"), ("3", "3")):
            env = {"SDAA_EMULATOR_DEVICES": "local", "TORCH_SDAA_BANNER": "0"}
            if local is not None:
                env["LOCAL_WORLD_SIZE"] = local
            with self.subTest(local=local):
                proc = run_python(count, env=env)
                self.assertEqual((proc.returncode, proc.stdout.strip()), (0, want), proc.stderr)
        proc = run_python(count, env={"SDAA_EMULATOR_DEVICES": "local", "LOCAL_WORLD_SIZE": "x"})
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("LOCAL_WORLD_SIZE='x' is not valid", proc.stderr)

    def test_import_fails_with_a_nonzero_exit(self):
        for var, value, what in (("SDAA_EMULATOR_DEVICES", "abc", "an integer from 0 to 64"),
                                 ("SDAA_EMU_PERTURB", "aten::mm", "missing ':rel=<x>'")):
            with self.subTest(var=var):
                proc = run_python(["-c", "import torch, torch_sdaa"], env={var: value})
                self.assertNotEqual(proc.returncode, 0)
                self.assertEqual(proc.stdout, "")
                self.assertIn("SettingError", proc.stderr)
                self.assertIn(var, proc.stderr)
                self.assertIn(what, proc.stderr)


class ProcessGroupTest(unittest.TestCase):
    """A tccl group bound to its device at init, as FSDP2's example makes it, a DeviceMesh over
    it (both failed: no per-device backend, no group name), and DTensor's random init on it
    (failed on DTensor's Philox offset assertion)."""

    SCRIPT = """
import os, torch, torch_sdaa, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
dev = torch.device("sdaa:0")
backend = dist.get_default_backend_for_device(dev)
dist.init_process_group(backend=backend, rank=0, world_size=1, device_id=dev)
before = torch.sdaa.is_initialized()
mesh = init_device_mesh("sdaa", (1,))
# As on CUDA, a process that has not used a device yet gets LOCAL_RANK's from the mesh.
print(before, torch.sdaa.current_device())
t = torch.ones(3, device=dev)
dist.all_reduce(t)
print(backend, bool(dist.group.WORLD.group_name), mesh.get_group().group_name == dist.group.WORLD.group_name, t.sum().item())
# DTensor's random ops on an sdaa mesh run as on a CPU mesh (no Philox offset tracking).
from torch.distributed.tensor import DTensor, Shard
from torch.distributed.tensor._random import is_rng_supported_mesh
from torch.distributed.tensor import _dispatch
w = DTensor.from_local(torch.empty(4, 2, device=dev), mesh, [Shard(0)])
torch.nn.init.normal_(w)
print(is_rng_supported_mesh(mesh), _dispatch.is_rng_supported_mesh(mesh), bool(torch.isfinite(w.full_tensor()).all()))
dist.destroy_process_group()
"""

    def test_init_with_device_id_and_a_device_mesh(self):
        port = str(29500 + os.getpid() % 1000)
        proc = run_python(["-c", self.SCRIPT],
                          env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "LOCAL_RANK": "1"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split(),
                         ["False", "1", "tccl", "True", "True", "3.0", "False", "False", "True"])

    def test_a_device_is_initialized_once_used_as_on_cuda(self):
        proc = run_python(["-c", "import torch, torch_sdaa; a = torch.sdaa.is_initialized(); "
                                 "torch.ones(1, device='sdaa'); print(a, torch.sdaa.is_initialized())"])
        self.assertEqual(proc.stdout.split(), ["False", "True"], proc.stderr)


class _env:
    """Sets one environment variable for a `with` block."""

    def __init__(self, name, value):
        self.name, self.value, self.old = name, value, None

    def __enter__(self):
        self.old = os.environ.get(self.name)
        os.environ[self.name] = self.value

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop(self.name, None)
        else:
            os.environ[self.name] = self.old
        return False


if __name__ == "__main__":
    unittest.main()
