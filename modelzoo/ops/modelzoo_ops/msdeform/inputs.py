"""Cases for ``modelzoo op check``: ``cases(dtype, device, seed)`` yields ``(name, args,
kwargs)`` for ``ms_deform_attn`` and its twin — small shapes of a real Deformable DETR layer
(levels of decreasing size, several heads and points), with sampling locations inside the maps,
and near and past their borders (where bilinear sampling reads the zero padding).

    modelzoo op check --ref modelzoo_ops.msdeform:ms_deform_attn_twin \\
        --impl modelzoo_ops.msdeform:ms_deform_attn --inputs modelzoo_ops.msdeform.inputs:cases
"""

import torch


def make(levels, heads, channels, queries, points, batch, dtype, device, seed, borders=False):
    """One input set: (value, spatial_shapes, level_start_index, sampling_locations,
    attention_weights) with the floating ones requiring grad. Drawn on the CPU from ``seed``
    (the same values on every device), then moved to ``device`` in ``dtype``."""
    gen = torch.Generator().manual_seed(seed)
    shapes = torch.tensor(levels, dtype=torch.long)
    areas = shapes[:, 0] * shapes[:, 1]
    starts = torch.cat((areas.new_zeros(1), areas.cumsum(0)[:-1]))
    seq = int(areas.sum())
    lv = len(levels)
    value = torch.randn(batch, seq, heads, channels, generator=gen, dtype=torch.float64)
    loc = torch.rand(batch, queries, heads, lv, points, 2, generator=gen, dtype=torch.float64)
    if borders:
        # Within half a pixel of the borders and past them: [-0.3, 1.3], plus points far
        # outside (only zero padding) and exactly on the borders.
        loc = loc * 1.6 - 0.3
        flat = loc.view(-1)
        flat[0::7] = -0.02
        flat[1::11] = 1.02
        flat[2::13] = 0.0
        flat[3::17] = 1.0
        flat[4::19] = -2.5
        flat[5::23] = 3.5
    logits = torch.randn(batch, queries, heads, lv * points, generator=gen, dtype=torch.float64)
    attn = logits.softmax(-1).view(batch, queries, heads, lv, points)

    def put(t):
        return t.to(device=device, dtype=dtype).requires_grad_(True)

    return ((put(value), shapes.to(device), starts.to(device), put(loc), put(attn)), {})


def cases(dtype, device, seed):
    """The op check's cases: two square levels (8x8, 4x4; M=2 heads, D=4, P=2, Lq=5), the same
    with sampling locations at and past the borders, and three non-square levels (so a swapped
    x/y or H/W cannot pass)."""
    yield ("2lvl-8x8-4x4",
           *make([(8, 8), (4, 4)], 2, 4, 5, 2, 2, dtype, device, seed))
    yield ("2lvl-borders",
           *make([(8, 8), (4, 4)], 2, 4, 5, 2, 2, dtype, device, seed + 1, borders=True))
    yield ("3lvl-6x9-3x5-2x1",
           *make([(6, 9), (3, 5), (2, 1)], 2, 4, 7, 3, 1, dtype, device, seed + 2))
