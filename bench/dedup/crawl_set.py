#!/usr/bin/env python3
"""Builds and samples the labelled crawl pairs of bench/dedup/crawl_pairs.json.

usage:
  crawl_set.py rebuild CRAWL_DIR [MIRRORS]   writes the revision and planted files the pairs name
                                             (MIRRORS: git mirrors as <owner>+<repo>/repo,
                                             default /work/.mirror)
  crawl_set.py sample CRAWL_DIR BAND SEED N  prints N unlabelled candidate pairs of crawl files
                                             whose file similarity is in BAND (e.g. 0.3-0.5), or
                                             of kind BAND (kernel: same kernels up to renames at
                                             low file similarity; family: same file name in two
                                             places; tb: a crawl file and a TritonBench-G file
                                             sharing a kernel; helper: sharing only a small one)
  crawl_set.py show CRAWL_DIR A B            what to read to label a pair: each file's kernels
                                             and a diff of the two files (comments dropped)

Keys are <owner>+<repo>/<path> (the crawl at the commits of crawl_pairs.json, built by
bench/facts/extract_crawl.py), <owner>+<repo>@<commit>/<path> (an older revision of a file,
taken from the mirror) and planted/<name>.py (a TritonBench-G kernel renamed, edited or embedded
in a crawl file by the PLANTED recipes below; tests/data/tritonbench_g_code.json is the source).
Similarities here are exact Jaccard over 5-token shingles of the normalised tokens, close to
kforge's MinHash estimate; they only pick candidates: every label is set by reading the pair.
Deterministic for a given crawl and seed.
"""
import ast
import difflib
import hashlib
import json
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TB_JSON = os.path.join(ROOT, "tests", "data", "tritonbench_g_code.json")
TB_DIR = "thunlp+TritonBench/data/TritonBench_G_v1/"

TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\f\\]+) | (?P<comment>\#[^\n]*)
  | (?P<str>(?:[rRbBuUfF]{1,2})?(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<id>[A-Za-z_\x80-\uffff][A-Za-z0-9_\x80-\uffff]*)
  | (?P<num>(?:\d|\.\d)[A-Za-z0-9_.]*(?:[eE][+-]\d+)?)
  | (?P<op>\*\*=|//=|>>=|<<=|\.\.\.|\*\*|//|==|!=|<=|>=|->|\+=|-=|\*=|/=|%=|&=|\|=|\^=|>>|<<|:=|.)
""", re.X | re.S)
KEPT = set("""False None True and as assert async await break class continue def del elif else
except finally for from global if import in is lambda nonlocal not or pass raise return try while
with yield range min max abs len int float bool tl triton torch math libdevice print tuple
isinstance constexpr""".split())


def tokens(code, literals=False):
    out = []
    for m in TOKEN.finditer(code):
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            continue
        t = m.group()
        if kind == "str" and not literals:
            t = "S"
        elif kind == "num" and not literals:
            t = "N"
        out.append((kind, t))
    return out


def shingles(toks, k=5):
    ts = [t for _, t in toks]
    if len(ts) < k:
        return {tuple(ts)} if ts else set()
    return {hashlib.blake2b("\x1f".join(ts[i:i + k]).encode(), digest_size=8).digest()
            for i in range(len(ts) - k + 1)}


def jaccard(a, b):
    return len(a & b) / len(a | b) if a and b else 0.0


def kernels(code):
    """(name, source) of each @jit function, as libs/dedup/src/signature.cpp finds them."""
    lines = code.split("\n")
    out, i = [], 0
    while i < len(lines):
        s = lines[i].lstrip(" \t")
        m = re.match(r"@([\w.]*)", s)
        if not (m and m.group(1) in ("jit", "triton.jit", "tl.jit")):
            i += 1
            continue
        d = i + 1
        while d < len(lines) and lines[d].lstrip(" \t").startswith("@"):
            d += 1
        while d < len(lines) and d < i + 40 and not re.match(r"(async )?def ", lines[d].lstrip(" \t")):
            d += 1
        if d >= len(lines) or d >= i + 40:
            i += 1
            continue
        indent = len(lines[d]) - len(lines[d].lstrip(" \t"))
        p, depth, done = d, 0, False
        while p < len(lines) and not done:
            for ch in lines[p]:
                if ch == "#":
                    break
                if ch in "([{":
                    depth += 1
                if ch in ")]}" and depth:
                    depth -= 1
                if ch == ":" and depth == 0:
                    done = True
                    break
            p += 1
        last = p - 1
        for k in range(p, len(lines)):
            s = lines[k].lstrip(" \t")
            if not s or s.startswith("#"):
                continue
            if len(lines[k]) - len(s) <= indent:
                break
            last = k
        src = "\n".join(lines[d:last + 1])
        name = re.match(r"\s*(?:async )?def\s+(\w+)", lines[d])
        out.append((name.group(1) if name else "?", src))
        i = last + 1
    return out


def kernel_tokens(src):
    toks = tokens(src)
    out = []
    for i, (kind, t) in enumerate(toks):
        if kind == "id" and t not in KEPT and not (i and toks[i - 1][1] == "."):
            t = "V"
        out.append((kind, t))
    return out


class Crawl:
    def __init__(self, root):
        self.root = root
        self.keys = []
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".py"):
                    self.keys.append(os.path.relpath(os.path.join(dirpath, f), root))
        self.keys.sort()
        self._code, self._sh, self._ks = {}, {}, {}

    def code(self, key):
        if key not in self._code:
            with open(os.path.join(self.root, key), encoding="utf-8", errors="replace") as f:
                self._code[key] = f.read()
        return self._code[key]

    def sh(self, key):
        if key not in self._sh:
            self._sh[key] = shingles(tokens(self.code(key)))
        return self._sh[key]

    def ks(self, key, min_tokens=60):
        """[(name, tokens, shingles, body)] of the kernels of at least min_tokens tokens."""
        if (key, min_tokens) not in self._ks:
            out = []
            for name, src in kernels(self.code(key)):
                kt = kernel_tokens(src)
                if len(kt) >= min_tokens:
                    out.append((name, len(kt), shingles(kt), " ".join(t for _, t in kt)))
            self._ks[(key, min_tokens)] = out
        return self._ks[(key, min_tokens)]

    def kernel_sim(self, a, b, min_tokens=60):
        best = (0.0, None, None)
        for x in self.ks(a, min_tokens):
            for y in self.ks(b, min_tokens):
                s = 1.0 if x[3] == y[3] else jaccard(x[2], y[2])
                if s > best[0]:
                    best = (s, x[0], y[0])
        return best


def candidates(crawl, keys):
    """{(a, b): Jaccard} of the pairs sharing a shingle that at most 200 files hold (imports and
    boilerplate in more files say nothing), exact for pairs sharing 10% of their shingles."""
    index = {}
    for k in keys:
        for s in crawl.sh(k):
            index.setdefault(s, []).append(k)
    shared = {}
    for ks in index.values():
        if 2 <= len(ks) <= 200:
            for i in range(len(ks)):
                for j in range(i + 1, len(ks)):
                    shared[(ks[i], ks[j])] = shared.get((ks[i], ks[j]), 0) + 1
    out = {}
    for (a, b), n in shared.items():
        f = n / (len(crawl.sh(a)) + len(crawl.sh(b)) - n)
        out[(a, b)] = jaccard(crawl.sh(a), crawl.sh(b)) if f >= 0.1 else f
    return out


def crawl_keys(crawl):
    return [k for k in crawl.keys if not k.startswith("planted/") and "@" not in k.split("/")[0]]


_MEMO = {}


def sample(root, band, seed, n):
    n = int(n)
    if root not in _MEMO:
        crawl = Crawl(root)
        _MEMO[root] = crawl, {}
    crawl, memo = _MEMO[root]
    keys = crawl_keys(crawl)
    if "pairs" not in memo and band not in ("tb", "helper", "family", "kernel"):
        memo["pairs"] = candidates(crawl, keys)
    rng = random.Random(int(seed))
    tb = [k for k in keys if k.startswith(TB_DIR)]
    out = []
    if band in ("tb", "helper"):
        # A crawl file outside TritonBench and a TritonBench-G file: "tb" where a kernel of 60
        # tokens or more is at 0.5 or more; "helper" where only a kernel below 60 tokens is
        # shared (the same up to renames).
        others = [k for k in keys if not k.startswith("thunlp+TritonBench/")]
        rng.shuffle(others)
        for k in others:
            for t in tb:
                if band == "tb":
                    s, x, y = crawl.kernel_sim(k, t)
                    if s >= 0.5:
                        out.append((k, t, "file %.2f kernel %.2f %s~%s" % (
                            jaccard(crawl.sh(k), crawl.sh(t)), s, x, y)))
                else:
                    small = {b for _, n_, _, b in crawl.ks(k, 20) if n_ < 60}
                    shared = small & {b for _, n_, _, b in crawl.ks(t, 20) if n_ < 60}
                    if shared and crawl.kernel_sim(k, t)[0] < 0.5:
                        out.append((k, t, "shared helper of %d tokens" % len(next(iter(shared)).split())))
            if len(out) >= 4 * n:
                break
    elif band == "family":
        by_name = {}
        for k in keys:
            by_name.setdefault(os.path.basename(k), []).append(k)
        for name, ks in sorted(by_name.items()):
            if len(ks) >= 2 and name not in ("__init__.py", "utils.py", "test.py"):
                a, b = rng.sample(ks, 2)
                out.append((a, b, "file %.2f" % jaccard(crawl.sh(a), crawl.sh(b))))
    elif band == "kernel":
        # Files sharing a kernel of 60 tokens or more up to renames, at file similarity < 0.5.
        by_body = {}
        for k in keys:
            for name, _, _, body in crawl.ks(k):
                by_body.setdefault(body, set()).add(k)
        seen = set()
        for body, ks in sorted(by_body.items()):
            ks = sorted(ks)
            if not 2 <= len(ks) <= 40:
                continue
            for i in range(len(ks)):
                for j in range(i + 1, len(ks)):
                    if (ks[i], ks[j]) in seen:
                        continue
                    seen.add((ks[i], ks[j]))
                    f = jaccard(crawl.sh(ks[i]), crawl.sh(ks[j]))
                    if f < 0.5:
                        out.append((ks[i], ks[j], "file %.2f, a kernel the same up to renames" % f))
    else:
        lo, hi = (float(x) for x in band.split("-"))
        if hi <= 0.2:  # unrelated files: random pairs
            while len(out) < 4 * n:
                a, b = rng.sample(keys, 2)
                f = jaccard(crawl.sh(a), crawl.sh(b))
                if lo <= f < hi:
                    out.append((a, b, "file %.2f" % f))
        else:
            for (a, b), f in sorted(memo["pairs"].items()):
                if lo <= f < hi:
                    out.append((a, b, "file %.2f" % f))
    rng.shuffle(out)
    for a, b, why in out[:n]:
        print(json.dumps({"a": a, "b": b, "band": band, "found": why}))


def strip_comments(code):
    out = []
    for line in code.split("\n"):
        s = re.sub(r"\s+#.*$", "", line) if "'" not in line and '"' not in line else line
        if s.strip() and not s.lstrip().startswith("#"):
            out.append(s.rstrip())
    return out


def show(root, a, b, limit=60):
    crawl = Crawl(root)
    ca, cb = crawl.code(a), crawl.code(b)
    for tag, key, code in (("A", a, ca), ("B", b, cb)):
        ks = ["%s:%d" % (n, len(kernel_tokens(src))) for n, src in kernels(code)]
        print("== %s %s (%d lines) kernels: %s" % (tag, key, code.count("\n"), " ".join(ks)))
    s, x, y = crawl.kernel_sim(a, b)
    print("== file %.2f, kernel %.2f (%s ~ %s)" % (jaccard(crawl.sh(a), crawl.sh(b)), s, x, y))
    # The kernels' diff (comments dropped): what the rule of docs/DEDUP.md is about.
    ka = [l for _, src in kernels(ca) for l in strip_comments(src)] or strip_comments(ca)
    kb = [l for _, src in kernels(cb) for l in strip_comments(src)] or strip_comments(cb)
    lines = list(difflib.unified_diff(ka, kb, "A", "B", n=0, lineterm=""))[2:]
    for line in lines[:limit]:
        print(line[:150])
    if len(lines) > limit:
        print("... %d more diff lines" % (len(lines) - limit))


# Planted contamination: a TritonBench-G record's kernels renamed, edited, or embedded in a crawl
# file (the host), written as planted/<name>.py. (name, TritonBench-G file, how, host or None).
PLANTED = [
    ("renamed_softmax", "softmax_triton1.py", "rename", None),
    ("renamed_rms_norm", "rms_norm_triton.py", "rename", None),
    ("renamed_swiglu", "swiglu_fwd.py", "rename", None),
    ("renamed_embedding", "embedding_triton_kernel.py", "rename", None),
    ("renamed_dropout", "seeded_dropout.py", "rename", None),
    ("renamed_matmul", "matmul_kernel.py", "rename", None),
    ("renamed_layer_norm", "layer_norm_triton.py", "rename", None),
    ("renamed_quantize", "quantize_global.py", "rename", None),
    ("edited_softmax", "triton_softmax.py", "edit", None),
    ("edited_transpose", "matrix_transpose.py", "edit", None),
    ("edited_relu", "relu_triton_kernel.py", "edit", None),
    ("edited_mean", "mean_reduction.py", "edit", None),
    ("edited_rope", "rope_transform.py", "edit", None),
    ("edited_cross_entropy", "cross_entropy1.py", "edit", None),
    ("edited_kldiv", "kldiv_compute.py", "edit", None),
    ("edited_token_softmax", "token_softmax_llama.py", "edit", None),
    ("embedded_sin", "sin_kernel.py", "embed", "FlagOpen+FlagGems/src/flag_gems/ops/mm.py"),
    ("embedded_rms_norm", "rms_norm_triton.py", "embed",
     "fla-org+flash-linear-attention/fla/modules/token_shift.py"),
    ("embedded_softmax", "softmax_triton2.py", "embed", "linkedin+Liger-Kernel/src/liger_kernel/ops/rope.py"),
    ("embedded_quantize", "quantize_global.py", "embed", "pytorch+ao/torchao/prototype/quantized_training/int8_mm.py"),
    ("embedded_swiglu", "swiglu_fwd.py", "embed", "unslothai+unsloth/unsloth/kernels/cross_entropy_loss.py"),
    ("embedded_dropout", "seeded_dropout.py", "embed", "state-spaces+mamba/mamba_ssm/ops/triton/layer_norm.py"),
    ("embedded_renamed_transpose", "matrix_transpose.py", "embed+rename",
     "ModelTC+lightllm/lightllm/common/fused_moe/grouped_fused_moe.py"),
    ("embedded_edited_layer_norm", "layer_norm_triton.py", "embed+edit",
     "Dao-AILab+flash-attention/flash_attn/ops/triton/rotary.py"),
    # Issue 55, formatting: a file rewritten through Python's ast (names kept; redundant
    # parentheses, trailing commas, comments and line breaks inside brackets dropped). A source
    # ending in .py under a repository key is a crawl file, else a TritonBench-G record.
    ("unparsed_softmax", "softmax_triton1.py", "unparse", None),
    ("unparsed_cross_entropy", "cross_entropy1.py", "unparse", None),
    ("unparsed_rope", "rope_transform.py", "unparse", None),
    ("unparsed_token_softmax", "token_softmax_llama.py", "unparse", None),
    ("unparsed_kldiv", "kldiv_compute.py", "unparse", None),
    ("unparsed_gems_softmax", "FlagOpen+FlagGems/src/flag_gems/ops/softmax.py", "unparse", None),
    ("unparsed_liger_rms_norm", "linkedin+Liger-Kernel/src/liger_kernel/ops/rms_norm.py", "unparse",
     None),
    ("unparsed_context_attention",
     "ModelTC+lightllm/lightllm/models/llama/triton_kernel/context_flashattention_nopad.py",
     "unparse", None),
    ("unparsed_gla_chunk", "fla-org+flash-linear-attention/fla/ops/gla/chunk.py", "unparse", None),
    # Held out for decontamination (recall60): TritonBench-G files drawn at random (seed 55) from
    # those no pair used.
    ("unparsed_bgmv_expand_slice", "bgmv_expand_slice.py", "unparse", None),
    ("unparsed_context_attn_llama", "context_attn_llama.py", "unparse", None),
    ("unparsed_chunk_gate_recurrence", "chunk_gate_recurrence.py", "unparse", None),
    ("unparsed_rotary_emb_nopad", "rotary_emb_nopad.py", "unparse", None),
]


def jit_names(code):
    return [n for n, _ in kernels(code)]


def rename(code):
    """Every kernel, its parameters and local names renamed (x_ptr -> src_p, acc -> acc_1)."""
    new = {}
    for name, src in kernels(code):
        new[name] = "_fused_" + name.strip("_") + "_v2"
        m = re.search(r"def\s+\w+\s*\((.*?)\)\s*(->[^:]*)?:", src, re.S)
        for p in (m.group(1).split(",") if m else []):
            p = p.split(":")[0].split("=")[0].strip()
            if p and not p.isupper() and p not in ("self", "*"):
                new[p] = p.replace("_ptr", "_p") if "_ptr" in p else p + "_1"
        for var in re.findall(r"^\s+(\w+)\s*=", src, re.M):
            if not var.isupper():
                new.setdefault(var, var + "_1")
    for old, to in sorted(new.items(), key=lambda kv: -len(kv[0])):
        code = re.sub(r"(?<![\w.])%s\b" % re.escape(old), to, code)
    return code


def edit(code):
    """Comments dropped and rewritten, 2-space indentation, a block size and an eps changed,
    and a defensive mask or a float32 cast added to the first load."""
    out = ["# Adapted from an open-source implementation."]
    for line in code.split("\n"):
        if line.lstrip().startswith("#"):
            continue
        n = len(line) - len(line.lstrip(" "))
        out.append(" " * (n // 2) + line.lstrip(" ") if n % 4 == 0 else line)
    text = "\n".join(out)
    text = re.sub(r"(BLOCK[A-Z_]*\s*=\s*)(\d+)", lambda m: m.group(1) + str(int(m.group(2)) * 2), text)
    text = text.replace("1e-5", "1e-6")
    text = re.sub(r"tl\.load\(([^()\n]*(?:\([^()\n]*\))?[^()\n]*)\)", r"tl.load(\1).to(tl.float32)", text, count=1)
    return text


def embed(kernel_code, host):
    """The eval file's kernels and wrappers inserted after the host's imports."""
    lines = host.split("\n")
    at = 0
    for i, line in enumerate(lines[:80]):
        if line.startswith(("import ", "from ")):
            at = i + 1
    body = [l for l in kernel_code.split("\n") if not l.startswith(("import ", "from "))]
    return "\n".join(lines[:at] + [""] + body + [""] + lines[at:])


def rebuild(root, mirrors):
    pairs = json.load(open(os.path.join(HERE, "crawl_pairs.json")))
    tb = {r["file"]: r["output"] for r in json.load(open(TB_JSON))}
    crawl_root = root
    for name, src, how, host in PLANTED:
        if "/" in src:
            with open(os.path.join(crawl_root, src), encoding="utf-8") as f:
                code = f.read()
        else:
            code = tb[src]
        if how == "unparse":
            code = ast.unparse(ast.parse(code)) + "\n"
        if "rename" in how:
            code = rename(code)
        if "edit" in how:
            code = edit(code)
        if "embed" in how:
            with open(os.path.join(crawl_root, host), encoding="utf-8") as f:
                code = embed(code, f.read())
        dest = os.path.join(root, "planted", name + ".py")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write(code)
    for p in pairs["pairs"]:
        for key in (p["a"], p["b"]):
            repo, _, path = key.partition("/")
            if "@" not in repo:
                continue
            name, commit = repo.split("@")
            dest = os.path.join(root, key)
            if os.path.exists(dest):
                continue
            data = subprocess.run(["git", "--git-dir", os.path.join(mirrors, name, "repo"), "show",
                                   "%s:%s" % (commit, path)], check=True, capture_output=True).stdout
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
    print("planted %d files, revisions under %s" % (len(PLANTED), root))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, root = sys.argv[1], sys.argv[2]
    if cmd == "sample" and len(sys.argv) == 6:
        for band in sys.argv[3].split(","):
            sample(root, band, sys.argv[4], sys.argv[5])
    elif cmd == "show" and len(sys.argv) >= 5:
        show(root, sys.argv[3], sys.argv[4], *[int(x) for x in sys.argv[5:6]])
    elif cmd == "rebuild":
        rebuild(root, sys.argv[3] if len(sys.argv) > 3 else "/work/.mirror")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
