"""The conversation between ``teg trace app`` (the parent) and teg's CUDA runtime inside the program
(the child): declared once here; :mod:`teg.app.build` writes them into the C header the runtime is
compiled with (``teg_protocol.h``), so both sides read the same numbers.

Every message is a 16-byte header ``(u32 type, u32 0, u64 payload bytes)`` and its payload, on a
``SOCK_STREAM`` socket pair; every message except ``COPY`` gets a reply ``(u32 status, u32 code,
u64 payload bytes)`` and its payload. ``status`` is ``OK``, ``ERROR`` (``code`` = the ``cudaError_t``
the call returns) or ``TERMINATE`` (teg stopped the program: the runtime flushes the program's
output and exits with ``code``). Payloads are little-endian C layouts, listed per message below
(the parent packs and unpacks them with :mod:`struct`).
"""

from __future__ import annotations

# environment the parent sets for the child (the runtime reads and removes them)
ENV_SOCKET = "TEG_APP_SOCKET"        # file descriptor of the child's end of the socket pair
ENV_MEMFD = "TEG_APP_MEMFD"          # file descriptor of the shared device-memory file
ENV_MEMSIZE = "TEG_APP_MEMSIZE"      # its size in bytes

HEADER = "<IIQ"                      # (type | status, 0 | code, payload bytes)

# message types: payload (child → parent) → reply payload
MESSAGES = {
    "HELLO": 1,          # u64 region base, u64 region size, u32 pid → nothing
    "MODULE": 2,         # the fatbinary's bytes → u32 module id
    "FUNCTION": 3,       # u32 module, u32 0, u64 host stub, name → u32 kernel, u32 params, u32 param bytes,
                         #   u32 0, then (u32 offset, u32 size) per parameter
    "VAR": 4,            # u32 module, u32 flags (VAR_*), u64 host shadow, u64 size, name → u64 device address
    "MALLOC": 5,         # u32 kind (ALLOC_*), u32 0, u64 bytes → u64 address (ERROR: out of memory)
    "FREE": 6,           # u32 kind, u32 0, u64 address → nothing (ERROR: not an allocation of that kind)
    "LAUNCH": 7,         # u32 kernel, u32 grid[3], u32 block[3], u32 0, u64 dynamic shared, u64 stream,
                         #   parameter buffer → u32 fault code (0: none), u32 0, f64 device clock (µs)
    "MISSING": 8,        # the call's name → (TERMINATE)
    "FUNC_ATTRS": 9,     # u32 kernel → cudaFuncAttributes
    "OCCUPANCY": 10,     # u32 kernel, u32 block threads, u64 dynamic shared, u32 what (OCC_*), u32 blocks → i64
    "DEVICE_ATTR": 11,   # u32 attribute, u32 device → i32 value
    "COPY": 12,          # u64 destination, u64 bytes: a host-to-device copy (no reply)
    "POINTER": 13,       # u64 address → u32 type (cudaMemoryType), u32 0, u64 allocation base, u64 its size
    "RESET": 14,         # → nothing (cudaDeviceReset: every allocation freed)
    "MEMINFO": 15,       # → u64 free, u64 total
    "FUNC_SET": 16,      # u32 kernel, u32 attribute, i64 value → nothing
    "PROPERTIES": 17,    # u32 device → cudaDeviceProp
}
NO_REPLY = ("COPY",)

STATUS = {"OK": 0, "ERROR": 1, "TERMINATE": 2}

ALLOC_KINDS = {"DEVICE": 0, "HOST": 1, "MANAGED": 2}
VAR_FLAGS = {"CONSTANT": 1, "MANAGED": 2}
OCC = {"BLOCKS": 0, "DYNAMIC_SMEM": 1}

# cudaError_t values and names (CUDA 13's driver_types.h) the runtime returns or names, with teg's
# wording of each (cudaGetErrorString)
ERRORS = [
    (0, "cudaSuccess", "no error"),
    (1, "cudaErrorInvalidValue", "invalid argument"),
    (2, "cudaErrorMemoryAllocation", "out of memory"),
    (3, "cudaErrorInitializationError", "initialization error"),
    (9, "cudaErrorInvalidConfiguration", "invalid configuration argument"),
    (12, "cudaErrorInvalidPitchValue", "invalid pitch argument"),
    (13, "cudaErrorInvalidSymbol", "invalid device symbol"),
    (16, "cudaErrorInvalidHostPointer", "invalid host pointer"),
    (17, "cudaErrorInvalidDevicePointer", "invalid device pointer"),
    (21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"),
    (52, "cudaErrorMissingConfiguration", "__global__ function call is not configured"),
    (98, "cudaErrorInvalidDeviceFunction", "invalid device function"),
    (100, "cudaErrorNoDevice", "no CUDA-capable device is detected"),
    (101, "cudaErrorInvalidDevice", "invalid device ordinal"),
    (209, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device"),
    (215, "cudaErrorUnsupportedLimit", "limit is not supported on this architecture"),
    (400, "cudaErrorInvalidResourceHandle", "invalid resource handle"),
    (500, "cudaErrorSymbolNotFound", "named symbol not found"),
    (600, "cudaErrorNotReady", "device not ready"),
    (700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"),
    (701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"),
    (715, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"),
    (716, "cudaErrorMisalignedAddress", "misaligned address"),
    (719, "cudaErrorLaunchFailure", "unspecified launch failure"),
    (801, "cudaErrorNotSupported", "operation not supported"),
    (999, "cudaErrorUnknown", "unknown error"),
]
ERROR = {name: value for value, name, _ in ERRORS}


def c_header() -> str:
    """The C declarations of everything above (``teg_protocol.h``)."""
    lines = ["/* generated by teg/app/build.py from teg/app/protocol.py: do not edit */",
             "#ifndef TEG_PROTOCOL_H", "#define TEG_PROTOCOL_H"]
    for name in ("ENV_SOCKET", "ENV_MEMFD", "ENV_MEMSIZE"):
        lines.append(f'#define TEG_{name} "{globals()[name]}"')
    for table, prefix in ((MESSAGES, "MSG"), (STATUS, "ST"), (ALLOC_KINDS, "ALLOC"), (VAR_FLAGS, "VAR"), (OCC, "OCC"),
                          (ERROR, "")):
        for name, value in table.items():
            lines.append(f"#define {prefix + '_' if prefix else ''}{name} {value}")
    from teg.app.device import DEVICE_PROP_BYTES, FUNC_ATTRIBUTES_BYTES

    lines.append(f"#define DEVICE_PROP_BYTES {DEVICE_PROP_BYTES}")
    lines.append(f"#define FUNC_ATTRIBUTES_BYTES {FUNC_ATTRIBUTES_BYTES}")
    lines.append("static const struct { int value; const char *name, *text; } teg_errors[] = {")
    lines += [f'    {{{value}, "{name}", "{text}"}},' for value, name, text in ERRORS]
    lines += ["};", "#endif"]
    return "\n".join(lines) + "\n"
