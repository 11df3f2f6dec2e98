// gpu-l2-cache style kernel (teg accuracy suite; our own code). Blocks of 1024 threads; block b
// reads the slice (b mod slices) of the buffer, `per_thread` float2 loads per thread, coalesced,
// so consecutive blocks cycle through the whole buffer of slices * slice bytes and the L2 serves
// every SM from a set of that size.
extern "C" __global__ void l2_sum(const float2 *B, float *out, int slices, int per_thread) {
    const float2 *p = B + (long long)(blockIdx.x % slices) * per_thread * 1024 + threadIdx.x;
    float s0 = 0.f, s1 = 0.f;
    for (int k = 0; k < per_thread; k++) {
        float2 v = p[(long long)k * 1024];
        s0 += v.x;
        s1 += v.y;
    }
    float s = s0 + s1;
    if (s == 1.2345f) out[threadIdx.x] = s;
}
