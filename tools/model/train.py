"""Trains kvgraft's embedded model on the GPU machine (PyTorch; a developer's tool, never run by users).

Reads what `tools/model/dataset.ts` wrote (token ids tokenized by llama.cpp itself, the loss ranges,
the model's dimensions), trains a llama-layout decoder (RMSNorm, RoPE as llama.cpp's `llama`
architecture applies it, grouped-query attention, SwiGLU) and writes:
  weights.bin + weights.json  the tensors in GGUF order and names (norms f32, matrices f16)
  reference.json              next-token probabilities of the reference prompts, computed from the
                              f16-rounded weights in f32 (the parity test compares llama.cpp with it)
  train-log.json              loss curve, held-out loss, timings
Seeded: the same data and seed give the same run on the same machine and software.
  python3 tools/model/train.py --data DIR --out DIR
"""

import argparse
import gzip
import json
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F


# Batch lengths under --compile: multiples of this (4 shapes up to the 512-token context, each compiled once).
COMPILE_LENGTH_MULTIPLE = 128


def load_data(data_dir):
    config = json.load(open(os.path.join(data_dir, "dataset.json")))
    tokens = np.frombuffer(gzip.open(os.path.join(data_dir, "tokens.u16.gz")).read(), dtype=np.uint16)
    index = np.frombuffer(gzip.open(os.path.join(data_dir, "index.i32.gz")).read(), dtype=np.int32).reshape(-1, 7)
    return config, tokens, index


class Model(torch.nn.Module):
    """The llama layout llama.cpp runs: its tensor names map one to one onto GGUF's."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        d, hd = spec["embd"], spec["headDim"]
        self.tok = torch.nn.Embedding(spec["vocab"], d)
        self.layers = torch.nn.ModuleList()
        for _ in range(spec["layers"]):
            layer = torch.nn.Module()
            layer.attn_norm = torch.nn.Parameter(torch.ones(d))
            layer.q = torch.nn.Linear(d, spec["heads"] * hd, bias=False)
            layer.k = torch.nn.Linear(d, spec["kvHeads"] * hd, bias=False)
            layer.v = torch.nn.Linear(d, spec["kvHeads"] * hd, bias=False)
            layer.o = torch.nn.Linear(spec["heads"] * hd, d, bias=False)
            layer.ffn_norm = torch.nn.Parameter(torch.ones(d))
            layer.gate = torch.nn.Linear(d, spec["ffn"], bias=False)
            layer.up = torch.nn.Linear(d, spec["ffn"], bias=False)
            layer.down = torch.nn.Linear(spec["ffn"], d, bias=False)
            self.layers.append(layer)
        self.out_norm = torch.nn.Parameter(torch.ones(d))
        # Residual dropout while training (against memorizing the phrasings); eval() turns it off.
        self.drop = torch.nn.Dropout(spec.get("dropout", 0.0))
        self.out = torch.nn.Linear(d, spec["vocab"], bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * spec["layers"]) if name.endswith(("o.weight", "down.weight")) else 0.02
                torch.nn.init.normal_(p, 0.0, std)
        # llama.cpp's normal RoPE: pairs (2i, 2i+1) turned by pos * base^(-2i/headDim).
        inv = spec["ropeBase"] ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        pos = torch.arange(spec["trainContext"], dtype=torch.float64)
        angles = torch.outer(pos, inv)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def norm(self, x, w):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.spec["rmsEps"])).to(x.dtype) * w.to(x.dtype)

    def rope(self, x):  # x: [B, H, T, hd]
        t = x.shape[2]
        cos, sin = self.cos[:t].to(x.dtype), self.sin[:t].to(x.dtype)
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)

    def forward(self, ids):
        s = self.spec
        b, t = ids.shape
        hd, h, kv = s["headDim"], s["heads"], s["kvHeads"]
        x = self.tok(ids)
        for layer in self.layers:
            y = self.norm(x, layer.attn_norm)
            q = layer.q(y).view(b, t, h, hd).transpose(1, 2)
            k = layer.k(y).view(b, t, kv, hd).transpose(1, 2)
            v = layer.v(y).view(b, t, kv, hd).transpose(1, 2)
            q, k = self.rope(q), self.rope(k)
            k = k.repeat_interleave(h // kv, dim=1)
            v = v.repeat_interleave(h // kv, dim=1)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.drop(layer.o(a.transpose(1, 2).reshape(b, t, h * hd)))
            y = self.norm(x, layer.ffn_norm)
            x = x + self.drop(layer.down(F.silu(layer.gate(y)) * layer.up(y)))
        return self.out(self.norm(x, self.out_norm))

    def gguf_tensors(self):
        """(GGUF name, tensor, is_matrix) in the order of gpu-node/synth/synth-model.ts's tensorList."""
        yield "token_embd.weight", self.tok.weight, True
        yield "output_norm.weight", self.out_norm, False
        yield "output.weight", self.out.weight, True
        for i, l in enumerate(self.layers):
            p = f"blk.{i}."
            yield p + "attn_norm.weight", l.attn_norm, False
            yield p + "attn_q.weight", l.q.weight, True
            yield p + "attn_k.weight", l.k.weight, True
            yield p + "attn_v.weight", l.v.weight, True
            yield p + "attn_output.weight", l.o.weight, True
            yield p + "ffn_norm.weight", l.ffn_norm, False
            yield p + "ffn_gate.weight", l.gate.weight, True
            yield p + "ffn_up.weight", l.up.weight, True
            yield p + "ffn_down.weight", l.down.weight, True


def batches(index, tokens, batch_size, context, rng, device, bucket=0, multiple=1):
    """Random batches of whole transcripts, padded on the right; targets -100 outside the loss ranges.

    With bucket > 0, each run of bucket * batch_size shuffled transcripts is sorted by length and cut
    into batches, and the batches are shuffled: a batch of like lengths pads less (the data's mean
    transcript is ~264 tokens, the longest of a random batch of 128 ~390), so a step costs less.
    """
    order = rng.permutation(len(index))
    order = order[: len(order) // batch_size * batch_size]
    if bucket > 0:
        chunk = bucket * batch_size
        runs = [order[i : i + chunk] for i in range(0, len(order), chunk)]
        groups = np.concatenate([r[np.argsort(index[r, 1], kind="stable")] for r in runs]).reshape(-1, batch_size)
        order = groups[rng.permutation(len(groups))].reshape(-1)
    for start in range(0, len(order), batch_size):
        rows = index[order[start : start + batch_size]]
        yield make_batch(rows, tokens, context, device, multiple)


def make_batch(rows, tokens, context, device, multiple=1):
    # Padded up to a multiple of `multiple`: a compiled model sees a few shapes, not one per length.
    t = min(context, -(-int(rows[:, 1].max()) // multiple) * multiple)
    ids = np.zeros((len(rows), t), dtype=np.int64)
    labels = np.full((len(rows), t), -100, dtype=np.int64)
    for r, (off, n, a0, a1, b0, b1, _) in enumerate(rows):
        n = min(n, t)
        seq = tokens[off : off + n].astype(np.int64)
        ids[r, :n] = seq
        for s0, s1 in ((a0, a1), (b0, b1)):
            # Position p predicts token p + 1: a target token at j is learned at position j - 1.
            lo, hi = max(s0, 1), min(s1, n)
            if hi > lo:
                labels[r, lo - 1 : hi - 1] = seq[lo:hi]
    return torch.from_numpy(ids).to(device), torch.from_numpy(labels).to(device)


def evaluate(model, index, tokens, context, device, batch_size=256):
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        for start in range(0, len(index), batch_size):
            ids, labels = make_batch(index[start : start + batch_size], tokens, context, device)
            logits = model(ids).float()
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), reduction="sum", ignore_index=-100)
            total += loss.item()
            count += int((labels != -100).sum().item())
    model.train()
    return total / max(count, 1)


def write_weights(model, out_dir):
    entries, offset = [], 0
    with open(os.path.join(out_dir, "weights.bin"), "wb") as f:
        for name, tensor, is_matrix in model.gguf_tensors():
            data = tensor.detach().float().cpu().numpy()
            data = data.astype(np.float16 if is_matrix else np.float32)
            raw = data.tobytes()
            f.write(raw)
            entries.append({"name": name, "dtype": "f16" if is_matrix else "f32", "shape": list(data.shape), "offset": offset, "bytes": len(raw)})
            offset += len(raw)
    json.dump({"tensors": entries}, open(os.path.join(out_dir, "weights.json"), "w"), indent=1)


def reference_outputs(model, prompts, device, top):
    """Next-token probabilities after each prompt, from the f16-rounded weights computed in f32."""
    ref = Model(model.spec).to(device)
    with torch.no_grad():
        for (_, a, m), (_, b, _) in zip(ref.gguf_tensors(), model.gguf_tensors()):
            a.copy_(b.detach().to(torch.float16).float() if m else b.detach().float())
    ref.eval()
    results = []
    with torch.no_grad():
        for prompt in prompts:
            logits = ref(torch.tensor([prompt["tokens"]], device=device))[0, -1].double()
            probs = torch.softmax(logits, -1)
            p, i = probs.topk(top)
            results.append({"name": prompt["name"], "tokens": prompt["tokens"], "top": [[int(t), float(q)] for t, q in zip(i, p)]})
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=480,
        help="wall-clock budget (480 s; the committed model's compiled run needed 258) for the training loop: the learning rate's schedule runs on whichever of steps or time is further along, and training stops (then saves as usual, and says so) when the budget is spent",
    )
    ap.add_argument(
        "--compile",
        action="store_true",
        help="train through torch.compile (fuses the norms, RoPE and SwiGLU; its first steps compile; how the committed model was trained); runs are not bit-reproducible",
    )
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a training setting of dataset.json (e.g. dropout=0.2), for side-by-side runs")
    args = ap.parse_args()
    config, tokens, index = load_data(args.data)
    train = dict(config["training"])
    for item in args.set:
        key, value = item.split("=", 1)
        if key not in train:
            raise SystemExit(f"--set: no training setting {key}")
        train[key] = type(train[key])(float(value)) if isinstance(train[key], (int, float)) else value
    spec = dict(config["spec"], dropout=train["dropout"])
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(train["seed"])
    rng = np.random.default_rng(train["seed"])
    device = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True
    model = Model(spec).to(device)
    # The compiled module shares the parameters; evaluation and the reference outputs use the plain one.
    forward = torch.compile(model, dynamic=False) if args.compile else model
    multiple = COMPILE_LENGTH_MULTIPLE if args.compile else 1
    params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": train["weightDecay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=train["lr"], betas=(0.9, 0.95), fused=True,
    )
    split = index[:, 6]
    train_rows, held_rows = index[split == 0], index[split == 1]
    steps, warmup = train["steps"], train["warmupSteps"]
    log = {"params": params, "steps": steps, "maxSeconds": args.max_seconds, "compiled": args.compile, "torch": torch.__version__, "settings": train, "loss": [], "heldOutLoss": []}
    print(f"params {params}, train transcripts {len(train_rows)}, held-out {len(held_rows)}, steps {steps}", flush=True)
    started = time.time()
    step = 0
    epoch = 0
    while step < steps:
        for ids, labels in batches(train_rows, tokens, train["batchSize"], spec["trainContext"], rng, device, train.get("bucketBatches", 0), multiple):
            elapsed = time.time() - started
            if step >= steps or elapsed > args.max_seconds:
                break
            # Cosine to 10% over whichever runs out first, the steps or the time budget, so a run
            # stopped by the budget still ends on a decayed learning rate.
            progress = min(1.0, max(step / steps, elapsed / args.max_seconds))
            lr = train["lr"] * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
            for g in opt.param_groups:
                g["lr"] = lr
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = forward(ids)
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            if step % 100 == 0 or step == 1:
                elapsed = time.time() - started
                log["loss"].append([step, round(loss.item(), 5), round(elapsed, 1)])
                print(f"step {step} loss {loss.item():.4f} lr {lr:.2e} {elapsed:.0f}s", flush=True)
            if step % train["evalEvery"] == 0 and len(held_rows):
                h = evaluate(model, held_rows[:2048], tokens, spec["trainContext"], device)
                log["heldOutLoss"].append([step, round(h, 5)])
                print(f"step {step} held-out loss {h:.4f}", flush=True)
        epoch += 1
        if step < steps and time.time() - started > args.max_seconds:
            print(f"stopped at step {step} of {steps}: past --max-seconds", flush=True)
            log["stoppedEarlyAtStep"] = step
            break
    log["trainSeconds"] = round(time.time() - started, 1)
    log["stepsRun"] = step
    log["epochs"] = epoch
    if len(held_rows):
        log["finalHeldOutLoss"] = round(evaluate(model, held_rows[:4096], tokens, spec["trainContext"], device), 5)
    write_weights(model, args.out)
    json.dump({"prompts": reference_outputs(model, config["referencePrompts"], device, 10)}, open(os.path.join(args.out, "reference.json"), "w"))
    json.dump(log, open(os.path.join(args.out, "train-log.json"), "w"), indent=1)
    print(f"done in {log['trainSeconds']} s, final held-out loss {log.get('finalHeldOutLoss')}", flush=True)


if __name__ == "__main__":
    main()
