"""verifier.cuda_sync in the harness (kforge_harness/cudasync.py) against a stand-in for the
drivers' libraries (tests/verify/cuda_stub/cuda_stub.c, built by CMake): the calls it makes, in
order, for NVIDIA and AMD; a flag the driver keeps, a failing cuInit, a missing library, `auto`
and a CPU device, each reported and never raised. Run by tests/verify/CMakeLists.txt
(verify.cuda_sync) as `python3 cuda_sync_test.py HARNESS_DIR STUB_LIBRARY`."""

import ctypes
import os
import shutil
import sys
import tempfile
import unittest

HARNESS, STUB = sys.argv.pop(1), sys.argv.pop(1)
sys.path.insert(0, HARNESS)

from kforge_harness import cudasync  # noqa: E402

lib = ctypes.CDLL(STUB)  # the same handle (and state) cudasync.load gets
lib.stub_log.restype = ctypes.c_char_p


def stub(devices=2, keep=0, init=0):
    lib.stub_set(devices, keep, init)


def calls():
    return [c for c in lib.stub_log().decode().split(";") if c]


class CudaSyncTest(unittest.TestCase):
    def test_nvidia_sets_and_reads_back_each_primary_context(self):
        stub(devices=2)
        r = cudasync.apply("blocking", "nvidia", STUB)
        self.assertTrue(r["applied"], r)
        self.assertEqual((r["asked"], r["devices"], r["flags"]), ("blocking", 2, [4, 4]))
        self.assertNotIn("why", r)
        self.assertEqual(calls(), [
            "cuInit(0)", "cuDeviceGetCount",
            "cuDeviceGet(0)", "cuDevicePrimaryCtxGetState(0)",
            "cuDevicePrimaryCtxSetFlags_v2(0,4)", "cuDevicePrimaryCtxGetState(0)",
            "cuDeviceGet(1)", "cuDevicePrimaryCtxGetState(1)",
            "cuDevicePrimaryCtxSetFlags_v2(1,4)", "cuDevicePrimaryCtxGetState(1)"])
        for name, flag in (("spin", 1), ("yield", 2)):
            stub(devices=1)
            r = cudasync.apply(name, "nvidia", STUB)
            self.assertEqual((r["applied"], r["flags"]), (True, [flag]), r)

    def test_amd_sets_each_device_and_makes_the_first_current_again(self):
        stub(devices=2)
        r = cudasync.apply("yield", "amd", STUB)
        self.assertTrue(r["applied"], r)
        self.assertEqual(r["flags"], [2, 2])
        self.assertEqual(calls(), [
            "hipGetDeviceCount",
            "hipSetDevice(0)", "hipGetDeviceFlags", "hipSetDeviceFlags(2)", "hipGetDeviceFlags",
            "hipSetDevice(1)", "hipGetDeviceFlags", "hipSetDeviceFlags(2)", "hipGetDeviceFlags",
            "hipSetDevice(0)"])

    def test_the_other_flags_are_kept(self):
        # CU_CTX_LMEM_RESIZE_TO_MAX (0x10) and spin set before: the call sets every flag.
        for vendor, call in (("nvidia", "cuDevicePrimaryCtxSetFlags_v2(0,20)"),
                             ("amd", "hipSetDeviceFlags(20)")):
            stub(devices=1)
            lib.stub_preset(0, 0x10 | 1)
            r = cudasync.apply("blocking", vendor, STUB)
            self.assertEqual((r["applied"], r["flags"]), (True, [4]), r)
            self.assertEqual(lib.stub_flags(0), 0x10 | 4)
            self.assertIn(call, calls())

    def test_flags_the_driver_keeps_are_not_applied(self):
        for vendor in ("nvidia", "amd"):
            stub(devices=1, keep=1)
            r = cudasync.apply("blocking", vendor, STUB)
            self.assertFalse(r["applied"], r)
            self.assertEqual(r["flags"], [0])
            self.assertIn("kept another scheduling flag", r["why"])

    def test_driver_errors_are_named_not_raised(self):
        stub(init=100)
        r = cudasync.apply("blocking", "nvidia", STUB)
        self.assertFalse(r["applied"])
        self.assertEqual(r["why"], "cuInit: 100 (CUDA_ERROR_NO_DEVICE)")
        self.assertEqual(calls(), ["cuInit(0)"])
        stub(init=100)
        r = cudasync.apply("blocking", "amd", STUB)
        self.assertEqual(r["why"], "hipGetDeviceCount: 100 (hipErrorNoDevice)")
        stub(devices=0)
        r = cudasync.apply("spin", "nvidia", STUB)
        self.assertEqual((r["applied"], r["why"], r["devices"]), (False, "no device visible", 0))

    def test_without_the_library_it_is_unavailable(self):
        r = cudasync.apply("blocking", "nvidia", "/nonexistent/libcuda.so.1")
        self.assertFalse(r["applied"])
        self.assertTrue(r["why"].startswith("unavailable: "), r)
        self.assertIn("/nonexistent/libcuda.so.1", r["why"])

    def test_auto_cpu_and_unknown_settings_touch_nothing(self):
        stub()
        self.assertEqual(cudasync.apply("auto", "nvidia", STUB),
                         {"asked": "auto", "applied": False, "why": "auto: left to the driver"})
        r = cudasync.apply("blocking", "cpu", STUB)
        self.assertEqual(r["why"], "the sample's device is cpu, not a GPU")
        r = cudasync.apply("sleepy", "nvidia", STUB)
        self.assertEqual(r["why"], "not one of auto, spin, yield, blocking")
        self.assertEqual(calls(), [])

    def test_the_driver_libraries_by_default(self):
        self.assertEqual(cudasync.default_library("nvidia"), "libcuda.so.1")
        # No HIP runtime mapped here nor a ROCm torch: the system's by name.
        hip = cudasync.default_library("amd")
        self.assertTrue(hip.endswith("libamdhip64.so"), hip)
        # One mapped into the process (as torch's is once imported) is the one used.
        with tempfile.TemporaryDirectory() as tmp:
            mapped = os.path.join(tmp, "libamdhip64.so.6")
            shutil.copy(STUB, mapped)
            ctypes.CDLL(mapped)
            self.assertEqual(cudasync.default_library("amd"), mapped)
            stub(devices=1)  # the test's copy; the mapped one keeps its own two devices
            r = cudasync.apply("blocking", "amd")
            self.assertEqual((r["applied"], r["flags"]), (True, [4, 4]), r)
            self.assertEqual(calls(), [])  # none of it went through the test's copy


if __name__ == "__main__":
    unittest.main()
