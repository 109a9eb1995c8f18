"""Prints whether torch, triton and a CUDA/ROCm device are usable here (for the GPU tests)."""
import json

out = {"torch": None, "triton": None, "cuda": False}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = bool(torch.cuda.is_available())
    if out["cuda"]:
        out["device"] = torch.cuda.get_device_name(0)
except Exception as e:  # noqa: BLE001
    out["error"] = "%s: %s" % (type(e).__name__, e)
try:
    import triton
    out["triton"] = triton.__version__
except Exception:
    pass
print(json.dumps(out))
