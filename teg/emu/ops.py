"""Numeric vocabulary shared by the lowering (:mod:`teg.emu.lower`) and the jitted interpreter
(:mod:`teg.emu.interp`): semantic operation ids, the column layout of the code table, operand kinds
and flags, register-file row numbers.

Register file layout (one uint32 row of 32 lanes per register, per warp):

* rows 0…254 ``R0…R254``, row 255 ``RZ`` (always 0), row 256 the sink for writes to ``RZ``;
* rows 257…319 ``UR0…UR62``, row 320 ``URZ``, row 321 the sink for writes to ``URZ``;
* rows 322…325 always zero (what the specialised forms read for an immediate or ``RZ``, up to a
  128-bit operand), rows 326…329 where they write a result that goes to ``RZ`` (up to four words).

Uniform registers are kept replicated in all 32 lanes so vector instructions can read them like any
register; uniform instructions write every lane. Predicates are 32-bit lane masks per warp: slots
0…6 ``P0…P6``, 7 ``PT`` (all ones), 8…14 ``UP0…UP6``, 15 ``UPT``, 16 the sink for writes to PT/UPT.
"""

from __future__ import annotations

# --- register file rows ------------------------------------------------------------------------
RZ_ROW = 255
RZ_SINK = 256
UR_ROW0 = 257
URZ_ROW = UR_ROW0 + 63
URZ_SINK = URZ_ROW + 1
ZERO_ROW = URZ_SINK + 1
JUNK_ROW = ZERO_ROW + 4
NUM_ROWS = JUNK_ROW + 4
PT_SLOT = 7
UP_SLOT0 = 8
UPT_SLOT = 15
P_SINK = 16
NUM_PSLOTS = 17

# --- code table columns (int64 [N, NUM_COLS]) -------------------------------------------------------
C_OP = 0        # semantic id (below)
C_GUARD = 1     # predicate slot of the guard (PT_SLOT when unguarded)
C_GINV = 2      # 1 when the guard is negated (@!P0)
C_TARGET = 3    # instruction index of a branch / BSSY / CALL target, -1 when none
C_UNIFORM = 4   # 1 for uniform-datapath instructions (execute in all lanes)
C_M = 5         # first of NUM_M modifier slots (meaning per operation)
NUM_M = 6
C_NOPS = C_M + NUM_M    # number of operands
NUM_COLS = C_NOPS + 1
MAX_OPS = 8             # operand slots per instruction (the separate okind/oreg/oval/oflag arrays)

# --- operand kinds -------------------------------------------------------------------------------
K_NONE = 0
K_REG = 1       # reg = register-file row
K_IMM = 2       # val = raw bits (up to 64)
K_CONST = 3     # reg = bank, val = byte offset; resolved to K_IMM at launch
K_PRED = 4      # reg = predicate slot
K_SREG = 5      # val = special-register id (SR_* below)
K_MEM = 6       # reg = base row (RZ_ROW when none), val = immediate offset, flags: F_WIDE, scale, ureg
K_CIDX = 7      # c[bank][R+imm]: reg = index row, val = offset, flags >> 24 = bank
K_BAR = 8       # val = convergence barrier index (B0…B15)

# --- operand flags -------------------------------------------------------------------------------
F_NEG = 1
F_ABS = 2
F_NOT = 4       # ~R (bitwise) or !P
F_WIDE = 8      # .64 address register pair
F_H0H0 = 16     # half-precision swizzles of an HADD2/HFMA2 operand
F_H1H1 = 32
F_F32 = 64      # .F32 operand of a mixed-precision half instruction
F_SCALE_SHIFT = 8     # address register scale (.X4 → 2, .X8 → 3, .X16 → 4) in bits 8…11
F_UREG_SHIFT = 12     # uniform address register row + 1 in bits 12…21 (0 = none)

# --- special registers ---------------------------------------------------------------------------
SREGS = {
    "SR_TID.X": 0, "SR_TID.Y": 1, "SR_TID.Z": 2, "SR_CTAID.X": 3, "SR_CTAID.Y": 4, "SR_CTAID.Z": 5,
    "SR_LANEID": 6, "SR_EQMASK": 7, "SR_LTMASK": 8, "SR_LEMASK": 9, "SR_GTMASK": 10, "SR_GEMASK": 11,
    "SR_CLOCKLO": 12, "SR_CLOCKHI": 13, "SR_GLOBALTIMERLO": 12, "SR_GLOBALTIMERHI": 13,
    "SR_CGACTAID": 14, "SR_SMID": 14, "SR_VIRTUALSMID": 14, "SR_NSMID": 15, "SRZ": 14,
    "SR_WARPID": 16, "SR_VIRTID": 16, "SR_SWINHI": 14, "SR_SWINLO": 14,
}

# --- semantic operation ids ----------------------------------------------------------------------
(OP_NOP, OP_MOV, OP_IADD3, OP_IMAD, OP_LEA, OP_LOP3, OP_SHF, OP_IMNMX, OP_POPC, OP_FLO, OP_BREV,
 OP_PRMT, OP_SEL, OP_ISETP, OP_PLOP3, OP_IABS, OP_VIADD, OP_FADD, OP_FMUL, OP_FFMA, OP_FMNMX,
 OP_FSETP, OP_FSEL, OP_MUFU, OP_FCHK, OP_F2F, OP_I2F, OP_F2I, OP_DADD, OP_DMUL, OP_DFMA, OP_DSETP,
 OP_HADD2, OP_HMUL2, OP_HFMA2, OP_S2R, OP_CS2R, OP_LDC, OP_SHFL, OP_VOTE, OP_REDUX, OP_R2UR,
 OP_LD, OP_ST, OP_ATOM, OP_LDGSTS, OP_BRA, OP_BSSY, OP_BSYNC, OP_WARPSYNC, OP_BAR, OP_EXIT,
 OP_CALL, OP_RET, OP_BREAK, OP_P2R, OP_R2P, OP_DMNMX, OP_BMSK, OP_SGXT, OP_FRND, OP_BMOV,
 OP_HMMA, OP_VIADDMNMX) = range(64)

# memory spaces (m0 of OP_LD / OP_ST / OP_ATOM)
SP_GLOBAL, SP_SHARED, SP_LOCAL = 0, 1, 2

# comparison codes (ISETP/FSETP/DSETP m0): 1…6 ordered, 9…14 the unordered variant (…U,
# true when an operand is NaN), 0 false, 7 both numbers, 8 either NaN, 15 true
CMP = {"F": 0, "LT": 1, "EQ": 2, "LE": 3, "GT": 4, "NE": 5, "GE": 6, "NUM": 7, "NAN": 8,
       "LTU": 9, "EQU": 10, "LEU": 11, "GTU": 12, "NEU": 13, "GEU": 14, "T": 15}
BOOL = {"AND": 0, "OR": 1, "XOR": 2}

# atomic operations (m1 of OP_ATOM)
ATOM_OPS = {"ADD": 0, "MIN": 1, "MAX": 2, "INC": 3, "DEC": 4, "AND": 5, "OR": 6, "XOR": 7, "EXCH": 8,
            "CAS": 9, "POPC.INC": 10, "CAST": 11}
# value types of loads/atomics (m2): width in bytes is separate (m3)
T_U32, T_S32, T_U64, T_S64, T_F32, T_F64, T_U8, T_S8, T_U16, T_S16, T_F16X2 = range(11)

# MUFU functions (m0)
MUFU = {"RCP": 0, "RSQ": 1, "SQRT": 2, "EX2": 3, "LG2": 4, "SIN": 5, "COS": 6, "RCP64H": 7,
        "RSQ64H": 8, "TANH": 9}

# rounding (m of float ops): RN, RZ, RM, RP
ROUND = {"RN": 0, "RZ": 1, "RM": 2, "RP": 3, "TRUNC": 1, "FLOOR": 2, "CEIL": 3}

# --- specialised forms (int64 [N, FX_COLS], per launch: lower.specialize) ---------------------------
# The most frequent instruction forms with every operand resolved: source rows (ZERO_ROW for an
# immediate or RZ, so a lane reads ``regs[row] | imm`` without a branch), the immediates, each
# source's modifier as ``(x ^ xor) + add`` (-x: xor 0xffffffff, add 1; ~x: xor 0xffffffff;
# float -x / |x|: sign-bit masks), the destination row (JUNK_ROW for RZ), predicate slots (P_SINK
# for an absent or PT result, !PT for an absent carry-in). FX_OP 0 runs the general executor.
FX_OP = 0
FX_D = 1                # destination row
FX_A, FX_B, FX_C = 2, 3, 4          # source rows
FX_IA, FX_IB, FX_IC = 5, 6, 7       # immediates (64-bit for a pair operand)
FX_XA, FX_XB, FX_XC = 8, 9, 10      # xor masks
FX_NA, FX_NB, FX_NC = 11, 12, 13    # add terms (float forms: the and-mask of |x|)
FX_P0, FX_P1 = 14, 15   # predicate results
FX_Q0, FX_Q1 = 16, 17   # predicate sources (carry-ins, ISETP's combining predicate)
FX_QX0, FX_QX1 = 18, 19 # their xor masks (0xffffffff for !P)
FX_K = 20               # per form: shift, LUT, comparison bits, space
FX_K2 = 21              # per form: boolean op, width
FX_K3 = 22              # per form: load type
FX_COLS = 23

(F_GENERAL, F_MOV, F_MOV64, F_IADD3, F_IMAD, F_IMADW, F_IMADWU, F_LEA, F_LEAHI, F_LOP3, F_SHF, F_ISETP,
 F_SEL, F_FFMA, F_FADD, F_FMUL, F_LD, F_ST, F_BRA, F_NOP) = range(20)
