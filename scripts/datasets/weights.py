"""Transformer layer weights rearranged for row-vector products (x @ W).

torch stores a Linear's weight as (out, in); the forward pass multiplies
activations on the left, so every matrix is transposed once here, and the
Q, K, V projections are stacked into one (in, 3*out) matrix.
"""

import numpy as np


def f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def layer(w: dict, prefix: str, names: dict) -> dict:
    """`names` maps our roles to the checkpoint's parameter names (without
    the per-layer prefix and the .weight/.bias suffix)."""
    g = lambda n: w[prefix + n]
    qkv = [names["q"], names["k"], names["v"]]
    return {
        "w_qkv": f32(np.concatenate([g(n + ".weight") for n in qkv], 0).T),
        "b_qkv": f32(np.concatenate([g(n + ".bias") for n in qkv])),
        "w_o": f32(g(names["o"] + ".weight").T), "b_o": f32(g(names["o"] + ".bias")),
        "ln1_g": f32(g(names["ln1"] + ".weight")), "ln1_b": f32(g(names["ln1"] + ".bias")),
        "w_in": f32(g("intermediate.dense.weight").T), "b_in": f32(g("intermediate.dense.bias")),
        "w_out": f32(g("output.dense.weight").T), "b_out": f32(g("output.dense.bias")),
        "ln2_g": f32(g("output.LayerNorm.weight")), "ln2_b": f32(g("output.LayerNorm.bias")),
    }
