#!/usr/bin/env python3
"""PyTorch eager reference for scripts/bench/llama_bench.sh: the training run `run_llama`
does, with Hugging Face's transformers.LlamaForCausalLM, for the same FleetX config file.

Same network as modelzoo_llama::Llama (tests/reference.rs checks they compute the same logits):
LlamaForCausalLM from a LlamaConfig built from the config's Model section, sdpa attention,
fp32 weights, attention dropout 0; with --recompute, Hugging Face's gradient checkpointing in
its reentrant form (what Model.use_recompute does in run_llama). Same data (the built-in corpus
modelzoo/text/data/corpus.txt, byte-level ids, random windows of max_seq_len + 1); same recipe
(torch.optim.AdamW with the config's betas / eps / weight decay on >1-D parameters only, as
modelzoo-engine does; FleetX CosineAnnealingWithWarmupDecay set per step; clip_grad_norm_; fp32
cross entropy on the logits).

Each step is timed like modelzoo-engine's train.ips window with logging_freq 1: from the end of
the previous step to after the loss is read, tokens = batch x seq.

Usage:
  llama_e2e.py run CONFIG.yaml --batch B --seq S --steps N --skip W [--device cuda]
               [--amp bf16|fp16] [--recompute]
      prints `pytorch tokens/s X (median step M, best step B)`, X = total tokens / total time
      over steps W+1..N
  llama_e2e.py log LLAMA_LOG.json --skip W
      the same figure from run_llama's own dllogger JSON log (train.ips of iterations > W)
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpt_e2e import CORPUS, read_fleetx, summary  # noqa: E402  (same config reader, same figure)


def from_log(path, skip):
    """Steady-state tokens/s from run_llama's JSON log: sum(tokens) / sum(tokens / ips)."""
    ips = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            brace = line.find("{")
            if brace < 0:
                continue
            try:
                rec = json.loads(line[brace:])
            except ValueError:
                continue
            data, step = rec.get("data", {}), rec.get("step")
            if "train.ips" in data and isinstance(step, list) and len(step) >= 2:
                ips[int(step[1])] = float(data["train.ips"])
    timed = [i for i in sorted(ips) if i > skip]
    if not timed:
        sys.exit(f"error: no train.ips after iteration {skip} in {path}")
    print(f"run_llama tokens/s {summary([ips[i] for i in timed])} [iterations {timed[0]}..{timed[-1]}]")


def truthy(v):
    return str(v).strip().lower() in ("true", "1", "yes")


def train(cfg_path, batch, seq, steps, skip, seed, device, amp, recompute):
    import torch
    import torch.nn.functional as F
    from transformers import LlamaConfig, LlamaForCausalLM

    c = read_fleetx(cfg_path)
    heads = int(c["Model.num_attention_heads"])
    config = LlamaConfig(
        vocab_size=int(c["Model.vocab_size"]),
        hidden_size=int(c["Model.hidden_size"]),
        intermediate_size=int(c["Model.ffn_hidden_size"]),
        num_hidden_layers=int(c["Model.num_layers"]),
        num_attention_heads=heads,
        num_key_value_heads=int(c.get("Model.num_key_value_heads") or heads),
        max_position_embeddings=int(c["Model.max_position_embeddings"]),
        rms_norm_eps=float(c.get("Model.rms_norm_eps", "1e-6")),
        rope_theta=float(c.get("Model.rope_theta", "10000")),
        tie_word_embeddings=truthy(c.get("Model.tie_word_embeddings", "False")),
        initializer_range=float(c.get("Model.initializer_range", "0.02")),
        attention_dropout=0.0,
        use_cache=False,
    )
    config._attn_implementation = "sdpa"
    vocab = config.vocab_size
    wd = float(c["Optimizer.weight_decay"])
    betas = (float(c["Optimizer.adam_beta1"]), float(c["Optimizer.adam_beta2"]))
    eps = float(c["Optimizer.adam_epsilon"])
    max_lr, min_lr = float(c["Optimizer.lr.max_lr"]), float(c["Optimizer.lr.min_lr"])
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
    model = LlamaForCausalLM(config).to(dev)
    if recompute:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
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
    gen = torch.Generator().manual_seed(seed)

    def next_batch():
        starts = torch.randint(len(data) - seq - 1, (batch,), generator=gen).tolist()
        rows = torch.stack([data[s : s + seq + 1] for s in starts])
        return rows[:, :-1].contiguous().to(dev), rows[:, 1:].contiguous().to(dev)

    model.train()
    step_tokens, step_secs, losses = [], [], []
    start = time.perf_counter()
    for step in range(steps):
        x, y = next_batch()
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.reshape(-1, vocab).float(), y.reshape(-1))
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
        f"threads, loss {losses[0]:.3f} -> {losses[-1]:.3f}]"
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
    r.add_argument("--recompute", action="store_true")
    lg = sub.add_parser("log")
    lg.add_argument("path")
    lg.add_argument("--skip", type=int, required=True)
    a = ap.parse_args()
    if a.cmd == "log":
        from_log(a.path, a.skip)
    else:
        if a.skip >= a.steps:
            sys.exit("error: --skip must be below --steps")
        train(a.config, a.batch, a.seq, a.steps, a.skip, a.seed, a.device, a.amp, a.recompute)


if __name__ == "__main__":
    main()
