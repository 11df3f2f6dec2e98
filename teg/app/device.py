"""The device a program sees under ``teg trace app``: ``cudaDeviceProp``, ``cudaDeviceGetAttribute``
and ``cudaFuncGetAttributes`` answered from the machine table.

The C layouts are CUDA 13's (``driver_types.h``: ``struct cudaDeviceProp``, ``struct
cudaFuncAttributes``), declared here with :mod:`ctypes` in the header's field order; the runtime
copies the bytes the parent packs into the caller's structure (``tests/test_app.py`` compares the
offsets with the toolkit's header when one is installed). Values the machine table does not hold
(texture limits, PCI ids, memory clock) are 0; a device attribute teg has no value for stops the
program naming it (see :data:`ATTRIBUTES`).
"""

from __future__ import annotations

import ctypes as C

from teg.machine.model import Machine

I, U, Z = C.c_int, C.c_uint, C.c_size_t

_PROP_FIELDS = [
    ("name", C.c_char * 256), ("uuid", C.c_ubyte * 16), ("luid", C.c_char * 8), ("luidDeviceNodeMask", U),
    ("totalGlobalMem", Z), ("sharedMemPerBlock", Z), ("regsPerBlock", I), ("warpSize", I), ("memPitch", Z),
    ("maxThreadsPerBlock", I), ("maxThreadsDim", I * 3), ("maxGridSize", I * 3), ("totalConstMem", Z),
    ("major", I), ("minor", I), ("textureAlignment", Z), ("texturePitchAlignment", Z),
    ("multiProcessorCount", I), ("integrated", I), ("canMapHostMemory", I), ("maxTexture1D", I),
    ("maxTexture1DMipmap", I), ("maxTexture2D", I * 2), ("maxTexture2DMipmap", I * 2),
    ("maxTexture2DLinear", I * 3), ("maxTexture2DGather", I * 2), ("maxTexture3D", I * 3),
    ("maxTexture3DAlt", I * 3), ("maxTextureCubemap", I), ("maxTexture1DLayered", I * 2),
    ("maxTexture2DLayered", I * 3), ("maxTextureCubemapLayered", I * 2), ("maxSurface1D", I),
    ("maxSurface2D", I * 2), ("maxSurface3D", I * 3), ("maxSurface1DLayered", I * 2),
    ("maxSurface2DLayered", I * 3), ("maxSurfaceCubemap", I), ("maxSurfaceCubemapLayered", I * 2),
    ("surfaceAlignment", Z), ("concurrentKernels", I), ("ECCEnabled", I), ("pciBusID", I), ("pciDeviceID", I),
    ("pciDomainID", I), ("tccDriver", I), ("asyncEngineCount", I), ("unifiedAddressing", I),
    ("memoryBusWidth", I), ("l2CacheSize", I), ("persistingL2CacheMaxSize", I),
    ("maxThreadsPerMultiProcessor", I), ("streamPrioritiesSupported", I), ("globalL1CacheSupported", I),
    ("localL1CacheSupported", I), ("sharedMemPerMultiprocessor", Z), ("regsPerMultiprocessor", I),
    ("managedMemory", I), ("isMultiGpuBoard", I), ("multiGpuBoardGroupID", I), ("hostNativeAtomicSupported", I),
    ("pageableMemoryAccess", I), ("concurrentManagedAccess", I), ("computePreemptionSupported", I),
    ("canUseHostPointerForRegisteredMem", I), ("cooperativeLaunch", I), ("sharedMemPerBlockOptin", Z),
    ("pageableMemoryAccessUsesHostPageTables", I), ("directManagedMemAccessFromHost", I),
    ("maxBlocksPerMultiProcessor", I), ("accessPolicyMaxWindowSize", I), ("reservedSharedMemPerBlock", Z),
    ("hostRegisterSupported", I), ("sparseCudaArraySupported", I), ("hostRegisterReadOnlySupported", I),
    ("timelineSemaphoreInteropSupported", I), ("memoryPoolsSupported", I), ("gpuDirectRDMASupported", I),
    ("gpuDirectRDMAFlushWritesOptions", U), ("gpuDirectRDMAWritesOrdering", I), ("memoryPoolSupportedHandleTypes", U),
    ("deferredMappingCudaArraySupported", I), ("ipcEventSupported", I), ("clusterLaunch", I),
    ("unifiedFunctionPointers", I), ("deviceNumaConfig", I), ("deviceNumaId", I), ("mpsEnabled", I),
    ("hostNumaId", I), ("gpuPciDeviceID", U), ("gpuPciSubsystemID", U), ("hostNumaMultinodeIpcSupported", I),
    ("reserved", I * 56),
]


class DeviceProp(C.Structure):
    """``struct cudaDeviceProp`` of CUDA 13."""

    _fields_ = _PROP_FIELDS


class FuncAttributes(C.Structure):
    """``struct cudaFuncAttributes`` of CUDA 13."""

    _fields_ = [("sharedSizeBytes", Z), ("constSizeBytes", Z), ("localSizeBytes", Z), ("maxThreadsPerBlock", I),
                ("numRegs", I), ("ptxVersion", I), ("binaryVersion", I), ("cacheModeCA", I),
                ("maxDynamicSharedSizeBytes", I), ("preferredShmemCarveout", I), ("clusterDimMustBeSet", I),
                ("requiredClusterWidth", I), ("requiredClusterHeight", I), ("requiredClusterDepth", I),
                ("clusterSchedulingPolicyPreference", I), ("nonPortableClusterSizeAllowed", I), ("reserved", I * 16)]


DEFAULT_SHARED_PER_BLOCK = 48 * 1024      # what a block may use without cudaFuncSetAttribute (CUDA-PG)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
CONSTANT_BYTES = 64 * 1024


def _major_minor(sm: int) -> tuple[int, int]:
    return sm // 10, sm % 10


def properties(machine: Machine, total_memory: int) -> bytes:
    """``cudaDeviceProp`` of ``machine`` with ``total_memory`` bytes of device memory."""
    p = DeviceProp()
    lim, sh = machine.limits, machine.shared
    p.name = f"teg emulator: {machine.name}".encode()[:255]
    p.totalGlobalMem = total_memory
    p.sharedMemPerBlock = min(DEFAULT_SHARED_PER_BLOCK, sh.max_per_block)
    p.regsPerBlock = min(lim.registers, 65536)
    p.warpSize = machine.warp_size
    p.memPitch = 2**31 - 1
    p.maxThreadsPerBlock = lim.max_threads_per_block
    p.maxThreadsDim[:] = MAX_BLOCK
    p.maxGridSize[:] = MAX_GRID
    p.totalConstMem = CONSTANT_BYTES
    p.major, p.minor = _major_minor(machine.sm)
    p.textureAlignment, p.texturePitchAlignment, p.surfaceAlignment = 512, 32, 512
    p.multiProcessorCount = machine.num_sms
    p.canMapHostMemory = p.concurrentKernels = p.unifiedAddressing = 1
    p.asyncEngineCount = 1
    l2 = machine.memory.l2
    p.l2CacheSize = l2.size_bytes if l2 is not None else 0
    p.maxThreadsPerMultiProcessor = lim.max_threads
    p.streamPrioritiesSupported = p.globalL1CacheSupported = p.localL1CacheSupported = 1
    p.sharedMemPerMultiprocessor = sh.size_per_sm
    p.regsPerMultiprocessor = lim.registers
    p.managedMemory = p.concurrentManagedAccess = p.directManagedMemAccessFromHost = 1
    p.computePreemptionSupported = 1
    p.sharedMemPerBlockOptin = sh.max_per_block
    p.maxBlocksPerMultiProcessor = lim.max_blocks
    p.reservedSharedMemPerBlock = sh.reserved_per_block
    p.memoryPoolsSupported = 1
    p.hostNumaId = -1
    return bytes(p)


# cudaDeviceAttr (CUDA 13 driver_types.h) → value from the machine table; attributes listed with
# None have no source in the table and stop the program naming them
def _attributes(m: Machine, total_memory: int) -> dict[int, int | None]:
    lim, sh = m.limits, m.shared
    l2 = m.memory.l2
    major, minor = _major_minor(m.sm)
    return {
        1: lim.max_threads_per_block, 2: MAX_BLOCK[0], 3: MAX_BLOCK[1], 4: MAX_BLOCK[2],
        5: MAX_GRID[0], 6: MAX_GRID[1], 7: MAX_GRID[2], 8: min(DEFAULT_SHARED_PER_BLOCK, sh.max_per_block),
        9: CONSTANT_BYTES, 10: m.warp_size, 11: 2**31 - 1, 12: min(lim.registers, 65536),
        13: int(round(m.clock_mhz * 1000)), 14: 512, 15: 1, 16: m.num_sms, 17: 0, 18: 0, 19: 1, 20: 0,
        31: 1, 32: 0, 33: 0, 34: 0, 35: 0, 36: None, 37: None, 38: l2.size_bytes if l2 is not None else 0,
        39: lim.max_threads, 40: 1, 41: 1, 50: 0, 75: major, 76: minor, 78: 1, 79: 1, 80: 1,
        81: sh.size_per_sm, 82: lim.registers, 83: 1, 84: 0, 85: 0, 86: 0, 87: None, 88: 0, 89: 1, 90: 1, 91: 0,
        95: 0, 97: sh.max_per_block, 99: 1, 100: 0, 101: 1, 106: lim.max_blocks, 108: 0,
        111: sh.reserved_per_block, 115: 1, 120: 1 if m.sm >= 90 else 0, 130: 0, 131: -1, 134: -1,
    }


def attribute(machine: Machine, total_memory: int, attr: int) -> int | None:
    """``cudaDeviceGetAttribute(attr)`` on ``machine``; None when teg has no value for it."""
    return _attributes(machine, total_memory).get(attr)


def func_attributes(machine: Machine, shared_static: int, const_bytes: int, local_bytes: int, nregs: int,
                    sm: int, max_dynamic: int) -> bytes:
    """``cudaFuncAttributes`` of a kernel: its resources from the cubin, the largest block its
    registers allow on ``machine`` (a multiple of the warp size, at most the block limit)."""
    a = FuncAttributes()
    a.sharedSizeBytes, a.constSizeBytes, a.localSizeBytes = shared_static, const_bytes, local_bytes
    a.maxThreadsPerBlock = max_threads(machine, nregs)
    a.numRegs = nregs
    a.ptxVersion = a.binaryVersion = sm
    a.maxDynamicSharedSizeBytes = max_dynamic
    a.preferredShmemCarveout = -1
    return bytes(a)


def max_threads(machine: Machine, nregs: int) -> int:
    """The largest block a kernel of ``nregs`` registers per thread can launch with on ``machine``."""
    lim, ws = machine.limits, machine.warp_size
    best = lim.max_threads_per_block // ws * ws
    if nregs <= 0:
        return best
    unit = lim.reg_alloc_unit
    per_warp = -(-nregs * ws // unit) * unit
    warps = min(lim.registers, 65536) // per_warp
    return max(0, min(best, warps * ws))


DEVICE_PROP_BYTES = C.sizeof(DeviceProp)
FUNC_ATTRIBUTES_BYTES = C.sizeof(FuncAttributes)
