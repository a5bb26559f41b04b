#!/usr/bin/env python3
"""The weights' matrix products of one decode step of the 12b preset, in cuBLAS through PyTorch.

A device measurement (run on the GPU machine, not by users): for each batch of N sequences, the
time of one layer's seven products (q, k, v, o, gate, up, down: f16 weights, f16 activations)
times 48 layers, plus the output product over the 262,144-token vocabulary, the same shapes as
gpu-node/synth/presets.ts's `12b`. Against the weights' read at the device-to-device copy rate
measured here, it says whether a batched step's 2.5x over that bound (docs/benchmarks.md, seventh
round: 18.7 ms at 48 sequences in llama-batched-bench) is cuBLAS's own or llama.cpp's path around
it. CUDA events, 5 warm-up runs, the median of 20.

    python3 scripts/device/gemm-bound.py [--batches 1,16,48,96,192,256]
"""
import argparse
import statistics

import torch

EMBD, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 3840, 16, 8, 256, 15360, 48, 262144
# (rows out, columns in) of each product of a layer
LAYER = [
    (HEADS * HEAD_DIM, EMBD),
    (KV_HEADS * HEAD_DIM, EMBD),
    (KV_HEADS * HEAD_DIM, EMBD),
    (EMBD, HEADS * HEAD_DIM),
    (FFN, EMBD),
    (FFN, EMBD),
    (EMBD, FFN),
]


def timed(fn, warmup=5, runs=20):
    """Median milliseconds of fn() over `runs` CUDA-event timings after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="1,16,48,96,192,256")
    args = parser.parse_args()
    dev = torch.device("cuda")
    # One layer's weights: the 48 layers are timed as 48 passes over them, each pass after the L2
    # (50 MB) has been swept by the ~450 MB of a layer, so every pass reads them from memory.
    layer = [torch.randn(out, inp, device=dev, dtype=torch.float16) for out, inp in LAYER]
    output = torch.randn(VOCAB, EMBD, device=dev, dtype=torch.float16)
    weight_bytes = (sum(w.numel() for w in layer) * LAYERS + output.numel()) * 2

    src = torch.empty(1 << 30, device=dev, dtype=torch.uint8)
    dst = torch.empty_like(src)
    copy_ms = timed(lambda: dst.copy_(src))
    copy_tbs = 2 * src.numel() / copy_ms / 1e9  # bytes read and written
    print(f"{torch.cuda.get_device_name()}: a 1 GiB device copy moves {copy_tbs:.2f} TB/s (read + write)")
    bound_ms = weight_bytes / (copy_tbs * 1e9)
    print(f"weights read a step: {weight_bytes / 1e9:.2f} GB, {bound_ms:.2f} ms at that rate")
    print("| sequences | products a step (ms) | x the weights' read | TB/s |")
    print("|---:|---:|---:|---:|")
    for n in (int(b) for b in args.batches.split(",")):
        xs = {inp: torch.randn(n, inp, device=dev, dtype=torch.float16) for _, inp in LAYER}
        xo = torch.randn(n, EMBD, device=dev, dtype=torch.float16)

        def step():
            for _ in range(LAYERS):
                for w in layer:
                    torch.matmul(xs[w.shape[1]], w.t())
            torch.matmul(xo, output.t())

        ms = timed(step, warmup=2, runs=7)
        print(f"| {n} | {ms:.2f} | {ms / bound_ms:.2f} | {weight_bytes / ms / 1e9:.2f} |")


if __name__ == "__main__":
    main()
