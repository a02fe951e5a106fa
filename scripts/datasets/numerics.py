"""The transformer pieces both models share, in float32.

The data set's sha256 are those of the files these functions produce, so
the order of every float operation matters: changing how a sum is grouped
changes the last bit of some vectors and with it the checksums
(checksums.json). Change nothing here without regenerating and re-recording.
"""

import numpy as np

# erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7, below float32's
# resolution around 1): torch's exact "gelu" in numpy, which has no erf.
_P = np.float32(0.3275911 * 0.7071067811865476)   # p / sqrt(2): the argument is x / sqrt(2)
_A1, _A2, _A3, _A4, _A5 = (np.float32(c) for c in
                           (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))


def gelu_inplace(h: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
    """gelu(x) = x * Phi(x) = max(x, 0) - 0.5 |x| erfc(|x| / sqrt 2), in place.

    Written as max(x, 0) minus a positive tail so no cancellation happens for
    large |x|; worked through in chunks so the temporaries stay in cache.
    """
    flat = h.reshape(-1)
    scratch = np.empty((4, chunk), np.float32)
    for s in range(0, flat.size, chunk):
        x = flat[s:s + chunk]
        n = x.size
        ax, t, poly, g = scratch[0, :n], scratch[1, :n], scratch[2, :n], scratch[3, :n]
        np.abs(x, out=ax)
        np.multiply(ax, _P, out=t)
        t += np.float32(1)
        np.reciprocal(t, out=t)                     # t = 1 / (1 + p |x| / sqrt 2)
        np.multiply(t, _A5, out=poly)               # Horner: t (a1 + t (a2 + ... t a5))
        poly += _A4
        poly *= t
        poly += _A3
        poly *= t
        poly += _A2
        poly *= t
        poly += _A1
        poly *= t
        np.multiply(ax, ax, out=g)
        g *= np.float32(-0.5)
        np.exp(g, out=g)                            # exp(-x^2 / 2)
        poly *= g
        poly *= ax
        poly *= np.float32(0.5)                     # the tail 0.5 |x| erfc(|x| / sqrt 2)
        np.maximum(x, np.float32(0), out=x)
        x -= poly
    return h


def layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: np.float32) -> np.ndarray:
    """LayerNorm over the last axis, biased variance, as torch computes it."""
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return centred / np.sqrt(var + eps) * gain + bias


def attention(x: np.ndarray, w_qkv: np.ndarray, b_qkv: np.ndarray, bias: np.ndarray,
              batch: int, length: int, heads: int) -> np.ndarray:
    """Multi-head self-attention context, (batch*length, hidden).

    Q, K and V come from one product with their weights side by side (one
    GEMM instead of three); `bias` is added to the scores before the softmax
    (padding mask, and for MPNet the relative-position bias).
    """
    hidden = x.shape[1]
    hd = hidden // heads
    qkv = (x @ w_qkv + b_qkv).reshape(batch, length, 3, heads, hd).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = (q @ k.transpose(0, 1, 3, 2)) * np.float32(1.0 / np.sqrt(hd)) + bias
    scores -= scores.max(-1, keepdims=True)       # softmax, shifted so exp cannot overflow
    np.exp(scores, out=scores)
    scores /= scores.sum(-1, keepdims=True)
    return (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, hidden)


def encoder_layer(x: np.ndarray, ly: dict, bias: np.ndarray, batch: int, length: int,
                  heads: int, eps: np.float32) -> np.ndarray:
    """One post-LayerNorm transformer layer (BERT and MPNet alike)."""
    ctx = attention(x, ly["w_qkv"], ly["b_qkv"], bias, batch, length, heads)
    x = layer_norm(x + (ctx @ ly["w_o"] + ly["b_o"]), ly["ln1_g"], ly["ln1_b"], eps)
    h = x @ ly["w_in"]
    h += ly["b_in"]
    gelu_inplace(h)
    return layer_norm(x + (h @ ly["w_out"] + ly["b_out"]), ly["ln2_g"], ly["ln2_b"], eps)


def padding_bias(mask: np.ndarray) -> np.ndarray:
    """Scores bias: 0 on real tokens, float32's lowest on padding keys."""
    return ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]


def mean_pool_normalised(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling over real tokens, then unit length."""
    pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
    norm = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return (pooled / norm).astype(np.float32)
