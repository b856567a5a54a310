"""torchvision's side of modelzoo-vision's transform tests (tests/torchvision.rs).

  images SPEC.json OUT.raw   SPEC: {"size": S, "items": [{"path": P, "kind": "val"} |
                             {"path": P, "kind": "crop", "box": [top, left, h, w], "flip": b}]};
                             writes each item's S x S x 3 uint8 output, in order
  draws OURS.json            OURS: {"n": N, "seed": S, "cases": [{"width": W, "height": H,
                             "boxes": [[left, top, w, h], ...], "flips": [0|1, ...]}]};
                             draws N RandomResizedCrop.get_params + RandomHorizontalFlip
                             decisions from torchvision per case and prints, per case, the
                             two-sample Kolmogorov-Smirnov distance of area fraction, log aspect
                             ratio, crop centre x and y, and both flip rates, as one JSON line
"""

import json
import sys

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image


def images(spec_path, out_path):
    with open(spec_path) as f:
        spec = json.load(f)
    size = spec["size"]
    val = T.Compose([T.Resize(size * 256 // 224), T.CenterCrop(size)])
    with open(out_path, "wb") as out:
        for item in spec["items"]:
            with open(item["path"], "rb") as f:
                img = Image.open(f).convert("RGB")
            if item["kind"] == "val":
                res = val(img)
            else:
                top, left, h, w = item["box"]
                res = F.resized_crop(img, top, left, h, w, [size, size],
                                     interpolation=T.InterpolationMode.BILINEAR, antialias=True)
                if item["flip"]:
                    res = F.hflip(res)
            out.write(np.asarray(res, dtype=np.uint8).tobytes())


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov statistic D."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def stats(width, height, boxes):
    b = np.asarray(boxes, float)
    left, top, w, h = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return {"area": w * h / (width * height), "log_ratio": np.log(w / h),
            "centre_x": (left + w / 2) / width, "centre_y": (top + h / 2) / height}


def draws(ours_path):
    with open(ours_path) as f:
        ours = json.load(f)
    torch.manual_seed(ours["seed"])
    rrc = T.RandomResizedCrop(224)
    out = []
    for case in ours["cases"]:
        width, height = case["width"], case["height"]
        img = Image.new("RGB", (width, height))
        tv_boxes, tv_flips = [], []
        for _ in range(ours["n"]):
            top, left, h, w = rrc.get_params(img, rrc.scale, rrc.ratio)
            tv_boxes.append([left, top, w, h])
            tv_flips.append(int(torch.rand(1) < 0.5))
        a, b = stats(width, height, case["boxes"]), stats(width, height, tv_boxes)
        res = {"width": width, "height": height}
        res.update({f"ks_{k}": ks(a[k], b[k]) for k in a})
        res["flip_ours"] = float(np.mean(case["flips"]))
        res["flip_torchvision"] = float(np.mean(tv_flips))
        res["mean_area_ours"] = float(np.mean(a["area"]))
        res["mean_area_torchvision"] = float(np.mean(b["area"]))
        out.append(res)
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "images":
        images(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "draws":
        draws(sys.argv[2])
    else:
        sys.exit(__doc__)
