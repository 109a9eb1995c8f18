def visible():
    names = ("CUDA_VISIBLE_DEVICES", "KFORGE_VERIFY_DEVICE")
    return tuple(os.environ.get(n, "<unset>") for n in names)
