/* A stand-in for the GPU drivers' libraries (libcuda.so.1, libamdhip64.so) for the harness's
 * cudasync.py (tests/verify/cuda_sync_test.py loads it through cudasync.apply's `library`): the
 * entry points cudasync calls, each recorded in a log the test reads (stub_log), over a few
 * devices whose primary contexts hold their flags (stub_preset, stub_flags). stub_set chooses the
 * devices, whether their contexts are already active with flags an old driver would keep (new
 * flags do not take), and what cuInit answers. Never installed; no product code loads it. */

#include <stdio.h>
#include <string.h>

#define MAX_DEVICES 8

static int devices = 2;
static int keep_active = 0;
static int init_rc = 0;
static int current = 0;
static unsigned flags[MAX_DEVICES];
static char log_text[4096];

static void note(const char* fmt, int a, int b) {
  size_t used = strlen(log_text);
  if (used + 64 >= sizeof log_text) return;
  snprintf(log_text + used, sizeof log_text - used, fmt, a, b);
}

/* The test's controls. */
void stub_set(int n, int keep, int init) {
  devices = n < MAX_DEVICES ? n : MAX_DEVICES;
  keep_active = keep;
  init_rc = init;
  current = 0;
  memset(flags, 0, sizeof flags);
  log_text[0] = '\0';
}
const char* stub_log(void) {
  return log_text;
}
/* A device's flags as set before (another flag than the scheduling's, say), and as they are. */
void stub_preset(int dev, unsigned f) {
  if (dev >= 0 && dev < MAX_DEVICES) flags[dev] = f;
}
unsigned stub_flags(int dev) {
  return dev >= 0 && dev < MAX_DEVICES ? flags[dev] : 0;
}

/* CUDA driver API (cuda.h): CUresult is an int, CUdevice an int. */
int cuInit(unsigned f) {
  note("cuInit(%d);", (int)f, 0);
  return init_rc;
}
int cuGetErrorName(int rc, const char** name) {
  *name = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuDeviceGetCount(int* n) {
  note("cuDeviceGetCount;", 0, 0);
  *n = devices;
  return 0;
}
int cuDeviceGet(int* dev, int ordinal) {
  note("cuDeviceGet(%d);", ordinal, 0);
  if (ordinal < 0 || ordinal >= devices) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *dev = ordinal;
  return 0;
}
int cuDevicePrimaryCtxSetFlags_v2(int dev, unsigned f) {
  note("cuDevicePrimaryCtxSetFlags_v2(%d,%d);", dev, (int)f);
  if (dev < 0 || dev >= devices) return 101;
  if (!keep_active) flags[dev] = f;
  return 0;
}
int cuDevicePrimaryCtxGetState(int dev, unsigned* f, int* active) {
  note("cuDevicePrimaryCtxGetState(%d);", dev, 0);
  if (dev < 0 || dev >= devices) return 101;
  *f = flags[dev];
  *active = keep_active;
  return 0;
}

/* HIP runtime API (hip_runtime_api.h): hipError_t is an int. */
const char* hipGetErrorName(int rc) {
  return rc == 100 ? "hipErrorNoDevice" : "hipErrorUnknown";
}
int hipGetDeviceCount(int* n) {
  note("hipGetDeviceCount;", 0, 0);
  if (init_rc) return init_rc;
  *n = devices;
  return 0;
}
int hipSetDevice(int dev) {
  note("hipSetDevice(%d);", dev, 0);
  if (dev < 0 || dev >= devices) return 101; /* hipErrorInvalidDevice */
  current = dev;
  return 0;
}
int hipSetDeviceFlags(unsigned f) {
  note("hipSetDeviceFlags(%d);", (int)f, 0);
  if (!keep_active) flags[current] = f;
  return 0;
}
int hipGetDeviceFlags(unsigned* f) {
  note("hipGetDeviceFlags;", 0, 0);
  *f = flags[current];
  return 0;
}
