# SPDX-License-Identifier: GPL-3.0-or-later
"""A small UNet trained with DistributedDataParallel on synthetic segmentation images.

Each image is noise with a few filled shapes (discs and rectangles); the target is the mask
of the shapes. The data is generated deterministically from the sample index, so every rank
can build its share without downloading anything. Runs on CPU (gloo) or GPU (nccl) under
`torchrun`, alone or across machines:

    torchrun --standalone --nproc-per-node 2 examples/unet/train.py --epochs 2

Rank 0 writes `metrics.json` (per-epoch loss and Dice) and `model.pt` (the state dict).

It trains through `partagpu.ddp` (installed in the lab's runtime with the `partagpu` package):
DDP with the gradient strategy `partagpu.distribute(..., nodes="auto")` chose, and the step
times the report after the job is made of. Every epoch ends with a `partagpu.checkpoint`, so
an elastic training (`min_nodes=`) that loses a machine resumes from the last epoch.
"""

import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

import partagpu.checkpoint
import partagpu.ddp


class Shapes(Dataset):
    """`count` images of `size`², the same for a given index on every machine."""

    def __init__(self, count, size=64, seed=0):
        self.count, self.size, self.seed = count, size, seed

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        size = self.size
        ys, xs = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        mask = torch.zeros(size, size)
        for _ in range(int(torch.randint(1, 4, (1,), generator=g))):
            cx, cy = (torch.rand(2, generator=g) * size).tolist()
            r = float(torch.rand(1, generator=g)) * size / 6 + size / 12
            if float(torch.rand(1, generator=g)) < 0.5:
                mask[(xs - cx) ** 2 + (ys - cy) ** 2 <= r * r] = 1
            else:
                mask[((xs - cx).abs() <= r) & ((ys - cy).abs() <= r * 0.6)] = 1
        image = 0.6 * mask + 0.4 * torch.rand(size, size, generator=g)
        return image.unsqueeze(0), mask.unsqueeze(0)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """Three levels down, three up, skip connections; `width` channels at the top."""

    def __init__(self, width=16):
        super().__init__()
        w = width
        self.down1, self.down2, self.down3 = block(1, w), block(w, 2 * w), block(2 * w, 4 * w)
        self.bottom = block(4 * w, 8 * w)
        self.up3, self.dec3 = nn.ConvTranspose2d(8 * w, 4 * w, 2, stride=2), block(8 * w, 4 * w)
        self.up2, self.dec2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2), block(4 * w, 2 * w)
        self.up1, self.dec1 = nn.ConvTranspose2d(2 * w, w, 2, stride=2), block(2 * w, w)
        self.head = nn.Conv2d(w, 1, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        d3 = self.down3(F.max_pool2d(d2, 2))
        b = self.bottom(F.max_pool2d(d3, 2))
        u3 = self.dec3(torch.cat([self.up3(b), d3], 1))
        u2 = self.dec2(torch.cat([self.up2(u3), d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.head(u1)


def dice(logits, target, eps=1e-6):
    predicted = (logits > 0).float()
    inter = (predicted * target).sum()
    return float((2 * inter + eps) / (predicted.sum() + target.sum() + eps))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=384, help="training images in all")
    parser.add_argument("--batch-size", type=int, default=16, help="per process")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    partagpu.ddp.init_process_group()  # nccl or gloo, and the timeout of an elastic training
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", 1))))

    model = UNet(args.width).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    # After a lost machine the workers restart here: from the last epoch every rank finished.
    saved = partagpu.checkpoint.load(map_location=device)
    metrics = saved["metrics"] if saved else []
    if saved:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if rank == 0:
            print(f"resuming after epoch {len(metrics)} on {world} process(es)", flush=True)
    trainer = partagpu.ddp.wrap(model, optimizer, device_ids=[local] if cuda else None)
    train = Shapes(args.samples, args.size, seed=1)
    check = Shapes(64, args.size, seed=2)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    host = os.uname().nodename
    if rank == 0:
        print(f"training on {world} process(es); {len(train)} images, batches of {args.batch_size} per process",
              flush=True)
    for epoch in range(len(metrics), args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        started, total, batches = time.time(), torch.zeros(2), 0
        for images, masks in loader:
            images, masks = images.to(device), masks.to(device)
            # One micro-step; with k-step accumulation the optimizer steps every k-th call.
            loss = trainer.step(lambda: F.binary_cross_entropy_with_logits(trainer.model(images), masks))
            total += torch.tensor([loss.item() * len(images), len(images)])
            batches += 1
            if epoch == 0 and batches == 1:
                print(f"rank {rank} on {host}: first step done", flush=True)
        dist.all_reduce(total)
        model.eval()
        with torch.no_grad():
            images = torch.stack([check[i][0] for i in range(len(check))]).to(device)
            masks = torch.stack([check[i][1] for i in range(len(check))]).to(device)
            score = dice(model(images), masks)
        epoch_loss = float(total[0] / total[1])
        metrics.append({"epoch": epoch + 1, "loss": epoch_loss, "dice": score,
                        "seconds": round(time.time() - started, 2), "processes": world})
        partagpu.checkpoint.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                  "metrics": metrics}, step=epoch)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {epoch_loss:.4f}, dice {score:.3f}, "
                  f"{time.time() - started:.1f} s", flush=True)
    if not all(math.isfinite(m["loss"]) for m in metrics):
        # Every rank sees the same all-reduced losses, so every rank fails here together.
        raise SystemExit("the loss diverged")
    # Every machine writes them (the replicas are equal): after a lost machine, the ranks may
    # have been renumbered, and the artifacts are taken from the first machine of the job.
    if local == 0:
        os.makedirs(args.out, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
        with open(os.path.join(args.out, "metrics.json"), "w") as f:
            json.dump({"epochs": metrics, "world_size": world}, f, indent=1)
    # Leave together, without gloo's teardown: destroy_process_group() aborts now and then
    # ("terminate called without an active exception"), failing a finished training.
    partagpu.ddp.finish()


if __name__ == "__main__":
    main()
