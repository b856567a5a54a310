"""MultiScaleDeformableAttention (Deformable DETR, Zhu et al. 2021), forward and backward, as a
composition of ATen ops: no CUDA extension, no host loop, so it runs on whatever device holds
the tensors (CPU, CUDA, sdaa — the emulated one included) and in float64/32/16 and bfloat16.

For each query q, head m, level l and sampling point p, the level's value map (H_l x W_l, D
channels) is sampled bilinearly at ``sampling_locations[n, q, m, l, p]`` — (x, y) in [0, 1] of
the map, pixel centres at (i + 0.5) / W_l as in ``grid_sample(align_corners=False)``, zero
outside — weighted by ``attention_weights[n, q, m, l, p]`` and summed over l and p::

    out[n, q, m*D:(m+1)*D] = sum_{l,p} a[n,q,m,l,p] * bilinear(value_l[n, :, m, :], loc[n,q,m,l,p])

Shapes (the conventions of Deformable-DETR's ``MSDeformAttnFunction``):
  value               (N, S, M, D), S = sum_l H_l * W_l, levels stacked in order
  spatial_shapes      (L, 2) integer, (H_l, W_l)
  level_start_index   (L,) integer, the row of ``value`` where level l starts
  sampling_locations  (N, Lq, M, L, P, 2), (x, y) in [0, 1]
  attention_weights   (N, Lq, M, L, P)
  -> output           (N, Lq, M * D)

``ms_deform_attn`` works out, on the device, the four bilinear corners of every sampling point:
their rows in ``value`` seen as (N * S * M, D) rows and their weights (attention x bilinear).
The forward is the weighted sum of those rows per (query, head); its own backward
(``_MSDeformAttn``) gives the gradient of ``value`` by scatter-adding the weights times the
output gradient into the corner rows, the gradient of the attention weights from each corner
row's dot product with the output gradient, and the gradient of the sampling locations from
the derivative of the bilinear weights. The weighted gathers and scatters are ATen's
EmbeddingBag kernels by default (no gathered rows materialized), or ``index_select`` + matmul
and ``index_add_`` (``MODELZOO_MSDEFORM_KERNELS=index``). Queries run in chunks, so the extra
memory is bounded; the indices are recomputed in the backward instead of saved. float16 and
bfloat16 inputs are computed in float32 and returned in their own dtype.

``ms_deform_attn_twin`` is the pure-PyTorch twin (``F.grid_sample`` per level), written from
the same definition with the conventions of Deformable-DETR's ``ms_deform_attn_core_pytorch``;
``ms_deform_attn_faulty`` is the op with an injected fault (x index shifted by one pixel at
level 1) that ``modelzoo op check`` must catch; ``MODELZOO_MSDEFORM_FAULT=x-index`` plants
the same fault in ``ms_deform_attn`` itself, for a whole-model run (``modelzoo port --recheck``).
"""

import os
import sys

import torch
import torch.nn.functional as F

__all__ = ["ms_deform_attn", "ms_deform_attn_twin", "ms_deform_attn_faulty"]


def _check_shapes(value, spatial_shapes, level_start_index, sampling_locations, attention_weights):
    """Raises ValueError naming the argument whose shape or dtype breaks the conventions."""
    def fail(what):
        raise ValueError(f"ms_deform_attn: {what} (see modelzoo_ops.msdeform's docstring for "
                         "the expected shapes)")

    if value.dim() != 4:
        fail(f"value must be (N, S, M, D), got shape {tuple(value.shape)}")
    n, _, m, _ = value.shape
    if spatial_shapes.dim() != 2 or spatial_shapes.shape[1] != 2:
        fail(f"spatial_shapes must be (L, 2), got shape {tuple(spatial_shapes.shape)}")
    levels = spatial_shapes.shape[0]
    for name, t in (("spatial_shapes", spatial_shapes), ("level_start_index", level_start_index)):
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            fail(f"{name} must be an integer tensor, got {t.dtype}")
    if tuple(level_start_index.shape) != (levels,):
        fail(f"level_start_index must be ({levels},), got shape {tuple(level_start_index.shape)}")
    loc = sampling_locations
    if loc.dim() != 6 or loc.shape[0] != n or loc.shape[2] != m or loc.shape[3] != levels \
            or loc.shape[5] != 2:
        fail(f"sampling_locations must be (N={n}, Lq, M={m}, L={levels}, P, 2), "
             f"got shape {tuple(loc.shape)}")
    if tuple(attention_weights.shape) != tuple(loc.shape[:5]):
        fail(f"attention_weights must be {tuple(loc.shape[:5])} (sampling_locations' first five "
             f"dimensions), got shape {tuple(attention_weights.shape)}")
    for name, t in (("value", value), ("sampling_locations", loc),
                    ("attention_weights", attention_weights)):
        if not t.is_floating_point():
            fail(f"{name} must be a floating tensor, got {t.dtype}")
        if t.device != value.device:
            fail(f"{name} is on {t.device}, value on {value.device}: put every input on one device")


def _compute_dtype(dtype):
    """float16/bfloat16 are computed in float32 (sums over many corners); others as they are."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


# How the weighted gathers and scatters run. "bag" (the default): ATen's EmbeddingBag kernels,
# which gather rows and sum them weighted (forward), give the dot product of each gathered row
# with the output gradient (per-sample-weights backward) and scatter-add the weighted gradient
# (dense backward) without materializing the gathered rows. "index": the same arithmetic
# spelled out with index_select + batched matmul and index_add_, for a device whose plugin
# lacks the EmbeddingBag kernels. MODELZOO_MSDEFORM_KERNELS=index|bag selects; both are tested.
KERNELS_ENV = "MODELZOO_MSDEFORM_KERNELS"

# Per chunk of queries: at most this many corners (bag) or gathered elements, corners x D
# (index). The op's extra memory is bounded by a few chunks, whatever the number of queries.
# A bag chunk also holds at least as many corners as value has rows: each chunk's gradient of
# value is a dense (rows, D) tensor added to the total, a cost kept below the chunk's own work.
CHUNK_CORNERS = 1 << 16
CHUNK_AT_LEAST_VALUE_ROWS = True
CHUNK_ELEMENTS = 1 << 20


def _kernels():
    name = os.environ.get(KERNELS_ENV, "bag") or "bag"
    if name not in ("bag", "index"):
        raise ValueError(f"ms_deform_attn: {KERNELS_ENV}={name!r} is not a kernel set: use "
                         "'bag' (ATen's EmbeddingBag kernels, the default) or 'index' "
                         "(index_select / index_add_)")
    return name


class _Geometry:
    """What every chunk's corners need of the levels, on the tensors' device, made once."""

    def __init__(self, spatial_shapes, level_start_index, n, seq_len, m, dtype, device,
                 fault_level):
        levels = spatial_shapes.shape[0]
        shapes = spatial_shapes.to(device=device, dtype=torch.long)
        self.h = shapes[:, 0].view(1, 1, 1, levels, 1, 1)
        self.w = shapes[:, 1].view(1, 1, 1, levels, 1, 1)
        self.hf, self.wf = self.h.to(dtype), self.w.to(dtype)
        start = level_start_index.to(device=device, dtype=torch.long)
        # Row of pixel (0, 0) of each level of each batch entry, in value's (N, S) rows.
        self.base = (torch.arange(n, device=device).view(n, 1, 1, 1, 1, 1) * seq_len
                     + start.view(1, 1, 1, levels, 1, 1))
        self.heads = m
        self.head = torch.arange(m, device=device).view(1, 1, m, 1, 1, 1)
        self.pair = torch.tensor([0.0, 1.0], dtype=dtype, device=device)
        self.sign = torch.tensor([-1.0, 1.0], dtype=dtype, device=device)
        self.shift = None
        if fault_level is not None:
            shift = torch.zeros(levels, dtype=dtype, device=device)
            shift[min(fault_level, levels - 1)] = 1.0
            self.shift = shift.view(1, 1, 1, levels, 1, 1)


def _corners(geo, loc):
    """The bilinear corners of every sampling point of ``loc`` (a chunk of queries).

    Returns ``rows`` (..., 4): the row of corner c = 2 * dy + dx in ``value`` viewed as
    (N * S * M, D) rows; and per axis, for its two corners (..., 2): the bilinear weights
    (0 for a corner outside the map) and the derivatives of those weights along the axis
    (-1 or +1, 0 outside). A corner's weight is wy[dy] * wx[dx]. A corner outside the map
    points at a row of the map with weight 0. Everything stays on the device: no host sync.
    """
    # Pixel coordinates, pixel centres at integers (grid_sample's align_corners=False).
    x = loc[..., 0:1] * geo.wf - 0.5
    y = loc[..., 1:2] * geo.hf - 0.5
    xi, yi = x.floor() + geo.pair, y.floor() + geo.pair  # the two corners along each axis
    # The bilinear weight of a corner is 1 - |coordinate - corner| along each axis.
    wx, wy = 1.0 - (x - xi).abs(), 1.0 - (y - yi).abs()
    if geo.shift is not None:
        xi = xi + geo.shift
    # Validity is decided in floating point (NaN and huge coordinates are simply outside);
    # integer indices are only used where valid.
    vx, vy = (xi >= 0) & (xi < geo.wf), (yi >= 0) & (yi < geo.hf)
    col = torch.where(vx, xi, 0.0).long() * geo.heads
    line = (geo.base + torch.where(vy, yi, 0.0).long() * geo.w) * geo.heads + geo.head
    rows = (line.unsqueeze(-1) + col.unsqueeze(-2)).flatten(-2)
    return rows, wx * vx, wy * vy, geo.sign * vx, geo.sign * vy


def _chunks(loc, d, kernels, value_rows):
    """Query ranges of at most max(CHUNK_CORNERS, value_rows) corners (bag) or CHUNK_ELEMENTS
    gathered elements (index)."""
    n, lq, m, levels, points, _ = loc.shape
    corners = n * m * levels * points * 4
    per_query = max(1, corners if kernels == "bag" else corners * d)
    if kernels == "bag":
        budget = max(CHUNK_CORNERS, value_rows if CHUNK_AT_LEAST_VALUE_ROWS else 0)
    else:
        budget = CHUNK_ELEMENTS
    step = max(1, budget // per_query)
    return [(q, min(q + step, lq)) for q in range(0, lq, step)]


def _bags(rows):
    """EmbeddingBag's bookkeeping for bags of K = L * P * 4 corners, one bag per (n, q, m):
    (indices, offsets, offset2bag, bag_size)."""
    k = rows.shape[3] * rows.shape[4] * rows.shape[5]
    indices = rows.reshape(-1)
    bags = indices.numel() // k
    offsets = torch.arange(0, bags * k, k, device=rows.device)
    offset2bag = torch.arange(bags, device=rows.device).repeat_interleave(k)
    bag_size = torch.full((bags,), k, dtype=torch.long, device=rows.device)
    return indices, offsets, offset2bag, bag_size


def _gather(value_rows, rows):
    """The value rows of every corner: (N, Lq, M, L * P * 4, D)."""
    n, lq, m = rows.shape[:3]
    return value_rows.index_select(0, rows.reshape(-1)).view(n, lq, m, -1, value_rows.shape[1])


def _forward(value, spatial_shapes, level_start_index, loc, attn, fault_level):
    n, seq_len, m, d = value.shape
    lq = loc.shape[1]
    kernels = _kernels()
    value_rows = value.reshape(n * seq_len * m, d)
    out = value.new_empty(n, lq, m * d)
    geo = _Geometry(spatial_shapes, level_start_index, n, seq_len, m, loc.dtype, loc.device,
                    fault_level)
    for q0, q1 in _chunks(loc, d, kernels, value_rows.shape[0]):
        rows, wx, wy, _, _ = _corners(geo, loc[:, q0:q1])
        weight = attn[:, q0:q1].unsqueeze(-1) * (wy.unsqueeze(-1) * wx.unsqueeze(-2)).flatten(-2)
        if kernels == "bag":
            k = weight[0, 0, 0].numel()
            summed = F.embedding_bag(rows.reshape(-1, k), value_rows,
                                     per_sample_weights=weight.reshape(-1, k), mode="sum")
        else:
            summed = torch.matmul(weight.reshape(n, q1 - q0, m, 1, -1),
                                  _gather(value_rows, rows))
        out[:, q0:q1] = summed.view(n, q1 - q0, m * d)
    return out


def _backward(grad_out, value, spatial_shapes, level_start_index, loc, attn, fault_level, needs):
    n, seq_len, m, d = value.shape
    _, lq, _, levels, points, _ = loc.shape
    kernels = _kernels()
    value_rows = value.reshape(n * seq_len * m, d)
    g_all = grad_out.reshape(n, lq, m, d)
    grad_value = torch.zeros_like(value_rows) if needs[0] else None
    grad_loc = torch.empty_like(loc) if needs[1] else None
    grad_attn = torch.empty_like(attn) if needs[2] else None
    geo = _Geometry(spatial_shapes, level_start_index, n, seq_len, m, loc.dtype, loc.device,
                    fault_level)
    for q0, q1 in _chunks(loc, d, kernels, value_rows.shape[0]):
        rows, wx, wy, dwx, dwy = _corners(geo, loc[:, q0:q1])
        a = attn[:, q0:q1]
        g = g_all[:, q0:q1]
        if kernels == "bag":
            indices, offsets, offset2bag, bag_size = _bags(rows)
            g_rows = g.reshape(-1, d)
        if needs[1] or needs[2]:
            # <value at the corner, output gradient> for every corner of every sampling point.
            if kernels == "bag":
                dot = torch.ops.aten._embedding_bag_per_sample_weights_backward(
                    g_rows, value_rows, indices, offsets, offset2bag, 0, -1)
            else:
                dot = torch.matmul(_gather(value_rows, rows), g.unsqueeze(-1))
            dot = dot.view(n, q1 - q0, m, levels, points, 2, 2)  # (dy, dx)
            along_x = (dot * wy.unsqueeze(-1)).sum(-2)  # sum over dy of wy * dot, per dx
            along_y = (dot * wx.unsqueeze(-2)).sum(-1)  # sum over dx of wx * dot, per dy
            if needs[2]:
                grad_attn[:, q0:q1] = (along_y * wy).sum(-1)
            if needs[1]:
                # d x / d loc_x = W_l, d y / d loc_y = H_l.
                grad_loc[:, q0:q1, ..., 0] = (along_x * dwx).sum(-1) * a * geo.wf[..., 0]
                grad_loc[:, q0:q1, ..., 1] = (along_y * dwy).sum(-1) * a * geo.hf[..., 0]
        if needs[0]:
            # Each corner's row gets its weight times the output gradient of its query.
            weight = a.unsqueeze(-1) * (wy.unsqueeze(-1) * wx.unsqueeze(-2)).flatten(-2)
            if kernels == "bag":
                grad_value += torch.ops.aten._embedding_bag_dense_backward(
                    g_rows, indices, offset2bag, bag_size, indices.new_empty(0),
                    value_rows.shape[0], False, 0, weight.reshape(-1), -1)
            else:
                contrib = weight.reshape(n, q1 - q0, m, -1, 1) * g.unsqueeze(-2)
                grad_value.index_add_(0, rows.reshape(-1), contrib.reshape(-1, d))
    if grad_value is not None:
        grad_value = grad_value.view(n, seq_len, m, d)
    return grad_value, grad_loc, grad_attn


class _MSDeformAttn(torch.autograd.Function):
    """The op with its own backward; inputs already in the compute dtype."""

    @staticmethod
    def forward(ctx, value, spatial_shapes, level_start_index, loc, attn, fault_level):
        ctx.fault_level = fault_level
        ctx.save_for_backward(value, spatial_shapes, level_start_index, loc, attn)
        return _forward(value, spatial_shapes, level_start_index, loc, attn, fault_level)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        value, spatial_shapes, level_start_index, loc, attn = ctx.saved_tensors
        needs = (ctx.needs_input_grad[0], ctx.needs_input_grad[3], ctx.needs_input_grad[4])
        grad_value, grad_loc, grad_attn = _backward(
            grad_out, value, spatial_shapes, level_start_index, loc, attn, ctx.fault_level, needs)
        return grad_value, None, None, grad_loc, grad_attn, None


def _apply(value, spatial_shapes, level_start_index, sampling_locations, attention_weights,
           fault_level):
    _check_shapes(value, spatial_shapes, level_start_index, sampling_locations, attention_weights)
    dtype = value.dtype
    compute = _compute_dtype(dtype)
    out = _MSDeformAttn.apply(value.to(compute), spatial_shapes, level_start_index,
                              sampling_locations.to(compute), attention_weights.to(compute),
                              fault_level)
    return out.to(dtype)


# MODELZOO_MSDEFORM_FAULT=x-index makes ``ms_deform_attn`` compute what ``ms_deform_attn_faulty``
# does, so a whole-model check (``modelzoo port --recheck`` of a model routed to this op) can be
# shown to catch a subtle fault of the op without an edit of the model's code or of the route.
# Said on stderr at the first call; unset or empty: the op as it is.
FAULT_ENV = "MODELZOO_MSDEFORM_FAULT"
_fault_said = []


def _fault_from_env():
    name = os.environ.get(FAULT_ENV, "")
    if not name:
        return None
    if name != "x-index":
        raise ValueError(f"ms_deform_attn: {FAULT_ENV}={name!r} is not a fault: use 'x-index' "
                         "(level 1's x index one pixel off) or leave it unset")
    if not _fault_said:
        _fault_said.append(True)
        print(f"modelzoo_ops.msdeform: {FAULT_ENV}=x-index: ms_deform_attn runs with a planted "
              "fault (level 1's x index one pixel off)", file=sys.stderr)
    return 1


def ms_deform_attn(value, spatial_shapes, level_start_index, sampling_locations,
                   attention_weights):
    """Multi-scale deformable attention, forward with its own backward: (N, Lq, M * D)."""
    return _apply(value, spatial_shapes, level_start_index, sampling_locations,
                  attention_weights, _fault_from_env())


def ms_deform_attn_faulty(value, spatial_shapes, level_start_index, sampling_locations,
                          attention_weights):
    """``ms_deform_attn`` with a planted bug: the x index of level 1 (the last level when
    there is one) is one pixel too far right. For proving that a check catches a wrong
    sampling index; never use it for anything else."""
    return _apply(value, spatial_shapes, level_start_index, sampling_locations,
                  attention_weights, 1)


def ms_deform_attn_twin(value, spatial_shapes, level_start_index, sampling_locations,
                        attention_weights):
    """The pure-PyTorch twin: ``F.grid_sample`` per level (bilinear, zero padding,
    align_corners=False), the conventions of Deformable-DETR's ``ms_deform_attn_core_pytorch``.
    The reference ``modelzoo op check`` judges ``ms_deform_attn`` against. Reads
    ``spatial_shapes`` and ``level_start_index`` on the host."""
    _check_shapes(value, spatial_shapes, level_start_index, sampling_locations, attention_weights)
    n, _, m, d = value.shape
    _, lq, _, levels, points, _ = sampling_locations.shape
    shapes = [(int(h), int(w)) for h, w in spatial_shapes.tolist()]
    starts = [int(s) for s in level_start_index.tolist()]
    grids = 2 * sampling_locations - 1
    sampled = []
    for level, (h, w) in enumerate(shapes):
        # (N, H*W, M, D) -> (N*M, D, H, W)
        v = value[:, starts[level]:starts[level] + h * w].permute(0, 2, 3, 1).reshape(n * m, d, h, w)
        # (N, Lq, M, P, 2) -> (N*M, Lq, P, 2)
        grid = grids[:, :, :, level].transpose(1, 2).reshape(n * m, lq, points, 2)
        # (N*M, D, Lq, P)
        sampled.append(F.grid_sample(v, grid, mode="bilinear", padding_mode="zeros",
                                     align_corners=False))
    # (N*M, D, Lq, L*P) weighted by (N*M, 1, Lq, L*P), summed over levels and points.
    stacked = torch.stack(sampled, dim=-2).flatten(-2)
    weights = attention_weights.transpose(1, 2).reshape(n * m, 1, lq, levels * points)
    out = (stacked * weights).sum(-1).view(n, m * d, lq)
    return out.transpose(1, 2).contiguous()
