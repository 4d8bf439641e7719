#!/usr/bin/env bash
# Writes the seed corpora of the fuzzers into fuzz/corpus/: a small trained checkpoint (values
# rounded to keep it short), its weights-only form and two stubs; ViTConfig files; IDX image
# and label files, plain and gzipped; the checkpoint's safetensors export, cut in half, and a
# hand-made F16 file. (checkpoint/run_v1.json is a version-1 file kept as an earlier build
# wrote it; this script leaves it alone.) Usage: fuzz/make_corpus.sh [path/to/vitgrad]
set -euo pipefail
cd "$(dirname "$0")"
vitgrad=$(realpath "${1:-../build/vitgrad}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p corpus/checkpoint corpus/config corpus/idx corpus/safetensors
"$vitgrad" train --data synthetic --synthetic-size 20 --depth 1 --dim 4 --heads 1 --patch 14 \
  --mlp-ratio 1 --batch 10 --threads 1 --steps 1 --out "$tmp/run" >/dev/null 2>&1
cp "$tmp/run/config.json" corpus/config/run_config.json
"$vitgrad" export "$tmp/run/last.json" --format safetensors \
  -o corpus/safetensors/export.safetensors >/dev/null
python3 - "$tmp/run/last.json" <<'PY'
import gzip, json, struct, sys
def rounded(x):
    if isinstance(x, dict): return {k: rounded(v) for k, v in x.items()}
    if isinstance(x, list): return [rounded(v) for v in x]
    return round(x, 2) if isinstance(x, float) else x
c = json.load(open(sys.argv[1]))
c["model"] = rounded(c["model"])
c["optimizer"]["state"] = rounded(c["optimizer"]["state"])
run = json.dumps(c, separators=(",", ":"))
open("corpus/checkpoint/run.json", "w").write(run)
w = dict(c, optimizer=None, scheduler=None, rng={}, data={}, extra={})
open("corpus/checkpoint/weights_only.json", "w").write(json.dumps(w, separators=(",", ":")))
open("corpus/checkpoint/truncated.json", "w").write(run[:300])
export = open("corpus/safetensors/export.safetensors", "rb").read()
open("corpus/safetensors/truncated.safetensors", "wb").write(export[:len(export) // 2])
half = b'{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"format":"pt"}}'
open("corpus/safetensors/half.safetensors", "wb").write(
    struct.pack("<Q", len(half)) + half + bytes([0x00, 0x3c, 0x00, 0xc0]))
open("corpus/checkpoint/header_only.json", "w").write(
    '{"format":"vitgrad-checkpoint","version":1,"config":{},"model":{},"optimizer":null,'
    '"scheduler":null,"rng":{},"data":{},"step":0}')
open("corpus/config/deep.json", "w").write(
    '{"img_size": 28, "patch_size": 7, "embed_dim": 64, "depth": 24, "num_heads": 4, '
    '"layerscale": "auto", "grn": true, "global_pool": "avg"}\n')
open("corpus/config/scaler.json", "w").write(
    '{"norm": "learnable_scaler", "layerscale": 1e-4, "mlp_ratio": 2.5, '
    '"drop_path_rate": 0.1, "dropout": 0.0, "qkv_bias": false}\n')
open("corpus/config/empty.json", "w").write("{}\n")
images = struct.pack(">IIII", 0x803, 2, 28, 28) + bytes(range(256)) * 6 + bytes(32)
labels = struct.pack(">II", 0x801, 2) + bytes([3, 9])
open("corpus/idx/images", "wb").write(images)
open("corpus/idx/labels", "wb").write(labels)
open("corpus/idx/images.gz", "wb").write(gzip.compress(images, mtime=0))
open("corpus/idx/labels.gz", "wb").write(gzip.compress(labels, mtime=0))
open("corpus/idx/small_side", "wb").write(struct.pack(">IIII", 0x803, 3, 2, 2) + bytes(12))
PY
