"""A PyTorch ViT with timm's module and parameter names, for vitgrad's weights.

vitgrad writes its weights with timm's VisionTransformer names, shapes and element order
(cls_token [1,1,C], pos_embed [1,T+1,C], patch_embed.proj.weight [C,in_chans,p,p], Linear
weights [out,in], qkv rows q|k|v), so `build_model` loads them with strict=True into

  * timm's own VisionTransformer when timm is importable and the model is a plain ViT
    (LayerNorm, no GRN), or
  * the compact ViT below otherwise (LearnableScaler norms, GRN MLPs and the convolutional
    stem, which timm's ViT does not have), which uses timm's names and semantics.

Also Fashion-MNIST, read and normalised as vitgrad reads it. Shared by vitgrad_to_torch.py,
the check_*.py scripts and continue_in_pytorch.py.
"""
import gzip
import json
import os
import struct
import sys

import torch
import torch.nn as nn

FASHION_MNIST_MEAN, FASHION_MNIST_STD = 0.2860, 0.3530  # engine/data/dataset.h
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


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


def stem_stages(cfg):
    """The (channels, stride) of each stage of the config's convolutional stem: [] for "none"
    (or no key, as in configs older than stems), [(32, 1), (64, 2)] for "conv:32s1,64"."""
    stem = cfg.get("stem", "none")
    if stem == "none":
        return []
    entries = stem[len("conv:"):].split(",")
    return [(int(e[:-2]), 1) if e.endswith("s1") else (int(e), 2) for e in entries]


class ChannelNorm(nn.LayerNorm):
    """A LayerNorm over the channels of an NCHW map (vitgrad's stem norm, eps 1e-6)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvStem(nn.Module):
    """vitgrad's ConvStem: per stage a 3x3 convolution of the stage's stride and padding 1,
    with stem_norm "layernorm" a LayerNorm over the channels, then GELU; children conv1,
    (norm1,) act1, conv2, ..."""

    def __init__(self, in_chans, stages, norm=False):
        super().__init__()
        for i, (out, stride) in enumerate(stages, 1):
            self.add_module(f"conv{i}", nn.Conv2d(in_chans, out, 3, stride=stride, padding=1))
            if norm:
                self.add_module(f"norm{i}", ChannelNorm(out, eps=1e-6))
            self.add_module(f"act{i}", nn.GELU())
            in_chans = out

    def forward(self, x):
        for module in self.children():
            x = module(x)
        return x


class VisionTransformer(nn.Module):
    def __init__(self, cfg, hidden, layerscale):
        super().__init__()
        stem = stem_stages(cfg)
        side = cfg["img_size"]
        for _, stride in stem:
            side = (side - 1) // stride + 1  # stride 2 halves the side, rounding up
        dim, grid = cfg["embed_dim"], side // cfg["patch_size"]
        self.global_pool = cfg["global_pool"]
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, dim))
        stem_norm = cfg.get("stem_norm", "none") == "layernorm"
        self.stem = ConvStem(cfg["in_chans"], stem, stem_norm) if stem else nn.Identity()
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(stem[-1][0] if stem else cfg["in_chans"], dim,
                                          cfg["patch_size"], stride=cfg["patch_size"])
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
        x = self.patch_embed.proj(self.stem(images)).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.blocks(x)
        x = self.norm(x)[:, 0] if self.global_pool == "token" else self.fc_norm(x[:, 1:].mean(1))
        return self.head(x)


def timm_vit(cfg, hidden, layerscale):
    """timm's VisionTransformer for a vitgrad config (a dict), or None without timm."""
    try:
        from timm.models.vision_transformer import VisionTransformer as TimmViT
    except ImportError:
        return None
    return TimmViT(img_size=cfg["img_size"], patch_size=cfg["patch_size"],
                   in_chans=cfg["in_chans"], num_classes=cfg["num_classes"],
                   global_pool=cfg["global_pool"], embed_dim=cfg["embed_dim"],
                   depth=cfg["depth"], num_heads=cfg["num_heads"],
                   mlp_ratio=hidden / cfg["embed_dim"], qkv_bias=cfg["qkv_bias"],
                   init_values=1e-4 if layerscale else None)


def build_model(cfg, state, use_timm=True):
    """A PyTorch ViT for the config, with the weights in `state` loaded strictly."""
    layerscale = "blocks.0.ls1.gamma" in state
    hidden = state["blocks.0.mlp.fc1.weight"].shape[0] if cfg["depth"] else 0
    plain = cfg["norm"] == "layernorm" and not cfg["grn"] and not stem_stages(cfg)
    model = timm_vit(cfg, hidden, layerscale) if use_timm and plain else None
    if model is None:
        model = VisionTransformer(cfg, hidden, layerscale)
    model.load_state_dict(state, strict=True)
    return model.eval()


def export_metadata(path):
    """The string metadata of a safetensors file (vitgrad_config, vitgrad_step, ...)."""
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        return f.metadata() or {}


def load_export(path):
    """(config dict, state dict) of a `vitgrad export --format safetensors` file."""
    from safetensors.torch import load_file
    metadata = export_metadata(path)
    if "vitgrad_config" not in metadata:
        raise SystemExit(f"{path}: no vitgrad_config in the metadata (not a vitgrad export)")
    return json.loads(metadata["vitgrad_config"]), load_file(path)


def no_weight_decay_names(path, state):
    """The parameters vitgrad tags no_weight_decay, from the export's metadata; for files
    without that entry, timm's rule (every tensor of rank <= 1, pos_embed and cls_token)."""
    metadata = export_metadata(path)
    if "vitgrad_no_weight_decay" in metadata:
        return set(json.loads(metadata["vitgrad_no_weight_decay"]))
    return {n for n, t in state.items() if t.ndim <= 1 or n in ("pos_embed", "cls_token")}


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


def fashion_mnist(folder, split):
    """(images (N, 1, 28, 28) float32, normalised as vitgrad does; labels) of a split."""
    stem = "t10k" if split == "test" else "train"
    images = read_idx(find(folder, stem + "-images-idx3-ubyte"))
    labels = read_idx(find(folder, stem + "-labels-idx1-ubyte")).long()
    # (v / 255 - mean) / std in double, then float32: the same table vitgrad uses.
    table = ((torch.arange(256, dtype=torch.float64) / 255.0 - FASHION_MNIST_MEAN) /
             FASHION_MNIST_STD).float()
    return table[images.long()].unsqueeze(1), labels  # (N, 1, 28, 28): channels first
