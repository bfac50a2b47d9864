"""A minimal GGUF v3 reader and writer (the format of ggml's docs/gguf.md), so that the
pipeline needs nothing beyond Python and NumPy: the exporter writes the model with it and the
tests read vocabularies with it."""

import struct

import numpy as np

# Metadata value types (gguf.md).
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f",
           BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}

# Tensor types this pipeline writes, with (elements per block, bytes per block).
F32, F16, Q8_0 = 0, 1, 8
_BLOCK = {F32: (1, 4), F16: (1, 2), Q8_0: (32, 34)}

ALIGNMENT = 32


class Reader:
    """Metadata of a GGUF file as a dict key -> value (arrays as lists), and its tensor infos."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self._data = f.read()
        self._pos = 0
        magic, version = struct.unpack_from("<4sI", self._data, 0)
        if magic != b"GGUF" or version != 3:
            raise ValueError(f"{path}: not a GGUF v3 file")
        self._pos = 8
        n_tensors, n_kv = self._take("<QQ")
        self.metadata = {}
        for _ in range(n_kv):
            key = self._string()
            (value_type,) = self._take("<I")
            self.metadata[key] = self._value(value_type)
        self.tensors = {}
        for _ in range(n_tensors):
            name = self._string()
            (n_dims,) = self._take("<I")
            dims = self._take(f"<{n_dims}Q")
            tensor_type, offset = self._take("<IQ")
            self.tensors[name] = (list(dims), tensor_type, offset)

    def _take(self, fmt):
        values = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += struct.calcsize(fmt)
        return values

    def _string(self):
        (n,) = self._take("<Q")
        s = self._data[self._pos:self._pos + n].decode("utf-8")
        self._pos += n
        return s

    def _value(self, value_type):
        if value_type == STRING:
            return self._string()
        if value_type == ARRAY:
            element_type, n = self._take("<IQ")
            return [self._value(element_type) for _ in range(n)]
        return self._take(_SCALAR[value_type])[0]


class Writer:
    """Collects typed metadata and tensors, then writes them in the order they were added."""

    def __init__(self):
        self._metadata = []  # (key, type, value, element type for arrays)
        self._tensors = []   # (name, ggml dims (ne0 first), type, bytes)

    def add(self, key, value_type, value, element_type=None):
        self._metadata.append((key, value_type, value, element_type))

    def add_tensor(self, name, dims, tensor_type, data):
        block_elements, block_bytes = _BLOCK[tensor_type]
        n = int(np.prod(dims))
        if n % block_elements or len(data) != n // block_elements * block_bytes:
            raise ValueError(f"{name}: {len(data)} bytes do not hold {dims} of type {tensor_type}")
        self._tensors.append((name, list(dims), tensor_type, data))

    @staticmethod
    def _pack_string(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def _pack_value(self, value_type, value, element_type):
        if value_type == STRING:
            return self._pack_string(value)
        if value_type == ARRAY:
            out = [struct.pack("<IQ", element_type, len(value))]
            out += [self._pack_value(element_type, v, None) for v in value]
            return b"".join(out)
        return struct.pack(_SCALAR[value_type], value)

    def write(self, path):
        header = [struct.pack("<4sIQQ", b"GGUF", 3, len(self._tensors), len(self._metadata))]
        for key, value_type, value, element_type in self._metadata:
            header.append(self._pack_string(key) + struct.pack("<I", value_type))
            header.append(self._pack_value(value_type, value, element_type))
        offset = 0
        offsets = []
        for name, dims, tensor_type, data in self._tensors:
            offsets.append(offset)
            header.append(self._pack_string(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, tensor_type, offset))
            offset += (len(data) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        head = b"".join(header)
        with open(path, "wb") as f:
            f.write(head)
            f.write(b"\0" * (-len(head) % ALIGNMENT))
            for name, dims, tensor_type, data in self._tensors:
                f.write(data)
                f.write(b"\0" * (-len(data) % ALIGNMENT))


def quantize_q8_0(values):
    """Rows of f32 as Q8_0 blocks: per 32 values an f16 scale d = max|x| / 127 and int8 round(x / d),
    as ggml's reference quantizer computes them."""
    x = np.asarray(values, dtype=np.float32).reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = amax / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d > 0)
    scaled = x * inv[:, None]
    q = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int8)  # roundf: halves away from zero
    blocks = np.empty(x.shape[0], dtype=[("d", "<f2"), ("q", "i1", 32)])
    blocks["d"] = d.astype(np.float16)
    blocks["q"] = q
    return blocks.tobytes()
