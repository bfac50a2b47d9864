"""A dense Gemma 4 decoder as llama.cpp computes it (src/models/gemma4.cpp): sliding and global
layers with their own head widths and KV head counts, QK-norm with weights, V RMS-normed without
a weight, attention scale 1, NEOX RoPE (base 1e4 on sliding layers; base 1e6 on global layers
with only the first rotary_fraction of the frequency pairs rotating, llama.cpp's rope_freqs),
sandwich norms, a GELU-tanh gated FFN, a learned scalar on each layer's output, embeddings scaled
by sqrt(n_embd), a tied output and a final logit softcap of 30. Norm weights are the effective
scales (no +1), as Gemma 4's GGUF stores them."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def rms_norm(x, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, n, eps, init=1.0):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.full((n,), float(init)))

    def forward(self, x):
        return rms_norm(x, self.eps) * self.weight


def rope_tables(positions, head_dim, base, rotated_pairs):
    """cos and sin of NEOX RoPE, [..., head_dim / 2]; pairs past rotated_pairs do not rotate."""
    half = head_dim // 2
    i = torch.arange(half, device=positions.device, dtype=torch.float32)
    inv_freq = base ** (-2.0 * i / head_dim)
    inv_freq = torch.where(i < rotated_pairs, inv_freq, torch.zeros_like(inv_freq))
    angles = positions.float()[..., None] * inv_freq
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    # x: [B, T, H, D]; cos/sin: [B, T, D/2]. NEOX: element i pairs with element i + D/2.
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    c, s = cos[:, :, None, :], sin[:, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def attention(q, k, v, mask):
    """q: [B, H, T, D], k/v: [B, Hkv, T, D], mask: [B, 1, T, T] bool (True = may attend); scale 1."""
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0 (the H200); CPU smoke tests have 1.13
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0)
    scores = (q.float() @ k.float().transpose(-1, -2)).masked_fill(~mask, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ v.float()).to(q.dtype)


class Layer(nn.Module):
    def __init__(self, c, il):
        super().__init__()
        self.is_global = c.is_global(il)
        self.head_dim = c.head_dim_global if self.is_global else c.head_dim
        self.n_head, self.n_head_kv = c.n_head, c.n_head_kv_global if self.is_global else c.n_head_kv
        self.eps = c.eps
        d = self.head_dim
        self.attn_norm = RMSNorm(c.n_embd, c.eps)
        self.attn_q = nn.Linear(c.n_embd, c.n_head * d, bias=False)
        self.attn_k = nn.Linear(c.n_embd, self.n_head_kv * d, bias=False)
        self.attn_v = nn.Linear(c.n_embd, self.n_head_kv * d, bias=False)
        self.attn_output = nn.Linear(c.n_head * d, c.n_embd, bias=False)
        # Attention scale is 1: weights of d^-1/4 on both norms start scores at unit spread.
        self.attn_q_norm = RMSNorm(d, c.eps, d ** -0.25)
        self.attn_k_norm = RMSNorm(d, c.eps, d ** -0.25)
        self.post_attention_norm = RMSNorm(c.n_embd, c.eps)
        self.ffn_norm = RMSNorm(c.n_embd, c.eps)
        self.ffn_gate = nn.Linear(c.n_embd, c.n_ff, bias=False)
        self.ffn_up = nn.Linear(c.n_embd, c.n_ff, bias=False)
        self.ffn_down = nn.Linear(c.n_ff, c.n_embd, bias=False)
        self.post_ffw_norm = RMSNorm(c.n_embd, c.eps)
        self.layer_output_scale = nn.Parameter(torch.ones(1))

    def forward(self, x, rope, mask):
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.attn_q(h)
        # The norms and RoPE compute in f32; attention then runs in the projections' dtype
        # (bf16 under autocast, f32 otherwise).
        dtype = q.dtype
        q = self.attn_q_norm(q.view(B, T, self.n_head, self.head_dim))
        k = self.attn_k_norm(self.attn_k(h).view(B, T, self.n_head_kv, self.head_dim))
        v = rms_norm(self.attn_v(h).view(B, T, self.n_head_kv, self.head_dim), self.eps)
        cos, sin = rope
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        q, k, v = (t.to(dtype).transpose(1, 2) for t in (q, k, v))
        a = attention(q, k, v, mask)
        a = self.attn_output(a.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim))
        x = x + self.post_attention_norm(a)
        h = self.ffn_norm(x)
        f = self.ffn_down(F.gelu(self.ffn_gate(h), approximate="tanh") * self.ffn_up(h))
        return (x + self.post_ffw_norm(f)) * self.layer_output_scale


class Gemma4(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.token_embd = nn.Embedding(c.n_vocab, c.n_embd)
        self.layers = nn.ModuleList(Layer(c, il) for il in range(c.n_layer))
        self.output_norm = RMSNorm(c.n_embd, c.eps)
        for name, p in self.named_parameters():
            if name.endswith("token_embd.weight"):
                nn.init.normal_(p, std=c.n_embd ** -0.5)  # unit RMS after the sqrt(n_embd) scale
            elif p.dim() == 2:
                nn.init.normal_(p, std=p.shape[1] ** -0.5)

    def masks(self, doc):
        """Attention masks [B, 1, T, T] for global and sliding layers of rows packed with
        documents (doc: [B, T] document number): causal, within a document, and for sliding
        layers within the window (a query sees the last sliding_window positions, itself included)."""
        T = doc.shape[1]
        i = torch.arange(T, device=doc.device)
        causal = i[None, :] <= i[:, None]
        same = doc[:, :, None] == doc[:, None, :]
        full = (same & causal)[:, None]
        window = (i[:, None] - i[None, :]) < self.config.sliding_window
        return full, full & window

    def forward(self, tokens, positions, doc):
        c = self.config
        x = self.token_embd(tokens).float() * math.sqrt(c.n_embd)
        full, sliding = self.masks(doc)
        rope_sliding = rope_tables(positions, c.head_dim, c.rope_base, c.head_dim // 2)
        rope_global = rope_tables(positions, c.head_dim_global, c.rope_base_global, c.rotated_pairs())
        for layer in self.layers:
            x = layer(x, rope_global if layer.is_global else rope_sliding, full if layer.is_global else sliding)
        x = self.output_norm(x)
        logits = x @ self.token_embd.weight.to(x.dtype).t()
        return c.softcap * torch.tanh(logits.float() / c.softcap)
