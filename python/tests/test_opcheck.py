"""modelzoo_opcheck (`modelzoo op check`'s harness) against implementations known right and known
wrong: subtly wrong in the forward only, in the backward only (a custom autograd.Function), on
non-contiguous inputs only; fp32 and fp16/bf16; the small-value rule; the repro script; the
harness's exit codes. On the CPU (cheap); the Rust test runs one check on the emulated sdaa.

    cd python/tests && PYTHONPATH=..:. ../../.venv/bin/python -m unittest test_opcheck -v

The functions below are also the fixtures the checks load (`test_opcheck:ref_op`, ...).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

import torch

import modelzoo_opcheck as oc
from modelzoo_opcheck import __main__ as oc_main

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- the op under check: tanh(x @ w) ------------------------------------------------------


def ref_op(x, w):
    return torch.tanh(x @ w)


def impl_right(x, w):
    return torch.tanh(torch.matmul(x, w))


def impl_forward_wrong(x, w):
    """Off by 1e-3 relative in the first quarter of the rows, in the forward only (the error is
    detached, so the gradient is the right one)."""
    y = torch.tanh(x @ w)
    rows = max(1, y.shape[0] // 4)
    err = torch.zeros_like(y)
    err[:rows] = y[:rows].detach() * 1e-3
    return y + err.detach()


class _TanhMatmulWrongGrad(torch.autograd.Function):
    """Right forward; the backward's tanh derivative is 2% off in the first half of the
    columns."""

    @staticmethod
    def forward(ctx, x, w):
        y = torch.tanh(x @ w)
        ctx.save_for_backward(x, w, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, y = ctx.saved_tensors
        d = 1 - y * y
        cols = max(1, d.shape[-1] // 2)
        d = d.clone()
        d[..., :cols] *= 1.02
        gz = g * d
        return gz @ w.transpose(-1, -2), x.transpose(-1, -2) @ gz


def impl_backward_wrong(x, w):
    return _TanhMatmulWrongGrad.apply(x, w)


def _contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def impl_assumes_contiguous(x, w):
    """Reads x's memory as if it were contiguous (what a kernel walking data_ptr does): right on
    contiguous inputs, wrong on any other layout."""
    flat = x.as_strided(x.shape, _contiguous_strides(x.shape))
    return torch.tanh(flat @ w)


def impl_raises(x, w):
    raise RuntimeError("kernel not implemented for this device")


def cases(dtype, device, seed):
    """(name, args, kwargs): inputs made on the CPU from `seed`, then moved, requiring grad."""
    g = torch.Generator().manual_seed(seed)
    for name, (m, k, n), scale in [("small", (4, 8, 6), 1.0), ("wide", (16, 24, 12), 0.3),
                                   ("near_zero", (6, 8, 5), 1e-9)]:
        x = torch.randn(m, k, generator=g, dtype=torch.float64)
        w = torch.randn(k, n, generator=g, dtype=torch.float64) * scale
        yield name, (x.to(device=device, dtype=dtype).requires_grad_(),
                     w.to(device=device, dtype=dtype).requires_grad_()), {}


def cases_raise(dtype, device, seed):
    raise ValueError("no data here")


def cases_bad_shape(dtype, device, seed):
    yield ("only a name",)


# ---- tests --------------------------------------------------------------------------------


def check(impl, **kw):
    kw.setdefault("device", "cpu")
    return oc.check("test_opcheck:ref_op", f"test_opcheck:{impl}", "test_opcheck:cases", **kw)


def failing(res):
    return {(r["case"], r["dtype"], r["layout"], r["tensor"]) for r in res["rows"] if r["verdict"] != "pass"}


class OpCheckTest(unittest.TestCase):
    def test_a_right_implementation_passes_in_every_dtype_forward_and_backward(self):
        res = check("impl_right", dtypes=("float32", "float16", "bfloat16"), backward=True)
        self.assertTrue(res["pass"], failing(res))
        tensors = {r["tensor"] for r in res["rows"]}
        self.assertEqual(tensors, {"out", "grad:arg0", "grad:arg1"})
        layouts = {r["layout"] for r in res["rows"]}
        self.assertEqual(layouts, {"contiguous", "non-contiguous"})
        self.assertEqual({r["dtype"] for r in res["rows"]}, {"float32", "float16", "bfloat16"})
        # The near-zero case is judged by absolute error: no cosine.
        nz = [r for r in res["rows"] if r["case"] == "near_zero" and r["tensor"] == "out"]
        self.assertTrue(nz and all(r["near_zero"] and r["cosine"] is None for r in nz), nz)

    def test_a_forward_off_by_1e_3_in_one_region_fails_and_its_gradients_pass(self):
        res = check("impl_forward_wrong", backward=True)
        self.assertFalse(res["pass"])
        bad = failing(res)
        self.assertTrue(bad)
        self.assertEqual({t for (_, _, _, t) in bad}, {"out"}, bad)
        # The cosine alone would not see it: the relative bound does.
        row = next(r for r in res["rows"] if r["case"] == "wide" and r["tensor"] == "out")
        self.assertGreater(row["cosine"], 0.99)
        self.assertGreater(row["rel_errors"], 0)
        self.assertEqual(row["judged_by"], "benchmark")
        self.assertIn("relative error", row["reason"])

    def test_a_backward_2_percent_off_fails_only_in_the_gradients(self):
        res = check("impl_backward_wrong", backward=True)
        self.assertFalse(res["pass"])
        bad = failing(res)
        self.assertIn(("wide", "float32", "contiguous", "grad:arg0"), bad)
        self.assertIn(("wide", "float32", "contiguous", "grad:arg1"), bad)
        self.assertNotIn("out", {t for (_, _, _, t) in bad})
        # Without --backward the same implementation passes: the forward is right.
        self.assertTrue(check("impl_backward_wrong")["pass"])

    def test_a_wrong_low_precision_backward_fails_in_bf16_too(self):
        res = check("impl_backward_wrong", dtypes=("bfloat16",), backward=True)
        self.assertIn(("wide", "bfloat16", "contiguous", "grad:arg0"), failing(res))

    def test_an_implementation_that_assumes_contiguous_memory_fails_on_non_contiguous_inputs(self):
        res = check("impl_assumes_contiguous", backward=True)
        bad = failing(res)
        self.assertTrue(bad)
        self.assertEqual({layout for (_, _, layout, _) in bad}, {"non-contiguous"}, bad)
        self.assertIn(("wide", "float32", "non-contiguous", "out"), bad)

    def test_an_implementation_that_raises_fails_naming_the_error(self):
        res = check("impl_raises")
        self.assertFalse(res["pass"])
        self.assertTrue(all("kernel not implemented" in r["reason"] for r in res["rows"]))

    def test_the_small_value_rule(self):
        ref = torch.zeros(100, dtype=torch.float64)
        noise = torch.randn(100, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 1e-11
        row = oc.judge(ref, noise, torch.float32)
        self.assertEqual(row["verdict"], "pass", row)
        self.assertTrue(row["near_zero"])
        # A real drift on a near-zero tensor still fails: 2^-14 is the bound in fp32 ...
        drift = noise.clone()
        drift[3] = 1e-3
        row = oc.judge(ref, drift, torch.float32)
        self.assertEqual(row["verdict"], "fail")
        self.assertEqual(row["small_value_errors"], 1)
        # ... and 2^-8 in bf16, where 1e-3 is within.
        self.assertEqual(oc.judge(ref, drift, torch.bfloat16)["verdict"], "pass")
        self.assertEqual(oc.SMALL_VALUE, {torch.float32: 2**-14, torch.float16: 2**-11, torch.bfloat16: 2**-8})

    def test_the_cpu_same_dtype_benchmark_rescues_a_precision_limited_result_not_a_wrong_one(self):
        g = torch.Generator().manual_seed(2)
        ref = torch.randn(1000, generator=g, dtype=torch.float64) * 1e-2
        err = torch.randn(1000, generator=g, dtype=torch.float64) * 1e-4
        bench = ref + err  # a CPU fp16 run: ~1% relative off where values are small
        got = ref + err.flip(0)  # the device: as far off, elsewhere
        row = oc.judge(ref, got, torch.float16, bench)
        self.assertGreater(row["rel_errors"], 0)
        self.assertEqual((row["verdict"], row["judged_by"]), ("pass", "benchmark"), row)
        self.assertEqual(oc.judge(ref, got, torch.float16)["verdict"], "fail")  # no benchmark
        wrong = ref + err.flip(0) * 4
        row = oc.judge(ref, wrong, torch.float16, bench)
        self.assertEqual(row["verdict"], "fail", row)
        self.assertIn("rmse ratio", row["reason"])

    def test_a_failing_case_writes_a_repro_script_that_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            res = check("impl_forward_wrong", repro_dir=tmp)
            self.assertFalse(res["pass"])
            paths = {(p["case"], p["dtype"]): p["path"] for p in res["repros"]}
            self.assertEqual(set(paths), {("small", "float32"), ("wide", "float32")})
            wide = next(f for f in res["failing"] if f["case"] == "wide")
            self.assertEqual([(i["name"], i["shape"], i["requires_grad"]) for i in wide["inputs"]],
                             [("arg0", [16, 24], True), ("arg1", [24, 12], True)])
            out = subprocess.run([sys.executable, paths[("wide", "float32")]], cwd=tmp,
                                 capture_output=True, text=True, timeout=120,
                                 env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
            self.assertEqual(out.returncode, 1, out.stderr)
            self.assertIn("wide float32 contiguous out", out.stdout)
            self.assertIn("FAIL", out.stdout)
            self.assertNotIn("small float32", out.stdout)

    def test_could_not_run_names_what(self):
        with self.assertRaisesRegex(oc.CouldNotRun, "cannot import module `no_such_module`"):
            oc.check("no_such_module:f", "test_opcheck:impl_right", "test_opcheck:cases", device="cpu")
        with self.assertRaisesRegex(oc.CouldNotRun, "has no `nope`"):
            oc.check("test_opcheck:ref_op", "test_opcheck:impl_right", "test_opcheck:nope", device="cpu")
        with self.assertRaisesRegex(oc.CouldNotRun, "expected MODULE:FUNCTION"):
            oc.check("ref_op", "test_opcheck:impl_right", "test_opcheck:cases", device="cpu")
        with self.assertRaisesRegex(oc.CouldNotRun, "raised ValueError: no data here"):
            oc.check("test_opcheck:ref_op", "test_opcheck:impl_right", "test_opcheck:cases_raise", device="cpu")
        with self.assertRaisesRegex(oc.CouldNotRun, r"case 0 is not \(name, args, kwargs\)"):
            oc.check("test_opcheck:ref_op", "test_opcheck:impl_right", "test_opcheck:cases_bad_shape", device="cpu")
        with self.assertRaisesRegex(oc.CouldNotRun, "device nosuch unavailable"):
            oc.check("test_opcheck:ref_op", "test_opcheck:impl_right", "test_opcheck:cases", device="nosuch")
        with self.assertRaisesRegex(oc.CouldNotRun, "unknown dtype `float8`"):
            check("impl_right", dtypes=("float8",))

    @unittest.skipIf(hasattr(torch, "sdaa"), "torch_sdaa is already imported in this process")
    def test_sdaa_without_torch_sdaa_could_not_run_and_says_how_to_get_it(self):
        with unittest.mock.patch.dict(sys.modules, {"torch_sdaa": None}):  # import fails
            with self.assertRaisesRegex(oc.CouldNotRun, r"device sdaa unavailable: `import torch_sdaa` failed.*make build"):
                check("impl_right", device="sdaa")

    def test_the_harness_writes_json_and_exits_0_when_it_ran_2_when_it_could_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.json")
            base = ["--ref", "test_opcheck:ref_op", "--inputs", "test_opcheck:cases", "--device", "cpu",
                    "--out", out, "--repro-dir", os.path.join(tmp, "repro")]
            self.assertEqual(oc_main.main(base + ["--impl", "test_opcheck:impl_right"]), 0)
            with open(out, encoding="utf-8") as f:
                self.assertTrue(json.load(f)["pass"])
            self.assertEqual(oc_main.main(base + ["--impl", "test_opcheck:impl_forward_wrong"]), 0)
            with open(out, encoding="utf-8") as f:
                res = json.load(f)
            self.assertFalse(res["pass"])
            self.assertTrue(os.path.isfile(res["repros"][0]["path"]))
            self.assertEqual(oc_main.main(base + ["--impl", "test_opcheck:no_such_fn"]), 2)
            with open(out, encoding="utf-8") as f:
                self.assertIn("has no `no_such_fn`", json.load(f)["error"])


if __name__ == "__main__":
    unittest.main()
