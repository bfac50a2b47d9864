"""The geometry of channel-tiny (a dense Gemma 4 decoder) and its presets. Plain Python, so that
the exporter and the tests need no PyTorch."""

import dataclasses


@dataclasses.dataclass
class Config:
    n_vocab: int = 4096
    n_embd: int = 384
    n_layer: int = 8
    n_head: int = 6
    n_head_kv: int = 2          # sliding layers
    n_head_kv_global: int = 1
    head_dim: int = 64          # sliding layers
    head_dim_global: int = 128
    n_ff: int = 1536
    sliding_window: int = 128
    sliding_period: int = 4     # every period-th layer is global, and the last one
    rotary_fraction: float = 0.25
    rope_base: float = 1e4
    rope_base_global: float = 1e6
    eps: float = 1e-6
    softcap: float = 30.0

    def is_global(self, il):
        return il == self.n_layer - 1 or il % self.sliding_period == self.sliding_period - 1

    def rotated_pairs(self):
        # The count llama.cpp's rope_freqs marks as rotating (synthesizer.cpp rounds the same way).
        return max(1, round(self.head_dim_global // 2 * self.rotary_fraction))


PRESETS = {
    # The shipped model: ~20M parameters, a Q8_0 GGUF of ~22 MB.
    "tiny": Config(),
    # For smoke tests on a CPU: the same structure, minutes to train.
    "smoke": Config(n_embd=64, n_layer=4, n_head=2, n_head_kv=1, n_head_kv_global=1, head_dim=32,
                    head_dim_global=64, n_ff=128, sliding_window=32, sliding_period=2),
}
