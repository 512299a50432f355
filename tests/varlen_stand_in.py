"""A CPU stand-in for `torch.nn.attention.varlen.varlen_attn` (its kernel is CUDA-only), bound to a real signature.

Every call is bound against the signature of the function it stands in for, so a keyword that torch does not take
raises TypeError here as it does on the GPU (issue 46: torch 2.11 refused `seqused_k`, and a stand-in that took any
keyword had hidden it).
"""

import inspect

import torch


def varlen_2_11(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, return_aux=None, scale=None,
                window_size=(-1, -1), enable_gqa=False):  # fmt: skip
    """Torch 2.11's varlen_attn signature: `window_size` (2.10), no `seqused_k` or `block_table` (2.12)."""
    raise AssertionError("a signature only: stand_in(varlen_2_11) computes")


def stand_in(signature_of):
    """Return varlen_attn's documented semantics on the CPU, refusing what `signature_of` refuses (TypeError)."""
    signature = inspect.signature(signature_of)

    def varlen_attn(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return reference(**bound.arguments)

    varlen_attn.__signature__ = signature  # what the replay's gate reads
    return varlen_attn


def reference(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, window_size=(-1, -1), seqused_k=None,
              block_table=None, return_aux=None, scale=None, enable_gqa=False, num_splits=None):  # fmt: skip
    """Return causal attention per sequence, aligned to the end of its keys (the only window the replay asks for)."""
    assert window_size == (-1, 0) and return_aux is None and scale is None and not enable_gqa
    outs = []
    for i in range(len(cu_seq_q) - 1):
        qi = query[cu_seq_q[i] : cu_seq_q[i + 1]]  # (n_new, H, D)
        if block_table is None:
            ki, vi = key[cu_seq_k[i] : cu_seq_k[i + 1]], value[cu_seq_k[i] : cu_seq_k[i + 1]]
        else:
            pages = block_table[i].long()
            ki, vi = (x[pages].flatten(0, 1)[: seqused_k[i]] for x in (key, value))
        n_new, n = len(qi), len(ki)
        mask = torch.arange(n)[None, :] <= torch.arange(n - n_new, n)[:, None]  # causal, aligned to the end
        q_, k_, v_ = (x.transpose(0, 1) for x in (qi, ki, vi))  # (H, n, D)
        out = torch.nn.functional.scaled_dot_product_attention(q_, k_, v_, attn_mask=mask)
        outs.append(out.transpose(0, 1))
    return torch.cat(outs)
