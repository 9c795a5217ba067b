// SPDX-License-Identifier: MIT
/* Host tensors and element types (include/npukit/tensor.h). */
#include "npukit/tensor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *npk_dtype_name(int dt) {
    static const char *names[] = {"undefined", "float", "uint8", "int8", "uint16", "int16", "int32", "int64",
                                  "string", "bool", "float16", "double", "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16"};
    static _Thread_local char buf[24];
    if (dt >= 0 && dt < (int)(sizeof names / sizeof names[0])) return names[dt];
    snprintf(buf, sizeof buf, "dtype<%d>", dt);
    return buf;
}

size_t npk_dtype_size(int dt) {
    switch (dt) {
    case NPK_DT_UINT8: case NPK_DT_INT8: case NPK_DT_BOOL: return 1;
    case NPK_DT_UINT16: case NPK_DT_INT16: case NPK_DT_FLOAT16: case NPK_DT_BFLOAT16: return 2;
    case NPK_DT_FLOAT: case NPK_DT_INT32: case NPK_DT_UINT32: return 4;
    case NPK_DT_INT64: case NPK_DT_DOUBLE: case NPK_DT_UINT64: return 8;
    default: return 0;
    }
}

int npk_dtype_is_half(int dt) { return dt == NPK_DT_FLOAT16 || dt == NPK_DT_BFLOAT16; }
int npk_dtype_is_int(int dt) { return npk_dtype_size(dt) && dt != NPK_DT_FLOAT && dt != NPK_DT_DOUBLE && !npk_dtype_is_half(dt); }

int64_t npk_tensor_numel(const npk_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

size_t npk_tensor_bytes(const npk_tensor *t) { return (size_t)npk_tensor_numel(t) * npk_dtype_size(t->dtype); }

int64_t npk_tensor_checked_numel(int rank, const int64_t *dims, size_t es) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] && n > NPK_MAX_TENSOR_BYTES / dims[i]) return -1;
        n *= dims[i];
    }
    if (es && n > NPK_MAX_TENSOR_BYTES / (int64_t)es) return -1;
    return n;
}

static int tensor_alloc(npk_tensor *t, const char *name, int dt, int rank, const int64_t *dims, int zero) {
    memset(t, 0, sizeof *t);
    size_t es = npk_dtype_size(dt);
    if (!es) return npk_err(NPK_EUNSUPPORTED, "element type %s is not supported", npk_dtype_name(dt));
    if (rank < 0 || rank > NPK_MAX_RANK) return npk_err(NPK_EUNSUPPORTED, "rank %d exceeds %d", rank, NPK_MAX_RANK);
    int64_t n = npk_tensor_checked_numel(rank, dims, es);
    if (n < 0) return npk_err(NPK_EINVAL, "invalid tensor shape, or larger than the 1 GiB tensor limit");
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->data = zero ? calloc((size_t)(n ? n : 1), es) : malloc((size_t)(n ? n : 1) * es);
    if (!t->data) return npk_err(NPK_ENOMEM, "out of memory for a %lld-element tensor", (long long)n);
    if (name && !(t->name = strdup(name))) {
        free(t->data);
        t->data = NULL;
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    return 0;
}

int npk_tensor_alloc(npk_tensor *t, const char *name, int dt, int rank, const int64_t *dims) {
    return tensor_alloc(t, name, dt, rank, dims, 1);
}

int npk_tensor_alloc_raw(npk_tensor *t, const char *name, int dt, int rank, const int64_t *dims) {
    return tensor_alloc(t, name, dt, rank, dims, 0);
}

void npk_tensor_free(npk_tensor *t) {
    if (!t) return;
    for (size_t i = 0; t->items && i < t->n_items; i++) npk_tensor_free(&t->items[i]);
    free(t->items);
    free(t->data);
    free(t->name);
    memset(t, 0, sizeof *t);
}

int npk_tensor_copy(npk_tensor *dst, const npk_tensor *src) {
    if (src->kind != NPK_KIND_TENSOR) { /* sequence / optional: copy the elements */
        memset(dst, 0, sizeof *dst);
        dst->kind = src->kind;
        if ((src->name && !(dst->name = strdup(src->name))) ||
            (src->n_items && !(dst->items = calloc(src->n_items, sizeof *dst->items)))) {
            npk_tensor_free(dst);
            return npk_err(NPK_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < src->n_items; i++) {
            dst->n_items = i + 1;
            int rc = npk_tensor_copy(&dst->items[i], &src->items[i]);
            if (rc) {
                npk_tensor_free(dst);
                return rc;
            }
        }
        return 0;
    }
    int rc = npk_tensor_alloc(dst, src->name, src->dtype, src->rank, src->dims);
    if (rc) return rc;
    memcpy(dst->data, src->data, npk_tensor_bytes(src));
    return 0;
}

const char *npk_tensor_shape_str(int dt, int rank, const int64_t *dims, char *buf, size_t len) {
    size_t o = (size_t)snprintf(buf, len, "%s[", npk_dtype_name(dt));
    for (int i = 0; i < rank && o < len; i++) {
        if (dims[i] < 0)
            o += (size_t)snprintf(buf + o, len - o, "%s?", i ? "," : "");
        else
            o += (size_t)snprintf(buf + o, len - o, "%s%" PRId64, i ? "," : "", dims[i]);
    }
    if (o < len) snprintf(buf + o, len - o, "]");
    return buf;
}
