#!/usr/bin/env python3
"""PyTorch eager reference for the language-model benchmarks (scripts/bench/step_bench.sh for
run_gpt, scripts/bench/llama_bench.sh for run_llama, scripts/gpu-check.sh): the training run
`run_gpt` / `run_llama` does, in plain PyTorch, for the same FleetX config file.

The networks: `gpt` is modelzoo_gpt::Gpt's (the network of scripts/bench/gpt_step.py: pre-LN
GPT-2, learned positions, F.scaled_dot_product_attention(is_causal=True), tanh GELU, tied
embeddings, GPT-2 init); `llama` is Hugging Face's transformers.LlamaForCausalLM from a
LlamaConfig built from the config's Model section (modelzoo/llama/tests/reference.rs checks
run_llama computes the same logits), sdpa attention, with --recompute Hugging Face's gradient
checkpointing in its reentrant form (what Model.use_recompute does in run_llama). Both fp32
weights, dropout 0. Same data (the built-in corpus modelzoo/text/data/corpus.txt, byte-level
ids, windows of max_seq_len + 1); same recipe (torch.optim.AdamW with the config's betas / eps /
weight decay on >1-D parameters only, as modelzoo-engine does; FleetX
CosineAnnealingWithWarmupDecay set per step; clip_grad_norm_ to the config's clip_norm; fp32
cross entropy on the logits).

Each step is timed like modelzoo-engine's train.ips window with logging_freq 1: from the end of
the previous step to after the loss is read (batch building, forward, backward, clip, AdamW,
zero_grad), tokens = batch x seq. `--data loader` (end to end, the default) reads the windows
through a Dataset + DataLoader(shuffle, num_workers=0: run_<model> reads its windows on the
training thread too); `--data fixed` (compute only) trains every step on one batch made once,
as `run_<model> --fixed_batch` does.

  lm_e2e.py run gpt|llama CONFIG.yaml --batch B --seq S --steps N --skip W [--device cuda]
                [--amp bf16|fp16] [--data loader|fixed] [--recompute]
      prints `pytorch tokens/s X (median step M, best step B)`, X = total tokens / total time
      over steps W+1..N; --device runs it there (the loss read each step syncs), --amp under
      torch.autocast with that dtype (fp16 with a GradScaler)
  lm_e2e.py log LOG.json --skip W
      the same figure from run_gpt's or run_llama's own dllogger JSON log (train.ips of
      iterations > W)
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
    (no PyYAML needed): {"Model.hidden_size": "768", "Optimizer.lr.max_lr": ..., ...}."""
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
    """Steady-state tokens/s from a run_<model> JSON log: sum(tokens) / sum(tokens / ips)."""
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
            data, step = rec.get("data", {}), rec.get("step")
            if "train.ips" in data and isinstance(step, list) and len(step) >= 2:
                ips[int(step[1])] = float(data["train.ips"])
    if not ips:
        sys.exit(f"error: no train.ips in {path}")
    iters = sorted(ips)
    timed = [i for i in iters if i > skip]
    if not timed:
        sys.exit(f"error: {path} has {len(iters)} logged steps, none after --skip {skip}")
    rate = summary([ips[i] for i in timed])
    print(f"run_<model> tokens/s {rate} [iterations {timed[0]}..{timed[-1]} of {iters[-1]}]")


def truthy(v):
    return str(v).strip().lower() in ("true", "1", "yes")


def gpt_model(c, recompute):
    """modelzoo_gpt::Gpt's network, from the config's Model section."""
    if recompute:
        sys.exit("error: the gpt reference has no --recompute")
    sys.path.insert(0, HERE)
    from gpt_step import GPT  # the same network as the step benchmark

    hidden = int(c["Model.hidden_size"])
    ffn = c.get("Model.ffn_hidden_size")
    if ffn and int(ffn) != 4 * hidden:
        sys.exit("error: the reference model has ffn_hidden_size = 4 x hidden_size only")
    vocab = int(c["Model.vocab_size"])
    net = GPT(vocab, hidden, int(c["Model.num_layers"]), int(c["Model.num_attention_heads"]),
              int(c["Model.max_position_embeddings"]))
    return net, vocab, lambda x: net(x)


def llama_model(c, recompute):
    """transformers' LlamaForCausalLM, from the config's Model section."""
    from transformers import LlamaConfig, LlamaForCausalLM

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
    net = LlamaForCausalLM(config)
    if recompute:
        net.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    return net, config.vocab_size, lambda x: net(input_ids=x).logits


MODELS = {"gpt": gpt_model, "llama": llama_model}


def train(a):
    import torch
    import torch.nn.functional as F

    c = read_fleetx(a.config)
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

    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    net, vocab, logits_of = MODELS[a.model](c, a.recompute)
    net.to(dev)
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.amp)
    scaler = torch.amp.GradScaler(dev.type, enabled=amp_dtype == torch.float16)
    params = [p for p in net.parameters() if p.requires_grad]
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
    seq = a.seq

    class Windows(torch.utils.data.Dataset):
        def __len__(self):
            return len(data) - seq - 1

        def __getitem__(self, i):
            return data[i : i + seq + 1]

    if a.data == "fixed":
        rows = Windows()[0].repeat(a.batch, 1)
        batches = (rows for _ in range(a.steps))
    else:
        batches = torch.utils.data.DataLoader(
            Windows(),
            batch_size=a.batch,
            shuffle=True,
            generator=torch.Generator().manual_seed(a.seed),
            num_workers=0,
            drop_last=True,
        )

    net.train()
    step_tokens, step_secs, losses = [], [], []
    start = time.perf_counter()
    for step, rows in zip(range(a.steps), batches):
        x, y = rows[:, :-1].contiguous().to(dev), rows[:, 1:].contiguous().to(dev)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        with torch.autocast(dev.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            logits = logits_of(x)
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
    rate = summary([t / s for t, s in zip(step_tokens[a.skip :], step_secs[a.skip :])])
    print(
        f"pytorch tokens/s {rate} [{a.model}, steps {a.skip + 1}..{a.steps}, "
        f"{torch.get_num_threads()} threads, data {a.data}, loss {losses[0]:.3f} -> {losses[-1]:.3f}]"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("model", choices=sorted(MODELS))
    r.add_argument("config")
    r.add_argument("--batch", type=int, required=True)
    r.add_argument("--seq", type=int, required=True)
    r.add_argument("--steps", type=int, required=True)
    r.add_argument("--skip", type=int, required=True)
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--device", default="cpu")
    r.add_argument("--amp", choices=["bf16", "fp16"])
    r.add_argument("--data", choices=["loader", "fixed"], default="loader")
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
        train(a)


if __name__ == "__main__":
    main()
