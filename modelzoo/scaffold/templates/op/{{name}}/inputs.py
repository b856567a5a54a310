"""Cases for `modelzoo op check`: ``cases(dtype, device, seed)`` yields ``(name, args,
kwargs)`` — tensors on ``device`` in ``dtype``, ``requires_grad`` where a gradient is checked.

    modelzoo op check --ref {{name}}:scale_add_reference --impl {{name}}:scale_add \
        --inputs {{name}}.inputs:cases --device cpu --backward
"""

import torch


def cases(dtype, device, seed):
    """Shapes the op meets: a vector, a matrix, a batch of images; a few scales."""
    gen = torch.Generator().manual_seed(seed)
    for name, shape, alpha in (("vector", (17,), 0.5), ("matrix", (4, 33), -2.0),
                               ("images", (2, 3, 8, 8), 1.0)):
        x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype).requires_grad_()
        y = torch.randn(shape, generator=gen).to(device=device, dtype=dtype).requires_grad_()
        yield name, (x, y, alpha), {}
