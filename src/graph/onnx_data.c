// SPDX-License-Identifier: MIT
/* ONNX data values <-> npk_tensor: TensorProto (the tensors of models and of
 * test data; the in-memory helpers are src/base/tensor.c), and the non-tensor
 * values SequenceProto / OptionalProto <-> npk_tensor of kind
 * NPK_KIND_SEQUENCE / NPK_KIND_OPTIONAL.
 *
 * The protobuf code (npk_onnx_data.pb-c.[ch]) is generated at build time by
 * cmake/onnx.cmake from npukit's schema src/graph/npk_onnx_data.proto, which
 * declares these messages with ONNX's wire format (Debian's libonnx-dev does
 * not ship onnx-data.proto); the TensorProtos inside go through the same
 * validation as every other tensor (npk_tensor_from_proto). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/ir.h"
#include "npk_onnx_data.pb-c.h"
#include "onnx/onnx.pb-c.h"

/* ---- tensors ------------------------------------------------------------------- */

/* TensorProto -> npk_tensor. what names the tensor in messages. */
static int tensor_from_proto(npk_tensor *t, const Onnx__TensorProto *p, const char *what) {
    memset(t, 0, sizeof *t);
    const char *nm = p->name && *p->name ? p->name : what;
    if ((p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
        p->n_external_data) {
        const char *loc = "?";
        for (size_t i = 0; i < p->n_external_data; i++)
            if (p->external_data[i]->key && !strcmp(p->external_data[i]->key, "location") && p->external_data[i]->value)
                loc = p->external_data[i]->value;
        return npk_err(NPK_EUNSUPPORTED, "tensor '%s' stores its data externally (location '%s'): external data is not supported",
                       nm, loc);
    }
    if (p->segment) return npk_err(NPK_EUNSUPPORTED, "tensor '%s' is segmented: not supported", nm);
    int dt = p->data_type;
    size_t es = npk_dtype_size(dt);
    if (!es) return npk_err(NPK_EUNSUPPORTED, "tensor '%s' has element type %s, which is not supported", nm, npk_dtype_name(dt));
    if (p->n_dims > NPK_MAX_RANK)
        return npk_err(NPK_EUNSUPPORTED, "tensor '%s' has rank %zu (at most %d supported)", nm, p->n_dims, NPK_MAX_RANK);
    int64_t n = npk_tensor_checked_numel((int)p->n_dims, p->dims, es);
    if (n < 0)
        return npk_err(NPK_EFORMAT, "tensor '%s' has a negative dimension or is larger than the 1 GiB tensor limit", nm);
    /* Check the data against the shape before allocating for it. */
    if (p->has_raw_data && p->raw_data.len != (size_t)n * es)
        return npk_err(NPK_EFORMAT, "tensor '%s': raw_data has %zu bytes, shape needs %zu", nm, p->raw_data.len,
                       (size_t)n * es);
    int rc = npk_tensor_alloc(t, nm, dt, (int)p->n_dims, p->dims);
    if (rc) return rc;
    size_t count = 0;
    if (p->has_raw_data) {
        if (n) memcpy(t->data, p->raw_data.data, (size_t)n * es);
        return 0;
    }
    switch (dt) {
    case NPK_DT_FLOAT:
        count = p->n_float_data;
        if (count == (size_t)n && n) memcpy(t->data, p->float_data, (size_t)n * 4);
        break;
    case NPK_DT_DOUBLE:
        count = p->n_double_data;
        if (count == (size_t)n && n) memcpy(t->data, p->double_data, (size_t)n * 8);
        break;
    case NPK_DT_INT64:
        count = p->n_int64_data;
        if (count == (size_t)n && n) memcpy(t->data, p->int64_data, (size_t)n * 8);
        break;
    case NPK_DT_UINT32: case NPK_DT_UINT64:
        count = p->n_uint64_data;
        if (count == (size_t)n)
            for (int64_t i = 0; i < n; i++) {
                if (dt == NPK_DT_UINT32) ((uint32_t *)t->data)[i] = (uint32_t)p->uint64_data[i];
                else ((uint64_t *)t->data)[i] = p->uint64_data[i];
            }
        break;
    default: /* int32, int16, uint16, int8, uint8, bool: int32_data */
        count = p->n_int32_data;
        if (count == (size_t)n)
            for (int64_t i = 0; i < n; i++) {
                switch (dt) {
                case NPK_DT_INT32: ((int32_t *)t->data)[i] = p->int32_data[i]; break;
                case NPK_DT_INT16: ((int16_t *)t->data)[i] = (int16_t)p->int32_data[i]; break;
                case NPK_DT_UINT16: case NPK_DT_FLOAT16: case NPK_DT_BFLOAT16:
                    ((uint16_t *)t->data)[i] = (uint16_t)p->int32_data[i]; /* the bits */
                    break;
                case NPK_DT_INT8: ((int8_t *)t->data)[i] = (int8_t)p->int32_data[i]; break;
                default: ((uint8_t *)t->data)[i] = (uint8_t)p->int32_data[i]; break;
                }
            }
        break;
    }
    if (count != (size_t)n) {
        npk_tensor_free(t);
        return npk_err(NPK_EFORMAT, "tensor '%s': %zu data elements, shape needs %lld", nm, count, (long long)n);
    }
    return 0;
}

int npk_tensor_from_proto(npk_tensor *t, const Onnx__TensorProto *p, const char *what) {
    return tensor_from_proto(t, p, what);
}

int npk_tensor_load_pb(npk_tensor *t, const uint8_t *data, size_t len) {
    memset(t, 0, sizeof *t);
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, len, data);
    if (!p) return npk_err(NPK_EFORMAT, "not a valid ONNX TensorProto (protobuf decoding failed: truncated or corrupt)");
    if (!p->has_data_type) {
        onnx__tensor_proto__free_unpacked(p, NULL);
        return npk_err(NPK_EFORMAT, "TensorProto has no data_type (not a tensor file?)");
    }
    int rc = tensor_from_proto(t, p, "tensor");
    onnx__tensor_proto__free_unpacked(p, NULL);
    return rc;
}

static int read_whole(const char *path, uint8_t **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return npk_err(NPK_EIO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return npk_err(NPK_EIO, "'%s' is a directory, not a file", path);
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        uint8_t *nb = realloc(b, cap *= 2);
        if (!nb) {
            free(b);
            b = NULL;
        } else {
            b = nb;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!b) return npk_err(NPK_ENOMEM, "out of memory reading '%s'", path);
    if (err) {
        free(b);
        return npk_err(NPK_EIO, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
    }
    *data = b;
    *len = n;
    return 0;
}

int npk_read_file(const char *path, uint8_t **data, size_t *len) { return read_whole(path, data, len); }

int npk_read_file_parse(const char *path, int (*parse)(void *obj, const uint8_t *data, size_t len), void *obj) {
    uint8_t *d;
    size_t n;
    int rc = read_whole(path, &d, &n);
    if (rc) return rc;
    rc = parse(obj, d, n);
    free(d);
    return rc ? npk_err_prefix(-rc, "%s", path) : 0;
}

static int parse_tensor(void *t, const uint8_t *data, size_t len) { return npk_tensor_load_pb(t, data, len); }

int npk_tensor_load_pb_file(npk_tensor *t, const char *path) {
    memset(t, 0, sizeof *t);
    return npk_read_file_parse(path, parse_tensor, t);
}

void npk_tensor_to_proto(const npk_tensor *t, Onnx__TensorProto *p, int64_t *dims) {
    onnx__tensor_proto__init(p);
    for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i];
    p->n_dims = (size_t)t->rank;
    p->dims = dims;
    p->has_data_type = 1;
    p->data_type = t->dtype;
    p->name = t->name;
    p->has_raw_data = 1;
    p->raw_data.len = npk_tensor_bytes(t);
    p->raw_data.data = t->data;
}

int npk_tensor_save_pb(const npk_tensor *t, uint8_t **out, size_t *len) {
    if (t->kind != NPK_KIND_TENSOR) return npk_value_save_pb(t, out, len);
    Onnx__TensorProto p;
    int64_t dims[NPK_MAX_RANK];
    npk_tensor_to_proto(t, &p, dims);
    size_t n = onnx__tensor_proto__get_packed_size(&p);
    uint8_t *b = malloc(n ? n : 1);
    if (!b) return npk_err(NPK_ENOMEM, "out of memory");
    onnx__tensor_proto__pack(&p, b);
    *out = b;
    *len = n;
    return 0;
}

int npk_tensor_save_pb_file(const npk_tensor *t, const char *path) {
    uint8_t *b;
    size_t n;
    int rc = npk_tensor_save_pb(t, &b, &n);
    if (rc) return rc;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(b);
        return npk_err(NPK_EIO, "cannot create '%s'", path);
    }
    size_t w = fwrite(b, 1, n, f);
    int bad = fclose(f) != 0 || w != n;
    free(b);
    return bad ? npk_err(NPK_EIO, "write error on '%s'", path) : 0;
}

/* ---- sequences and optionals ------------------------------------------------------ */

static const char *elem_kind_name(int32_t k) {
    static _Thread_local char buf[32];
    switch (k) {
    case NPK_ONNX_DATA__ELEM_KIND__UNDEFINED: return "undefined";
    case NPK_ONNX_DATA__ELEM_KIND__TENSOR: return "tensor";
    case NPK_ONNX_DATA__ELEM_KIND__SPARSE_TENSOR: return "sparse tensor";
    case NPK_ONNX_DATA__ELEM_KIND__SEQUENCE: return "sequence";
    case NPK_ONNX_DATA__ELEM_KIND__MAP: return "map";
    case NPK_ONNX_DATA__ELEM_KIND__OPTIONAL: return "optional";
    default: snprintf(buf, sizeof buf, "elem_type %d", (int)k); return buf;
    }
}

const char *npk_value_desc_str(const npk_value_desc *d, char *buf, size_t len) {
    char t[160];
    if (d->rank >= 0) npk_tensor_shape_str(d->dtype, d->rank, d->dims, t, sizeof t);
    else snprintf(t, sizeof t, "%s", npk_dtype_name(d->dtype));
    if (d->kind == NPK_KIND_SEQUENCE) snprintf(buf, len, "sequence(%s)", t);
    else if (d->kind == NPK_KIND_OPTIONAL)
        snprintf(buf, len, d->elem_kind == NPK_KIND_SEQUENCE ? "optional(sequence(%s))" : "optional(%s)", t);
    else snprintf(buf, len, "%s", t);
    return buf;
}

/* ---- decoding -------------------------------------------------------------------- */

static int take_name(npk_tensor *t, const char *name) {
    if (name && *name && !(t->name = strdup(name))) return npk_err(NPK_ENOMEM, "out of memory");
    return 0;
}

/* Elements keep the name their TensorProto has, and get none otherwise (the
 * fallback name npk_tensor_from_proto gives is for messages only): a value
 * written back is then the same message. */
static void unnamed(const Onnx__TensorProto *p, npk_tensor *e) {
    if (!p->name || !*p->name) {
        free(e->name);
        e->name = NULL;
    }
}

/* The start of reading a sequence or optional message: t emptied as a value of that kind; *et
 * its elem_type (UNDEFINED when unset). Returns the name its errors give: the message's, else what. */
static const char *container_begin(npk_tensor *t, int kind, const char *name, const char *what, int has_et, int32_t et_v,
                                   int32_t *et) {
    memset(t, 0, sizeof *t);
    t->kind = kind;
    *et = has_et ? et_v : NPK_ONNX_DATA__ELEM_KIND__UNDEFINED;
    return name && *name ? name : what;
}

/* SequenceProto of TensorProtos -> t (kind SEQUENCE). what names it when the message has no name. */
static int seq_from_proto(npk_tensor *t, const NpkOnnxData__SequenceProto *p, const char *what) {
    int32_t et;
    const char *nm = container_begin(t, NPK_KIND_SEQUENCE, p->name, what, p->has_elem_type, p->elem_type, &et);
    int32_t other = p->n_sparse_tensor_values ? NPK_ONNX_DATA__ELEM_KIND__SPARSE_TENSOR
                    : p->n_sequence_values    ? NPK_ONNX_DATA__ELEM_KIND__SEQUENCE
                    : p->n_map_values         ? NPK_ONNX_DATA__ELEM_KIND__MAP
                    : p->n_optional_values    ? NPK_ONNX_DATA__ELEM_KIND__OPTIONAL
                    : et != NPK_ONNX_DATA__ELEM_KIND__TENSOR ? et : NPK_ONNX_DATA__ELEM_KIND__UNDEFINED;
    if (other != NPK_ONNX_DATA__ELEM_KIND__UNDEFINED)
        return npk_err(NPK_EUNSUPPORTED, "sequence '%s' holds %s values: only sequences of tensors are supported", nm,
                       elem_kind_name(other));
    /* elem_type UNDEFINED is tolerated for an empty sequence only */
    if (et != NPK_ONNX_DATA__ELEM_KIND__TENSOR && p->n_tensor_values)
        return npk_err(NPK_EFORMAT, "sequence '%s' holds tensors but its elem_type is %s", nm, elem_kind_name(et));
    int rc = take_name(t, p->name);
    if (!rc && p->n_tensor_values && !(t->items = calloc(p->n_tensor_values, sizeof *t->items)))
        rc = npk_err(NPK_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < p->n_tensor_values; i++) {
        char el[64];
        snprintf(el, sizeof el, "element %zu", i);
        t->n_items = i + 1;
        if ((rc = npk_tensor_from_proto(&t->items[i], p->tensor_values[i], el))) {
            rc = npk_err_prefix(-rc, "sequence '%s' element %zu", nm, i);
            break;
        }
        unnamed(p->tensor_values[i], &t->items[i]);
        if (t->items[i].dtype != t->items[0].dtype)
            rc = npk_err(NPK_EFORMAT, "sequence '%s': element %zu is %s, element 0 is %s (a sequence has one element type)", nm,
                         i, npk_dtype_name(t->items[i].dtype), npk_dtype_name(t->items[0].dtype));
    }
    if (rc) npk_tensor_free(t);
    return rc;
}

/* OptionalProto holding nothing, a TensorProto or a SequenceProto of TensorProtos -> t (kind OPTIONAL). */
static int opt_from_proto(npk_tensor *t, const NpkOnnxData__OptionalProto *p, const char *what) {
    int32_t et;
    const char *nm = container_begin(t, NPK_KIND_OPTIONAL, p->name, what, p->has_elem_type, p->elem_type, &et);
    int32_t other = p->sparse_tensor_value ? NPK_ONNX_DATA__ELEM_KIND__SPARSE_TENSOR
                    : p->map_value         ? NPK_ONNX_DATA__ELEM_KIND__MAP
                    : p->optional_value    ? NPK_ONNX_DATA__ELEM_KIND__OPTIONAL
                    : (et == NPK_ONNX_DATA__ELEM_KIND__SPARSE_TENSOR || et == NPK_ONNX_DATA__ELEM_KIND__MAP ||
                       et == NPK_ONNX_DATA__ELEM_KIND__OPTIONAL)
                        ? et
                        : NPK_ONNX_DATA__ELEM_KIND__UNDEFINED;
    if (other != NPK_ONNX_DATA__ELEM_KIND__UNDEFINED)
        return npk_err(NPK_EUNSUPPORTED,
                       "optional '%s' holds a %s: only optionals of a tensor or of a sequence of tensors are supported", nm,
                       elem_kind_name(other));
    if (p->tensor_value && p->sequence_value)
        return npk_err(NPK_EFORMAT, "optional '%s' holds both a tensor and a sequence", nm);
    if ((p->tensor_value && et != NPK_ONNX_DATA__ELEM_KIND__TENSOR) ||
        (p->sequence_value && et != NPK_ONNX_DATA__ELEM_KIND__SEQUENCE))
        return npk_err(NPK_EFORMAT, "optional '%s' holds a %s but its elem_type is %s", nm,
                       p->tensor_value ? "tensor" : "sequence", elem_kind_name(et));
    int rc = take_name(t, p->name);
    if (rc) return rc;
    if (!p->tensor_value && !p->sequence_value) return 0; /* empty */
    if (!(t->items = calloc(1, sizeof *t->items))) {
        npk_tensor_free(t);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    t->n_items = 1;
    if (p->tensor_value) {
        if ((rc = npk_tensor_from_proto(&t->items[0], p->tensor_value, "value")))
            rc = npk_err_prefix(-rc, "optional '%s'", nm);
        else unnamed(p->tensor_value, &t->items[0]);
    } else {
        rc = seq_from_proto(&t->items[0], p->sequence_value, "value");
        if (rc) rc = npk_err_prefix(-rc, "optional '%s'", nm);
    }
    if (rc) npk_tensor_free(t);
    return rc;
}

int npk_value_load_pb(npk_tensor *t, const uint8_t *data, size_t len, int kind) {
    memset(t, 0, sizeof *t);
    if (kind == NPK_KIND_TENSOR) return npk_tensor_load_pb(t, data, len);
    if (kind == NPK_KIND_SEQUENCE) {
        NpkOnnxData__SequenceProto *p = npk_onnx_data__sequence_proto__unpack(NULL, len, data);
        if (!p) return npk_err(NPK_EFORMAT, "not a valid ONNX SequenceProto (protobuf decoding failed: truncated or corrupt)");
        int rc = seq_from_proto(t, p, "sequence");
        npk_onnx_data__sequence_proto__free_unpacked(p, NULL);
        return rc;
    }
    if (kind == NPK_KIND_OPTIONAL) {
        NpkOnnxData__OptionalProto *p = npk_onnx_data__optional_proto__unpack(NULL, len, data);
        if (!p) return npk_err(NPK_EFORMAT, "not a valid ONNX OptionalProto (protobuf decoding failed: truncated or corrupt)");
        int rc = opt_from_proto(t, p, "optional");
        npk_onnx_data__optional_proto__free_unpacked(p, NULL);
        return rc;
    }
    return npk_err(NPK_EINVAL, "unknown value kind %d", kind);
}

int npk_value_load_pb_file(npk_tensor *t, const char *path, int kind) {
    uint8_t *d;
    size_t n;
    memset(t, 0, sizeof *t);
    int rc = npk_read_file(path, &d, &n);
    if (rc) return rc;
    rc = npk_value_load_pb(t, d, n, kind);
    free(d);
    if (rc) return npk_err_prefix(-rc, "%s", path);
    return 0;
}

/* ---- encoding -------------------------------------------------------------------- */

/* A SequenceProto pointing into t's tensors (the arrays are owned here). */
typedef struct seq_enc {
    NpkOnnxData__SequenceProto p;
    Onnx__TensorProto *tp;
    Onnx__TensorProto **ptr;
    int64_t *dims;
} seq_enc;

static void seq_enc_fini(seq_enc *e) {
    free(e->tp);
    free(e->ptr);
    free(e->dims);
}

static int seq_enc_init(seq_enc *e, const npk_tensor *t) {
    memset(e, 0, sizeof *e);
    npk_onnx_data__sequence_proto__init(&e->p);
    e->p.name = t->name;
    e->p.has_elem_type = 1;
    e->p.elem_type = NPK_ONNX_DATA__ELEM_KIND__TENSOR;
    size_t n = t->n_items;
    e->tp = calloc(n + 1, sizeof *e->tp);
    e->ptr = calloc(n + 1, sizeof *e->ptr);
    e->dims = calloc((n + 1) * NPK_MAX_RANK, sizeof *e->dims);
    if (!e->tp || !e->ptr || !e->dims) {
        seq_enc_fini(e);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (t->items[i].kind != NPK_KIND_TENSOR) {
            seq_enc_fini(e);
            return npk_err(NPK_EUNSUPPORTED, "sequence element %zu is not a tensor: only sequences of tensors are supported", i);
        }
        npk_tensor_to_proto(&t->items[i], &e->tp[i], e->dims + i * NPK_MAX_RANK);
        e->ptr[i] = &e->tp[i];
    }
    e->p.n_tensor_values = n;
    e->p.tensor_values = e->ptr;
    return 0;
}

static int pack_out(const ProtobufCMessage *m, uint8_t **out, size_t *len) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(n ? n : 1);
    if (!b) return npk_err(NPK_ENOMEM, "out of memory");
    protobuf_c_message_pack(m, b);
    *out = b;
    *len = n;
    return 0;
}

int npk_value_save_pb(const npk_tensor *t, uint8_t **out, size_t *len) {
    seq_enc e;
    int rc;
    if (t->kind == NPK_KIND_SEQUENCE) {
        if ((rc = seq_enc_init(&e, t))) return rc;
        rc = pack_out(&e.p.base, out, len);
        seq_enc_fini(&e);
        return rc;
    }
    if (t->kind != NPK_KIND_OPTIONAL) return npk_err(NPK_EINVAL, "unknown value kind %d", t->kind);
    if (t->n_items > 1) return npk_err(NPK_EINVAL, "an optional holds at most one value (%zu given)", t->n_items);
    NpkOnnxData__OptionalProto p;
    Onnx__TensorProto tp;
    int64_t dims[NPK_MAX_RANK];
    npk_onnx_data__optional_proto__init(&p);
    p.name = t->name;
    memset(&e, 0, sizeof e);
    if (t->n_items && t->items[0].kind == NPK_KIND_TENSOR) { /* an empty optional keeps elem_type UNDEFINED */
        npk_tensor_to_proto(&t->items[0], &tp, dims);
        p.has_elem_type = 1;
        p.elem_type = NPK_ONNX_DATA__ELEM_KIND__TENSOR;
        p.tensor_value = &tp;
    } else if (t->n_items && t->items[0].kind == NPK_KIND_SEQUENCE) {
        if ((rc = seq_enc_init(&e, &t->items[0]))) return rc;
        p.has_elem_type = 1;
        p.elem_type = NPK_ONNX_DATA__ELEM_KIND__SEQUENCE;
        p.sequence_value = &e.p;
    } else if (t->n_items) {
        return npk_err(NPK_EUNSUPPORTED, "an optional of an optional is not supported");
    }
    rc = pack_out(&p.base, out, len);
    seq_enc_fini(&e);
    return rc;
}
