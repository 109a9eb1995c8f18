def visible():
    names = ("CUDA_VISIBLE_DEVICES", "KFORGE_VERIFY_DEVICE", "CUDA_DEVICE_MAX_CONNECTIONS")
    return tuple(os.environ.get(n, "<unset>") for n in names)
