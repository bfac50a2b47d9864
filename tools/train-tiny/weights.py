"""Trained weights on disk: the tensors as fp16, back to back, cut into chunks of at most
15 MiB (the device machine returns files of at most 16 MB), and weights.json with the
geometry and each tensor's offset. NumPy only, so that the exporter needs no PyTorch."""

import json
import os

import numpy as np

from config import Config

CHUNK_BYTES = 15 * 1024 * 1024


def save(directory, config, tensors, extra):
    """tensors: name -> NumPy array (any float type)."""
    index, blobs, offset = [], [], 0
    for name, value in tensors.items():
        a = np.asarray(value, dtype=np.float32).astype(np.float16)
        index.append({"name": name, "shape": list(a.shape), "offset": offset})
        blobs.append(a.tobytes())
        offset += a.nbytes
    blob = b"".join(blobs)
    chunks = [blob[i:i + CHUNK_BYTES] for i in range(0, len(blob), CHUNK_BYTES)]
    for i, chunk in enumerate(chunks):
        with open(os.path.join(directory, f"weights.bin.{i:03d}"), "wb") as f:
            f.write(chunk)
    meta = {"config": config.__dict__, "dtype": "float16", "chunks": len(chunks), "tensors": index, **extra}
    with open(os.path.join(directory, "weights.json"), "w") as f:
        json.dump(meta, f, indent=1)


def load(directory):
    """(Config, {name: float32 NumPy array}) from a directory save() wrote."""
    with open(os.path.join(directory, "weights.json")) as f:
        meta = json.load(f)
    blob = b"".join(open(os.path.join(directory, f"weights.bin.{i:03d}"), "rb").read() for i in range(meta["chunks"]))
    tensors = {}
    for t in meta["tensors"]:
        n = int(np.prod(t["shape"]))
        a = np.frombuffer(blob, dtype=np.float16, count=n, offset=t["offset"]).astype(np.float32)
        tensors[t["name"]] = a.reshape(t["shape"])
    return Config(**meta["config"]), tensors
