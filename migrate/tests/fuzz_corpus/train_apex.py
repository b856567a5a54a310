# Older NVIDIA-style training loop with apex amp and apex DDP.
import torch
from apex import amp
from apex.parallel import DistributedDataParallel as ApexDDP


def main(model, optimizer, loader):
    model.cuda()
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    model = ApexDDP(model, delay_allreduce=True)
    for images, target in loader:
        images = images.cuda(non_blocking=True)
        target = target.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(images), target)
        optimizer.zero_grad()
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()
