"""Backward calls of every shape: Tensor.backward on a scalar, torch.autograd.backward with one
root, a non-scalar root (counted, not recorded), a NaN loss. Prints RESULT with the values and
whether torch was imported before the script imported it."""

import json
import sys

torch_before = "torch" in sys.modules
import torch  # noqa: E402

w = torch.tensor([1.0, 2.0], requires_grad=True)
values = []
for i in range(3):
    loss = (w * (i + 1)).pow(2).sum()
    loss.backward()
    values.append(loss.item())
loss = (w * 0.5).sum()
torch.autograd.backward([loss])
values.append(loss.item())
(w * 3).backward(torch.ones(2))
nan = (w * float("nan")).sum()
nan.backward()
print("RESULT " + json.dumps({"values": values, "torch_before": torch_before,
                              "cuda": torch.cuda.is_available()}))
