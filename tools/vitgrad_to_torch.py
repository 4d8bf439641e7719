#!/usr/bin/env python3
"""Carries a vitgrad checkpoint to PyTorch.

vitgrad writes its weights with timm's VisionTransformer names, shapes and element order
(cls_token [1,1,C], pos_embed [1,T+1,C], patch_embed.proj.weight [C,in_chans,p,p], Linear
weights [out,in], qkv rows q|k|v), so loading is a strict load_state_dict:

  * if timm is importable and the model is a plain ViT (LayerNorm, no GRN), the model is
    timm's own VisionTransformer built with the checkpoint's config;
  * otherwise (no timm, or LearnableScaler norms / GRN MLPs, which timm's ViT does not
    have), it is the compact ViT of torch_vit.py, which uses timm's module and parameter
    names.

Either way every tensor of the checkpoint is used and every parameter of the model is
filled (strict=True), and the float32 values are the checkpoint's bits.

  python3 tools/vitgrad_to_torch.py CKPT.json                      # load, print a summary
  python3 tools/vitgrad_to_torch.py CKPT.json --save model.pt       # torch.save(state_dict)
  python3 tools/vitgrad_to_torch.py CKPT.json --fashion-mnist DIR   # test accuracy in PyTorch
        [--compare PREDICTIONS.txt]     # ... against `vitgrad eval CKPT --predictions FILE`

A full training checkpoint works as well as a `vitgrad export` (weights-only) one, and
so does a `vitgrad export --format safetensors` file.
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_vit import build_model, fashion_mnist, load_export  # noqa: E402  (shared)

def load_vitgrad(path):
    """(config dict, state dict of float32 tensors) from a vitgrad checkpoint file."""
    if path.endswith(".safetensors"):
        return load_export(path)
    with open(path) as f:
        doc = json.load(f)
    if doc.get("format") != "vitgrad-checkpoint" or doc.get("version") != 1:
        sys.exit(f"{path}: not a vitgrad checkpoint of version 1")
    state = {}
    for name, entry in doc["model"].items():
        dtype = {"float32": torch.float32, "float64": torch.float64}[entry["dtype"]]
        # JSON numbers are the exact doubles of the float32 values: the cast is exact.
        state[name] = torch.tensor(entry["data"], dtype=torch.float64).to(dtype).reshape(
            entry["shape"])
    return doc["config"], state


@torch.no_grad()
def logits_of(model, images, batch=500):
    return torch.cat([model(images[i:i + batch]) for i in range(0, len(images), batch)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--save", help="write the PyTorch state_dict here (torch.save)")
    parser.add_argument("--no-timm", action="store_true", help="always use the compact ViT")
    parser.add_argument("--fashion-mnist", metavar="DIR",
                        help="report test accuracy on the IDX files in DIR")
    parser.add_argument("--compare", metavar="FILE",
                        help="predictions from `vitgrad eval --predictions FILE`")
    args = parser.parse_args()

    cfg, state = load_vitgrad(args.checkpoint)
    model = build_model(cfg, state, use_timm=not args.no_timm)
    count = sum(p.numel() for p in model.parameters())
    print(f"{args.checkpoint}: {type(model).__module__}.{type(model).__name__}, "
          f"{len(state)} tensors, {count} parameters, loaded with strict=True")
    if args.save:
        torch.save(model.state_dict(), args.save)
        print(f"wrote {args.save}")
    if args.fashion_mnist:
        torch.set_num_threads(max(1, torch.get_num_threads()))
        images, labels = fashion_mnist(args.fashion_mnist, "test")
        logits = logits_of(model, images)
        predicted = logits.argmax(1)
        correct = int((predicted == labels).sum())
        loss = F.cross_entropy(logits.double(), labels).item()
        print(f"PyTorch test accuracy: {100 * correct / len(labels):.2f}% "
              f"({correct} of {len(labels)}), loss {loss:.6f}")
        if args.compare:
            with open(args.compare) as f:
                theirs = torch.tensor([int(line) for line in f if line.strip()])
            if len(theirs) != len(predicted):
                sys.exit(f"{args.compare}: {len(theirs)} predictions for {len(predicted)} images")
            differ = (theirs != predicted).nonzero().flatten().tolist()
            print(f"vitgrad predictions: {int((theirs == labels).sum())} correct; "
                  f"{len(differ)} images predicted differently" +
                  (f" (indices {differ[:20]})" if differ else ""))


if __name__ == "__main__":
    main()
