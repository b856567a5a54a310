"""torchvision's batched_nms picks its algorithm by the boxes' device: per class above 4000
coordinates on the CPU, one NMS over class-offset boxes below CUDA's larger threshold. Here the
two keep different boxes: each of 550 classes has a box A and a box B holding it with IoU just
above 0.5 (B is suppressed when computed exactly), but the offset of a high class rounds B's
height to 20 (IoU exactly 0.5: kept). Prints RESULT with how many boxes batched_nms, the per-class
and the offset algorithm keep, and the boxes' device. Argument: the device (default cuda; cpu for the run without the shim)."""

import json
import sys

import torch
from torchvision.ops import boxes as box_ops

device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
classes = 550  # 1100 boxes, 4400 coordinates: above the CPU's 4000, far below CUDA's
a = torch.tensor([0.0, 0.0, 10.0, 10.0])
b = torch.tensor([0.0, 0.0, 10.0, 19.9995])
boxes = torch.stack([a, b]).repeat(classes, 1).to(device)
scores = torch.tensor([0.9, 0.8]).repeat(classes).to(device)
idxs = torch.arange(classes).repeat_interleave(2).to(device)
kept = box_ops.batched_nms(boxes, scores, idxs, 0.5)
print("RESULT " + json.dumps({
    "kept": kept.tolist(),
    "vanilla": box_ops._batched_nms_vanilla(boxes, scores, idxs, 0.5).tolist(),
    "offset": box_ops._batched_nms_coordinate_trick(boxes, scores, idxs, 0.5).tolist(),
    "device": boxes.device.type,
}))
