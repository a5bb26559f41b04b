#!/usr/bin/env python3
"""Draws the benchmark plots in docs/plots/ from the committed JSON results in docs/results/.

Needs matplotlib (Debian: apt-get install python3-matplotlib; then run with /usr/bin/python3):
    /usr/bin/python3 scripts/plot-benchmarks.py
"""
import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = pathlib.Path(__file__).resolve().parent.parent
results = root / "docs" / "results"
plots = root / "docs" / "plots"
plots.mkdir(parents=True, exist_ok=True)
MACHINE = "NVIDIA H200, node-llama-cpp 3.21.1 (CUDA sm_90), 2026-11-29"


def load(name):
    return json.loads((results / name).read_text())


def speedup_plot():
    fig, ax = plt.subplots(figsize=(8, 5))
    styles = {"hot": "o-", "warm": "s--", "cold": "^:"}
    for kv, color in (("f16", "tab:blue"), ("q8_0", "tab:orange")):
        rows = load(f"graft-12b-{kv}-h200.json")["results"]
        lengths = [r["length"] for r in rows]
        for tier in ("hot", "warm", "cold"):
            ax.plot(lengths, [r[f"{tier}Speedup"] for r in rows], styles[tier], color=color, label=f"{tier} ({kv} KV)")
    # The reference report: restore + 1 token at 11,994 tokens (12B, RTX 5090), disk restore at 748 and 5,977.
    ax.plot([11994], [85.6], "*", color="black", markersize=14, label="reference: restore + 1 token (85.6x)")
    ax.plot([748, 5977], [1.7, 8.7], "P", color="gray", markersize=10, label="reference: disk restore (1.7x, 8.7x)")
    ax.axhline(1, color="red", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("speedup vs recompute (prefill + 1 token)")
    ax.set_title(f"Speedup by tier, 12b preset\n{MACHINE}\nkvgraft bench graft --lengths 748,5977,11994 --kv f16|q8_0 --runs 5", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(plots / "speedup-vs-length.png", dpi=120)


def library_plot():
    lib = load("library-1b-compact-kv-h200.json")
    depths = [d["depth"] / 1e6 for d in lib["depths"]]
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(depths, [d["coldMedianMs"] for d in lib["depths"]], "o-", label="cold (disk, hash-checked) median")
    ax.plot(depths, [d["coldP95Ms"] for d in lib["depths"]], "o:", label="cold p95")
    ax.plot(depths, [d["warmMedianMs"] for d in lib["depths"]], "s-", label="warm (RAM) median")
    ax.plot(depths, [d["warmP95Ms"] for d in lib["depths"]], "s:", label="warm p95")
    ax.axhline(290, color="gray", linestyle="--", label="reference: ~290 ms per access")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("depth in the library (million tokens)")
    ax.set_ylabel("access time (ms): restore + probe check + query")
    ax.set_title(
        f"Library of {lib['libraryTokens']:,} tokens in {lib['blocks']} blocks, 1b-compact-kv, q8_0 KV\n{MACHINE}\n"
        "kvgraft bench library --blocks 88 --block-tokens 32768 --accesses 3",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(plots / "library-access-vs-depth.png", dpi=120)


def state_bytes_plot():
    bars = []
    for kv in ("f16", "q8_0"):
        r = load(f"graft-12b-{kv}-h200.json")["results"][-1]
        bars.append((f"12b\n{kv}", r["stateBytes"] / r["length"]))
    v = load("verify-1b-h200.json")
    bars.append(("1b\nf16", v["stateBytes"] / v["tokens"]))
    lib = load("library-1b-compact-kv-h200.json")
    bars.append(("1b-compact-kv\nq8_0", lib["bytesOnDisk"] / lib["libraryTokens"]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.bar([b[0] for b in bars], [b[1] / 1024 for b in bars], color=["tab:blue", "tab:orange", "tab:green", "tab:purple"])
    for i, (_, value) in enumerate(bars):
        ax.text(i, value / 1024, f"{value / 1024:.1f} KiB", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("state bytes per token (KiB)")
    ax.set_title(f"KV state per token by model layout and KV type\n{MACHINE}", fontsize=9)
    fig.tight_layout()
    fig.savefig(plots / "state-bytes-per-token.png", dpi=120)


speedup_plot()
library_plot()
state_bytes_plot()
print("wrote", ", ".join(sorted(p.name for p in plots.glob("*.png"))))
