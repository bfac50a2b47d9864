"""Writes trained weights (train.py's output directory) and the vocabulary as a GGUF file in
llama.cpp's gemma4 layout: F32, or Q8_0 for the matrices and the embedding (norms, layer scales
and rope_freqs stay F32).

    python3 export.py --weights OUT --vocab vocab.json --type q8_0 -o channel-tiny.gguf
    python3 export.py --vocab vocab.json -o channel-tiny-vocab.gguf      # tokenizer only
"""

import argparse
import dataclasses
import json

import numpy as np

import config
import gguf_file as gg
import weights

# general.file_type values (llama.cpp's llama_ftype).
FILE_TYPE_ALL_F32, FILE_TYPE_MOSTLY_Q8_0 = 0, 7

# PyTorch module names (model.py) -> GGUF tensor names, per layer.
LAYER_TENSORS = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
                 "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm",
                 "layer_output_scale"]


def metadata(w, c, vocab, file_type, name):
    arch = "gemma4"
    w.add("general.architecture", gg.STRING, arch)
    w.add("general.name", gg.STRING, name)
    w.add("general.file_type", gg.UINT32, file_type)
    w.add("general.quantization_version", gg.UINT32, 2)
    k = lambda s: f"{arch}.{s}"
    w.add(k("context_length"), gg.UINT32, 4096)
    w.add(k("embedding_length"), gg.UINT32, c.n_embd)
    w.add(k("block_count"), gg.UINT32, c.n_layer)
    w.add(k("feed_forward_length"), gg.UINT32, c.n_ff)
    w.add(k("attention.head_count"), gg.UINT32, c.n_head)
    w.add(k("attention.head_count_kv"), gg.ARRAY,
          [c.n_head_kv_global if c.is_global(il) else c.n_head_kv for il in range(c.n_layer)], gg.INT32)
    w.add(k("attention.layer_norm_rms_epsilon"), gg.FLOAT32, c.eps)
    w.add(k("attention.sliding_window"), gg.UINT32, c.sliding_window)
    w.add(k("attention.sliding_window_pattern"), gg.ARRAY, [not c.is_global(il) for il in range(c.n_layer)], gg.BOOL)
    w.add(k("attention.key_length"), gg.UINT32, c.head_dim_global)
    w.add(k("attention.value_length"), gg.UINT32, c.head_dim_global)
    w.add(k("attention.key_length_swa"), gg.UINT32, c.head_dim)
    w.add(k("attention.value_length_swa"), gg.UINT32, c.head_dim)
    w.add(k("attention.shared_kv_layers"), gg.UINT32, 0)
    w.add(k("embedding_length_per_layer_input"), gg.UINT32, 0)
    w.add(k("final_logit_softcapping"), gg.FLOAT32, c.softcap)
    w.add(k("rope.dimension_count"), gg.UINT32, c.head_dim_global)
    w.add(k("rope.dimension_count_swa"), gg.UINT32, c.head_dim)
    w.add(k("rope.freq_base"), gg.FLOAT32, c.rope_base_global)
    w.add(k("rope.freq_base_swa"), gg.FLOAT32, c.rope_base)
    ids = {t: i for i, t in enumerate(vocab["tokens"])}
    w.add("tokenizer.ggml.model", gg.STRING, "gemma4")
    w.add("tokenizer.ggml.tokens", gg.ARRAY, vocab["tokens"], gg.STRING)
    w.add("tokenizer.ggml.scores", gg.ARRAY, [0.0] * len(vocab["tokens"]), gg.FLOAT32)
    w.add("tokenizer.ggml.token_type", gg.ARRAY, vocab["types"], gg.INT32)
    w.add("tokenizer.ggml.merges", gg.ARRAY, vocab["merges"], gg.STRING)
    w.add("tokenizer.ggml.bos_token_id", gg.UINT32, ids["<bos>"])
    w.add("tokenizer.ggml.eos_token_id", gg.UINT32, ids["<eos>"])
    w.add("tokenizer.ggml.unknown_token_id", gg.UINT32, ids["<unk>"])
    w.add("tokenizer.ggml.padding_token_id", gg.UINT32, ids["<pad>"])
    w.add("tokenizer.ggml.mask_token_id", gg.UINT32, ids["<mask>"])
    w.add("tokenizer.ggml.add_bos_token", gg.BOOL, True)
    w.add("tokenizer.ggml.add_space_prefix", gg.BOOL, False)


def export(weights_dir, vocab, out, quantize, name="channel-tiny"):
    c, state = weights.load(weights_dir)
    if c.n_vocab != len(vocab["tokens"]):
        raise SystemExit(f"the weights have {c.n_vocab} tokens, the vocabulary {len(vocab['tokens'])}")
    w = gg.Writer()
    metadata(w, c, vocab, FILE_TYPE_MOSTLY_Q8_0 if quantize else FILE_TYPE_ALL_F32, name)

    def tensor(gguf_name, value, matrix):
        a = value.astype(np.float32)
        dims = list(reversed(a.shape))  # ggml lists the fastest-varying dimension first
        if matrix and quantize:
            w.add_tensor(gguf_name, dims, gg.Q8_0, gg.quantize_q8_0(a))
        else:
            w.add_tensor(gguf_name, dims, gg.F32, a.tobytes())

    tensor("token_embd.weight", state["token_embd.weight"], True)
    tensor("output_norm.weight", state["output_norm.weight"], False)
    # Proportional RoPE of global layers as llama.cpp encodes it: factor 1 for the rotated
    # frequency pairs, 1e30 (no rotation) for the rest.
    pairs = c.head_dim_global // 2
    factors = np.array([1.0 if i < c.rotated_pairs() else 1e30 for i in range(pairs)], dtype=np.float32)
    w.add_tensor("rope_freqs.weight", [pairs], gg.F32, factors.tobytes())
    for il in range(c.n_layer):
        for t in LAYER_TENSORS:
            value = state[f"layers.{il}.{t}.weight" if t != "layer_output_scale" else f"layers.{il}.{t}"]
            tensor(f"blk.{il}.{t}.weight", value, value.ndim == 2)
    w.write(out)


def export_vocabulary(vocab, out, preset="tiny"):
    """A GGUF with the tokenizer and a preset's metadata but no tensors, as llama.cpp's vocab-only
    files are (for tokenizer tests)."""
    c = dataclasses.replace(config.PRESETS[preset], n_vocab=len(vocab["tokens"]))
    w = gg.Writer()
    metadata(w, c, vocab, FILE_TYPE_ALL_F32, "channel-tiny-vocab")
    w.write(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", help="directory train.py wrote (without it: the vocabulary only)")
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--type", choices=["f32", "q8_0"], default="q8_0")
    parser.add_argument("-o", "--out", required=True)
    args = parser.parse_args()
    with open(args.vocab) as f:
        vocab = json.load(f)
    if args.weights:
        export(args.weights, vocab, args.out, args.type == "q8_0")
    else:
        export_vocabulary(vocab, args.out)


if __name__ == "__main__":
    main()
