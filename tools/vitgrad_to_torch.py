#!/usr/bin/env python3
"""Carries a vitgrad checkpoint to PyTorch.

vitgrad writes its weights with timm's VisionTransformer names, shapes and element order
(cls_token [1,1,C], pos_embed [1,T+1,C], patch_embed.proj.weight [C,in_chans,p,p], Linear
weights [out,in], qkv rows q|k|v), so loading is a strict load_state_dict:

  * if timm is importable and the model is a plain ViT (LayerNorm, no GRN), the model is
    timm's own VisionTransformer built with the checkpoint's config;
  * otherwise (no timm, or LearnableScaler norms / GRN MLPs, which timm's ViT does not
    have), it is the compact ViT below, which uses timm's module and parameter names.

Either way every tensor of the checkpoint is used and every parameter of the model is
filled (strict=True), and the float32 values are the checkpoint's bits.

  python3 tools/vitgrad_to_torch.py CKPT.json                      # load, print a summary
  python3 tools/vitgrad_to_torch.py CKPT.json --save model.pt       # torch.save(state_dict)
  python3 tools/vitgrad_to_torch.py CKPT.json --fashion-mnist DIR   # test accuracy in PyTorch
        [--compare PREDICTIONS.txt]     # ... against `vitgrad eval CKPT --predictions FILE`

A full training checkpoint works as well as a `vitgrad export` (weights-only) one.
"""
import argparse
import gzip
import json
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

FASHION_MNIST_MEAN, FASHION_MNIST_STD = 0.2860, 0.3530  # engine/data/dataset.h


def load_vitgrad(path):
    """(config dict, state dict of float32 tensors) from a vitgrad checkpoint file."""
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


# --- a compact ViT with timm's module and parameter names -------------------------------


class LayerScale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x * self.gamma


class LearnableScaler(nn.Module):
    """y = a * x + b per channel (vitgrad's stand-in for LayerNorm)."""

    def __init__(self, dim):
        super().__init__()
        self.a = nn.Parameter(torch.ones(dim))
        self.b = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return self.a * x + self.b


class GlobalResponseNorm(nn.Module):
    """ConvNeXt-V2 GRN on tokens (B, T, C): L2 over the tokens, divided by its channel mean."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.zeros(dim))
        self.beta = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        gx = torch.norm(x, p=2, dim=1, keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + self.eps)
        return self.gamma * (x * nx) + self.beta + x


def make_norm(kind, dim):
    return nn.LayerNorm(dim, eps=1e-6) if kind == "layernorm" else LearnableScaler(dim)


class Attention(nn.Module):
    def __init__(self, dim, num_heads, qkv_bias):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


class Mlp(nn.Module):
    def __init__(self, dim, hidden, grn):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()  # the exact erf form, as timm
        self.grn = GlobalResponseNorm(hidden) if grn else nn.Identity()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.grn(self.act(self.fc1(x))))


class Block(nn.Module):
    def __init__(self, dim, num_heads, hidden, qkv_bias, norm, layerscale, grn):
        super().__init__()
        self.norm1 = make_norm(norm, dim)
        self.attn = Attention(dim, num_heads, qkv_bias)
        self.ls1 = LayerScale(dim) if layerscale else nn.Identity()
        self.norm2 = make_norm(norm, dim)
        self.mlp = Mlp(dim, hidden, grn)
        self.ls2 = LayerScale(dim) if layerscale else nn.Identity()

    def forward(self, x):  # drop-path and dropout are identities at inference
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class VisionTransformer(nn.Module):
    def __init__(self, cfg, hidden, layerscale):
        super().__init__()
        dim, grid = cfg["embed_dim"], cfg["img_size"] // cfg["patch_size"]
        self.global_pool = cfg["global_pool"]
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, dim))
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(cfg["in_chans"], dim, cfg["patch_size"],
                                          stride=cfg["patch_size"])
        self.blocks = nn.Sequential(*[
            Block(dim, cfg["num_heads"], hidden, cfg["qkv_bias"], cfg["norm"], layerscale,
                  cfg["grn"]) for _ in range(cfg["depth"])
        ])
        # timm: "token" pooling reads the cls token after `norm`; "avg" pooling averages the
        # patch tokens and then applies `fc_norm`.
        if self.global_pool == "token":
            self.norm = make_norm(cfg["norm"], dim)
        else:
            self.fc_norm = make_norm(cfg["norm"], dim)
        self.head = nn.Linear(dim, cfg["num_classes"])

    def forward(self, images):  # images (B, in_chans, H, W), as every PyTorch model
        x = self.patch_embed.proj(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.blocks(x)
        x = self.norm(x)[:, 0] if self.global_pool == "token" else self.fc_norm(x[:, 1:].mean(1))
        return self.head(x)


def build_model(cfg, state, use_timm=True):
    """A PyTorch ViT for the config, with the checkpoint's weights loaded strictly."""
    layerscale = "blocks.0.ls1.gamma" in state
    hidden = state["blocks.0.mlp.fc1.weight"].shape[0] if cfg["depth"] else 0
    plain = cfg["norm"] == "layernorm" and not cfg["grn"]
    model = None
    if use_timm and plain:
        try:
            from timm.models.vision_transformer import VisionTransformer as TimmViT
            model = TimmViT(img_size=cfg["img_size"], patch_size=cfg["patch_size"],
                            in_chans=cfg["in_chans"], num_classes=cfg["num_classes"],
                            global_pool=cfg["global_pool"], embed_dim=cfg["embed_dim"],
                            depth=cfg["depth"], num_heads=cfg["num_heads"],
                            mlp_ratio=hidden / cfg["embed_dim"], qkv_bias=cfg["qkv_bias"],
                            init_values=1e-4 if layerscale else None)
        except ImportError:
            model = None
    if model is None:
        model = VisionTransformer(cfg, hidden, layerscale)
    model.load_state_dict(state, strict=True)
    return model.eval()


# --- Fashion-MNIST, read and normalised as vitgrad does -------------------------------


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = struct.unpack(">" + "I" * (magic & 0xFF), data[4:4 + 4 * (magic & 0xFF)])
    payload = data[4 + 4 * len(dims):]
    return torch.frombuffer(bytearray(payload), dtype=torch.uint8).reshape(dims)


def find(folder, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    sys.exit(f"{folder}: no {stem}[.gz]")


def fashion_mnist_test(folder):
    images = read_idx(find(folder, "t10k-images-idx3-ubyte"))
    labels = read_idx(find(folder, "t10k-labels-idx1-ubyte")).long()
    # (v / 255 - mean) / std in double, then float32: the same table vitgrad uses.
    table = ((torch.arange(256, dtype=torch.float64) / 255.0 - FASHION_MNIST_MEAN) /
             FASHION_MNIST_STD).float()
    return table[images.long()].unsqueeze(1), labels  # (N, 1, 28, 28): channels first


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
        images, labels = fashion_mnist_test(args.fashion_mnist)
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
