"""The zoo's own device ops: PyTorch ops that models ship as custom CUDA extensions, written
again as compositions of ATen ops so they run wherever the device's ATen kernels run (the CPU,
CUDA, the sdaa device and its emulator) with no extension to build.

Each op lives in a subpackage (``modelzoo_ops.msdeform``) with the op, a pure-PyTorch twin to
check it against and an ``inputs`` module of cases for ``modelzoo op check``. Put
``modelzoo/ops`` on ``PYTHONPATH`` to import them.
"""
