"""A tiny fp32 training run for `modelzoo bisect`'s tests and docs: a two-layer MLP, three
SGD steps, one loss line per step. `--device sdaa` runs it on the emulator (torch_sdaa);
`--device-bug` adds what only the device path computes (a scale on the loss), which no op
fallback can heal."""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu", choices=["cpu", "sdaa"])
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--device-bug", action="store_true")
args = parser.parse_args()
if args.device == "sdaa":
    import torch_sdaa  # noqa: F401

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
model = model.to(args.device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 8).to(args.device)
y = torch.randn(32, 4).to(args.device)
for step in range(1, args.steps + 1):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    if args.device_bug and loss.device.type == "sdaa":
        loss = loss * 1.01
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}", flush=True)
