"""{{name}}'s tests: the CPU kernel against the reference (forward in each dtype, the
gradient by gradcheck), and the sdaa kernel against it where torch_sdaa (or the kit's SDAA
emulator) is importable — skipped, with the kernel's own error, while it is not written.

    python -m unittest discover -s tests     # from the library's directory
"""

import os
import sys
import unittest

import torch

try:
    import torch_sdaa  # noqa: F401  (before any backward: it registers the sdaa device)
    HAVE_SDAA = True
except ImportError:
    HAVE_SDAA = False

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import {{name}}  # noqa: E402
from {{name}}.inputs import cases  # noqa: E402

# Error allowed against the float64 reference, relative to the reference's largest magnitude.
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-6, torch.float16: 1e-3,
             torch.bfloat16: 8e-3}


def max_rel_error(got, want):
    got, want = got.detach().cpu().double(), want.detach().cpu().double()
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-12)).item()


class ScaleAddTest(unittest.TestCase):
    def check_device(self, device):
        for dtype, tol in TOLERANCE.items():
            for name, args, kwargs in cases(dtype, device, 0):
                got = {{name}}.scale_add(*args, **kwargs)
                ref_args = [a.detach().cpu().double() if torch.is_tensor(a) else a for a in args]
                want = {{name}}.scale_add_reference(*ref_args, **kwargs)
                self.assertEqual((got.dtype, got.device), (dtype, args[0].device), name)
                self.assertLess(max_rel_error(got, want), tol, f"{name} {dtype} {device}")

    def test_cpu_kernel_matches_the_reference(self):
        self.check_device("cpu")

    def test_cpu_gradient(self):
        x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
        y = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(lambda a, b: {{name}}.scale_add(a, b, -1.5),
                                                 (x, y)))

    def test_cpu_kernel_refuses_mismatched_shapes(self):
        with self.assertRaisesRegex(RuntimeError, "must have one shape"):
            {{name}}.scale_add(torch.zeros(2), torch.zeros(3), 1.0)

    @unittest.skipUnless(HAVE_SDAA, "torch_sdaa is not importable")
    def test_sdaa_kernel_matches_the_reference(self):
        try:
            {{name}}.scale_add(torch.zeros(1, device="sdaa"), torch.zeros(1, device="sdaa"), 1.0)
        except RuntimeError as e:
            if "not implemented yet" in str(e):
                self.skipTest(str(e).splitlines()[0])
            raise
        self.check_device("sdaa")


if __name__ == "__main__":
    unittest.main()
