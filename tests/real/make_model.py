#!/usr/bin/env python3
"""Writes a tiny llama-architecture GGUF model with random weights, for the
real-server test (tests/real/run.sh). Its text is noise, but llama-server
loads it, tokenizes any ASCII prompt (byte fallback) and decodes at a few
milliseconds per token on one thread, so timings mean something.

    PYTHONPATH=<llama.cpp>/gguf-py python3 make_model.py OUT.gguf

Sizes: 16 layers of width 512 (feed-forward 1536), f16 matrices: about
54M parameters, 110 MB; about 4-5 ms per token with a 128-token prompt on
one thread here. Raise N_LAYER for a slower model (and bump the file name
in build.sh so caches remake it).
"""
import sys

import numpy as np
import gguf

N_EMBD, N_LAYER, N_FF, N_HEAD, N_CTX = 512, 16, 1536, 8, 4096

# Vocabulary: the SentencePiece ("llama") tokenizer with byte fallback.
# Only ASCII bytes get byte tokens, so whatever the random model emits is
# valid UTF-8 on its own (a lone high byte would be held back by the
# server as an incomplete character).
tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
for b in range(128):
    tokens.append("<0x%02X>" % b)
    scores.append(0.0)
    types.append(int(gguf.TokenType.BYTE))
letters = "abcdefghijklmnopqrstuvwxyz"
words = ["\u2581"] + ["\u2581" + c for c in letters] + list(letters)
words += ["\u2581" + a + b for a in "etaoinsh" for b in "etaoinsh"]
for i, w in enumerate(words):
    tokens.append(w)
    scores.append(-float(i))      # earlier pieces merge first
    types.append(int(gguf.TokenType.NORMAL))
n_vocab = len(tokens)

rng = np.random.default_rng(1)


def mat(rows, cols):
    return (rng.standard_normal((rows, cols)) * 0.02).astype(np.float16)


w = gguf.GGUFWriter(sys.argv[1], "llama")
w.add_name("infertop-tiny-random")
w.add_context_length(N_CTX)
w.add_embedding_length(N_EMBD)
w.add_block_count(N_LAYER)
w.add_feed_forward_length(N_FF)
w.add_head_count(N_HEAD)
w.add_head_count_kv(N_HEAD)
w.add_rope_dimension_count(N_EMBD // N_HEAD)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
w.add_add_bos_token(True)
w.add_chat_template(
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}")

w.add_tensor("token_embd.weight", mat(n_vocab, N_EMBD))
w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
w.add_tensor("output.weight", mat(n_vocab, N_EMBD))
for i in range(N_LAYER):
    p = "blk.%d." % i
    w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(p + name + ".weight", mat(N_EMBD, N_EMBD))
    w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor(p + "ffn_gate.weight", mat(N_FF, N_EMBD))
    w.add_tensor(p + "ffn_up.weight", mat(N_FF, N_EMBD))
    w.add_tensor(p + "ffn_down.weight", mat(N_EMBD, N_FF))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("make_model: %d tokens, %d layers of %d, %s" % (n_vocab, N_LAYER, N_EMBD, sys.argv[1]))
