#!/usr/bin/env python3
"""Continues training a vitgrad model in PyTorch with DistributedDataParallel.

The start is a `vitgrad export --format safetensors` file: its weights load into timm's
VisionTransformer (or the compact ViT of torch_vit.py for LearnableScaler/GRN models) with
strict=True, and its metadata gives the config and the parameters vitgrad tags
no_weight_decay, so AdamW gets vitgrad's two groups: "decay" (weight decay --wd) and
"no_decay" (norms, biases, LayerScale/GRN/LearnableScaler parameters, pos_embed, cls_token;
weight decay 0). The schedule is vitgrad's cosine: linear warmup, then cosine to --min-lr.
Every process reads the same Fashion-MNIST training set; a DistributedSampler gives each a
different part of every epoch, and DDP averages the gradients, so the global batch is
--batch x the number of processes.

  torchrun --standalone --nproc_per_node 2 tools/continue_in_pytorch.py model.safetensors \\
      --steps 200 --batch 64 --lr 5e-4 --out continued.safetensors

The result is again a vitgrad export: `vitgrad import continued.safetensors -o m.json`
brings it back (docs/graduate.md: from here to many machines).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_vit import (FASHION_MNIST_DIR, build_model, export_metadata,  # noqa: E402
                       fashion_mnist, load_export, no_weight_decay_names)


def parameter_groups(model, no_decay, weight_decay):
    """vitgrad's groups (engine/optim/param_groups.h): "no_decay" first, then "decay"."""
    groups = {"no_decay": [], "decay": []}
    for name, p in model.named_parameters():
        groups["no_decay" if name in no_decay else "decay"].append(p)
    return [{"name": "no_decay", "params": groups["no_decay"], "weight_decay": 0.0},
            {"name": "decay", "params": groups["decay"], "weight_decay": weight_decay}]


def cosine_lr(step, args):
    """Linear warmup to --lr over --warmup steps, then cosine down to --min-lr."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def accuracy(model, images, labels, batch=500):
    model.eval()
    correct = sum(int((model(images[i:i + batch]).argmax(1) == labels[i:i + batch]).sum())
                  for i in range(0, len(labels), batch))
    model.train()
    return correct / len(labels)


def save_export(model, cfg, no_decay, step, path):
    """A vitgrad export again: the weights, the config, the step and the no-decay names."""
    from safetensors.torch import save_file
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, path, metadata={"format": "pt", "vitgrad_config": json.dumps(cfg),
                                     "vitgrad_step": str(step),
                                     "vitgrad_no_weight_decay": json.dumps(sorted(no_decay))})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a vitgrad export (.safetensors)")
    parser.add_argument("--data-dir", default=FASHION_MNIST_DIR, help="Fashion-MNIST IDX files")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64, help="images per process and step")
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--min-lr", type=float, default=1e-6)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--wd", type=float, default=0.05)
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--clip", type=float, default=0.0, help="max gradient norm (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--out", default="continued.safetensors")
    args = parser.parse_args()

    # torchrun sets RANK, WORLD_SIZE and MASTER_ADDR/PORT; gloo runs on CPUs.
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    torch.manual_seed(args.seed)

    cfg, state = load_export(args.model)
    no_decay = no_weight_decay_names(args.model, state)
    start_step = int(export_metadata(args.model).get("vitgrad_step", 0))  # steps so far
    model = build_model(cfg, state).train()  # strict=True; identical on every rank
    groups = parameter_groups(model, no_decay, args.wd)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.999), eps=1e-8)

    images, labels = fashion_mnist(args.data_dir, "train")
    sampler = DistributedSampler(TensorDataset(images, labels), num_replicas=world, rank=rank,
                                 shuffle=True, seed=args.seed, drop_last=True)
    loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch, sampler=sampler,
                        drop_last=True)
    if rank == 0:
        kind = f"{type(model).__module__}.{type(model).__name__}"
        print(f"{args.model}: {kind}, {sum(p.numel() for p in model.parameters())} parameters; "
              f"{world} processes x batch {args.batch}; groups: "
              + ", ".join(f"{g['name']} ({len(g['params'])} tensors, wd {g['weight_decay']})"
                          for g in groups), flush=True)

    step, epoch = 0, 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for x, y in loader:
            for g in optimizer.param_groups:
                g["lr"] = cosine_lr(step, args)
            loss = F.cross_entropy(ddp(x), y, label_smoothing=args.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # DDP all-reduces (averages) the gradients here
            if args.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            step += 1
            if step % args.log_every == 0 or step == args.steps:
                mean_loss = loss.detach().clone()
                dist.all_reduce(mean_loss)
                if rank == 0:
                    print(f"step {step}/{args.steps}  loss {mean_loss.item() / world:.4f}  "
                          f"lr {cosine_lr(step - 1, args):.3g}", flush=True)
            if step == args.steps:
                break
        epoch += 1

    # DDP keeps the replicas identical: check it, then rank 0 evaluates and saves.
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    lowest, highest = flat.clone(), flat.clone()
    dist.all_reduce(lowest, op=dist.ReduceOp.MIN)
    dist.all_reduce(highest, op=dist.ReduceOp.MAX)
    if rank == 0:
        spread = (highest - lowest).abs().max().item()
        test_images, test_labels = fashion_mnist(args.data_dir, "test")
        acc = accuracy(model, test_images, test_labels)
        save_export(model, cfg, no_decay, start_step + step, args.out)
        print(f"replicas identical: {spread == 0} (max difference {spread:.3g}); "
              f"test accuracy {100 * acc:.2f}%; wrote {args.out}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
