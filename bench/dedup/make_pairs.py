#!/usr/bin/env python3
"""Builds tests/data/dedup_pairs.json, the labelled pairs that set kforge's dedup threshold.

Usage: bench/dedup/make_pairs.py [TritonBench_G_v1.json] > tests/data/dedup_pairs.json

Sources: the public TritonBench-G corpus (../shared/corpus; `file` names each kernel).
- copy pairs: a small kernel and the same kernel after one realistic edit made here (renamed
  kernel and arguments, comments removed and others written, 2-space indentation and other
  quotes, a changed constant or block size, an added helper, an appended __main__ check, and all
  of those at once), plus pairs that are copies inside the corpus itself;
- different pairs: corpus kernels that share boilerplate but compute something else (forward vs
  backward, cumsum vs reversed cumsum, add vs KL divergence, ...), chosen by hand from the most
  similar pairs of the corpus, and pairs of small unrelated kernels.
The output is deterministic; the file is committed, this script documents how it was made.
"""
import io
import json
import random
import re
import sys
import tokenize

BASES = [
    "sin_kernel.py", "matrix_transpose.py", "seeded_dropout.py", "relu_triton_kernel.py",
    "quantize_global.py", "rms_norm_triton.py", "triton_softmax.py", "swiglu_fwd.py",
    "mean_reduction.py", "embedding_triton_kernel.py",
]
# Copies inside the corpus (identical kernels under two names).
CORPUS_COPIES = [
    ("token_softmax_llama.py", "token_softmax_bloom.py"),
    ("softmax_triton1.py", "softmax_triton2.py"),
    # The same @triton.jit kernel; the files differ only in the wrapper (forward vs backward
    # call of it).
    ("rope_transform.py", "rope_backward_transform.py"),
]
# Different kernels with the same boilerplate (read and labelled by hand).
CORPUS_DIFFERENT = [
    ("kldiv_compute.py", "vector_addition.py"),           # x*log(x/y) vs x+y
    ("reversed_cumsum.py", "chunk_cumsum_vector.py"),     # reversed vs forward cumsum
    ("reversed_cumsum_scalar.py", "chunk_cumsum_kernel.py"),
    ("l2_norm_triton2.py", "l2_norm_bwd.py"),             # forward+backward vs backward
    ("destindex_copy_kv1.py", "destindex_copy_kv2.py"),   # one tensor vs two
    ("quantize_copy_kv.py", "quantize_kv_transform.py"),  # per-head vs per-group scales
    ("softmax_triton2.py", "square_matrix.py"),           # softmax vs square
    ("dropout_triton.py", "seeded_dropout.py"),           # mask tensor vs seeded RNG
    ("l2_norm_triton2.py", "l2_norm_triton1.py"),
    ("dequantize_rowwise.py", "rowwise_quantization_triton.py"),
    ("rmsnorm_fused_llama.py", "rmsnorm_fused.py"),
    ("flash_decode2_llama.py", "flash_decode2_phi.py"),
    ("matmul_kernel.py", "matmul_triton1.py"),
    ("sin_kernel.py", "relu_triton_kernel.py"),
    ("triton_mul2.py", "masked_add_cuda.py"),
    ("cosine_compute.py", "sin_kernel.py"),
]
RANDOM_DIFFERENT = 15


def strip_comments(code):
    out = []
    toks = tokenize.generate_tokens(io.StringIO(code).readline)
    for t in toks:
        if t.type == tokenize.COMMENT:
            continue
        out.append(t)
    text = tokenize.untokenize(out)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def kernel_signature(code):
    m = re.search(r"@triton\.jit[^\n]*\n(?:@[^\n]*\n)*def\s+(\w+)\s*\(([^)]*)\)", code)
    if not m:
        return None, []
    params = [p.split(":")[0].split("=")[0].strip() for p in m.group(2).split(",")]
    return m.group(1), [p for p in params if p and not p.startswith("#")]


def rename(code):
    name, params = kernel_signature(code)
    new = {}
    if name:
        new[name] = "_" + name.strip("_") + "_impl"
    for p in params:
        if p.isupper() or p in ("self",):
            continue
        new[p] = p.replace("_ptr", "") + "_p" if "_ptr" in p else p + "_"
    for old, nn in new.items():
        code = re.sub(r"\b%s\b" % re.escape(old), nn, code)
    return code


def recomment(code):
    code = strip_comments(code)
    name, _ = kernel_signature(code)
    lines = code.splitlines()
    out = ["# Copyright (c) the authors. Licensed under the MIT license.",
           "# Adapted for our model zoo."]
    for line in lines:
        out.append(line)
        if name and re.match(r"\s*def\s+%s\b" % re.escape(name), line):
            out.append("    # (docstring follows the signature)")
    text = "\n".join(out) + "\n"
    return re.sub(r"(\n(\s*)tl\.store\()", r"\n\2# write the result back\1", text, count=1)


def reformat(code):
    out = []
    for line in code.splitlines():
        n = len(line) - len(line.lstrip(" "))
        out.append(" " * (n // 2) + line.lstrip(" ") if n % 4 == 0 else line)
    text = "\n".join(out) + "\n"
    return text.replace("'", '"')


def change_constant(code):
    def bump(m):
        return m.group(1) + str(int(m.group(2)) * 2)
    new = re.sub(r"(BLOCK[A-Z_]*\s*=\s*)(\d+)", bump, code)
    new = re.sub(r"(num_warps\s*=\s*)(\d+)", bump, new)
    new = new.replace("1e-5", "1e-6").replace("1e-6)", "1e-5)")
    if new == code:
        new = re.sub(r"\b(\d+)\b", lambda m: str(int(m.group(1)) + 1), code, count=1)
    return new


HELPER = '''

def _next_power_of_2(n):
    """Smallest power of two >= n."""
    p = 1
    while p < n:
        p *= 2
    return p


def _check_inputs(*tensors):
    for t in tensors:
        if not t.is_cuda:
            raise ValueError("expected a CUDA tensor, got one on " + str(t.device))
        if not t.is_contiguous():
            raise ValueError("expected a contiguous tensor")
'''


def add_helper(code):
    idx = code.find("\ndef ", code.find("@triton.jit"))
    idx = code.find("\ndef ", idx + 1) if idx >= 0 else -1
    if idx < 0:
        return code + HELPER
    return code[:idx] + HELPER + code[idx:]


MAIN = '''

if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(4096, device="cuda")
    print("ok", x.shape)
'''


def add_main(code):
    return code.rstrip("\n") + "\n" + MAIN


def everything(code):
    return reformat(change_constant(recomment(rename(code))))


EDITS = [("rename", rename), ("comments", recomment), ("reformat", reformat),
         ("constant", change_constant), ("helper", add_helper), ("main_block", add_main),
         ("all_edits", everything)]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "../shared/corpus/TritonBench_G_v1.json"
    corpus = {r["file"]: r["output"] for r in json.load(open(path))}
    kernels, pairs = {}, []

    def kernel(name, code=None):
        if name not in kernels:
            kernels[name] = corpus[name] if code is None else code
        return name

    for base in BASES:
        a = kernel(base)
        for edit, fn in EDITS:
            b = kernel(base + "~" + edit, fn(corpus[base]))
            assert kernels[b] != kernels[a] or edit == "reformat", (base, edit)
            pairs.append({"a": a, "b": b, "label": "copy", "why": edit})
    for x, y in CORPUS_COPIES:
        pairs.append({"a": kernel(x), "b": kernel(y), "label": "copy", "why": "corpus copy"})
    for x, y in CORPUS_DIFFERENT:
        pairs.append({"a": kernel(x), "b": kernel(y), "label": "different",
                      "why": "shared boilerplate"})
    rng = random.Random(29)
    small = sorted(f for f, c in corpus.items() if len(c) < 2600)
    used = {(p["a"], p["b"]) for p in pairs}
    while sum(1 for p in pairs if p["why"] == "unrelated") < RANDOM_DIFFERENT:
        x, y = rng.sample(small, 2)
        if (x, y) in used or (y, x) in used:
            continue
        used.add((x, y))
        pairs.append({"a": kernel(x), "b": kernel(y), "label": "different", "why": "unrelated"})
    json.dump({"source": "TritonBench-G (github.com/thunlp/TritonBench), edits by "
                         "bench/dedup/make_pairs.py",
               "kernels": kernels, "pairs": pairs}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
