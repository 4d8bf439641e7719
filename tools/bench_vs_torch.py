#!/usr/bin/env python3
"""vitgrad against PyTorch: the same ViT training step, side by side, in one run.

For every configuration it runs `vitgrad bench --json` and a plain-PyTorch model with timm's
ViT semantics (pre-norm blocks, LayerScale, exact GELU, MLP ratio 4, class token, AdamW) on
random 28x28x1 images, alternating the engines, on the same threads and in the same
environment (except for how threads wait, in "best"), each in fp32 and with bf16 matrix
products (PyTorch: torch.autocast("cpu", dtype=torch.bfloat16) around forward and loss;
vitgrad: --amp bf16), and prints images/s and the ratios as a Markdown table, with the load
average and how the processors' time was shared over the run (busy, idle, and taken by a
virtual machine's host: steal). --amp fp32 measures fp32 alone (and adds peak RSS), on any
CPU.

Four environments can be measured:
  best     OPENBLAS_CORETYPE unset; each engine runs under each of the ways its OpenMP threads
           can wait (--waits, below) and keeps its fastest, which the table names. Which way
           is fastest differs between machines, hosts and engines: the machine this script
           was written on had PyTorch fastest sleeping at once (against a 10 us spin only);
           on an AMD EPYC Zen 3 (docs/speed.md) PyTorch ran 20-40% faster spinning.
  passive  OPENBLAS_CORETYPE unset, OMP_WAIT_POLICY=passive for both engines.
  default  the environment this script was started in, as it is.
  haswell  the same with OPENBLAS_CORETYPE=Haswell, as some CI machines set it.

The ways of waiting (libgomp's variables; both engines use libgomp):
  own      OMP_WAIT_POLICY and GOMP_SPINCOUNT unset: each engine's default. vitgrad spins 1000
           rounds (about 10 us) and then sleeps; PyTorch gets libgomp's 300000 (about 3 ms).
  passive  OMP_WAIT_POLICY=passive: sleep at once.
  spin     GOMP_SPINCOUNT=100000: spin about 1 ms, then sleep.
  active   OMP_WAIT_POLICY=active: spin until work comes.

Each run of an engine is one process. Within each repeat (a round) the ways of waiting take
turns, and for each way the modes and the engines alternate, so every run of a round is made
within minutes of the others. The ratio columns take each engine's best run over all repeats,
which may come from different minutes; the "per round" columns give each round's own ratios
(each engine and mode at its best way within that round), so their spread shows how far the
machine's speed drifted while the table was made. The "ceiling" columns set PyTorch against a
vitgrad step that would do nothing but its products at the units' peak (`vitgrad bench`
measures the peak on registers alone): no kernel work can pass that ratio, so an aim above it
is beyond the machine (n/a where the peak is not measured: AMX, OpenBLAS).

Needs PyTorch: the newest one `python3` on the PATH imports (pip install torch), else
Debian's python3-torch (/usr/bin/python3); the table's heading names the version. Not part of
`make test`. Example:
  python3 tools/bench_vs_torch.py --vitgrad build/vitgrad --env best --env default
  python3 tools/bench_vs_torch.py --amp fp32 --waits own,spin   # fewer runs
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

# (label, dim, depth, heads, batch, norm, grn)
CONFIGS = [
    ("dim 64, depth 6, heads 4", 64, 6, 4, 128, "layernorm", False),
    ("dim 128, depth 6, heads 4", 128, 6, 4, 128, "layernorm", False),
    ("dim 192, depth 12, heads 3", 192, 12, 3, 128, "layernorm", False),
    ("dim 192, depth 36, heads 3, batch 64", 192, 36, 3, 64, "layernorm", False),
    ("same, LearnableScaler norms + GRN", 192, 36, 3, 64, "learnable_scaler", True),
]


# --- the PyTorch side: runs in a child process, so that its peak RSS is its own -------------

def torch_child(spec):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    dim, depth, heads, batch = spec["dim"], spec["depth"], spec["heads"], spec["batch"]

    class LearnableScaler(nn.Module):  # y = a * x + b per channel
        def __init__(self, d):
            super().__init__()
            self.a = nn.Parameter(torch.randn(d))
            self.b = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            return x * self.a + self.b

    class GRN(nn.Module):  # ConvNeXt-V2 GRN over the tokens of each sample
        def __init__(self, d):
            super().__init__()
            self.gamma = nn.Parameter(torch.zeros(d))
            self.beta = nn.Parameter(torch.zeros(d))

        def forward(self, x):
            g = torch.norm(x, p=2, dim=1, keepdim=True)
            n = g / (g.mean(dim=-1, keepdim=True) + 1e-6)
            return self.gamma * (x * n) + self.beta + x

    def norm(d):
        return LearnableScaler(d) if spec["norm"] == "learnable_scaler" else nn.LayerNorm(d, eps=1e-6)

    class Attention(nn.Module):  # timm 0.9 with fused_attn off (torch 1.13 has no SDPA)
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
            self.scale = (dim // heads) ** -0.5

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.attn = norm(dim), Attention()
            self.ls1 = nn.Parameter(1e-4 * torch.ones(dim))
            self.norm2 = norm(dim)
            layers = [nn.Linear(dim, 4 * dim), nn.GELU()]
            if spec["grn"]:
                layers.append(GRN(4 * dim))
            layers.append(nn.Linear(4 * dim, dim))
            self.mlp = nn.Sequential(*layers)
            self.ls2 = nn.Parameter(1e-4 * torch.ones(dim))

        def forward(self, x):
            x = x + self.ls1 * self.attn(self.norm1(x))
            return x + self.ls2 * self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = nn.Conv2d(1, dim, 4, 4)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(0.02 * torch.randn(1, 50, dim))
            self.blocks = nn.Sequential(*[Block() for _ in range(depth)])
            self.norm = norm(dim)
            self.head = nn.Linear(dim, 10)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
            return self.head(self.norm(self.blocks(x))[:, 0])

    model = ViT()
    # As vitgrad: no weight decay on biases, norms, LayerScale, cls_token and pos_embed.
    decayed = [p.ndim >= 2 and p is not model.pos_embed and p is not model.cls_token
               for p in model.parameters()]
    decay = [p for p, d in zip(model.parameters(), decayed) if d]
    no_decay = [p for p, d in zip(model.parameters(), decayed) if not d]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    images = torch.randn(batch, 1, 28, 28)
    labels = torch.randint(0, 10, (batch,))

    bf16 = spec["amp"] == "bf16"

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(images), labels)
        loss.item()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(spec["warmup"]):
        step()
    times = []
    for _ in range(spec["steps"]):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    median = statistics.median(times)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"images_per_s": batch / median, "ms_per_step": 1e3 * median,
                      "peak_rss_mb": rss, "torch": torch.__version__}))


# --- the driver ---------------------------------------------------------------------------

# How OpenMP threads wait between parallel regions (see the top of this file).
WAITS = {
    "own": {},
    "passive": {"OMP_WAIT_POLICY": "passive"},
    "spin": {"GOMP_SPINCOUNT": "100000"},
    "active": {"OMP_WAIT_POLICY": "active"},
}


def with_wait(env, wait):
    """env with the wait variables set as WAITS[wait] says and no others."""
    env = dict(env)
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    env.update(WAITS[wait])
    return env


def environments(kind, waits):
    """[(wait name, environment)] for one kind of environment (see the top of this file): the
    same for both engines; in "best", one per way of waiting."""
    env = dict(os.environ)
    if kind in ("best", "passive"):
        env.pop("OPENBLAS_CORETYPE", None)
    if kind == "haswell":
        env["OPENBLAS_CORETYPE"] = "Haswell"
    if kind == "best":
        return [(w, with_wait(env, w)) for w in waits]
    if kind == "passive":
        return [("passive", with_wait(env, "passive"))]
    return [("as set", env)]


def describe(env):
    return ", ".join(f"{k}={env[k]}" if k in env else f"{k} unset"
                     for k in ("OPENBLAS_CORETYPE", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"))


def describe_kind(kind, envs):
    if kind != "best":
        return describe(envs[0][1])
    return (f"OPENBLAS_CORETYPE unset; each engine waiting each way ({', '.join(w for w, _ in envs)}), "
            "its fastest kept")


def find_torch_python():
    """python3 on the PATH if it imports torch (e.g. pip's newest), else Debian's."""
    for python in ("python3", "/usr/bin/python3"):
        if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
            return python
    sys.exit("bench_vs_torch: no Python with torch (pip install torch, or apt install python3-torch)")


def torch_version(python):
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          check=True, capture_output=True, text=True).stdout.strip()


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def cpu_ticks():
    """(busy, idle, steal) clock ticks of all processors, as vitgrad bench reads them
    (tools/cpu_shares.cpp), or None without /proc/stat."""
    try:
        with open("/proc/stat") as f:
            t = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return (t[0] + t[1] + t[2] + t[5] + t[6], t[3] + t[4], t[7]) if len(t) == 8 else None


def shares_text(before, after):
    if before is None or after is None:
        return "not known"
    d = [b - a for a, b in zip(before, after)]
    total = sum(d)
    if total <= 0:
        return "not known"
    return (f"{100 * d[0] / total:.0f}% busy, {100 * d[1] / total:.0f}% idle, "
            f"{100 * d[2] / total:.0f}% taken by the host (steal)")


def run_json(cmd, env):
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def best_per_round(runs, repeats):
    """The best images/s of each repeat: runs are in repeat order, the same number in each."""
    per = len(runs) // repeats
    return [max(r["images_per_s"] for r in runs[i * per:(i + 1) * per]) for i in range(repeats)]


def ceiling_text(run, theirs):
    """The ratio a vitgrad run would have at its units' peak, e.g. "1.75x"; n/a unmeasured."""
    ceiling = run.get("images_per_s_at_units_peak")
    return f"{ceiling / theirs:.2f}x" if ceiling else "n/a"


def ratios_text(ours, theirs):
    """Each round's ratio, in round order, e.g. "1.31x, 1.22x"."""
    return ", ".join(f"{o / t:.2f}x" for o, t in zip(ours, theirs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vitgrad", default="build/vitgrad", help="the vitgrad binary")
    ap.add_argument("--env", action="append", choices=["best", "passive", "default", "haswell"],
                    help="environment(s) to measure (default: best)")
    ap.add_argument("--python", default=None,
                    help="the Python that has torch (default: python3 if it imports torch, "
                         "else /usr/bin/python3 with Debian's python3-torch)")
    ap.add_argument("--amp", default="fp32,bf16",
                    help="fp32,bf16 (default: both engines both ways) or fp32 (any CPU)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2,
                    help="rounds of alternating runs of each engine; the best of each is "
                         "kept, and each round's own ratio is printed too")
    ap.add_argument("--configs", default="",
                    help="comma-separated indices into the table (0-4; default: all)")
    ap.add_argument("--waits", default=",".join(WAITS),
                    help="ways of waiting tried in environment 'best' (default: all of "
                         + ", ".join(WAITS) + ")")
    ap.add_argument("--torch-child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_child:
        torch_child(json.loads(a.torch_child))
        return
    picked = [CONFIGS[int(i)] for i in a.configs.split(",")] if a.configs else CONFIGS
    waits = a.waits.split(",")
    unknown = [w for w in waits if w not in WAITS]
    if unknown:  # an empty --waits is one unknown, empty name
        sys.exit(f"bench_vs_torch: unknown way of waiting {', '.join(unknown)!r} "
                 f"(known: {', '.join(WAITS)})")
    python = a.python or find_torch_python()
    amps = a.amp.split(",")
    print(f"# threads {a.threads}, {a.steps} timed steps after {a.warmup} warm-up, "
          f"best of {a.repeats} alternating runs per engine, mode and way of waiting; "
          f"load average at start: {os.getloadavg()[0]:.2f}")
    print(f"# CPU: {cpu_name()}; PyTorch {torch_version(python)} ({python})")
    ticks_at_start = cpu_ticks()
    for kind in a.env or ["best"]:
        envs = environments(kind, waits)
        print(f"\n## environment '{kind}': {describe_kind(kind, envs)}\n")
        if amps == ["fp32"]:
            print("| config | PyTorch img/s | vitgrad img/s | ratio | ceiling | PyTorch RSS MB | "
                  "vitgrad RSS MB | RSS ratio | vitgrad matmul GFLOP/s | sgemm GFLOP/s | "
                  "vitgrad kernels (own + OpenBLAS) | waits (PyTorch, vitgrad) | "
                  "ratio per round |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        else:
            print("| config | PyTorch fp32 | PyTorch bf16 autocast | vitgrad fp32 | vitgrad bf16 | "
                  "bf16 / PyTorch's faster | bf16 / vitgrad fp32 | fp32 / PyTorch fp32 | "
                  "ceiling: bf16 / PyTorch's faster | ceiling: fp32 / PyTorch fp32 | "
                  "bf16 matmul GFLOP/s | bf16 GEMM peak | sgemm peak | "
                  "waits (PyTorch fp32, bf16; vitgrad fp32, bf16) | "
                  "bf16 / PyTorch's faster per round | bf16 / vitgrad fp32 per round | "
                  "fp32 / PyTorch fp32 per round |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for label, dim, depth, heads, batch, norm, grn in picked:
            cmds = {}  # (engine, amp) -> the command of one run
            for amp in amps:
                cmds[("vitgrad", amp)] = [
                    a.vitgrad, "bench", "--json", "--dim", str(dim), "--depth", str(depth),
                    "--heads", str(heads), "--batch", str(batch), "--mlp-ratio", "4",
                    "--layerscale", "1e-4", "--norm", norm, "--threads", str(a.threads),
                    "--steps", str(a.steps), "--warmup", str(a.warmup), "--amp", amp
                    ] + (["--grn"] if grn else [])
                spec = dict(dim=dim, depth=depth, heads=heads, batch=batch, norm=norm, grn=grn,
                            threads=a.threads, steps=a.steps, warmup=a.warmup, amp=amp)
                cmds[("torch", amp)] = [python, os.path.abspath(__file__), "--torch-child",
                                        json.dumps(spec)]
            runs = {key: [] for key in cmds}  # in round order, len(envs) runs per round
            for _ in range(a.repeats):
                for wait, env in envs:
                    for key, cmd in cmds.items():
                        runs[key].append(dict(run_json(cmd, env), wait=wait))
            best, rounds = {}, {}
            for key, key_runs in runs.items():
                best[key] = dict(max(key_runs, key=lambda r: r["images_per_s"]),
                                 peak_rss_mb=max(r["peak_rss_mb"] for r in key_runs))
                rounds[key] = best_per_round(key_runs, a.repeats)
            if amps == ["fp32"]:
                v, t = best[("vitgrad", "fp32")], best[("torch", "fp32")]
                v_rss, t_rss = v["peak_rss_mb"], t["peak_rss_mb"]
                print(f"| {label} | {t['images_per_s']:.0f} | {v['images_per_s']:.0f} | "
                      f"{v['images_per_s'] / t['images_per_s']:.2f}x | "
                      f"{ceiling_text(v, t['images_per_s'])} | {t_rss:.0f} | {v_rss:.0f} | "
                      f"{v_rss / t_rss:.2f} | {v['gflops']:.0f} | {v['sgemm_gflops']:.0f} | "
                      f"{v['float_tiles']} + {v['blas_core']} | {t['wait']}, {v['wait']} | "
                      f"{ratios_text(rounds[('vitgrad', 'fp32')], rounds[('torch', 'fp32')])} |",
                      flush=True)
                continue
            ips = {key: r["images_per_s"] for key, r in best.items()}
            faster = max(ips[("torch", "fp32")], ips[("torch", "bf16")])
            faster_rounds = [max(f, b) for f, b in zip(rounds[("torch", "fp32")],
                                                      rounds[("torch", "bf16")])]
            vb = best[("vitgrad", "bf16")]
            print(f"| {label} | {ips[('torch', 'fp32')]:.1f} | {ips[('torch', 'bf16')]:.1f} | "
                  f"{ips[('vitgrad', 'fp32')]:.1f} | {ips[('vitgrad', 'bf16')]:.1f} | "
                  f"{ips[('vitgrad', 'bf16')] / faster:.2f}x | "
                  f"{ips[('vitgrad', 'bf16')] / ips[('vitgrad', 'fp32')]:.2f}x | "
                  f"{ips[('vitgrad', 'fp32')] / ips[('torch', 'fp32')]:.2f}x | "
                  f"{ceiling_text(vb, faster)} | "
                  f"{ceiling_text(best[('vitgrad', 'fp32')], ips[('torch', 'fp32')])} | "
                  f"{vb['gflops']:.0f} | {vb['bf16_gemm_gflops']:.0f} ({vb['bf16_units']}) | "
                  f"{vb['sgemm_gflops']:.0f} | "
                  f"{best[('torch', 'fp32')]['wait']}, {best[('torch', 'bf16')]['wait']}; "
                  f"{best[('vitgrad', 'fp32')]['wait']}, {vb['wait']} | "
                  f"{ratios_text(rounds[('vitgrad', 'bf16')], faster_rounds)} | "
                  f"{ratios_text(rounds[('vitgrad', 'bf16')], rounds[('vitgrad', 'fp32')])} | "
                  f"{ratios_text(rounds[('vitgrad', 'fp32')], rounds[('torch', 'fp32')])} |",
                  flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}; processors over the whole run: "
          f"{shares_text(ticks_at_start, cpu_ticks())}")


if __name__ == "__main__":
    main()
