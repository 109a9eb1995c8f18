import os

# Set when the script is imported (in the test phase), as a sample sets torch's switches at
# module level; the output mutants run the same tests again and rely on it.
os.environ["KFORGE_SAMPLE_MODE"] = "on"
MODE_AT_IMPORT = True


def add(x, y):
    out = [0.0] * len(x)
    n = len(x)
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK_SIZE=64)
    return out
