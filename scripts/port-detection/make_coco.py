"""A tiny generated COCO-format detection set, for running public detection training code
(Deformable-DETR, torchvision's detection reference) unmodified under `modelzoo port`
(scripts/port-detection/). Never written into the repository: give it a directory outside it.

    .venv/bin/python scripts/port-detection/make_coco.py /tmp/coco-tiny --train 30 --val 4

writes, under that directory, COCO 2017's layout:
- train2017/*.jpg, val2017/*.jpg: RGB JPEGs of WIDTHxHEIGHT (default 320x40: a wide aspect
  ratio, so a transform that resizes the shorter side to 480-800 with the longer side capped at
  1333 gives few pixels: 1333x167), a noisy background with 1-BOXES filled rectangles (the
  objects), each of a colour tied to its category;
- annotations/instances_{train,val}2017.json: `images`, `annotations` (`bbox` [x, y, w, h],
  `area`, `iscrowd` 0, `segmentation` the box as one polygon, for readers that build masks) and
  `categories` (ids 1..CATEGORIES, names `shape<i>`).

Seeded: the same bytes every time for the same arguments. Every file is written to a temporary
name and renamed into place, so an interrupted run never leaves a half-written set that looks whole.
"""

import argparse
import json
import os
import random
import sys


def positive(text):
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def size(text):
    """argparse type: WIDTHxHEIGHT, each 16..4096."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected WIDTHxHEIGHT, e.g. 320x40")
    if not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise argparse.ArgumentTypeError(f"{text!r}: width and height must be 16..4096 pixels")
    return w, h


def write_atomic(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def colour(category):
    """A fixed, well separated colour per category (so the task is learnable in principle)."""
    palette = [(220, 40, 40), (40, 200, 60), (50, 80, 230), (230, 200, 30), (180, 50, 200),
               (30, 200, 200), (240, 130, 20), (120, 120, 120)]
    return palette[(category - 1) % len(palette)]


def split(root, name, count, first_id, args, rng):
    """Writes NAME2017/ and annotations/instances_NAME2017.json; returns the next image id."""
    from PIL import Image, ImageDraw

    folder = os.path.join(root, f"{name}2017")
    os.makedirs(folder, exist_ok=True)
    w, h = args.size
    images, annotations = [], []
    ann_id = first_id * 100
    for i in range(count):
        image_id = first_id + i
        file_name = f"{image_id:012d}.jpg"
        noise = bytes(rng.randrange(60, 120) for _ in range(w * h * 3))
        img = Image.frombytes("RGB", (w, h), noise)
        draw = ImageDraw.Draw(img)
        for _ in range(rng.randint(1, args.boxes)):
            bw = rng.randint(max(2, w // 10), max(3, w // 3))
            bh = rng.randint(max(2, h // 4), max(3, (h * 3) // 4))
            x, y = rng.randint(0, w - bw), rng.randint(0, h - bh)
            category = rng.randint(1, args.categories)
            draw.rectangle([x, y, x + bw - 1, y + bh - 1], fill=colour(category))
            ann_id += 1
            annotations.append({
                "id": ann_id, "image_id": image_id, "category_id": category,
                "bbox": [float(x), float(y), float(bw), float(bh)], "area": float(bw * bh),
                "iscrowd": 0,
                "segmentation": [[float(x), float(y), float(x + bw), float(y),
                                  float(x + bw), float(y + bh), float(x), float(y + bh)]],
            })
        tmp = os.path.join(folder, f".{file_name}.tmp{os.getpid()}")
        img.save(tmp, format="JPEG", quality=90)
        os.replace(tmp, os.path.join(folder, file_name))
        images.append({"id": image_id, "file_name": file_name, "width": w, "height": h})
    categories = [{"id": c, "name": f"shape{c}", "supercategory": "shape"}
                  for c in range(1, args.categories + 1)]
    doc = {"info": {"description": "modelzoo make_coco.py: generated, not COCO"},
           "licenses": [], "images": images, "annotations": annotations,
           "categories": categories}
    ann_dir = os.path.join(root, "annotations")
    os.makedirs(ann_dir, exist_ok=True)
    write_atomic(os.path.join(ann_dir, f"instances_{name}2017.json"),
                 json.dumps(doc).encode())
    return first_id + count


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="directory to write (created; outside the repository)")
    p.add_argument("--train", type=positive, default=30, help="training images (default 30)")
    p.add_argument("--val", type=positive, default=4, help="validation images (default 4)")
    p.add_argument("--size", type=size, default=(320, 40),
                   help="WIDTHxHEIGHT of every image (default 320x40)")
    p.add_argument("--boxes", type=positive, default=3, help="at most this many boxes an image")
    p.add_argument("--categories", type=positive, default=3,
                   help="category ids 1..N (default 3; at most 90 for a COCO-sized head)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.categories > 90:
        p.error(f"--categories {args.categories}: at most 90 (COCO's largest category id)")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        p.error(f"{args.out} exists and is not a directory")
    rng = random.Random(args.seed)
    next_id = split(args.out, "train", args.train, 1, args, rng)
    split(args.out, "val", args.val, next_id, args, rng)
    w, h = args.size
    print(f"wrote {args.train} train + {args.val} val images of {w}x{h} and their "
          f"annotations under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
