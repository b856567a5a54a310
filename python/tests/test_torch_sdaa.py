"""torch_sdaa on the SDAA EMULATOR (python/emulator/torch_sdaa, installed into the .venv by
scripts/build-emulator.sh): the import banner, torch.sdaa's device functions with real values,
results equal to the CPU's, fp16 autocast + GradScaler, events, pinned memory, the errors for
what the emulator lacks, the refusal next to a vendor torch_sdaa, DDP and the collectives over
the emulated TCCL under torchrun, and the op inventory. Plain unittest:

    PYTHONPATH=python:python/tests .venv/bin/python -m unittest discover -s python/tests

torch_sdaa is imported with this module, before any test runs: libtorch's autograd engine sizes
its per-device queues at a process's first backward pass, so a backward on sdaa fails once a
CPU-only backward (another module's test) ran before the sdaa backend was registered. Scripts
import torch_sdaa right after torch for the same reason.
"""

import copy
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import torch

os.environ["TORCH_SDAA_BANNER"] = "0"  # the banner has its own test, in a subprocess
import torch_sdaa  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = ["Host IP", "PyTorch", "Torch-SDAA", "SDAA Driver", "SDAA Runtime", "SDPTI", "TecoDNN",
        "TecoBLAS", "CustomDNN", "TecoRAND", "TCCL"]


def run_python(args, env=None, timeout=120):
    """Runs the project's python with the emulator's torch_sdaa; returns the CompletedProcess."""
    full_env = dict(os.environ)
    full_env.pop("TORCH_SDAA_BANNER", None)
    full_env.update({"PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    return subprocess.run([sys.executable, "-W", "ignore", *args], env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class ImportTest(unittest.TestCase):
    def test_banner_marks_every_row_emulator(self):
        out = run_python(["-c", "import torch, torch_sdaa"])
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        sep = "--------------+------------------------------------------------"
        self.assertEqual([i for i, line in enumerate(lines) if line == sep], [0, 4, 13], out.stdout)
        rows = [line for line in lines if line != sep]
        self.assertEqual([r[1:14].rstrip() for r in rows], ROWS)
        for r in rows:
            self.assertEqual(r[14:16], "| ", r)
            self.assertIn("EMULATOR", r)
        self.assertIn(torch.__version__, rows[1])
        self.assertIn("2.1.1-emulator", rows[2])
        self.assertIn("libsdaart.so", rows[4])

    def test_banner_off_version_and_visible_devices(self):
        code = ("import sys, torch, torch_sdaa; sys.stderr.write("
                "f'{torch_sdaa.__version__} {torch.sdaa.device_count()} {torch.sdaa.get_device_name(0)}')")
        out = run_python(["-c", code], env={"TORCH_SDAA_BANNER": "0", "SDAA_EMULATOR_DEVICES": "3",
                                            "SDAA_VISIBLE_DEVICES": "2,0"})
        self.assertEqual((out.returncode, out.stdout, out.stderr),
                         (0, "", "2.1.1-emulator 2 SDAA emulator device 2"))

    def test_refuses_where_the_vendor_package_is_installed(self):
        with tempfile.TemporaryDirectory() as site:
            info = os.path.join(site, "torch_sdaa-2.1.1.dist-info")
            os.mkdir(info)
            with open(os.path.join(info, "METADATA"), "w") as f:
                f.write("Metadata-Version: 2.1\nName: torch_sdaa\nVersion: 2.1.1\n")
            out = run_python(["-c", "import torch_sdaa"], env={"PYTHONPATH": site})
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("ImportError", out.stderr)
        self.assertIn("vendor's torch_sdaa 2.1.1 is installed", out.stderr)
        self.assertIn("modelzoo-sdaa-emulator.pth", out.stderr)
        self.assertEqual(out.stdout, "")  # no banner: it never got that far


class DeviceTest(unittest.TestCase):
    def test_device_functions(self):
        self.assertTrue(torch.sdaa.is_available())
        self.assertEqual(torch.sdaa.device_count(), int(os.environ.get("SDAA_EMULATOR_DEVICES", "2")))
        self.assertTrue(torch.sdaa.is_initialized())
        self.assertEqual(torch.sdaa.get_device_name(1), "SDAA emulator device 1")
        torch.sdaa.set_device(1)
        try:
            self.assertEqual(torch.sdaa.current_device(), 1)
            self.assertEqual(torch.empty(2, device="sdaa").device, torch.device("sdaa", 1))
        finally:
            torch.sdaa.set_device(0)
        with torch.sdaa.device(1):
            self.assertEqual(torch.sdaa.current_device(), 1)
        self.assertEqual(torch.sdaa.current_device(), 0)
        torch.sdaa.synchronize()
        torch.sdaa.synchronize("sdaa:1")
        with self.assertRaisesRegex(RuntimeError, "invalid device sdaa:7.*SDAA_EMULATOR_DEVICES"):
            torch.sdaa.set_device(7)

    def test_memory_is_counted(self):
        torch.sdaa.empty_cache()
        before = torch.sdaa.memory_allocated(1)
        free_before, total = torch.sdaa.mem_get_info(1)
        torch.sdaa.reset_peak_memory_stats(1)
        self.assertEqual(torch.sdaa.max_memory_allocated(1), before)
        t = torch.empty(1000, dtype=torch.float32, device="sdaa:1")
        self.assertEqual(torch.sdaa.memory_allocated("sdaa:1"), before + 4000)
        self.assertEqual(torch.sdaa.mem_get_info(1), (free_before - 4000, total))
        self.assertEqual(torch.sdaa.memory_reserved(1), before + 4000)
        del t
        self.assertEqual(torch.sdaa.memory_allocated(1), before)
        self.assertEqual(torch.sdaa.max_memory_allocated(1), before + 4000)
        torch.sdaa.reset_peak_memory_stats(1)
        self.assertEqual(torch.sdaa.max_memory_allocated(1), before)
        self.assertEqual(torch.sdaa.get_device_properties(1).total_memory, total)

    def test_tensor_and_module_methods(self):
        x = torch.arange(6.0).reshape(2, 3)
        y = x.to("sdaa:1")
        self.assertEqual(y.device, torch.device("sdaa", 1))
        self.assertTrue(y.is_sdaa)
        self.assertFalse(x.is_sdaa)
        self.assertEqual(x.sdaa().device, torch.device("sdaa", 0))
        self.assertEqual(x.sdaa(1).device, torch.device("sdaa", 1))
        self.assertTrue(torch.equal(y.cpu(), x))
        m = torch.nn.Linear(3, 2).sdaa(1)
        self.assertTrue(all(p.is_sdaa and p.device.index == 1 for p in m.parameters()))
        self.assertEqual(str(torch.device("sdaa", 1)), "sdaa:1")

    def test_results_equal_the_cpu(self):
        """The plugin runs each op's CPU kernel in place: fp32 results are bit-identical."""
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                  torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
        x = torch.randn(2, 3, 8, 8)
        target = torch.tensor([1, 3])
        cpu_net, sdaa_net = copy.deepcopy(net).cpu(), copy.deepcopy(net).to("sdaa")
        losses, grads = [], []
        for model, device in ((cpu_net, "cpu"), (sdaa_net, "sdaa")):
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), target.to(device))
            loss.backward()
            losses.append(loss.detach().cpu())
            grads.append([p.grad.cpu() for p in model.parameters()])
        self.assertTrue(torch.equal(losses[0], losses[1]))
        for a, b in zip(*grads):
            self.assertTrue(torch.equal(a, b))
        for a, b in zip(cpu_net[1].running_mean, sdaa_net[1].running_mean.cpu()):
            self.assertEqual(a.item(), b.item())

    def test_seeding_draws_the_cpu_numbers(self):
        torch.sdaa.manual_seed(7)
        a = torch.randn(5, device="sdaa").cpu()
        torch.manual_seed(7)
        self.assertTrue(torch.equal(a, torch.randn(5)))
        state = torch.sdaa.get_rng_state()
        b = torch.rand(3, device="sdaa").cpu()
        torch.sdaa.set_rng_state(state)
        self.assertTrue(torch.equal(b, torch.rand(3, device="sdaa").cpu()))
        g = torch.Generator("sdaa").manual_seed(3)
        self.assertTrue(torch.equal(torch.rand(4, device="sdaa", generator=g).cpu(),
                                    torch.rand(4, generator=torch.Generator().manual_seed(3))))


class AmpTest(unittest.TestCase):
    def test_autocast_entry_points(self):
        lin = torch.nn.Linear(4, 4).to("sdaa")
        x = torch.randn(2, 4, device="sdaa")
        with torch.autocast("sdaa"):
            self.assertEqual(lin(x).dtype, torch.float16)
        with torch.sdaa.amp.autocast(dtype=torch.bfloat16):
            self.assertEqual(lin(x).dtype, torch.bfloat16)
        with torch.sdaa.amp.autocast(enabled=False):
            self.assertEqual(lin(x).dtype, torch.float32)
        self.assertIsInstance(torch.sdaa.amp.GradScaler(), torch.amp.GradScaler)
        from torch.sdaa.amp import GradScaler

        self.assertIs(GradScaler, torch.sdaa.amp.GradScaler)

        class Cast(torch.autograd.Function):
            @staticmethod
            @torch.sdaa.amp.custom_fwd(cast_inputs=torch.float32)
            def forward(ctx, a):
                return a * 2

            @staticmethod
            @torch.sdaa.amp.custom_bwd
            def backward(ctx, g):
                return g * 2

        with torch.autocast("sdaa"):
            self.assertEqual(Cast.apply(lin(x)).dtype, torch.float32)

    def test_fp16_training_with_grad_scaler(self):
        torch.manual_seed(1)
        net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to("sdaa")
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler("sdaa", init_scale=1024.0)
        x = torch.randn(32, 8, device="sdaa")
        y = x.sum(1, keepdim=True) * 0.1
        losses = []
        for _ in range(5):
            opt.zero_grad()
            with torch.sdaa.amp.autocast():
                out = net(x)
                self.assertEqual(out.dtype, torch.float16)
                loss = (out.float() - y).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        self.assertTrue(all(torch.isfinite(torch.tensor(losses))), losses)
        self.assertLess(losses[-1], losses[0] * 0.8, losses)
        self.assertEqual(scaler.get_scale(), 1024.0)
        # An inf gradient: the step is skipped and the scale backs off.
        opt.zero_grad()
        with torch.autocast("sdaa"):
            loss = net(x).float().mean() * float("inf")
        scaler.scale(loss).backward()
        before = [p.detach().cpu().clone() for p in net.parameters()]
        scaler.step(opt)
        scaler.update()
        self.assertEqual(scaler.get_scale(), 512.0)
        for a, p in zip(before, net.parameters()):
            self.assertTrue(torch.equal(a, p.detach().cpu()))


class StreamEventTest(unittest.TestCase):
    def test_elapsed_time_is_real(self):
        start, end = torch.sdaa.Event(enable_timing=True), torch.sdaa.Event(enable_timing=True)
        start.record()
        time.sleep(0.05)
        end.record()
        end.synchronize()
        self.assertTrue(start.query() and end.query())
        self.assertGreaterEqual(start.elapsed_time(end), 49.0)
        self.assertLess(start.elapsed_time(end), 5000.0)
        a, b = torch.Event("sdaa", enable_timing=True), torch.Event("sdaa", enable_timing=True)
        a.record()
        time.sleep(0.02)
        b.record()
        self.assertGreaterEqual(a.elapsed_time(b), 19.0)
        with self.assertRaisesRegex(RuntimeError, "enable_timing=True"):
            _recorded(torch.sdaa.Event()).elapsed_time(end)
        with self.assertRaisesRegex(RuntimeError, "must be recorded"):
            torch.sdaa.Event(enable_timing=True).elapsed_time(end)

    def test_streams(self):
        self.assertEqual(torch.sdaa.current_stream().stream_id, 0)
        self.assertEqual(torch.sdaa.default_stream(1).device_index, 1)
        s = torch.sdaa.Stream("sdaa:1")
        self.assertNotEqual(s.stream_id, 0)
        with torch.sdaa.stream(s):
            self.assertEqual(torch.sdaa.current_device(), 1)
            self.assertEqual(torch.sdaa.current_stream(), s)
            e = s.record_event()
            torch.sdaa.current_stream().wait_event(e)
        self.assertEqual(torch.sdaa.current_device(), 0)
        self.assertEqual(torch.sdaa.current_stream(1).stream_id, 0)
        self.assertTrue(s.query())
        s.synchronize()


def _recorded(event):
    event.record()
    return event


class PinnedMemoryTest(unittest.TestCase):
    def test_dataloader_pins(self):
        ds = torch.utils.data.TensorDataset(torch.randn(10, 3), torch.arange(10))
        batches = list(torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True))
        self.assertEqual(len(batches), 3)
        for x, y in batches:
            self.assertTrue(x.is_pinned() and y.is_pinned())
        self.assertFalse(torch.randn(3).is_pinned())
        p = torch.randn(100).pin_memory()
        self.assertTrue(p.is_pinned() and p[50:].is_pinned())
        self.assertTrue(torch.equal(p.to("sdaa", non_blocking=True).cpu(), p))


class UnsupportedTest(unittest.TestCase):
    def test_missing_names_raise_naming_them(self):
        with self.assertRaisesRegex(NotImplementedError,
                                    r"torch\.sdaa\.memory_stats is not implemented by the SDAA emulator"):
            torch.sdaa.memory_stats()
        with self.assertRaisesRegex(NotImplementedError, r"torch\.sdaa\.CUDAGraph"):
            torch.sdaa.CUDAGraph
        self.assertFalse(hasattr(torch.sdaa, "memory_stats"))  # torch probes with hasattr
        with self.assertRaisesRegex(AttributeError, "no attribute 'no_such_thing'"):
            torch.sdaa.no_such_thing
        with self.assertRaisesRegex(NotImplementedError, r"torch\.sdaa\.amp\.amp_definitely_not_available"):
            torch.sdaa.amp.amp_definitely_not_available()
        with self.assertRaisesRegex(NotImplementedError, "interprocess"):
            torch.sdaa.Event(interprocess=True)


class DistributedTest(unittest.TestCase):
    def test_ddp_and_collectives_under_torchrun(self):
        with tempfile.TemporaryDirectory() as out_dir:
            proc = run_python(
                ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                 os.path.join(HERE, "tsdaa_ddp.py"), out_dir],
                env={"TORCH_SDAA_BANNER": "0", "TCCL_EMULATOR_TIMEOUT_S": "60", "OMP_NUM_THREADS": "1"},
                timeout=180,
            )
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            r0, r1 = (read_json(os.path.join(out_dir, f"rank{r}.json")) for r in (0, 1))

        self.assertEqual((r0["backend"], r0["world"]), ("tccl", 2))
        # DDP: identical parameters on both ranks, equal to one process on the averaged gradient.
        self.assertEqual(r0["params"], r1["params"])
        import tsdaa_ddp

        net = tsdaa_ddp.model()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        batches = [tsdaa_ddp.batch(r) for r in (0, 1)]
        for _ in range(tsdaa_ddp.STEPS):
            opt.zero_grad()
            sum(torch.nn.functional.mse_loss(net(x), y) for x, y in batches).div(2).backward()
            opt.step()
        for got, want in zip(r0["params"], net.parameters()):
            self.assertTrue(torch.allclose(torch.tensor(got), want.detach().flatten(), rtol=0, atol=1e-6))

        for r in (r0, r1):
            self.assertEqual(r["all_gather"], [[0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0, 13.0]])
            self.assertEqual(r["all_gather_into_tensor"], [0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0])
            self.assertEqual(r["broadcast"], [[1.0, 1.0]] * 3)
            self.assertEqual(r["all_reduce_fp16"], [1.5] * 3)
            self.assertEqual(r["all_reduce_min"], [0, -1])
            self.assertEqual(r["all_reduce_bf16_avg"], [2.0] * 5)
            self.assertEqual((r["big_all_reduce"], r["big_all_gather"], r["big_reduce_scatter"]), (True,) * 3)
            self.assertEqual(r["all_gather_object"], [{"rank": 0}, {"rank": 1}])
            self.assertEqual(r["cpu_tensor"][0], "ValueError")
            self.assertIn("got a tensor on cpu; TCCL communicates dense sdaa tensors only", r["cpu_tensor"][1])
            self.assertEqual(r["send"], ["NotImplementedError", "the SDAA emulator's tccl has no send (point-to-point) (modelzoo)"])
            self.assertIn("has no allreduce with ReduceOp.BAND", r["premul"][1])
        # (0..5) * 1 + (0..5) * 2 = 3 * (0..5), scattered in blocks of 3; MAX of (r+1) * (0..5).
        self.assertEqual((r0["reduce_product_to_0"], r1["reduce_product_to_0"]), ([2.0, 2.0], [2.0, 2.0]))
        self.assertEqual(r0["reduce_scatter_tensor"], [0.0, 3.0, 6.0])
        self.assertEqual(r1["reduce_scatter_tensor"], [9.0, 12.0, 15.0])
        self.assertEqual(r0["reduce_scatter_max"], [0.0, 2.0, 4.0])
        self.assertEqual(r1["reduce_scatter_max"], [6.0, 8.0, 10.0])


class InventoryTest(unittest.TestCase):
    def test_tiny_run_writes_both_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            out_dir = os.path.join(tmp, "inventory")
            proc = run_python([os.path.join(HERE, "tsdaa_inventory.py")],
                              env={"SDAA_EMULATOR_OP_INVENTORY": out_dir, "TORCH_SDAA_BANNER": "0", "RANK": "3"})
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(proc.stdout, "")
            self.assertEqual(sorted(os.listdir(out_dir)), ["coverage.rank3.txt", "op_inventory.rank3.json"])
            inv = read_json(os.path.join(out_dir, "op_inventory.rank3.json"))
            with open(os.path.join(out_dir, "coverage.rank3.txt")) as f:
                coverage = f.read()

        self.assertEqual((inv["format"], inv["version"], inv["emulator"], inv["rank"]),
                         ("modelzoo-sdaa-op-inventory", 1, True, 3))
        device = {o["op"]: o for o in inv["device_ops"]}
        host = {o["op"]: o for o in inv["host_ops"]}
        for op in ("aten::addmm", "aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"):
            self.assertIn(op, device)
        # Two Linear layers, two steps: 4 calls in fp16 (autocast), each also through addmm.out.
        self.assertIn({"dtypes": "float16,float16,float16", "count": 4}, device["aten::addmm"]["dtypes"])
        self.assertEqual(device["aten::addmm"]["count"], sum(d["count"] for d in device["aten::addmm"]["dtypes"]))
        self.assertIn("aten::cumsum", host)
        self.assertNotIn("aten::cumsum", device)
        fp64_device = {o["op"] for o in inv["fp64"]["device"]}
        self.assertIn("aten::_to_copy", fp64_device)  # x.double() on sdaa
        self.assertIn("aten::cumsum", {o["op"] for o in inv["fp64"]["host"]})
        self.assertEqual(inv["emulator_fallbacks"], [{"op": "aten::tril_indices", "count": 1}])
        self.assertTrue(device["aten::tril_indices"]["emulator_fallback"])
        self.assertFalse(device["aten::addmm"]["emulator_fallback"])

        lines = coverage.splitlines()
        self.assertEqual(len(lines), 3, coverage)
        all_api = sorted({op[len("aten::"):] for op in device})
        self.assertEqual(lines[0], f"all api: {all_api!r}, total: {len(all_api)}")
        self.assertEqual(lines[1], "fallback op: ['tril_indices'], total: 1")
        self.assertEqual(lines[2], f"coverage rate: {100 * (len(all_api) - 1) / len(all_api):.2f}%")
        self.assertEqual(inv["coverage"]["all_api"], all_api)

    def test_api_without_the_variable(self):
        with self.assertRaisesRegex(RuntimeError, "SDAA_EMULATOR_OP_INVENTORY"):
            torch_sdaa.emulator.op_inventory()


FALLBACK_SCRIPT = """
import torch, torch_sdaa
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x = torch.randn(5, 4)
for dev in ("cpu", "sdaa"):
    m = net.to(dev)
    out = m(x.to(dev))
    out.sum().backward()
    print(dev, repr(out.detach().cpu().flatten().tolist()))
"""


class FallbackTest(unittest.TestCase):
    """TORCH_SDAA_FALLBACK_OPS: the ops it names run as CPU ops (never perturbed), the inventory
    counts them and marks the candidates; SDAA_EMU_PERTURB without a call index; the real
    runtime's other variables honoured or refused by name."""

    def run_script(self, env, inventory=None):
        with tempfile.TemporaryDirectory() as tmp:
            full = {"TORCH_SDAA_BANNER": "0", **env}
            if inventory:
                full["SDAA_EMULATOR_OP_INVENTORY"] = os.path.join(tmp, "inv")
            proc = run_python(["-c", FALLBACK_SCRIPT], env=full)
            inv = None
            if inventory and proc.returncode == 0:
                inv = read_json(os.path.join(tmp, "inv", "op_inventory.rank0.json"))
        lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
        return proc, lines, inv

    def test_fallback_heals_a_perturbed_op_and_is_counted(self):
        perturb = {"SDAA_EMU_PERTURB": "aten::addmm:rel=0.3"}
        proc, out, _ = self.run_script(perturb)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotEqual(out["cpu"], out["sdaa"])  # every addmm call perturbed
        self.assertIn("perturbs every call of aten::addmm", proc.stderr)
        # Named as the real runtime takes it (no namespace, an overload): healed, bit for bit.
        proc, out, inv = self.run_script(
            {**perturb, "TORCH_SDAA_FALLBACK_OPS": "addmm.out, relu,fused_adam"}, inventory=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(out["cpu"], out["sdaa"])
        self.assertIn("TORCH_SDAA_FALLBACK_OPS names ops this torch does not have: fused_adam",
                      proc.stderr)
        counts = {o["op"]: o["count"] for o in inv["fallback_ops"]}
        self.assertEqual(set(counts), {"aten::addmm", "aten::relu"})
        self.assertEqual(counts["aten::relu"], 1)
        device = {o["op"]: o for o in inv["device_ops"]}
        self.assertTrue(device["aten::addmm"]["fallback"])
        self.assertFalse(device["aten::mm"]["fallback"])
        self.assertIn("addmm", inv["coverage"]["fallback_op"])
        # Candidates: kernels with a device output; not views, composites or plumbing.
        candidates = set(inv["fallback_candidates"])
        self.assertTrue({"aten::addmm", "aten::mm", "aten::relu", "aten::threshold_backward"}
                        <= candidates, candidates)
        for op in ("aten::linear", "aten::t", "aten::view", "aten::empty", "aten::_to_copy"):
            self.assertNotIn(op, candidates)
            if op in device:
                self.assertFalse(device[op]["candidate"], op)

    def test_bad_settings_are_errors_naming_the_variable(self):
        for name, value in (("TORCH_SDAA_FALLBACK_OPS", "addmm;mm"),
                            ("TORCH_SDAA_RUNTIME_AUTOFALLBACK", "yes")):
            proc = run_python(["-c", "import torch, torch_sdaa"],
                              env={"TORCH_SDAA_BANNER": "0", name: value})
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn(f"SettingError: SDAA emulator: {name}", proc.stderr)


if __name__ == "__main__":
    unittest.main()
