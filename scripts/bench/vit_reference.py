"""PyTorch eager reference for the run_vit benchmark (scripts/bench/vit_bench.sh): torchvision's
ViT trained the way run_vit trains it — AdamW (betas 0.9/0.999, eps 1e-8, weight decay on >1-D
parameters only), cross-entropy with label smoothing, global gradient-norm clipping, optional
autocast (bf16 on the CPU, fp16 with a GradScaler elsewhere) — on one fixed random batch, timed
per step after warm-up. Prints one JSON line: {"ips": images/s, "step_s": [...], ...}.

vit_tiny is run_vit's test size (patch 8, 2 layers, 2 heads, hidden 64, MLP 128), built with
torchvision's VisionTransformer class; the others are torchvision's builders.
"""

import argparse
import json
import time

import torch
import torchvision


def build(name, image_size, num_classes):
    if name == "vit_tiny":
        return torchvision.models.vision_transformer.VisionTransformer(
            image_size=image_size, patch_size=8, num_layers=2, num_heads=2,
            hidden_dim=64, mlp_dim=128, num_classes=num_classes,
        )
    return getattr(torchvision.models, name)(image_size=image_size, num_classes=num_classes)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="vit_b_16")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--image_size", type=int, default=224)
    p.add_argument("--num_classes", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--weight_decay", type=float, default=0.3)
    p.add_argument("--label_smoothing", type=float, default=0.11)
    p.add_argument("--clip_grad_norm", type=float, default=1.0)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    model = build(a.model, a.image_size, a.num_classes).to(dev)
    decay = [q for q in model.parameters() if q.dim() > 1]
    no_decay = [q for q in model.parameters() if q.dim() <= 1]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": a.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=a.lr,
    )
    amp_dtype = torch.bfloat16 if dev.type == "cpu" else torch.float16
    scaler = torch.amp.GradScaler(dev.type, enabled=a.amp and amp_dtype == torch.float16)
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=dev)
    y = torch.randint(0, a.num_classes, (a.batch_size,), device=dev)
    crit = torch.nn.CrossEntropyLoss(label_smoothing=a.label_smoothing)
    model.train()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for i in range(a.warmup + a.steps):
        sync()
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=a.amp):
            loss = crit(model(x).float(), y)
        opt.zero_grad(set_to_none=False)
        scaler.scale(loss).backward()
        if a.clip_grad_norm > 0:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip_grad_norm)
        scaler.step(opt)
        scaler.update()
        loss.item()
        sync()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    out = {
        "impl": "pytorch-eager",
        "model": a.model,
        "batch_size": a.batch_size,
        "image_size": a.image_size,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "ips": a.batch_size * len(times) / sum(times),
        "step_s": [round(t, 4) for t in times],
    }
    if dev.type == "cuda":
        out["max_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps(out))


if __name__ == "__main__":
    main()
