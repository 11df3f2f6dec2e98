// teg validation suite, group "throughput": 8 independent streams per thread (TEG report §3.2.1:
// issue latency from throughput). With one warp the slope over stream length gives the same-warp
// issue interval; with many warps per SM it gives the unit's cycles per warp instruction.
#include "teg_ops.cuh"

#define TEG_STREAM(op, OP, N)                                                                  \
    TEG_KERNEL(tput_##op##_n##N) { teg_chains<OP, N, 8>(timing, out, a, b); }
#define TEG_STREAMS(op, OP) TEG_STREAM(op, OP, 8) TEG_STREAM(op, OP, 16) TEG_STREAM(op, OP, 32)

TEG_STREAMS(ffma, OpFFMA)
TEG_STREAMS(fadd, OpFADD)
TEG_STREAMS(imad, OpIMAD)
TEG_STREAMS(iadd3, OpIADD3)
TEG_STREAMS(lop3, OpLOP3)
TEG_STREAMS(mufu_rsq, OpMUFU_RSQ)
TEG_STREAMS(dfma, OpDFMA)
TEG_STREAMS(hfma2, OpHFMA2)
TEG_STREAMS(f2i_i2f, OpF2I_I2F)
