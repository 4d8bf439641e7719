#!/usr/bin/env python3
"""Checks `vitgrad import` with models made by timm: creates timm ViTs (timm.create_model,
weights moved off their initial values), saves their state_dict as safetensors (as timm and
Hugging Face do, without vitgrad's metadata), imports each with its config, evaluates it
with vitgrad, and compares vitgrad's logits with timm's on the same images. The plain model
is then given LayerScale at init 1.0 (`import --add-layerscale 1.0`), which must not change
its logits, and fine-tuned for a few steps with `train --init`.

  pip install torch timm safetensors numpy
  python3 tools/check_timm_import.py [--vitgrad build/vitgrad] [--keep DIR] [--data fashion-mnist]

Exit code 0 when every comparison agrees within 1e-5.
"""
import argparse
import json
import os
import sys

import timm
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common as cc  # noqa: E402

# timm models for 28x28 grey images: vit_tiny's width (192, 3 heads, MLP x4), 2 blocks.
COMMON = dict(img_size=28, patch_size=4, in_chans=1, num_classes=10, depth=2)
TIMM_MODELS = {
    "timm-vit-tiny-token": dict(global_pool="token"),
    "timm-vit-tiny-avg-layerscale": dict(global_pool="avg", init_values=1e-5),
}


def vitgrad_config(model, init_values):
    """The ViTConfig (JSON) of a timm VisionTransformer made with `init_values`."""
    block = model.blocks[0]
    return {
        "img_size": COMMON["img_size"], "patch_size": COMMON["patch_size"],
        "in_chans": COMMON["in_chans"], "num_classes": model.num_classes,
        "embed_dim": model.embed_dim, "depth": len(model.blocks),
        "num_heads": block.attn.num_heads,
        "mlp_ratio": block.mlp.fc1.out_features / model.embed_dim,
        "qkv_bias": block.attn.qkv.bias is not None, "norm": "layernorm",
        "layerscale": repr(init_values) if init_values else "none",
        "grn": False, "global_pool": model.global_pool,
    }


def timm_logits(model, images):
    with torch.no_grad():
        return model(torch.from_numpy(images)).numpy()


def check(exe, folder, name, kwargs):
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, **COMMON, **kwargs)
    with torch.no_grad():  # move every weight (zero biases, unit norms) off its initial value
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.eval()
    weights = os.path.join(folder, name + ".safetensors")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
    config = os.path.join(folder, name + ".config.json")
    with open(config, "w") as f:
        json.dump(vitgrad_config(model, kwargs.get("init_values")), f)
    imported = os.path.join(folder, name, "model.json")
    os.makedirs(os.path.dirname(imported), exist_ok=True)
    cc.run(exe, "import", weights, "--config", config, "-o", imported)
    images, logits = cc.images_and_logits(exe, imported, folder)
    ok = cc.compare(f"{name}: timm.create_model -> safetensors -> vitgrad import", logits,
                    timm_logits(model, images))
    if "init_values" in kwargs:
        return ok
    # Fine-tuning with LayerScale added at 1.0: the same function, then a few steps.
    with_ls = os.path.join(folder, name + "-ls", "model.json")
    os.makedirs(os.path.dirname(with_ls), exist_ok=True)
    cc.run(exe, "import", weights, "--config", config, "--add-layerscale", "1.0", "-o", with_ls)
    images, ls_logits = cc.images_and_logits(exe, with_ls, folder)
    ok &= cc.compare(f"{name} + LayerScale 1.0", ls_logits, timm_logits(model, images))
    out = cc.run(exe, "train", "--init", with_ls, "--data", cc.DATA, "--steps", "5",
                 "--batch", "50", "--out", os.path.join(folder, name + "-finetune"))
    print(f"     train --init {name} + LayerScale 1.0, 5 steps: " + out.strip().splitlines()[-1])
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cc.add_arguments(parser)
    exe, folder = cc.setup(parser.parse_args())
    print(f"timm {timm.__version__}, torch {torch.__version__}")
    results = [check(exe, folder, name, kwargs) for name, kwargs in TIMM_MODELS.items()]
    print("check_timm_import: " + ("all agree" if all(results) else "MISMATCH"))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
