#!/usr/bin/python3
"""The one-chip transformer against PyTorch (an independent framework, autograd).

Usage: transformer_torch.py TRANSFORMER_RUN WORKDIR

Writes token files (y = the previous token, a learnable task), runs
tests/cli/transformer_run (the library on files: random init from a seed saved
as the named .npy files, STEPS SGD steps, the final parameters saved), builds the
model of shared/reference/transformer.md in torch (float64, autograd) from the
same init files, runs the same steps and compares: f32 losses and final weights
within 1e-5 relative (weights relative to each parameter's largest entry),
bf16 within 2e-2 (bf16 matmul inputs: 8 significant bits).  Exit 77 (skipped)
with one line when /usr/bin/python3 has no torch.
"""
import math
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIP: {sys.executable} lacks torch or numpy ({e}); "
          "apt-get install python3-torch python3-numpy")
    sys.exit(77)

L, D, H, F, V, S, B = 2, 32, 4, 64, 50, 16, 4
ROWS, STEPS, LR, SEED = 16, 6, 0.3, 5
TOL = {"f32": 1e-5, "bf16": 2e-2}


def names():
    out = ["embed", "pos"]
    for l in range(L):
        out += [f"l{l}_{n}" for n in ("norm1", "wq", "wk", "wv", "wo", "norm2", "w1", "w2")]
    return out + ["norm_f", "unembed"]


def rms(x, g):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g


def loss_fn(p, x, y):
    dh = D // H
    h = p["embed"][x] + p["pos"]  # [B, S, D]
    mask = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
    for l in range(L):
        w = lambda n: p[f"l{l}_{n}"]
        a = rms(h, w("norm1"))
        q, k, v = (
            (a @ w(n)).view(B, S, H, dh).transpose(1, 2) for n in ("wq", "wk", "wv"))
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)
        s = s.masked_fill(mask, -1e9)
        o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, S, D)
        h = h + o @ w("wo")
        m = rms(h, w("norm2"))
        u = m @ w("w1")
        g = 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))
        h = h + g @ w("w2")
    logits = rms(h, p["norm_f"]) @ p["unembed"]
    return torch.nn.functional.cross_entropy(logits.reshape(B * S, V), y.reshape(B * S))


def torch_train(init_dir, xs, ys):
    p = {n: torch.tensor(np.load(os.path.join(init_dir, n + ".npy")), dtype=torch.float64,
                         requires_grad=True) for n in names()}
    losses = []
    nb = ROWS // B
    for t in range(STEPS):
        r = (t % nb) * B
        x = torch.tensor(xs[r:r + B], dtype=torch.long)
        y = torch.tensor(ys[r:r + B], dtype=torch.long)
        loss = loss_fn(p, x, y)
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for t_ in p.values():
                t_ -= LR * t_.grad
                t_.grad = None
    return losses, {n: t.detach().numpy() for n, t in p.items()}


def main():
    run, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(3)
    xs = rng.integers(0, V, size=(ROWS, S), dtype=np.int32)
    ys = np.concatenate([xs[:, :1], xs[:, :-1]], axis=1).astype(np.int32)
    xp, yp = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
    np.save(xp, xs)
    np.save(yp, ys)
    init = os.path.join(work, "init")
    ok = True
    for dtype in ("f32", "bf16"):
        final = os.path.join(work, "final_" + dtype)
        os.makedirs(init, exist_ok=True)
        os.makedirs(final, exist_ok=True)
        # f32 makes the init from the seed; bf16 reads it back (the load path).
        seed = str(SEED) if dtype == "f32" else "-"
        cmd = [run, *map(str, (L, D, H, F, V, S, B, STEPS, LR)), dtype, seed, init, xp, yp, final]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"FAIL: {' '.join(cmd)}: {out.stderr.strip()}")
            return 1
        ours = [float(line.split()[2]) for line in out.stdout.splitlines()
                if line.startswith("loss ")]
        ref, ref_w = torch_train(init, xs, ys)
        loss_err = max(abs(a - b) / abs(b) for a, b in zip(ours, ref))
        w_err, w_name = 0.0, ""
        for n in names():
            w = np.load(os.path.join(final, n + ".npy")).astype(np.float64)
            e = np.abs(w - ref_w[n]).max() / np.abs(ref_w[n]).max()
            if e > w_err:
                w_err, w_name = e, n
        print(f"{dtype}: losses tpuemu {' '.join(f'{v:.6f}' for v in ours)}")
        print(f"{dtype}: losses torch  {' '.join(f'{v:.6f}' for v in ref)}")
        print(f"{dtype}: largest relative difference: loss {loss_err:.3g}, "
              f"final weights {w_err:.3g} ({w_name}); tolerance {TOL[dtype]}")
        if len(ours) != STEPS or loss_err > TOL[dtype] or w_err > TOL[dtype]:
            print(f"FAIL: {dtype} differs from torch")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
