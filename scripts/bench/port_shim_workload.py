"""The CPU baseline shim's cost: a CUDA-style training script (`cuda` when torch.cuda says it
is available, as most CUDA scripts decide; the port's shims before and after 2026-11-28 both
map that) timing step loops: a word_language_model-like Transformer and LSTM (its defaults:
emsize 200, nhid 200, 2 layers, bptt 35, batch 20; a 2,000-word vocabulary) and mnist/main.py's
CNN (batch 64, Adadelta); `transformer_small` (emsize and nhid 32) is the same Transformer with
ops small enough that a per-op cost shows; `transformer_eval` is the Transformer's evaluation
step (no grad, eval mode: PyTorch's fast path). Run directly it trains on the CPU; under the
port's shim (MODELZOO_PORT_CPU_BASELINE=1, PYTHONPATH=python/port) its CUDA calls map to the
CPU, so both runs do the same work. Prints one JSON line: wall ms per step of each model
(`<model>`) and process CPU ms per step (`<model>.cpu`), medians of the timed steps after the
warm-up.

Usage: python port_shim_workload.py [--steps 20] [--warmup 3]
           [--models transformer,transformer_small,transformer_eval,lstm,cnn]
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return x + self.pe[: x.size(0), :]


class TransformerLM(nn.Module):
    """word_language_model's TransformerModel, in short."""

    def __init__(self, ntoken, ninp=200, nhead=2, nhid=200, nlayers=2, dropout=0.2):
        super().__init__()
        self.pos = PositionalEncoding(ninp)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.embed = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)
        self.ninp = ninp

    def forward(self, src, mask):
        x = self.pos(self.embed(src) * math.sqrt(self.ninp))
        return F.log_softmax(self.decoder(self.encoder(x, mask)), dim=-1)


class LSTMLM(nn.Module):
    """word_language_model's RNNModel (LSTM), in short."""

    def __init__(self, ntoken, ninp=200, nhid=200, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.embed = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, src, hidden):
        out, hidden = self.rnn(self.drop(self.embed(src)), hidden)
        return F.log_softmax(self.decoder(self.drop(out)), dim=-1), hidden


class CNN(nn.Module):
    """mnist/main.py's Net."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        return F.log_softmax(self.fc2(F.relu(self.fc1(torch.flatten(x, 1)))), dim=1)


def timed(step, steps, warmup, device):
    """Median wall and process-CPU milliseconds per step (CPU time: what this process spent,
    whatever else the machine runs; with one thread it is the step's own cost)."""
    wall, cpu = [], []
    for i in range(warmup + steps):
        if device.type != "cpu":
            torch.cuda.synchronize()
        t, c = time.perf_counter(), time.process_time()
        step(i)
        if device.type != "cpu":
            torch.cuda.synchronize()
        if i >= warmup:
            wall.append((time.perf_counter() - t) * 1000.0)
            cpu.append((time.process_time() - c) * 1000.0)
    return statistics.median(wall), statistics.median(cpu)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--models", default="transformer,transformer_small,transformer_eval,lstm,cnn")
    args = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ntoken, bptt, batch = 2000, 35, 20
    out = {"device": str(device)}
    for name in args.models.split(","):
        torch.manual_seed(0)
        if name in ("transformer", "transformer_small"):
            if name == "transformer":
                model = TransformerLM(ntoken).to(device)
            else:
                model = TransformerLM(ntoken, ninp=32, nhid=32).to(device)
            mask = nn.Transformer.generate_square_subsequent_mask(bptt).to(device)
            data = torch.randint(0, ntoken, (bptt + 1, batch)).to(device)

            def step(i, model=model, mask=mask, data=data):
                model.zero_grad()
                out = model(data[:-1], mask)
                loss = F.nll_loss(out.view(-1, ntoken), data[1:].reshape(-1))
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
                for p_ in model.parameters():
                    p_.data.add_(p_.grad, alpha=-20)
        elif name == "transformer_eval":
            # word_language_model's evaluate(): no grad, eval mode, where the encoder layers take
            # PyTorch's fused fast path unless a TorchFunctionMode is active.
            model = TransformerLM(ntoken).to(device).eval()
            mask = nn.Transformer.generate_square_subsequent_mask(bptt).to(device)
            data = torch.randint(0, ntoken, (bptt + 1, batch)).to(device)

            def step(i, model=model, mask=mask, data=data):
                with torch.no_grad():
                    out = model(data[:-1], mask)
                    F.nll_loss(out.view(-1, ntoken), data[1:].reshape(-1)).item()
        elif name == "lstm":
            model = LSTMLM(ntoken).to(device)
            data = torch.randint(0, ntoken, (bptt + 1, batch), device=device)
            hidden = [(torch.zeros(2, batch, 200, device=device),
                       torch.zeros(2, batch, 200, device=device))]

            def step(i, model=model, data=data, hidden=hidden):
                model.zero_grad()
                h = tuple(t.detach() for t in hidden[0])
                out, hidden[0] = model(data[:-1], h)
                loss = F.nll_loss(out.view(-1, ntoken), data[1:].reshape(-1))
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
                for p_ in model.parameters():
                    p_.data.add_(p_.grad, alpha=-20)
        elif name == "cnn":
            model = CNN().to(device)
            opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
            images = torch.randn(64, 1, 28, 28)
            labels = torch.randint(0, 10, (64,))

            def step(i, model=model, opt=opt, images=images, labels=labels):
                x, y = images.to(device), labels.to(device)
                opt.zero_grad()
                loss = F.nll_loss(model(x), y)
                loss.backward()
                opt.step()
        else:
            p.error(f"unknown model '{name}'; use transformer, transformer_small, "
                    "transformer_eval, lstm or cnn")
        out[name], out[name + ".cpu"] = timed(step, args.steps, args.warmup, device)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
