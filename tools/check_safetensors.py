#!/usr/bin/env python3
"""Checks `vitgrad export --format safetensors` against PyTorch: for each small model of
check_common.MODELS, trains it a few steps, exports it, loads the file into timm's
VisionTransformer (the compact ViT of torch_vit.py for LearnableScaler/GRN models) with
strict=True, and compares the logits with `vitgrad eval --logits` on the same images.

  pip install torch timm safetensors numpy
  python3 tools/check_safetensors.py [--vitgrad build/vitgrad] [--keep DIR] [--data fashion-mnist]

Exit code 0 when every model's logits agree within 1e-5.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common as cc  # noqa: E402
from torch_vit import build_model, load_export  # noqa: E402


def check(exe, folder, name):
    checkpoint = cc.train_small(exe, folder, name)
    exported = os.path.join(folder, name + ".safetensors")
    cc.run(exe, "export", checkpoint, "--format", "safetensors", "-o", exported)
    cfg, state = load_export(exported)
    model = build_model(cfg, state)  # load_state_dict(strict=True)
    images, logits = cc.images_and_logits(exe, checkpoint, folder)
    with torch.no_grad():
        theirs = model(torch.from_numpy(images)).numpy()
    kind = f"{type(model).__module__}.{type(model).__name__}"
    return cc.compare(f"{name} ({kind}, strict=True)", logits, theirs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cc.add_arguments(parser)
    exe, folder = cc.setup(parser.parse_args())
    results = [check(exe, folder, name) for name in cc.MODELS]
    print("check_safetensors: " + ("all agree" if all(results) else "MISMATCH"))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
