#!/usr/bin/env python3
"""A Hugging Face model directory gives the model its GGUF conversion gives.

The oracle: llama.cpp's convert_hf_to_gguf.py cannot run here (it needs torch and transformers,
neither of which is a Debian package of this system), so this test runs it backwards. For each
case Channel synthesizes a random-weight GGUF; this script reads it and writes the Hugging Face directory that the converter would turn into that GGUF, from the
converter's own rules (conversion/gemma.py, conversion/base.py, gguf-py's tensor_mapping and
vocab.py), written out here independently of Channel's C++ reader:

  - tensor names: token_embd -> model.embed_tokens, blk.N.attn_q -> model.layers.N.self_attn.q_proj,
    ..., with the "language_model." level of the *ForConditionalGeneration checkpoints;
  - Gemma 3 norm weights stored as w - 1 (the converter adds 1 to every "*norm.weight");
  - the token embedding with extra rows past the vocabulary (Gemma 3's image tokens; the
    converter cuts them off); a vision tensor the converter skips;
  - Gemma 4's rope_freqs not stored but described by rope_parameters.full_attention's
    proportional partial_rotary_factor; layer_output_scale as model.layers.N.layer_scalar;
    attention_k_eq_v where global layers have no attn_v;
  - Gemma 4 E-models: per_layer_token_embd etc. as model.embed_tokens_per_layer, ...; blk.N.inp_gate,
    proj, post_norm as per_layer_input_gate, per_layer_projection, post_per_layer_input_norm; KV-shared
    layers without k_proj, v_proj, k_norm; num_kv_shared_layers, hidden_size_per_layer_input and
    use_double_wide_mlp where the GGUF's feed_forward_length doubles on the shared layers;
  - Gemma 4 mixtures of experts: ffn_gate_inp as router.proj, its .scale as router.scale,
    ffn_down_exps.scale as router.per_expert_scale, ffn_gate_up_exps / ffn_down_exps as the 3-D
    experts.gate_up_proj / experts.down_proj (no ".weight": Gemma4Model.filter_tensors appends it),
    the extra norms as pre_feedforward_layernorm_2, post_feedforward_layernorm_1/_2; num_experts,
    top_k_experts, moe_intermediate_size and enable_moe_block;
  - config.json with the keys the converter reads (text_config for the multimodal classes);
  - Gemma 4: tokenizer.json (BPE vocab, merges as pairs, added tokens) and tokenizer_config.json
    naming the special tokens, which LlamaHfVocab turns back into the GGUF's tokens and types;
    Gemma 3: tokenizer.model, a SentencePiece ModelProto with the GGUF's pieces, scores and types.

Then `channel eval` must give byte-identical logits (and the same argmax) on the directory and on
the GGUF, as stored and (one case per arch) quantized on load with --q4, and `channel tokenize` the
same ids for a set of strings. Cases cover F32 and BF16 weights, both model classes of each
architecture, one file and two shards, a Gemma 4 E-model and a Gemma 4 mixture of experts.
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

from parity_common import existing_file, labelled_ids, make_prompt, run

TOKENIZE_STRINGS = [
    "Hello world",
    "  leading spaces and\ttabs\nnewlines",
    "<|turn>user\nWrite one sentence.<turn|>\n<|turn>model\n",
    "<|channel>thought\nhmm<channel|><|tool_call>call:f{a:<|\"|>x<|\"|>}<tool_call|>",
    "Unicode: naïve café 日本語 😀 \x01\x7f",
    "<bos><eos><unk><pad><mask> not special here? <start_of_turn>",
]

# (name, arch, model class, weight type, shards, also compared after --q4 (once per arch keeps the
# test short), synth flags of the variant)
CASES = [
    ("gemma4-f32", "gemma4", "Gemma4ForConditionalGeneration", "f32", 1, True, []),
    ("gemma4-bf16", "gemma4", "Gemma4ForCausalLM", "bf16", 2, False, []),
    ("gemma3-f32", "gemma3", "Gemma3ForCausalLM", "f32", 2, False, []),
    ("gemma3-bf16", "gemma3", "Gemma3ForConditionalGeneration", "bf16", 1, True, []),
    # 4 layers of period 2, the last 2 KV-shared: layer 2 reads layer 0's KV, layer 3 layer 1's.
    ("gemma4e-f32", "gemma4", "Gemma4ForCausalLM", "f32", 1, False, ["--ple", "16", "--kv-shared", "2"]),
    ("gemma4moe-bf16", "gemma4", "Gemma4ForConditionalGeneration", "bf16", 2, False,
     ["--experts", "4", "--experts-used", "2"]),
]

EXTRA_EMBEDDING_ROWS = 64  # rows past the vocabulary, as Gemma 3's checkpoints carry for image tokens

# gguf-py's tensor_mapping for gemma3/gemma4, GGUF -> Hugging Face (per layer: blk.N.X -> model.layers.N.Y).
LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
    "post_attention_norm.weight": "post_attention_layernorm.weight",
    "ffn_norm.weight": "pre_feedforward_layernorm.weight",
    "post_ffw_norm.weight": "post_feedforward_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
    "layer_output_scale.weight": "layer_scalar",  # Gemma4Model.filter_tensors appends ".weight" to it
    # E-models (PER_LAYER_INP_GATE, PER_LAYER_PROJ, PER_LAYER_POST_NORM)
    "inp_gate.weight": "per_layer_input_gate.weight",
    "proj.weight": "per_layer_projection.weight",
    "post_norm.weight": "post_per_layer_input_norm.weight",
    # Mixture of experts: Gemma4Model.modify_tensors renames router.scale and per_expert_scale;
    # filter_tensors appends ".weight" to the experts' parameters.
    "pre_ffw_norm_2.weight": "pre_feedforward_layernorm_2.weight",
    "post_ffw_norm_1.weight": "post_feedforward_layernorm_1.weight",
    "post_ffw_norm_2.weight": "post_feedforward_layernorm_2.weight",
    "ffn_gate_inp.weight": "router.proj.weight",
    "ffn_gate_inp.scale": "router.scale",
    "ffn_down_exps.scale": "router.per_expert_scale",
    "ffn_gate_up_exps.weight": "experts.gate_up_proj",
    "ffn_down_exps.weight": "experts.down_proj",
}
# Whole-model tensors besides the embedding (PER_LAYER_TOKEN_EMBD, ..., under the text model's prefix).
MODEL_NAMES = {
    "output_norm.weight": "norm.weight",
    "per_layer_token_embd.weight": "embed_tokens_per_layer.weight",
    "per_layer_model_proj.weight": "per_layer_model_projection.weight",
    "per_layer_proj_norm.weight": "per_layer_projection_norm.weight",
}
VISIBLE_TOKENS = {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", "<|\"|>"}
CONTROL, USER_DEFINED = 3, 4


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--channel", required=True, type=existing_file)
    parser.add_argument("--vocab", required=True, type=existing_file, help="Gemma 4 vocabulary GGUF")
    parser.add_argument("--make-spm-vocab", required=True, type=existing_file,
                        help="make_spm_vocab: the Gemma 3 (SentencePiece) vocabulary from the Gemma 4 one")
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--cases", default=",".join(c[0] for c in CASES))
    parser.add_argument("--prompt-length", type=int, default=12)
    return parser.parse_args()


class Gguf:
    """The metadata and tensors of a GGUF file (gguf.md's layout; gguf-py's GGUFReader reads the
    same but takes half a minute over a 262144-token vocabulary)."""

    SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    DTYPES = {0: "F32", 1: "F16", 30: "BF16"}  # ggml type id -> safetensors dtype

    def __init__(self, path):
        data = Path(path).read_bytes()
        self.position = 0

        def take(fmt):
            values = struct.unpack_from(fmt, data, self.position)
            self.position += struct.calcsize(fmt)
            return values[0] if len(values) == 1 else values

        def text():
            length = take("<Q")
            self.position += length
            return data[self.position - length:self.position].decode()

        def value(kind):
            if kind == 8:
                return text()
            if kind == 9:
                element, count = take("<IQ")
                if element in self.SCALARS and element != 7:
                    size = struct.calcsize(self.SCALARS[element])
                    array = np.frombuffer(data, dtype=self.SCALARS[element], count=count, offset=self.position)
                    self.position += size * count
                    return array.tolist()
                return [value(element) for _ in range(count)]
            return take(self.SCALARS[kind])

        magic, _version, n_tensors, n_kv = take("<4sIQQ")
        assert magic == b"GGUF"
        self.metadata = {}
        for _ in range(n_kv):
            key = text()
            self.metadata[key] = value(take("<I"))
        infos = []
        for _ in range(n_tensors):
            name = text()
            dims = [take("<Q") for _ in range(take("<I"))]
            infos.append((name, dims, take("<I"), take("<Q")))
        alignment = self.metadata.get("general.alignment", 32)
        start = -(-self.position // alignment) * alignment
        self.tensors = {}  # name -> (safetensors dtype, PyTorch shape, bytes)
        for name, dims, kind, offset in infos:
            if kind not in self.DTYPES:
                raise ValueError(f"{name}: ggml type {kind} has no safetensors dtype")
            size = int(np.prod(dims)) * (4 if kind == 0 else 2)
            # GGUF lists the innermost dim first, PyTorch the outermost.
            self.tensors[name] = (self.DTYPES[kind], dims[::-1], data[start + offset:start + offset + size])

    def value(self, key, default=None):
        return self.metadata.get(key, default)


def hf_tensors(gguf_model, arch, model_class):
    """The checkpoint's tensors: HF name -> (dtype, shape, bytes)."""
    text = "model.language_model." if model_class == "Gemma4ForConditionalGeneration" else (
        "language_model.model." if model_class == "Gemma3ForConditionalGeneration" else "model.")
    tensors = {}
    for name, (dtype, shape, data) in gguf_model.tensors.items():
        if name == "rope_freqs.weight":
            continue  # generated by the converter from rope_parameters
        if name.endswith("norm.weight") and arch == "gemma3":
            values = np.frombuffer(data, dtype="<f4")
            assert dtype == "F32", name
            stored = values - np.float32(1.0)
            if not np.array_equal(stored + np.float32(1.0), values):
                raise ValueError(f"{name}: w - 1 + 1 != w in f32 for some values; the round trip would not be exact")
            data = stored.astype("<f4").tobytes()
        if name == "token_embd.weight":
            row_bytes = len(data) // shape[0]
            rng = np.random.default_rng(7)
            # Random bytes (NaNs too, in F32): the directory path cuts the rows off unread.
            data += rng.integers(0, 256, size=EXTRA_EMBEDDING_ROWS * row_bytes, dtype=np.uint8).tobytes()
            shape = [shape[0] + EXTRA_EMBEDDING_ROWS, shape[1]]
            tensors[text + "embed_tokens.weight"] = (dtype, shape, data)
        elif name in MODEL_NAMES:
            tensors[text + MODEL_NAMES[name]] = (dtype, shape, data)
        elif name == "output.weight":
            tensors["lm_head.weight"] = (dtype, shape, data)
        else:
            _, layer, kind = name.split(".", 2)
            tensors[f"{text}layers.{layer}.{LAYER_NAMES[kind]}"] = (dtype, shape, data)
    vision = "model.vision_tower." if arch == "gemma4" else "vision_tower."
    tensors[vision + "encoder.layers.0.mlp.fc1.weight"] = ("F32", [2, 2], bytes(16))  # skipped by the converter
    return tensors


def write_safetensors(path, tensors):
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def write_weights(directory, tensors, shards):
    if shards == 1:
        write_safetensors(directory / "model.safetensors", tensors)
        return
    names = list(tensors)
    weight_map = {}
    for shard in range(shards):
        file = f"model-{shard + 1:05d}-of-{shards:05d}.safetensors"
        part = {name: tensors[name] for name in names[shard::shards]}
        write_safetensors(directory / file, part)
        weight_map.update({name: file for name in part})
    (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def text_config(g, arch):
    """config.json's text keys, as the converter reads them back into the GGUF's metadata."""
    key = lambda suffix: g.value(f"{arch}.{suffix}")
    n_layer = key("block_count")
    n_ff = key("feed_forward_length")  # per layer where the KV-shared layers are double-wide
    config = {
        "hidden_size": key("embedding_length"),
        "intermediate_size": n_ff[0] if isinstance(n_ff, list) else n_ff,
        "num_hidden_layers": n_layer,
        "num_attention_heads": key("attention.head_count"),
        "max_position_embeddings": key("context_length"),
        "rms_norm_eps": float(np.float32(key("attention.layer_norm_rms_epsilon"))),
        "sliding_window": key("attention.sliding_window"),
        "hidden_activation": "gelu_pytorch_tanh",
        "vocab_size": len(g.value("tokenizer.ggml.tokens")),
        "tie_word_embeddings": True,
    }
    if arch == "gemma3":
        head_dim = key("attention.key_length")
        factor = key("rope.scaling.factor")
        config.update({
            "num_key_value_heads": key("attention.head_count_kv"),
            "head_dim": head_dim,
            "query_pre_attn_scalar": head_dim,  # llama.cpp's 1/sqrt(head_dim) for any Gemma 3 but the 27B
            "rope_theta": key("rope.freq_base"),
            "rope_local_base_freq": 10000.0,  # llama.cpp's fixed sliding base, which Gemma 3 GGUFs omit
            "rope_scaling": {"rope_type": "linear", "factor": factor} if factor else None,
            "sliding_window_pattern": key("attention.sliding_window_pattern"),
            "final_logit_softcapping": None,
            "attn_logit_softcapping": None,
        })
        return config
    pattern = key("attention.sliding_window_pattern")
    kv_heads = key("attention.head_count_kv")
    head_dim_full, head_dim_swa = key("attention.key_length"), key("attention.key_length_swa")
    assert key("rope.dimension_count") == head_dim_full and key("rope.dimension_count_swa") == head_dim_swa
    freqs = np.frombuffer(g.tensors["rope_freqs.weight"][2], dtype="<f4")
    rotated = int(np.sum(freqs == 1.0))
    assert np.all(freqs[:rotated] == 1.0) and np.all(freqs[rotated:] == np.float32(1e30))
    has_v = any(f"blk.{il}.attn_v.weight" in g.tensors for il in range(n_layer) if not pattern[il])
    config.update({
        "layer_types": ["sliding_attention" if s else "full_attention" for s in pattern],
        "num_key_value_heads": next(kv for kv, s in zip(kv_heads, pattern) if s),
        "num_global_key_value_heads": next(kv for kv, s in zip(kv_heads, pattern) if not s),
        "head_dim": head_dim_swa,
        "global_head_dim": head_dim_full,
        "attention_k_eq_v": not has_v,
        "final_logit_softcapping": key("final_logit_softcapping"),
        **e_model_config(g, arch, n_layer, n_ff),
        **moe_config(g, arch),
        "rope_parameters": {
            "full_attention": {"rope_type": "proportional", "rope_theta": key("rope.freq_base"),
                               "partial_rotary_factor": 2 * rotated / head_dim_full},
            "sliding_attention": {"rope_type": "default", "rope_theta": key("rope.freq_base_swa")},
        },
    })
    return config


def e_model_config(g, arch, n_layer, n_ff):
    """Gemma4Model.set_gguf_parameters' E-model keys, read back: with use_double_wide_mlp the
    feed_forward_length array is intermediate_size, doubled on the last num_kv_shared_layers."""
    n_shared = g.value(f"{arch}.attention.shared_kv_layers")
    config = {"num_kv_shared_layers": n_shared,
              "hidden_size_per_layer_input": g.value(f"{arch}.embedding_length_per_layer_input")}
    if "per_layer_token_embd.weight" in g.tensors:
        config["vocab_size_per_layer_input"] = g.tensors["per_layer_token_embd.weight"][1][0]
    if isinstance(n_ff, list):
        assert n_ff == [n_ff[0] if il < n_layer - n_shared else 2 * n_ff[0] for il in range(n_layer)], n_ff
        config["use_double_wide_mlp"] = True
    return config


def moe_config(g, arch):
    """TextModel's expert_count / expert_used_count and Gemma4Model's expert_feed_forward_length,
    under Gemma4TextConfig's names."""
    n_expert = g.value(f"{arch}.expert_count")
    if n_expert is None:
        return {}
    return {"enable_moe_block": True, "num_experts": n_expert, "top_k_experts": g.value(f"{arch}.expert_used_count"),
            "moe_intermediate_size": g.value(f"{arch}.expert_feed_forward_length")}


def write_config(directory, g, arch, model_class):
    text = text_config(g, arch)
    ids = {"bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0}
    if model_class.endswith("ForCausalLM"):
        config = {"architectures": [model_class], **text, **ids}
    else:
        config = {"architectures": [model_class], "text_config": text, "vision_config": {"hidden_size": 8}, **ids}
    (directory / "config.json").write_text(json.dumps(config, indent=1))


def split_merge(merge):
    """A GGUF merge "a b" as the pair the tokenizer reads: the separator is the first space after
    the first character."""
    at = merge.index(" ", 1)
    return [merge[:at], merge[at + 1:]]


def write_gemma4_tokenizer(directory, g):
    tokens, types = g.value("tokenizer.ggml.tokens"), g.value("tokenizer.ggml.token_type")
    special = [i for i, t in enumerate(types) if t in (CONTROL, USER_DEFINED)]
    assert all(types[i] == CONTROL or tokens[i] in VISIBLE_TOKENS for i in special)
    tokenizer = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i in special],
        "normalizer": None,
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": False, "byte_fallback": True,
                  "ignore_merges": False, "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [split_merge(m) for m in g.value("tokenizer.ggml.merges")]},
    }
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    named = {f"{kind}_token": tokens[g.value(f"tokenizer.ggml.{key}_token_id")]
             for kind, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding"), ("mask", "mask"))}
    extra = [tokens[i] for i in special if tokens[i] not in named.values()]
    config = {**named, "extra_special_tokens": {f"special_{i}": t for i, t in enumerate(extra)},
              "add_bos_token": True, "add_eos_token": False}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False))


def proto_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def proto_field(number, wire, payload):
    tag = proto_varint(number << 3 | wire)
    return tag + (proto_varint(len(payload)) + payload if wire == 2 else payload)


def write_gemma3_tokenizer(directory, g):
    """tokenizer.model with the GGUF's pieces. _create_vocab_sentencepiece reads a USER_DEFINED
    piece as NORMAL, so those also go to added_tokens.json, which makes them USER_DEFINED (with
    score -1000: the one thing the round trip changes, and user-defined tokens are matched as
    whole texts, never by score)."""
    tokens, types = g.value("tokenizer.ggml.tokens"), g.value("tokenizer.ggml.token_type")
    scores = g.value("tokenizer.ggml.scores")
    model = bytearray()
    for text, score, kind in zip(tokens, scores, types):
        piece = proto_field(1, 2, text.encode()) + proto_field(2, 5, struct.pack("<f", score))
        if kind != 1:
            piece += proto_field(3, 0, proto_varint(kind))
        model += proto_field(1, 2, piece)
    model += proto_field(2, 2, proto_field(1, 2, b"unigram"))  # a trainer_spec, which the reader skips
    (directory / "tokenizer.model").write_bytes(bytes(model))
    added = {tokens[i]: i for i, t in enumerate(types) if t == USER_DEFINED}
    (directory / "added_tokens.json").write_text(json.dumps(added, ensure_ascii=False))
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>",
         "add_bos_token": True, "add_eos_token": False}))


def token_ids(channel, model, strings_file):
    return run([channel, "tokenize", "--model", model, "--lines", strings_file]).stdout.splitlines()


def run_case(args, spm_vocab, case):
    name, arch, model_class, weight_type, shards, quantized_too, variant = case
    source = args.workdir / f"{name}.gguf"
    vocab = args.vocab if arch == "gemma4" else spm_vocab
    run([args.channel, "model", "synth", "--arch", arch, "--vocab", vocab, "--out", source, "--type", weight_type,
         "--embd", "64", "--ffn", "128", "--layers", "4", "--period", "2", "--seed", "3", *variant])
    g = Gguf(source)
    directory = args.workdir / name
    directory.mkdir(exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    write_weights(directory, hf_tensors(g, arch, model_class), shards)
    write_config(directory, g, arch, model_class)
    (write_gemma4_tokenizer if arch == "gemma4" else write_gemma3_tokenizer)(directory, g)

    n_vocab = len(g.value("tokenizer.ggml.tokens"))
    tokens = ",".join(map(str, make_prompt(args.prompt_length, n_vocab, 5)))
    problems = []
    for flags in ([], ["--q4"]) if quantized_too else ([],):  # as stored, and quantized on load
        outputs = []
        for model, label in ((source, "gguf"), (directory, "dir")):
            logits = args.workdir / f"{name}-{label}.f32"
            out = run([args.channel, "eval", "--model", model, *flags, "--tokens", tokens, "--logits-out", logits,
                       "--threads", "2"])
            outputs.append((labelled_ids(out.stdout, "argmax"), logits.read_bytes()))
        what = " ".join(["eval", *flags])
        if outputs[0][0] != outputs[1][0]:
            problems.append(f"{what}: argmax differs: {outputs[0][0]} vs {outputs[1][0]}")
        if outputs[0][1] != outputs[1][1]:
            a, b = (np.frombuffer(o[1], dtype="<f4") for o in outputs)
            problems.append(f"{what}: logits differ at {int(np.sum(a != b))} of {a.size} values "
                            f"(max |d| {np.max(np.abs(a - b))})")
    strings = args.workdir / "strings.txt"
    strings.write_text("\n".join(s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
                                 .replace("\x01", "\\x01").replace("\x7f", "\\x7F") for s in TOKENIZE_STRINGS) + "\n")
    ours, theirs = token_ids(args.channel, directory, strings), token_ids(args.channel, source, strings)
    for text, a, b in zip(TOKENIZE_STRINGS, ours, theirs):
        if a != b:
            problems.append(f"token ids of {text!r} differ: {a} (directory) vs {b} (GGUF)")
    print(f"{name:14} {'OK' if not problems else 'FAIL'}: logits as stored{' and with --q4' if quantized_too else ''}, "
          f"token ids of {len(TOKENIZE_STRINGS)} strings")
    for problem in problems:
        print(f"  {problem}")
    return not problems


def main():
    args = parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    spm_vocab = args.workdir / "spm-vocab.gguf"
    run([args.make_spm_vocab, args.vocab, spm_vocab])
    wanted = args.cases.split(",")
    unknown = set(wanted) - {c[0] for c in CASES}
    if unknown:
        sys.exit(f"unknown cases {sorted(unknown)}")
    results = [run_case(args, spm_vocab, case) for case in CASES if case[0] in wanted]
    if not all(results):
        sys.exit(1)


if __name__ == "__main__":
    main()
