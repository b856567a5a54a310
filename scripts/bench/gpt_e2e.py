#!/usr/bin/env python3
"""PyTorch eager reference for scripts/bench/step_bench.sh: the training run `run_gpt` does, in
plain PyTorch, for the same FleetX config file.

Same model as modelzoo_gpt::Gpt (the network of scripts/bench/gpt_step.py: pre-LN GPT-2,
learned positions, F.scaled_dot_product_attention(is_causal=True), tanh GELU, tied
embeddings, GPT-2 init), fp32, dropout 0; same data (the built-in corpus
modelzoo/text/data/corpus.txt, byte-level ids, random windows of max_seq_len + 1); same
recipe (torch.optim.AdamW with the config's betas / eps / weight decay on >1-D parameters only
as modelzoo-engine does, FleetX CosineAnnealingWithWarmupDecay set per step,
clip_grad_norm_ to the config's clip_norm, fp32 cross entropy).

Each step is timed like modelzoo-engine's train.ips window with logging_freq 1: from the end
of the previous step to after the loss is read (batch building, forward, backward, clip,
AdamW, zero_grad), tokens = batch x seq. `--data loader` (end to end, the default) reads the
windows through a Dataset + DataLoader(shuffle, num_workers=0: run_gpt reads its windows on the
training thread too); `--data fixed` (compute only) trains every step on one batch made once,
as `run_gpt --fixed_batch` does.

Usage:
  gpt_e2e.py run CONFIG.yaml --batch B --seq S --steps N --skip W [--device cuda] [--amp bf16|fp16]
             [--data loader|fixed]
      prints `pytorch tokens/s X (median step M, best step B)`, X = total tokens / total
      time over steps W+1..N; --device runs it there (the loss read each step syncs), --amp
      under torch.autocast with that dtype (fp16 with a GradScaler)
  gpt_e2e.py log GPT_LOG.json --skip W
      the same figure from run_gpt's own dllogger JSON log (train.ips of iterations > W)
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "modelzoo", "text", "data", "corpus.txt")


def read_fleetx(path):
    """The few FleetX keys this needs, from the shipped configs' plain `key: value` YAML
    (no PyYAML in .venv): {"Model.hidden_size": "768", "Optimizer.lr.max_lr": ..., ...}."""
    out, stack = {}, []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip() or line.strip().startswith("-"):
                continue
            indent = (len(line) - len(line.lstrip())) // 2
            key, _, value = line.strip().partition(":")
            stack = stack[:indent] + [key]
            if value.strip():
                out[".".join(stack)] = value.strip().strip("'\"")
    return out


def summary(rates):
    """`X (median M, best B)` over per-step tokens/s `rates` (all steps hold the same tokens):
    X = total tokens / total time; the best step is the least disturbed by other load."""
    s = sorted(rates)
    mid = len(s) // 2
    median = s[mid] if len(s) % 2 else 0.5 * (s[mid - 1] + s[mid])
    total = len(rates) / sum(1.0 / r for r in rates)
    return f"{total:.2f} (median step {median:.2f}, best step {s[-1]:.2f})"


def from_log(path, skip):
    """Steady-state tokens/s from run_gpt's JSON log: sum(tokens) / sum(tokens / ips)."""
    ips = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            brace = line.find("{")  # `TCAPPDLL {...}` lines
            if brace < 0:
                continue
            try:
                rec = json.loads(line[brace:])
            except ValueError:
                continue
            data = rec.get("data", {})
            step = rec.get("step")
            if "train.ips" in data and isinstance(step, list) and len(step) >= 2:
                ips[int(step[1])] = float(data["train.ips"])
    if not ips:
        sys.exit(f"error: no train.ips in {path}")
    iters = sorted(ips)
    timed = [i for i in iters if i > skip]
    if not timed:
        sys.exit(f"error: {path} has {len(iters)} logged steps, none after --skip {skip}")
    rate = summary([ips[i] for i in timed])
    print(f"run_gpt tokens/s {rate} [iterations {timed[0]}..{timed[-1]} of {iters[-1]}]")


def train(cfg_path, batch, seq, steps, skip, seed, device="cpu", amp=None, data_mode="loader"):
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, HERE)
    from gpt_step import GPT  # the same network as the step benchmark

    c = read_fleetx(cfg_path)
    vocab = int(c["Model.vocab_size"])
    hidden = int(c["Model.hidden_size"])
    layers = int(c["Model.num_layers"])
    heads = int(c["Model.num_attention_heads"])
    positions = int(c["Model.max_position_embeddings"])
    ffn = c.get("Model.ffn_hidden_size")
    if ffn and int(ffn) != 4 * hidden:
        sys.exit("error: the reference model has ffn_hidden_size = 4 x hidden_size only")
    wd = float(c["Optimizer.weight_decay"])
    betas = (float(c["Optimizer.adam_beta1"]), float(c["Optimizer.adam_beta2"]))
    eps = float(c["Optimizer.adam_epsilon"])
    max_lr = float(c["Optimizer.lr.max_lr"])
    min_lr = float(c["Optimizer.lr.min_lr"])
    decay = int(c["Optimizer.lr.decay_steps"])
    warmup = int(math.floor(float(c["Optimizer.lr.warmup_rate"]) * decay))
    clip = float(c["Optimizer.grad_clip.clip_norm"])

    def lr_at(step):  # FleetX CosineAnnealingWithWarmupDecay, as modelzoo-engine's Schedule
        if warmup > 0 and step <= warmup:
            return max_lr * step / warmup
        if step > decay:
            return min_lr
        ratio = (step - warmup) / max(decay - warmup, 1)
        return min_lr + 0.5 * (math.cos(math.pi * ratio) + 1.0) * (max_lr - min_lr)

    torch.manual_seed(seed)
    dev = torch.device(device)
    model = GPT(vocab, hidden, layers, heads, positions).to(dev)
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp)
    scaler = torch.amp.GradScaler(dev.type, enabled=amp_dtype == torch.float16)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.dim() > 1], "weight_decay": wd},
            {"params": [p for p in params if p.dim() <= 1], "weight_decay": 0.0},
        ],
        lr=max_lr,
        betas=betas,
        eps=eps,
    )
    with open(CORPUS, "rb") as f:
        data = torch.tensor(list(f.read()), dtype=torch.int64)

    class Windows(torch.utils.data.Dataset):
        def __len__(self):
            return len(data) - seq - 1

        def __getitem__(self, i):
            return data[i : i + seq + 1]

    if data_mode == "fixed":
        rows = Windows()[0].repeat(batch, 1)
        batches = (rows for _ in range(steps))
    else:
        batches = torch.utils.data.DataLoader(
            Windows(),
            batch_size=batch,
            shuffle=True,
            generator=torch.Generator().manual_seed(seed),
            num_workers=0,
            drop_last=True,
        )

    model.train()
    step_tokens, step_secs, losses = [], [], []
    start = time.perf_counter()
    for step, rows in zip(range(steps), batches):
        x, y = rows[:, :-1].contiguous().to(dev), rows[:, 1:].contiguous().to(dev)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            logits = model(x)
        loss = F.cross_entropy(logits.view(-1, vocab).float(), y.view(-1))
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(params, clip)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        losses.append(loss.item())
        end = time.perf_counter()
        step_tokens.append(x.numel())
        step_secs.append(end - start)
        start = end
    if not all(math.isfinite(v) for v in losses):
        sys.exit(f"error: non-finite loss {losses}")
    rate = summary([t / s for t, s in zip(step_tokens[skip:], step_secs[skip:])])
    print(
        f"pytorch tokens/s {rate} [steps {skip + 1}..{steps}, {torch.get_num_threads()} "
        f"threads, data {data_mode}, loss {losses[0]:.3f} -> {losses[-1]:.3f}]"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("config")
    r.add_argument("--batch", type=int, required=True)
    r.add_argument("--seq", type=int, required=True)
    r.add_argument("--steps", type=int, required=True)
    r.add_argument("--skip", type=int, required=True)
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--device", default="cpu")
    r.add_argument("--amp", choices=["bf16", "fp16"])
    r.add_argument("--data", choices=["loader", "fixed"], default="loader")
    lg = sub.add_parser("log")
    lg.add_argument("path")
    lg.add_argument("--skip", type=int, required=True)
    a = ap.parse_args()
    if a.cmd == "log":
        from_log(a.path, a.skip)
    else:
        if a.skip >= a.steps:
            sys.exit("error: --skip must be below --steps")
        train(a.config, a.batch, a.seq, a.steps, a.skip, a.seed, a.device, a.amp, a.data)


if __name__ == "__main__":
    main()
