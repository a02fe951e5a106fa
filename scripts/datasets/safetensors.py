"""A reader for the safetensors format, so the models need neither torch nor
the safetensors package: an 8-byte little-endian header length, a JSON header
(name -> dtype, shape, byte range), then the raw tensors."""

import json
import struct
from typing import Dict

import numpy as np


def load(raw: bytes) -> Dict[str, np.ndarray]:
    """float32 tensors of a safetensors blob, as read-only views into it."""
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + header_len])
    start = 8 + header_len
    tensors = {}
    for name, info in header.items():
        # The models here are fp32 throughout; "__metadata__" is not a tensor.
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        lo, hi = info["data_offsets"]
        tensors[name] = np.frombuffer(raw, dtype="<f4", count=(hi - lo) // 4,
                                      offset=start + lo).reshape(info["shape"])
    return tensors
