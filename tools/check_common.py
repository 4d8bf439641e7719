"""What the check_*.py scripts share: running the vitgrad binary, the small models they
train, and the comparison of two sets of logits."""
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 1e-5  # the largest |logit difference| allowed, in float32 logits of order 1
DATA = "synthetic"  # the images the models are trained and compared on (--data)

# Small models covering every option the exports must carry: timm's plain ViT with class
# token pooling; LayerScale and average pooling (fc_norm); LearnableScaler norms with GRN; a
# convolutional stem with a stride-1 and a stride-2 stage (28 -> 28 -> 14, cut into 2x2 patches),
# with and without its LayerNorms.
MODELS = {
    "layernorm-token": "--depth 2 --dim 32 --heads 2 --pool token",
    "layerscale-avg": "--depth 2 --dim 32 --heads 4 --pool avg --layerscale 0.1",
    "scaler-grn": "--depth 2 --dim 32 --heads 2 --norm learnable_scaler --grn --layerscale 0.1",
    "conv-stem": "--depth 2 --dim 32 --heads 2 --stem conv:8s1,16 --patch 2",
    "conv-stem-norm": "--depth 2 --dim 32 --heads 2 --stem conv:8s1,16 --stem-norm layernorm "
    "--patch 2",
}


def vitgrad_binary(path=None):
    exe = path or os.environ.get("VITGRAD") or os.path.join(ROOT, "build", "vitgrad")
    if not os.access(exe, os.X_OK):
        sys.exit(f"{exe}: no vitgrad binary (build it, or pass --vitgrad PATH)")
    return exe


def run(exe, *args):
    """Runs `vitgrad ARGS`; a failure stops the script with vitgrad's own message."""
    done = subprocess.run([exe, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"vitgrad {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def train_small(exe, folder, name, steps=30):
    """A few training steps of MODELS[name], so that no weight is at its initial value;
    returns the run's last checkpoint."""
    out = os.path.join(folder, name)
    run(exe, "train", *MODELS[name].split(), "--data", DATA, "--steps", str(steps),
        "--batch", "50", "--lr", "3e-3", "--out", out)
    return os.path.join(out, "last.json")


def images_and_logits(exe, checkpoint, folder):
    """(images NCHW, logits) of `vitgrad eval CHECKPOINT --logits`: the very images vitgrad
    saw (normalised, NHWC in the file) and its float32 logits."""
    from safetensors.numpy import load_file
    path = os.path.join(folder, os.path.basename(os.path.dirname(checkpoint)) + "-logits.safetensors")
    run(exe, "eval", checkpoint, "--data", DATA, "--logits", path)
    tensors = load_file(path)
    return np.ascontiguousarray(tensors["images"].transpose(0, 3, 1, 2)), tensors["logits"]


def add_arguments(parser):
    """The options every check script takes."""
    parser.add_argument("--vitgrad", help="the vitgrad binary (default build/vitgrad)")
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--data", default="synthetic", choices=["synthetic", "fashion-mnist"],
                        help="the images to compare on (fashion-mnist: its 10000 test images)")


def setup(args):
    """(vitgrad binary, work folder) from the parsed options."""
    global DATA
    DATA = args.data
    folder = args.keep or tempfile.mkdtemp(prefix="vitgrad-check-")
    os.makedirs(folder, exist_ok=True)
    return vitgrad_binary(args.vitgrad), folder


def compare(what, ours, theirs):
    """Prints the largest difference and returns whether it is within TOLERANCE."""
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    if ours.shape != theirs.shape:
        print(f"FAIL {what}: shapes {ours.shape} and {theirs.shape}")
        return False
    worst = np.abs(ours - theirs)
    i = np.unravel_index(worst.argmax(), worst.shape)
    same_class = (ours.argmax(1) == theirs.argmax(1)).mean()
    ok = worst[i] <= TOLERANCE
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {ours.shape[0]} images, max |logit difference| "
          f"{worst[i]:.3g} at image {i[0]} class {i[1]} (logit {ours[i]:.6f}), "
          f"same class for {100 * same_class:.2f}%")
    return ok
