"""Idiom (Deformable-DETR's datasets/data_prefetcher.py, apex-style loaders): the next batch is
copied on a side stream, the current stream waits for it, and the batch is marked as used by the
current stream (Tensor.record_stream). `python prefetch_stream.py cuda|cpu`; prints RESULT."""

import json
import sys

import torch

cuda = sys.argv[1] == "cuda"
device = torch.device("cuda" if cuda else "cpu")
torch.manual_seed(2)
batches = [(torch.randn(4, 5), torch.randn(4, 1)) for _ in range(3)]
model = torch.nn.Linear(5, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
stream = torch.cuda.Stream() if cuda else None
losses = []
for x, y in batches:
    if cuda:
        with torch.cuda.stream(stream):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        torch.cuda.current_stream().wait_stream(stream)
        x.record_stream(torch.cuda.current_stream())
        y.record_stream(torch.cuda.current_stream())
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("RESULT " + json.dumps({"losses": losses, "tensor_device": x.device.type}))
