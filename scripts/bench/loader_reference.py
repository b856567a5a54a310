"""torchvision side of the loader benchmark (issue #26): what a competent PyTorch user writes
for an ImageNet-layout folder, not slowed down.

  loader   ImageFolder + transforms through DataLoader(batch_size, num_workers=k); images/s over
           --batches batches after the first (worker start-up). One JSON line.
  profile  one sample's time per stage in one process: decode (PIL open + convert RGB, as
           ImageFolder's loader), crop/resize (RandomResizedCrop / Resize + CenterCrop), flip,
           ToTensor, Normalize, collate (default_collate of a batch, per sample). Markdown
           table and one JSON line.
  train    ResNet end to end on the folder: torchvision's model, SGD(momentum 0.9, weight decay
           1e-4 on conv/linear weights), cross-entropy, the train transforms through
           DataLoader(num_workers=k, shuffle, pin_memory on cuda); each step timed from the end
           of the previous one (data wait included), as run_resnet's train.ips with
           --logging_freq 1. One JSON line {"ips": ...}.

Train transforms: RandomResizedCrop(size), RandomHorizontalFlip(), ToTensor(), Normalize(ImageNet).
Val transforms: Resize(size * 256 // 224), CenterCrop(size), ToTensor(), Normalize(ImageNet).
"""

import argparse
import json
import os
import time

import torch
import torchvision
from torchvision import transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def tfms(split, size):
    if split == "train":
        return T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(),
                          T.Normalize(MEAN, STD)])
    return T.Compose([T.Resize(size * 256 // 224), T.CenterCrop(size), T.ToTensor(),
                      T.Normalize(MEAN, STD)])


def dataset(a, split):
    return torchvision.datasets.ImageFolder(os.path.join(a.data, split), tfms(split, a.size))


def loader(a):
    data = dataset(a, a.split)
    dl = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=a.split == "train",
                                     num_workers=a.workers, drop_last=True,
                                     persistent_workers=a.workers > 0)
    seen = images = 0
    start = time.perf_counter()
    while True:
        for x, _ in dl:
            seen += 1
            if seen == 1:
                start = time.perf_counter()  # the first batch waits for the workers to start
                continue
            images += x.shape[0]
            if seen > a.batches:
                break
        else:
            continue
        break
    secs = time.perf_counter() - start
    print(json.dumps({"impl": "torchvision", "split": a.split, "workers": a.workers,
                      "batch": a.batch, "images": images, "seconds": round(secs, 4),
                      "ips": round(images / secs, 2)}))


def profile(a):
    from PIL import Image
    import torchvision.transforms.functional as F

    data = torchvision.datasets.ImageFolder(os.path.join(a.data, a.split))
    paths = [data.samples[i % len(data.samples)][0] for i in range(a.images)]
    stages = {}

    def timed(name, f, *args):
        t = time.perf_counter()
        out = f(*args)
        stages[name] = stages.get(name, 0.0) + time.perf_counter() - t
        return out

    def read(p):
        with open(p, "rb") as f:
            img = Image.open(f)
            return img.convert("RGB")

    torch.manual_seed(0)
    if a.split == "train":
        rrc, flip = T.RandomResizedCrop(a.size), T.RandomHorizontalFlip()
        crop = rrc
    else:
        resize, center = T.Resize(a.size * 256 // 224), T.CenterCrop(a.size)
        crop = lambda img: center(resize(img))  # noqa: E731
    to_tensor, norm = T.ToTensor(), T.Normalize(MEAN, STD)
    batch = []
    for i, p in enumerate(paths):
        img = timed("decode", read, p)  # file read included (PIL reads as it decodes)
        img = timed("crop/resize", crop, img)
        if a.split == "train":
            img = timed("flip", flip, img)
        x = timed("ToTensor", to_tensor, img)
        x = timed("normalize", norm, x)
        batch.append((x, 0))
        if len(batch) == a.batch or i + 1 == len(paths):
            timed("collate", torch.utils.data.default_collate, batch)
            batch = []
    n = len(paths)
    us = {k: round(v / n * 1e6, 1) for k, v in stages.items()}
    print(f"| stage ({a.split}, µs per sample) | torchvision |")
    print("|---|---|")
    for k, v in us.items():
        print(f"| {k} | {v:.0f} |")
    print(f"| total | {sum(us.values()):.0f} |")
    print(json.dumps({"impl": "torchvision", "split": a.split, "images": n, "us": us}))


def train(a):
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    model = getattr(torchvision.models, a.model)(num_classes=a.num_classes).to(dev)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    decay = [q for q in model.parameters() if q.dim() > 1]
    no_decay = [q for q in model.parameters() if q.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4},
                           {"params": no_decay, "weight_decay": 0.0}], lr=0.1, momentum=0.9)
    amp_dtype = torch.bfloat16 if dev.type == "cpu" else torch.float16
    scaler = torch.amp.GradScaler(dev.type, enabled=a.amp and amp_dtype == torch.float16)
    crit = torch.nn.CrossEntropyLoss()
    data = dataset(a, "train")
    dl = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, drop_last=True,
                                     num_workers=a.workers, pin_memory=dev.type == "cuda",
                                     persistent_workers=a.workers > 0)
    steps = a.warmup + a.steps

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    model.train()
    times, i = [], 0
    sync()
    t0 = time.perf_counter()
    while i < steps:
        for x, y in dl:
            x = x.to(dev, non_blocking=True).to(memory_format=fmt)
            y = y.to(dev, non_blocking=True)
            with torch.autocast(dev.type, dtype=amp_dtype, enabled=a.amp):
                loss = crit(model(x), y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            loss.item()
            sync()
            t1 = time.perf_counter()
            if i >= a.warmup:
                times.append(t1 - t0)
            t0 = t1
            i += 1
            if i >= steps:
                break
    print(json.dumps({"impl": "pytorch-eager", "model": a.model, "batch_size": a.batch,
                      "workers": a.workers, "threads": torch.get_num_threads(),
                      "ips": a.batch * len(times) / sum(times),
                      "step_s": [round(t, 4) for t in times]}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["loader", "profile", "train"])
    p.add_argument("--data", required=True, help="folder with train/ and val/ (loader_images.py)")
    p.add_argument("--split", choices=["train", "val"], default="train")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--images", type=int, default=640)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--model", default="resnet50")
    p.add_argument("--num_classes", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--channels_last", action="store_true")
    a = p.parse_args()
    if a.mode != "train":
        torch.set_num_threads(1)  # a DataLoader worker's setting, for the profile too
    {"loader": loader, "profile": profile, "train": train}[a.mode](a)


if __name__ == "__main__":
    main()
