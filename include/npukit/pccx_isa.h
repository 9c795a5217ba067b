// SPDX-License-Identifier: MIT
/*
 * pccx v002 instruction set: encodings (pccx-isa.md Part 1), names, fault
 * codes and the weight-record layout. This is the ABI shared by the model
 * (src/sim/pccx.c decodes), the driver and the assembler (src/rt encode); it
 * depends only on the base layer. The memory model, the weight-record layout
 * and the fault semantics are described in include/npukit/pccx.h.
 */
#ifndef NPUKIT_PCCX_ISA_H
#define NPUKIT_PCCX_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ISA (pccx-isa.md Part 1) ---------------------------------------------- */

#define NPK_PCCX_L2_WORDS 114688u   /* the KV260 build's L2 size in 128-bit words (option l2_kib) */
#define NPK_PCCX_L2_MAX_WORDS 131072u /* the most a 17-bit word address reaches (l2_kib=2048) */
#define NPK_PCCX_LANES 4u           /* GEMV cores of the KV260 build (option lanes) */
#define NPK_PCCX_L2_ELEMS (NPK_PCCX_L2_WORDS * 8u)
#define NPK_PCCX_CC_ENTRIES 64u     /* entries per constant-cache bank */
#define NPK_PCCX_QUEUE_DEPTH 256u   /* instruction FIFO entries */

enum npk_pccx_opcode {
    NPK_PCCX_OP_GEMV = 0x0,
    NPK_PCCX_OP_GEMM = 0x1,
    NPK_PCCX_OP_MEMCPY = 0x2,
    NPK_PCCX_OP_MEMSET = 0x3,
    NPK_PCCX_OP_CVO = 0x4 /* 0x5-0xF reserved (fault) */
};

/* GEMV/GEMM flags (6-bit field [25:20]); bits [2:0] reserved. */
#define NPK_PCCX_FINDEMAX 0x20u /* e_max := max of this instruction's outputs */
#define NPK_PCCX_ACCM 0x10u     /* y = round(old y + sum) */
#define NPK_PCCX_W_SCALE 0x08u  /* the weight record carries fp32 scales */

enum npk_pccx_cvo_func {
    NPK_PCCX_CVO_EXP = 0x0,
    NPK_PCCX_CVO_SQRT = 0x1,
    NPK_PCCX_CVO_GELU = 0x2, /* tanh form: 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) */
    NPK_PCCX_CVO_SIN = 0x3,
    NPK_PCCX_CVO_COS = 0x4,
    NPK_PCCX_CVO_REDUCE_SUM = 0x5,
    NPK_PCCX_CVO_SCALE = 0x6,
    NPK_PCCX_CVO_RECIP = 0x7 /* 0x8-0xF reserved (fault) */
};

/* CVO flags (5-bit field [5:1]); bits [1:0] reserved. */
#define NPK_PCCX_CVO_SUB_EMAX 0x10u
#define NPK_PCCX_CVO_RECIP_SCALE 0x08u
#define NPK_PCCX_CVO_ACCM 0x04u

/* MEMSET dest_cache values (2 and 3 fault). */
#define NPK_PCCX_CACHE_FMAP 0u
#define NPK_PCCX_CACHE_WEIGHT 1u

/* One instruction with every field of every format. Only the fields of `op`
 * are encoded; the others are ignored by npk_pccx_encode and zero after
 * npk_pccx_decode. */
typedef struct npk_pccx_insn {
    unsigned op;         /* npk_pccx_opcode (0..15 when decoded) */
    /* GEMV/GEMM: dest_reg, src_addr; MEMCPY: dest_addr, src_addr; CVO: dst_addr, src_addr */
    uint32_t dest, src;  /* 17 bits each */
    unsigned flags;      /* GEMV/GEMM: 6 bits; CVO: 5 bits */
    unsigned size_ptr;   /* GEMV/GEMM size_ptr_addr, 6 bits */
    unsigned shape_ptr;  /* GEMV/GEMM/MEMCPY shape_ptr_addr, 6 bits */
    unsigned lanes;      /* GEMV/GEMM parallel_lane, 5 bits */
    unsigned from_device;/* MEMCPY [59]: 0 = NPU, 1 = host */
    unsigned to_device;  /* MEMCPY [58]: 0 = NPU, 1 = host */
    uint32_t aux;        /* MEMCPY aux_addr, 17 bits (host offset in 16-byte blocks) */
    unsigned async;      /* MEMCPY/CVO bit 0 */
    unsigned cache;      /* MEMSET dest_cache, 2 bits */
    unsigned index;      /* MEMSET dest_addr, 6 bits */
    uint16_t a, b, c;    /* MEMSET a_value, b_value, c_value */
    unsigned func;       /* CVO cvo_func, 4 bits */
    unsigned length;     /* CVO length, 16 bits */
    uint64_t reserved;   /* decode only: the reserved bits [2:0] (GEMV/GEMM) or [3:0] (MEMSET), in place */
} npk_pccx_insn;

/* Encode; fails with -NPK_EINVAL naming the field that does not fit. Reserved
 * opcodes, function codes, flag bits and MEMSET caches are encodable (so that
 * fault tests can build them); the device faults on them. */
int npk_pccx_encode(const npk_pccx_insn *in, uint64_t *word);
/* Split a word into fields (never fails). */
void npk_pccx_decode(uint64_t word, npk_pccx_insn *out);
/* The fault the device raises for this instruction's encoding alone
 * (reserved opcode/function/bits, MEMCPY (1,1), bad MEMSET cache, lane > 4,
 * recip_scale off SCALE, length 0), or 0. Range and shape faults need the
 * device state and are not checked here. */
int npk_pccx_check(uint64_t word);
/* The same for a device with `lanes` GEMV cores (parallel_lane > lanes is
 * LANE); npk_pccx_check is this with the default NPK_PCCX_LANES. */
int npk_pccx_check_lanes(uint64_t word, unsigned lanes);
/* The same on the decoded fields of a word (npk_pccx_decode), for a caller that decoded it already. */
int npk_pccx_check_insn(const npk_pccx_insn *in, unsigned lanes);

/* Builders for the common forms (fields are masked; use encode() to check). */
uint64_t npk_pccx_gemv_word(uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                            unsigned lanes);
uint64_t npk_pccx_gemm_word(uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                            unsigned lanes);
uint64_t npk_pccx_memcpy_word(unsigned from_device, unsigned to_device, uint32_t dest, uint32_t src, uint32_t aux,
                              unsigned shape_ptr, unsigned async);
uint64_t npk_pccx_memset_word(unsigned cache, unsigned index, uint16_t a, uint16_t b, uint16_t c);
uint64_t npk_pccx_cvo_word(unsigned func, uint32_t src, uint32_t dst, unsigned length, unsigned flags, unsigned async);

/* Names: "GEMV".., "EXP".., "REDUCE_SUM"; "?" for reserved codes. */
const char *npk_pccx_opcode_name(unsigned op);
const char *npk_pccx_cvo_name(unsigned func);

/* Fault codes (the ERR_CODE register; npk_pccx_check returns them). */
typedef enum npk_pccx_fault {
    NPK_PCCX_FAULT_NONE = 0,
    NPK_PCCX_FAULT_OPCODE = 1,        /* reserved opcode 0x5-0xF */
    NPK_PCCX_FAULT_FUNC = 2,          /* reserved CVO function 0x8-0xF */
    NPK_PCCX_FAULT_RESERVED = 3,      /* a reserved bit or reserved flag bit is set */
    NPK_PCCX_FAULT_DIRECTION = 4,     /* MEMCPY (from_device, to_device) = (1,1) */
    NPK_PCCX_FAULT_L2_RANGE = 5,      /* an L2 access reaches beyond word 114,687 */
    NPK_PCCX_FAULT_SHAPE_ZERO = 6,    /* zero elements / zero dimension / CVO length 0 */
    NPK_PCCX_FAULT_SHAPE_MISMATCH = 7,/* fmap K (c) != weight K, or G > K */
    NPK_PCCX_FAULT_LANE = 8,          /* parallel_lane > 4 */
    NPK_PCCX_FAULT_HOST_RANGE = 9,    /* MEMCPY beyond HWIN_SIZE */
    NPK_PCCX_FAULT_WS_RANGE = 10,     /* weight record beyond WS_LIMIT */
    NPK_PCCX_FAULT_BUS = 11,          /* bus error response on a host/stream access */
    NPK_PCCX_FAULT_FLAGS = 12,        /* recip_scale on a CVO other than SCALE */
    NPK_PCCX_FAULT_OVERFLOW = 13,     /* instruction issued while the queue was full (dropped) */
    NPK_PCCX_FAULT_FIELD = 14,        /* MEMCPY: an address field the direction does not use is non-zero */
    NPK_PCCX_FAULT_CACHE = 15,        /* MEMSET dest_cache 2 or 3 */
    NPK_PCCX_FAULT_LIMIT = 16         /* npukit: a GEMV/GEMM above the model's implementation limits
                                       * (options max_wbytes, max_macs: bounded host work) */
} npk_pccx_fault;

/* "L2_RANGE", ...; "?" for unknown codes. */
const char *npk_pccx_fault_name(unsigned code);

/* ---- weight records (pure functions) ------------------------------------------- */

/* Bytes of one record in the weight stream (see the layout above). G = 0
 * means G = K. Returns 0 for N or K of 0. */
uint64_t npk_pccx_wrec_size(unsigned N, unsigned K, unsigned G, int w_scale);
/* Pack q [N][K] (values -8..7) and, if scales != NULL, scales [N][ceil(K/G)]
 * into out (npk_pccx_wrec_size(N, K, G, scales != NULL) bytes). Returns 0 or
 * -NPK_EINVAL when a value is outside -8..7 or a dimension is 0 or > 65535. */
int npk_pccx_wrec_pack(const int8_t *q, const float *scales, unsigned N, unsigned K, unsigned G, uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
