"""modelzoo_ops.msdeform (modelzoo/ops): MultiScaleDeformableAttention as ATen ops with its own
backward, against its grid_sample twin in float64 (forward and every gradient), gradcheck of
its backward, float32 / float16 / bfloat16 on the CPU and on the emulated sdaa, non-contiguous
inputs, the planted fault, and the errors for bad shapes. Cheap: tiny shapes only.

torch_sdaa is imported with this module, before any test runs (see test_torch_sdaa.py: a
backward on sdaa fails once a CPU-only backward ran before the sdaa backend was registered).
"""

import os
import sys
import unittest

import torch

os.environ.setdefault("TORCH_SDAA_BANNER", "0")
try:
    import torch_sdaa  # noqa: E402,F401
    HAVE_SDAA = True
except ImportError:  # no emulator built: the sdaa tests are skipped, the CPU ones still run
    HAVE_SDAA = False

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "modelzoo", "ops"))

from modelzoo_ops.msdeform import (  # noqa: E402
    KERNELS_ENV, ms_deform_attn, ms_deform_attn_faulty, ms_deform_attn_twin)
from modelzoo_ops.msdeform.inputs import cases, make  # noqa: E402

# Error allowed against the float64 twin, relative to the largest magnitude of the reference
# (outputs and gradients are O(1) here): float32 a few ulps of accumulated sums; float16 and
# bfloat16 inputs and results are rounded to their dtype (the op computes in float32), so
# a few of their ulps.
TOLERANCE = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def run(fn, args, grad_out):
    """Output and the gradients of (value, sampling_locations, attention_weights)."""
    out = fn(*args)
    grads = torch.autograd.grad(out, (args[0], args[3], args[4]), grad_out)
    return [out, *grads]


def to64(args):
    """CPU float64 copies of the inputs, leaves requiring grad again."""
    return tuple(a.detach().cpu().double().requires_grad_(True) if a.is_floating_point()
                 else a.cpu() for a in args)


class kernel_set:
    """MODELZOO_MSDEFORM_KERNELS set for a block, restored after."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.saved = os.environ.get(KERNELS_ENV)
        os.environ[KERNELS_ENV] = self.name

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop(KERNELS_ENV, None)
        else:
            os.environ[KERNELS_ENV] = self.saved


def max_rel_error(got, want):
    scale = want.abs().max().clamp_min(1e-6)
    return ((got.detach().cpu().double() - want.detach()).abs().max() / scale).item()


class AgainstTwinTest(unittest.TestCase):
    def test_float64_forward_and_gradients_equal_the_twin(self):
        names = []
        for name, args, _ in cases(torch.float64, "cpu", 3):
            names.append(name)
            g = torch.randn(*args[4].shape[:3], args[0].shape[3], dtype=torch.float64)
            g = g.flatten(2)
            got, want = run(ms_deform_attn, args, g), run(ms_deform_attn_twin, args, g)
            for what, a, b in zip(("out", "value", "loc", "attn"), got, want):
                self.assertEqual(a.shape, b.shape, f"{name} {what}")
                torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12, msg=f"{name} {what}")
        self.assertEqual(len(names), 3)

    def test_both_kernel_sets_equal_the_twin(self):
        # MODELZOO_MSDEFORM_KERNELS=index: index_select + matmul and index_add_ instead of
        # ATen's EmbeddingBag kernels; the same results.
        _, args, _ = next(cases(torch.float64, "cpu", 4))
        g = torch.randn(2, 5, 8, dtype=torch.float64)
        want = run(ms_deform_attn_twin, args, g)
        for kernels in ("bag", "index"):
            with kernel_set(kernels):
                for what, a, b in zip(("out", "value", "loc", "attn"),
                                      run(ms_deform_attn, args, g), want):
                    torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12,
                                               msg=f"{kernels} {what}")
        with kernel_set("cuda"), self.assertRaisesRegex(ValueError, "is not a kernel set"):
            ms_deform_attn(*args)

    def test_chunked_queries_give_the_same_result(self):
        # One query per chunk (the budgets set to 1): the chunks' gradients add up.
        import modelzoo_ops.msdeform as msdeform
        _, args, _ = next(cases(torch.float64, "cpu", 6))
        g = torch.randn(2, 5, 8, dtype=torch.float64)
        want = run(ms_deform_attn_twin, args, g)
        saved = (msdeform.CHUNK_CORNERS, msdeform.CHUNK_ELEMENTS,
                 msdeform.CHUNK_AT_LEAST_VALUE_ROWS)
        for kernels in ("bag", "index"):
            self.assertEqual(len(msdeform._chunks(args[3], 4, kernels, 320)), 1)
        msdeform.CHUNK_CORNERS = msdeform.CHUNK_ELEMENTS = 1
        msdeform.CHUNK_AT_LEAST_VALUE_ROWS = False
        try:
            for kernels in ("bag", "index"):
                self.assertEqual(len(msdeform._chunks(args[3], 4, kernels, 320)), 5)
            for kernels in ("bag", "index"):
                with kernel_set(kernels):
                    for what, a, b in zip(("out", "value", "loc", "attn"),
                                          run(ms_deform_attn, args, g), want):
                        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12,
                                                   msg=f"{kernels} {what}")
        finally:
            (msdeform.CHUNK_CORNERS, msdeform.CHUNK_ELEMENTS,
             msdeform.CHUNK_AT_LEAST_VALUE_ROWS) = saved

    def test_backward_passes_gradcheck(self):
        # Tiny, non-square levels; points inside and past the borders (none on a pixel
        # centre, where the bilinear weights have a kink).
        args, _ = make([(3, 2), (2, 3)], 2, 2, 2, 2, 1, torch.float64, "cpu", 5, borders=False)
        loc = args[3].detach()
        loc[0, 0, 0, 0, 0] = torch.tensor([-0.05, 1.07], dtype=torch.float64)
        args = (*args[:3], loc.requires_grad_(True), args[4])
        self.assertTrue(torch.autograd.gradcheck(ms_deform_attn, args, eps=1e-6, atol=1e-7))

    def test_non_contiguous_inputs_give_the_same_result(self):
        _, args, _ = next(cases(torch.float32, "cpu", 0))
        value, shapes, starts, loc, attn = (a.detach() for a in args)
        strided = (value.transpose(1, 2).contiguous().transpose(1, 2), shapes, starts,
                   torch.stack((loc, loc), dim=-1)[..., 0], attn.transpose(0, 1).contiguous()
                   .transpose(0, 1))
        self.assertFalse(strided[0].is_contiguous() or strided[3].is_contiguous())
        # Same values; the sums may run in another order (float32: a few ulps).
        torch.testing.assert_close(ms_deform_attn(*strided),
                                   ms_deform_attn(value, shapes, starts, loc, attn),
                                   rtol=1e-6, atol=1e-6)

    def test_the_planted_fault_is_far_from_the_twin(self):
        _, args, _ = next(cases(torch.float64, "cpu", 0))
        want = ms_deform_attn_twin(*args)
        self.assertLess(max_rel_error(ms_deform_attn(*args), want), 1e-12)
        self.assertGreater(max_rel_error(ms_deform_attn_faulty(*args), want), 0.05)

    def test_the_fault_switched_on_by_the_environment_is_the_planted_one(self):
        # MODELZOO_MSDEFORM_FAULT=x-index: ms_deform_attn computes what the faulty op does
        # (forward and gradients), for a whole-model recheck; a wrong value is a clear error.
        import modelzoo_ops.msdeform as msdeform
        _, args, _ = next(cases(torch.float64, "cpu", 0))
        grad_out = torch.ones_like(ms_deform_attn_twin(*args).detach())
        faulty = run(ms_deform_attn_faulty, args, grad_out)
        saved = os.environ.get(msdeform.FAULT_ENV)
        try:
            os.environ[msdeform.FAULT_ENV] = "x-index"
            got = run(ms_deform_attn, args, grad_out)
            for g, w in zip(got, faulty):
                torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)
            os.environ[msdeform.FAULT_ENV] = "shift"
            with self.assertRaisesRegex(ValueError, "MODELZOO_MSDEFORM_FAULT='shift'.*x-index"):
                ms_deform_attn(*args)
            os.environ[msdeform.FAULT_ENV] = ""
            self.assertLess(max_rel_error(ms_deform_attn(*args), ms_deform_attn_twin(*args)), 1e-12)
        finally:
            if saved is None:
                os.environ.pop(msdeform.FAULT_ENV, None)
            else:
                os.environ[msdeform.FAULT_ENV] = saved


class DtypeDeviceTest(unittest.TestCase):
    def check(self, device):
        for dtype, tol in TOLERANCE.items():
            for name, args, _ in cases(dtype, device, 11):
                ref = to64(args)
                g = torch.randn(*args[4].shape[:3], args[0].shape[3]).flatten(2)
                got = run(ms_deform_attn, args, g.to(device=device, dtype=dtype))
                want = run(ms_deform_attn_twin, ref, g.double())
                for what, a, b in zip(("out", "value", "loc", "attn"), got, want):
                    where = f"{name} {dtype} {device} {what}"
                    self.assertEqual((a.dtype, a.device.type), (dtype, device), where)
                    self.assertLess(max_rel_error(a, b), tol, where)

    def test_cpu_float32_float16_bfloat16(self):
        self.check("cpu")

    @unittest.skipUnless(HAVE_SDAA, "torch_sdaa (the emulator) is not importable")
    def test_emulated_sdaa_float32_float16_bfloat16(self):
        self.check("sdaa")


class BadInputTest(unittest.TestCase):
    def test_wrong_shapes_say_which_argument(self):
        _, args, _ = next(cases(torch.float32, "cpu", 0))
        value, shapes, starts, loc, attn = args
        bad = {
            "value must be (N, S, M, D)": (value[0], shapes, starts, loc, attn),
            "spatial_shapes must be an integer tensor": (value, shapes.float(), starts, loc, attn),
            "level_start_index must be (2,)": (value, shapes, starts[:1], loc, attn),
            "sampling_locations must be (N=2, Lq, M=2, L=2, P, 2)":
                (value, shapes, starts, loc[..., :1], attn),
            "attention_weights must be (2, 5, 2, 2, 2)": (value, shapes, starts, loc, attn[:1]),
        }
        for message, bad_args in bad.items():
            for fn in (ms_deform_attn, ms_deform_attn_twin):
                with self.assertRaises(ValueError, msg=message) as caught:
                    fn(*bad_args)
                self.assertIn(message, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
