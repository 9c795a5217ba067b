// SPDX-License-Identifier: MIT
/*
 * npukit base layer: host tensors and element types.
 *
 * npk_tensor is the dense row-major host tensor the graph layer, the ONNX
 * reference operators (src/ops/ref_onnx*.c) and the tools share. Element
 * types are the values of ONNX's TensorProto.DataType. Loading and saving
 * ONNX TensorProto files is the graph layer's (include/npukit/graph.h).
 *
 * Functions that can fail return NPK_OK (0) or a negative npk_status with a
 * message in npk_errmsg() (include/npukit/error.h).
 */
#ifndef NPUKIT_TENSOR_H
#define NPUKIT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "npukit/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Maximum tensor rank. */
#define NPK_MAX_RANK 8

/* Element types: the values of ONNX's TensorProto.DataType. */
typedef enum npk_dtype {
    NPK_DT_UNDEFINED = 0,
    NPK_DT_FLOAT = 1,
    NPK_DT_UINT8 = 2,
    NPK_DT_INT8 = 3,
    NPK_DT_UINT16 = 4,
    NPK_DT_INT16 = 5,
    NPK_DT_INT32 = 6,
    NPK_DT_INT64 = 7,
    NPK_DT_STRING = 8,
    NPK_DT_BOOL = 9,
    NPK_DT_FLOAT16 = 10,
    NPK_DT_DOUBLE = 11,
    NPK_DT_UINT32 = 12,
    NPK_DT_UINT64 = 13,
    NPK_DT_BFLOAT16 = 16
} npk_dtype;

/* Name of an element type ("float", "int8", ...; "dtype<N>" when unknown). */
const char *npk_dtype_name(int dtype);
/* Bytes per element (0 for types npukit cannot hold: string, complex, ...). */
size_t npk_dtype_size(int dtype);
/* 1 for the integer types (and bool), 0 for float types. */
int npk_dtype_is_int(int dtype);
/* 1 for the 16-bit float storage types (float16, bfloat16). */
int npk_dtype_is_half(int dtype);

/* Kinds of values. ONNX graph values are dense tensors or, in a few models,
 * sequences of tensors and optionals (holding a tensor or a sequence of
 * tensors, or nothing); on disk these are onnx-data.proto's SequenceProto and
 * OptionalProto. Only Identity passes sequence and optional values through;
 * any other operator reached by one fails with a message naming the node. */
typedef enum npk_kind { NPK_KIND_TENSOR = 0, NPK_KIND_SEQUENCE = 1, NPK_KIND_OPTIONAL = 2 } npk_kind;

/* A dense tensor in host memory, row-major (C order), or (kind != 0) a
 * sequence or optional of such values.
 *   data: npk_tensor_numel() elements of dtype, owned by the tensor (malloc'ed)
 *   dims[0 .. rank-1]: the shape; rank 0 is a scalar (one element).
 * A zeroed struct (or one from npk_tensor_alloc) is a tensor. For kind
 * SEQUENCE or OPTIONAL dtype, rank, dims and data are unused (0 / NULL) and
 * items[0 .. n_items-1] hold the elements (a sequence: any count; an
 * optional: 0 when empty, else 1). npk_tensor_free and npk_tensor_copy
 * handle every kind. */
typedef struct npk_tensor {
    char *name;                 /* owned, may be NULL */
    int dtype;                  /* npk_dtype */
    int rank;
    int64_t dims[NPK_MAX_RANK];
    void *data;                 /* owned */
    int kind;                   /* npk_kind; NPK_KIND_TENSOR (0) for a tensor */
    size_t n_items;             /* SEQUENCE / OPTIONAL: number of elements */
    struct npk_tensor *items;   /* SEQUENCE / OPTIONAL: the elements (owned array of n_items) */
} npk_tensor;

/* Number of elements (product of dims; 1 for rank 0). */
int64_t npk_tensor_numel(const npk_tensor *t);
/* Size of the data in bytes. */
size_t npk_tensor_bytes(const npk_tensor *t);
/* Allocate t's data (zeroed) for the given type and shape; name is copied (may be NULL). */
int npk_tensor_alloc(npk_tensor *t, const char *name, int dtype, int rank, const int64_t *dims);
/* The same without zeroing the data (its contents are indeterminate): for a
 * caller that writes every element before anything reads one. */
int npk_tensor_alloc_raw(npk_tensor *t, const char *name, int dtype, int rank, const int64_t *dims);
/* Free the data, the elements (recursively) and the name, and zero the struct. */
void npk_tensor_free(npk_tensor *t);
/* Deep copy (elements of sequences and optionals included). */
int npk_tensor_copy(npk_tensor *dst, const npk_tensor *src);
/* Largest tensor npukit allocates (bytes): a shape beyond it is refused
 * with a message instead of exhausting host memory (docs/onnx.md). */
#define NPK_MAX_TENSOR_BYTES ((int64_t)1 << 30)
/* Checked element count of a shape with es-byte elements: -1 if a dim is
 * negative or the size exceeds NPK_MAX_TENSOR_BYTES. */
int64_t npk_tensor_checked_numel(int rank, const int64_t *dims, size_t es);
/* "int8[4,3,32,32]" into buf (always NUL-terminated). */
const char *npk_tensor_shape_str(int dtype, int rank, const int64_t *dims, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
