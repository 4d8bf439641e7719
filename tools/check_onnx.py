#!/usr/bin/env python3
"""Checks `vitgrad export --format onnx` with onnxruntime: for each small model of
check_common.MODELS, trains it a few steps, exports the ONNX graph, validates it with
onnx.checker (when the onnx package is there), runs it with onnxruntime on the images
`vitgrad eval --logits` saw, and compares the logits.

  pip install onnxruntime onnx safetensors numpy
  python3 tools/check_onnx.py [--vitgrad build/vitgrad] [--keep DIR] [--data fashion-mnist]

Exit code 0 when every model's logits agree within 1e-5.
"""
import argparse
import os
import sys

import onnxruntime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common as cc  # noqa: E402


def check(exe, folder, name):
    checkpoint = cc.train_small(exe, folder, name)
    path = os.path.join(folder, name + ".onnx")
    cc.run(exe, "export", checkpoint, "--format", "onnx", "-o", path)
    try:
        import onnx
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        checked = f"onnx.checker ok, opset {model.opset_import[0].version}, " \
                  f"{len(model.graph.node)} nodes"
    except ImportError:
        checked = "no onnx package: checker skipped"
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    images, logits = cc.images_and_logits(exe, checkpoint, folder)
    theirs = session.run(["logits"], {"images": images})[0]
    return cc.compare(f"{name} (onnxruntime {onnxruntime.__version__}; {checked})", logits, theirs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cc.add_arguments(parser)
    exe, folder = cc.setup(parser.parse_args())
    results = [check(exe, folder, name) for name in cc.MODELS]
    print("check_onnx: " + ("all agree" if all(results) else "MISMATCH"))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
