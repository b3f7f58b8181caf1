"""Transformer decoders: a GPT-like one (the large benchmarks and tiny_gpt_xnnpack) and a
Llama-shaped one with a KV cache (the LLM export's constant methods)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_out = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=50257, d=768, layers=12, heads=12, ctx=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)  # untied: ~163M params, ~650 MB fp32

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class KVAttention(nn.Module):
    """Attention over a KV cache (registered buffers updated in place at `input_pos`)."""

    def __init__(self, d, heads, max_seq):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.register_buffer("k_cache", torch.zeros(1, heads, max_seq, self.hd))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_seq, self.hd))
        self.register_buffer("causal", torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool)))

    def forward(self, x, input_pos):
        b, t, d = x.shape
        q, k, v = (
            w(x).view(b, t, self.heads, self.hd).transpose(1, 2)
            for w in (self.wq, self.wk, self.wv)
        )
        self.k_cache[:, :, input_pos] = k
        self.v_cache[:, :, input_pos] = v
        mask = self.causal[input_pos].view(1, 1, t, -1)
        y = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, d))


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, max_seq):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.attention = KVAttention(d, heads, max_seq)
        self.w1, self.w3 = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
        self.w2 = nn.Linear(2 * d, d, bias=False)

    def forward(self, x, input_pos):
        x = x + self.attention(self.attention_norm(x), input_pos)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class TinyLlama(nn.Module):
    """A Llama-shaped decoder (RMSNorm, KV-cache attention, SwiGLU) at toy size."""

    def __init__(self, vocab=128, d=32, layers=2, heads=2, max_seq=32):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, d)
        self.pos_embeddings = nn.Embedding(max_seq, d)
        self.layers = nn.ModuleList(LlamaBlock(d, heads, max_seq) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.output = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens, input_pos):
        x = self.tok_embeddings(tokens) + self.pos_embeddings(input_pos)
        for layer in self.layers:
            x = layer(x, input_pos)
        return self.output(self.norm(x))
