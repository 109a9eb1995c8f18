import triton

def build(kernel, flag):
    if flag:
        ret = triton.compile(kernel, signature="*fp32")
    a = 1; ret2 = triton.compile(kernel); print(ret2.asm)
    print("kept", a)
    return a
