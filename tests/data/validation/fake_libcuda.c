/* A stand-in for libcuda.so used by tests/test_validate_measure.py: the CUDA driver calls that
 * teg.validate.measure makes, with host memory as "device" memory and a "kernel" that writes the
 * suite's timing records deterministically, so the whole measure pipeline (ctypes signatures,
 * argument marshalling, record reduction, JSON) runs without a GPU.
 *
 * A launch of grid G x block T with parameters (timing, out, buf, p0, p1, a, b) writes, for block
 * g: start = 1000 + g, end = start + 100 * (T / 32) + p0, smid = g % NUM_SMS. Every call is
 * counted; FAKE_FAIL_LAUNCH=1 in the environment makes cuLaunchKernel fail (error 700). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NUM_SMS 4
typedef int CUresult;
static int launches = 0;

int fake_launches(void) { return launches; }
CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int o) { *d = o; return 0; }
CUresult cuDeviceGetName(char *name, int len, int d) { (void)d; strncpy(name, "Fake H200", len); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
    (void)d;
    switch (attr) {
    case 16: *v = NUM_SMS; return 0;          /* multiprocessor count */
    case 13: *v = 1980000; return 0;          /* clock rate kHz */
    case 75: *v = 9; return 0;                /* cc major */
    case 76: *v = 0; return 0;                /* cc minor */
    case 38: *v = 1 << 20; return 0;          /* L2 bytes */
    default: *v = 0; return 0;
    }
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { (void)d; *ctx = (void *)0x1; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { (void)ctx; return 0; }
CUresult cuModuleLoadData(void **mod, const void *image) { *mod = (void *)image; return image ? 0 : 1; }
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
    (void)mod;
    *fn = strdup(name);
    return 0;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *fn) { (void)fn; *v = attr == 4 ? 32 : 0; return 0; }
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *fn, int threads, size_t smem) {
    (void)fn; (void)smem; *n = 2048 / threads; return 0;
}
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) { *p = (uint64_t)(uintptr_t)calloc(1, n); return *p ? 0 : 2; }
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) { memcpy((void *)(uintptr_t)dst, src, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) { memcpy(dst, (void *)(uintptr_t)src, n); return 0; }
CUresult cuMemsetD8_v2(uint64_t p, unsigned char c, size_t n) { memset((void *)(uintptr_t)p, c, n); return 0; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(1); return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0.25f; return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = r == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_UNKNOWN"; return 0; }
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, void *stream, void **params, void **extra) {
    (void)fn; (void)gy; (void)gz; (void)by; (void)bz; (void)smem; (void)stream; (void)extra;
    const char *fail = getenv("FAKE_FAIL_LAUNCH");
    if (fail && fail[0] == '1') return 700;
    launches++;
    uint64_t *timing = (uint64_t *)(uintptr_t)(*(uint64_t *)params[0]);
    long long p0 = *(long long *)params[3];
    for (unsigned g = 0; g < gx; ++g) {
        timing[4 * g + 0] = 1000 + g;
        timing[4 * g + 1] = 1000 + g + 100 * (bx / 32) + (uint64_t)p0;
        timing[4 * g + 2] = g % NUM_SMS;
        timing[4 * g + 3] = 0;
    }
    return 0;
}
