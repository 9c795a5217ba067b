// SPDX-License-Identifier: MIT
/* The shell's engines: what DMA, GEMM, VEC_OP and SOFTMAX descriptors do to
 * guest memory (through npk_bus_*, so fault injection applies to every beat)
 * and how many cycles they take. Arithmetic: docs/shell.md. */
#include "shell_int.h"

#include "npukit/error.h"
#include "npukit/shell_model.h"
#include "npukit/shell_regs.h"
#include "npukit/shell_desc.h"
#include "npukit/numfmt.h"
#include "npukit/range.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest matrix / vector the model processes in one descriptor (elements). */
#define SHX_MAX_ELEMS (1ull << 26)
#define SHX_CHUNK 65536u
/* Largest transfer of one SOFTMAX descriptor (DMA descriptors: the option
 * max_dma, at most this) and longest gather/scatter list. */
#define SHX_MAX_BYTES (1ull << 30)
#define SHX_MAX_ENTRIES (1u << 20)
/* GEMMs of more MACs run as blocks of about this many (gemm_blocks). */
#define SHX_GEMM_BLOCK (1ull << 30)

/* ---- helpers ------------------------------------------------------------------ */

static void fail(shx_res *x, uint32_t code, uint64_t addr, const char *fmt, ...) {
    if (x->err) return; /* first error wins */
    x->err = code;
    x->err_addr = addr;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->what, sizeof x->what, fmt, ap);
    va_end(ap);
}

/* The serving process is stopping (npk_dev_stopping, issue 32 point 3): the
 * descriptor is abandoned as a beat that never answers leaves it (TIMEOUT
 * after bus_timeout cycles; what it wrote so far stays). 1 when abandoned. */
static int stopping(shx_ctx *c, shx_res *x) {
    if (!npk_dev_stopping(c->dev)) return 0;
    x->hang = 1;
    fail(x, SHELL_ERR_TIMEOUT, 0, "abandoned: the server is shutting down");
    return 1;
}

/* Record an operand range for the hazard check. A range that wraps past 2^64
 * latches DMA_FAULT at its start address and returns -1 (nothing runs). */
static int add_range(shx_ctx *c, shx_res *x, uint64_t lo, uint64_t len, int write) {
    uint64_t last;
    if (!len) return 0;
    if (!npk_range_ok(lo, len, &last)) {
        fail(x, SHELL_ERR_DMA_FAULT, lo, "range 0x%" PRIx64 "+0x%" PRIx64 " wraps past 2^64", lo, len);
        return -1;
    }
    shx_rset *rs = c->rs;
    if (rs->n == rs->cap) {
        size_t nc = rs->cap ? rs->cap * 2 : 8;
        shx_range *nr = realloc(rs->r, nc * sizeof *nr);
        if (!nr) {
            rs->all = 1; /* conservative: serialise against everything */
            return 0;
        }
        rs->r = nr;
        rs->cap = nc;
    }
    uint64_t hi = last == UINT64_MAX ? UINT64_MAX : last + 1;
    rs->r[rs->n++] = (shx_range){lo, hi, write};
    return 0;
}

/* The same for rows x rowbytes, stride apart (the span must not overflow). */
static int add_range2d(shx_ctx *c, shx_res *x, uint64_t base, uint64_t rows, uint64_t stride, uint64_t rowbytes,
                       int write) {
    uint64_t span;
    if (!npk_range_span(rows, stride, rowbytes, &span)) {
        fail(x, SHELL_ERR_DMA_FAULT, base, "%" PRIu64 " rows of %" PRIu64 " bytes, %" PRIu64 " apart, at 0x%" PRIx64
             " wrap past 2^64", rows, rowbytes, stride, base);
        return -1;
    }
    return add_range(c, x, base, span, write);
}

void shx_rset_clear(shx_rset *r) {
    r->n = 0;
    r->all = 0;
}

void shx_rset_free(shx_rset *r) {
    free(r->r);
    memset(r, 0, sizeof *r);
}

int shx_conflict(const shx_rset *a, const shx_rset *b) {
    if ((a->all && (b->n || b->all)) || (b->all && a->n)) return 1;
    for (size_t i = 0; i < a->n; i++)
        for (size_t j = 0; j < b->n; j++) {
            const shx_range *x = &a->r[i], *y = &b->r[j];
            if ((x->write || y->write) && x->lo < y->hi && y->lo < x->hi) return 1;
        }
    return 0;
}

static int bus_xfer(shx_ctx *c, shx_res *x, int write, uint64_t addr, void *buf, size_t len) {
    if (!len) return 0;
    if (stopping(c, x)) return -1;
    if (!npk_range_ok(addr, len, NULL)) {
        /* past 2^64 the address would wrap to 0: refused before any beat */
        fail(x, SHELL_ERR_DMA_FAULT, addr, "%s of %zu bytes at 0x%" PRIx64 " wraps past 2^64", write ? "write" : "read",
             len, addr);
        return -1;
    }
    if (write && npk_range_overlap(addr, len, c->ring_lo, c->ring_hi - c->ring_lo)) {
        /* A write onto the live command ring would be decoded as descriptors
         * later: refuse it (DMA_FAULT at the first ring byte), after the part
         * below the ring, like a bus error on that beat. */
        if (addr < c->ring_lo && bus_xfer(c, x, 1, addr, buf, (size_t)(c->ring_lo - addr))) return -1;
        uint64_t at = addr > c->ring_lo ? addr : c->ring_lo;
        fail(x, SHELL_ERR_DMA_FAULT, at, "write at 0x%" PRIx64 " lands on the command ring", at);
        return -1;
    }
    size_t done = 0;
    uint64_t fa = addr, cyc = 0;
    size_t beat = c->p->beat;
    npk_bus_resp r = write ? npk_bus_copy_out(c->mem, addr, buf, len, beat, &done, &fa, &cyc)
                           : npk_bus_copy_in(c->mem, addr, buf, len, beat, &done, &fa, &cyc);
    x->lat_sum += cyc;
    x->beats += (done + beat - 1) / beat + (r != NPK_BUS_OK);
    if (r == NPK_BUS_OK) return 0;
    if (r == NPK_BUS_HANG) {
        x->hang = 1;
        fail(x, SHELL_ERR_TIMEOUT, fa, "bus %s at 0x%" PRIx64 " never answered", write ? "write" : "read", fa);
    } else {
        fail(x, SHELL_ERR_DMA_FAULT, fa, "bus error on the %s at 0x%" PRIx64, write ? "write" : "read", fa);
    }
    return -1;
}
static int rd(shx_ctx *c, shx_res *x, uint64_t addr, void *buf, size_t len) { return bus_xfer(c, x, 0, addr, buf, len); }
static int wr(shx_ctx *c, shx_res *x, uint64_t addr, const void *buf, size_t len) {
    return bus_xfer(c, x, 1, addr, (void *)buf, len);
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : a; }
static uint64_t avg_lat(const shx_res *x) { return x->beats ? cdiv(x->lat_sum, x->beats) : 0; }

/* ---- DMA ------------------------------------------------------------------------ */

static void dma_time(shx_ctx *c, shx_res *x, uint64_t entries, uint64_t extra_bytes) {
    x->engine = SHX_DMA;
    if (c->p->rtlgen) extra_bytes = 0; /* the perf model charges the data bytes only */
    x->dur = c->p->dma_setup + entries * c->p->dma_entry + cdiv(x->bytes + extra_bytes, c->p->dma_bpc) + avg_lat(x);
}

/* memmove semantics through a bounce buffer; x->bytes counts completed bytes. */
static int move(shx_ctx *c, shx_res *x, uint64_t src, uint64_t dst, uint64_t n, uint8_t *buf) {
    if (!npk_range_ok(src, n, NULL) || !npk_range_ok(dst, n, NULL)) {
        uint64_t at = npk_range_ok(src, n, NULL) ? dst : src;
        fail(x, SHELL_ERR_DMA_FAULT, at, "transfer of %" PRIu64 " bytes at 0x%" PRIx64 " wraps past 2^64", n, at);
        return -1;
    }
    int backward = dst > src && dst - src < n;
    uint64_t done = 0;
    while (done < n) {
        uint64_t m = n - done < SHX_CHUNK ? n - done : SHX_CHUNK;
        uint64_t off = backward ? n - done - m : done;
        if (rd(c, x, src + off, buf, m) || wr(c, x, dst + off, buf, m)) return -1;
        done += m;
        x->bytes += m;
    }
    return 0;
}

static void exec_dma_copy(shx_ctx *c, const uint8_t *d, uint64_t desc_addr, shx_res *x, uint8_t *buf) {
    uint64_t src = shx_u64(d + 8), dst = shx_u64(d + 16);
    uint32_t n = shx_u32(d + 24);
    x->engine = SHX_DMA;
    if (n > c->p->max_dma)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr,
                    "DMA_COPY of %" PRIu32 " bytes exceeds the implementation limit max_dma=%" PRIu64, n, c->p->max_dma);
    if (add_range(c, x, src, n, 0) || add_range(c, x, dst, n, 1)) return;
    move(c, x, src, dst, n, buf);
    dma_time(c, x, 0, 0);
    snprintf(x->args, sizeof x->args, "\"bytes\":%" PRIu32 ",\"src\":\"0x%" PRIx64 "\",\"dst\":\"0x%" PRIx64 "\"", n,
             src, dst);
}

static void exec_dma_strided(shx_ctx *c, const uint8_t *d, uint64_t desc_addr, shx_res *x, uint8_t *buf) {
    uint64_t src = shx_u64(d + 8), dst = shx_u64(d + 16);
    uint32_t rb = shx_u16(d + 24), rows = shx_u16(d + 26);
    x->engine = SHX_DMA;
    if ((uint64_t)rb * rows > c->p->max_dma)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr,
                    "DMA_STRIDED of %" PRIu64 " bytes exceeds the implementation limit max_dma=%" PRIu64,
                    (uint64_t)rb * rows, c->p->max_dma);
    /* Strides are byte pitches, as the reference mapper writes them (0 = packed). */
    uint64_t sp = d[28] ? d[28] : rb, dp = d[29] ? d[29] : rb;
    if (rows > 1 && dp < rb)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr,
                    "DMA_STRIDED DST_STRIDE %u is below ROW_BYTES %" PRIu32 ": destination rows would overlap", d[29], rb);
    if (add_range2d(c, x, src, rows, sp, rb, 0) || add_range2d(c, x, dst, rows, dp, rb, 1)) return;
    for (uint32_t r = 0; r < rows; r++) {
        if (rd(c, x, src + r * sp, buf, rb) || wr(c, x, dst + r * dp, buf, rb)) break;
        x->bytes += rb;
    }
    dma_time(c, x, rows, 0);
    snprintf(x->args, sizeof x->args,
             "\"bytes\":%" PRIu64 ",\"rows\":%" PRIu32 ",\"src_pitch\":%" PRIu64 ",\"dst_pitch\":%" PRIu64,
             (uint64_t)rb * rows, rows, sp, dp);
}

static void exec_dma_list(shx_ctx *c, const uint8_t *d, uint64_t desc_addr, shx_res *x, uint8_t *buf) {
    int gather = d[0] == SHELL_OP_DMA_GATHER;
    uint64_t list = shx_u64(d + 8), local = shx_u64(d + 24);
    uint32_t count = shx_u32(d + 16), es = shx_u32(d + 20);
    x->engine = SHX_DMA;
    if (es < 16 || es % 8)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "ELEM_SIZE %" PRIu32 " is not a multiple of 8 >= 16", es);
    if (list % 8) return fail(x, SHELL_ERR_ALIGNMENT, list, "list address 0x%" PRIx64 " is not 8-byte aligned", list);
    if (count > SHX_MAX_ENTRIES)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "list of %" PRIu32 " entries exceeds the model's limit of %u", count,
                    SHX_MAX_ENTRIES);
    if (count > 64) c->rs->all = 1;
    else if (add_range(c, x, list, (uint64_t)count * es, 0)) return;
    uint64_t off = 0;
    uint32_t i;
    for (i = 0; i < count; i++) {
        uint8_t e[16];
        if (rd(c, x, list + (uint64_t)i * es, e, 16)) break;
        uint64_t addr = shx_u64(e);
        uint32_t n = shx_u32(e + 8);
        if (off + n > c->p->max_dma) {
            fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "list moves more than the implementation limit max_dma=%" PRIu64,
                 c->p->max_dma);
            break;
        }
        if (count <= 64 && (add_range(c, x, addr, n, !gather) || add_range(c, x, local + off, n, gather))) break;
        if (gather ? move(c, x, addr, local + off, n, buf) : move(c, x, local + off, addr, n, buf)) break;
        off += n;
    }
    dma_time(c, x, count, (uint64_t)i * 16);
    snprintf(x->args, sizeof x->args, "\"bytes\":%" PRIu64 ",\"entries\":%" PRIu32 ",\"local\":\"0x%" PRIx64 "\"",
             x->bytes, count, local);
}

/* ---- GEMM ------------------------------------------------------------------------ */

typedef struct mat {
    uint64_t base, ld;
    uint32_t srows, scols; /* stored shape */
    int col;
    unsigned es;
} mat;

static uint64_t mat_lines(const mat *m) { return m->col ? m->scols : m->srows; }
static uint64_t mat_line_elems(const mat *m) { return m->col ? m->srows : m->scols; }

static int mat_range(shx_ctx *c, shx_res *x, const mat *m, int write) {
    return add_range2d(c, x, m->base, mat_lines(m), m->ld, mat_line_elems(m) * m->es, write);
}

static float load_float(unsigned dt, const uint8_t *p) {
    switch (dt) {
    case SHELL_FP16: return npk_fp16_to_f32(shx_u16(p));
    case SHELL_BF16: return npk_bf16_to_f32(shx_u16(p));
    default: return npk_fp8_to_f32(p[0]);
    }
}

static float f_of(uint32_t u);

static int host_le(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* How load_mat stores an element: int8, int8 widened to int32, raw u32
 * words, raw u16 words (BF16, widened later by the kernel), float. */
enum { LD_I8, LD_I8_AS_I32, LD_RAW32, LD_RAW16, LD_F32 };

/* Read a stored matrix into a logical [R][ncol] array (`kind`), applying the
 * transpose. A line that is a logical row (row-major, no transpose) is read
 * straight into its row when the bytes need no conversion (int8, and u16/u32
 * words on a little-endian host), and BF16 lines to widen are widened word by
 * word; the rest goes element by element. Every line is one bus read either
 * way. */
static int load_mat(shx_ctx *c, shx_res *x, const mat *m, unsigned dt, int trans, int kind, void *out, uint32_t ncol,
                    uint8_t *line) {
    uint64_t lines = mat_lines(m), le = mat_line_elems(m);
    int straight = !m->col && !trans;
    for (uint64_t l = 0; l < lines; l++) {
        uint64_t addr = m->base + l * m->ld;
        if (straight && (kind == LD_I8 || ((kind == LD_RAW32 || kind == LD_RAW16) && host_le()))) {
            uint8_t *dst = (uint8_t *)out + (size_t)l * ncol * (kind == LD_I8 ? 1 : kind == LD_RAW16 ? 2 : 4);
            if (rd(c, x, addr, dst, le * m->es)) return -1;
            continue;
        }
        if (rd(c, x, addr, line, le * m->es)) return -1;
        if (straight && kind == LD_F32 && dt == SHELL_BF16) {
            float *o = (float *)out + (size_t)l * ncol;
            for (uint64_t e = 0; e < le; e++) o[e] = f_of((uint32_t)shx_u16(line + 2 * e) << 16);
            continue;
        }
        for (uint64_t e = 0; e < le; e++) {
            uint64_t r = m->col ? e : l, cc = m->col ? l : e;
            uint64_t i = trans ? cc : r, j = trans ? r : cc;
            const uint8_t *p = line + e * m->es;
            size_t idx = (size_t)(i * ncol + j);
            switch (kind) {
            case LD_I8: ((int8_t *)out)[idx] = (int8_t)p[0]; break;
            case LD_I8_AS_I32: ((int32_t *)out)[idx] = (int8_t)p[0]; break;
            case LD_RAW32: ((uint32_t *)out)[idx] = shx_u32(p); break;
            case LD_RAW16: ((uint16_t *)out)[idx] = shx_u16(p); break;
            default: ((float *)out)[idx] = load_float(dt, p); break;
            }
        }
    }
    return 0;
}

static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t u_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static double gelu_d(double v) { return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440)); }
static int32_t to_i32(double v) {
    if (v != v) return 0;
    v = rint(v);
    if (v >= 2147483647.0) return INT32_MAX;
    if (v <= -2147483648.0) return INT32_MIN;
    return (int32_t)v;
}

/* INT8_OUT requantization (docs/shell.md 12): v / 2^shift rounded half to even,
 * saturated to int8. Written from the definition, independently of src/ops. */
static int32_t rq_int(int32_t v, unsigned shift) {
    int64_t w = v;
    if (shift > 32) return 0; /* |v| <= 2^31 rounds to 0 */
    if (shift) {
        int64_t d = (int64_t)1 << shift, q = w / d, r = w % d;
        if (r < 0) q--, r += d; /* floor division */
        if (2 * r > d || (2 * r == d && (q & 1))) q++;
        w = q;
    }
    return w > 127 ? 127 : w < -128 ? -128 : (int32_t)w;
}
static int32_t rq_float(float f, unsigned shift) {
    if (f != f) return 0;
    double v = rint((double)f / (double)((uint64_t)1 << shift));
    return v > 127 ? 127 : v < -128 ? -128 : (int32_t)v;
}

/* Zero copy: the host pointer of matrix m in guest memory when the kernel can
 * use it in place (in-process guest memory, the whole span in one host
 * extent, no fault rule or watcher that must see the beats: npk_bus_direct),
 * its beats and latency accounted exactly as the line-by-line copy's (one
 * read or write of each line, same per-beat latency); NULL (nothing
 * accounted): the caller copies. */
static void *mat_direct(shx_ctx *c, shx_res *x, const mat *m, int write) {
    uint64_t rows = mat_lines(m), rb = mat_line_elems(m) * m->es, span, beat = c->p->beat ? c->p->beat : 1;
    uint32_t lat = 0;
    if (!npk_range_span(rows, m->ld, rb, &span) || !npk_bus_plain(c->mem, m->base, span, &lat)) return NULL;
    void *p = npk_bus_direct(c->mem, write ? NPK_ACC_WRITE : NPK_ACC_READ, m->base, m->ld, rows, rb, beat);
    if (p) {
        uint64_t beats = rows * ((rb + beat - 1) / beat);
        x->beats += beats;
        x->lat_sum += beats * lat;
    }
    return p;
}

/* 1 when matrix m's bytes may overlap [base, base + len) (its whole span counts). */
static int mat_overlaps(const mat *m, uint64_t base, uint64_t len) {
    uint64_t span;
    return !npk_range_span(mat_lines(m), m->ld, mat_line_elems(m) * m->es, &span) ||
           npk_range_overlap(m->base, span, base, len);
}
static int mat_overlap(const mat *a, const mat *b) {
    uint64_t span;
    return !npk_range_span(mat_lines(b), b->ld, mat_line_elems(b) * b->es, &span) || mat_overlaps(a, b->base, span);
}

/* Scratch kept across GEMMs up to this many bytes (larger GEMMs free theirs). */
#define SHX_SCRATCH_KEEP (256ull << 20)

void shx_scratch_free(shx_scratch *s) {
    npk_gemm_ws_free(&s->kern);
    npk_gemm_ws_free(&s->a);
    npk_gemm_ws_free(&s->b);
    npk_gemm_ws_free(&s->acc);
    npk_gemm_ws_free(&s->c);
}

/* The shared kernel a GEMM runs (include/npukit/gemm.h). */
enum { GK_S8, GK_BF16, GK_F32 };

/* acc[m][n] (row stride ldc) = a[m][k] (lda) x b[k][n] (ldb) with the shared
 * kernel `kern` (strides in elements), in blocks of about SHX_GEMM_BLOCK MACs
 * so that the stop flag is looked at between them (issue 32 point 3; a GEMM
 * of 2^32 MACs, the default max_macs, is 4 blocks); a smaller GEMM is one
 * call. The blocks split the dimension whose operand the kernel then packs
 * again per block at the lower cost: M (B packed per block) when B is not
 * larger than A, else N (A packed per block). Every output keeps its K order
 * (include/npukit/gemm.h), so the bits are those of one call. 0, 1 when
 * abandoned (the stop flag), or the kernel's error. */
static int gemm_blocks(shx_ctx *c, shx_res *x, int kern, uint32_t m, uint32_t n, uint32_t k, const void *a, size_t lda,
                       const void *b, size_t ldb, uint32_t *acc, size_t ldc) {
    uint64_t macs = (uint64_t)m * n * k, nb = (macs + SHX_GEMM_BLOCK - 1) / SHX_GEMM_BLOCK;
    int by_rows = (uint64_t)k * n <= (uint64_t)m * k;
    uint32_t len = by_rows ? m : n, step = nb > 1 ? (uint32_t)((len + nb - 1) / nb) : len;
    size_t es = kern == GK_S8 ? 1 : kern == GK_BF16 ? 2 : 4;
    for (uint32_t i = 0; i < len; i += step) {
        if (i && stopping(c, x)) return 1;
        uint32_t bl = len - i < step ? len - i : step, bm = by_rows ? bl : m, bn = by_rows ? n : bl;
        const uint8_t *ai = (const uint8_t *)a + (by_rows ? (size_t)i * lda * es : 0);
        const uint8_t *bi = (const uint8_t *)b + (by_rows ? 0 : (size_t)i * es);
        uint32_t *ci = acc + (by_rows ? (size_t)i * ldc : i);
        npk_gemm_ws *ws = &c->scr->kern;
        int rc = kern == GK_S8 ? npk_gemm_s8s32(ws, bm, bn, k, (const int8_t *)ai, lda, (const int8_t *)bi, ldb,
                                                (int32_t *)ci, ldc)
                 : kern == GK_BF16
                     ? npk_gemm_bf16(ws, bm, bn, k, (const uint16_t *)ai, lda, (const uint16_t *)bi, ldb, (float *)ci, ldc)
                     : npk_gemm_f32(ws, bm, bn, k, (const float *)ai, lda, (const float *)bi, ldb, (float *)ci, ldc);
        if (rc) return rc;
    }
    return 0;
}

/* Why long: the GEMM descriptor in the spec's order (fields and checks, operand loads, kernel,
 * epilogue); the epilogue switch is written once per accumulator type as the spec defines it. */
static void exec_gemm(shx_ctx *c, const uint8_t *d, unsigned size, uint64_t desc_addr, shx_res *x) {
    x->engine = SHX_GEMM;
    unsigned dt = d[1] & 15, layout = d[1] >> 4;
    uint32_t ext = size > 1 ? shx_u32(d + 4) : 0;
    uint32_t m, n, k, lda = 0, ldb = 0, ldc = 0;
    if (dt > SHELL_FP8) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM dtype %u is not 0..3", dt);
    if (layout > SHELL_COL_MAJOR) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM layout %u is not 0..1", layout);
    if (size == 1) {
        uint32_t t = shx_u32(d + 4);
        m = t >> 20;
        n = (t >> 10) & 0x3ff;
        k = t & 0x3ff;
    } else {
        m = shx_u32(d + 32);
        n = shx_u32(d + 36);
        k = shx_u32(d + 40);
        lda = shx_u32(d + 44);
        ldb = shx_u32(d + 48);
        ldc = shx_u32(d + 52);
        if (SHELL_GEMM_EXT_SHIFT_OF(ext) && !(ext & SHELL_GEMM_EXT_INT8_OUT))
            return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM_EXT SHIFT (bits 15:10) without INT8_OUT (0x%08" PRIx32 ")",
                        ext);
        if ((ext & SHELL_GEMM_EXT_INT8_OUT) && dt != SHELL_INT8)
            return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM_EXT INT8_OUT needs dtype INT8 (dtype %u)", dt);
        if ((ext & 15) > SHELL_EPI_MUL)
            return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM epilogue %u is not 0..4", (unsigned)(ext & 15));
        if (size == 2 && (ext & (SHELL_GEMM_EXT_HAS_BIAS | SHELL_GEMM_EXT_HAS_ALPHA | SHELL_GEMM_EXT_HAS_BETA)))
            return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM with BIAS/ALPHA/BETA needs SIZE=3");
    }
    unsigned epi = ext & 15;
    int ta = !!(ext & SHELL_GEMM_EXT_TRANS_A), tb = !!(ext & SHELL_GEMM_EXT_TRANS_B);
    int has_bias = !!(ext & SHELL_GEMM_EXT_HAS_BIAS), has_alpha = !!(ext & SHELL_GEMM_EXT_HAS_ALPHA),
        has_beta = !!(ext & SHELL_GEMM_EXT_HAS_BETA);
    uint64_t bias = size == 3 ? shx_u64(d + 64) : 0;
    float alpha = size == 3 ? f_of(shx_u32(d + 72)) : 1.0f, beta = size == 3 ? f_of(shx_u32(d + 76)) : 0.0f;
    /* BETA = 0 (either sign) means "C is not read", as in BLAS and PyTorch: no
     * 0 * NaN from an uninitialised C, no read traffic (docs/shell.md 12). */
    if (has_beta && beta == 0.0f) has_beta = 0;
    unsigned es = dt == SHELL_FP16 || dt == SHELL_BF16 ? 2 : 1;
    int col = layout == SHELL_COL_MAJOR;
    /* int8 C: the INT8_OUT extension, or an INT8 v0.2 GEMM whose LDC covers an
     * int8 row but not an int32 one (the reference mapper's int8-wide tensors) */
    uint32_t cline = col ? m : n;
    int i8 = (ext & SHELL_GEMM_EXT_INT8_OUT) ||
             (size > 1 && dt == SHELL_INT8 && ldc && ldc >= cline && (uint64_t)ldc < 4ull * cline);
    unsigned shift = SHELL_GEMM_EXT_SHIFT_OF(ext), ces = i8 ? 1 : 4;
    mat A = {shx_u64(d + 8), lda, ta ? k : m, ta ? m : k, col, es};
    mat B = {shx_u64(d + 16), ldb, tb ? n : k, tb ? k : n, col, es};
    mat C = {shx_u64(d + 24), ldc, m, n, col, ces};
    mat *all[3] = {&A, &B, &C};
    const char *nm[3] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++) {
        if (all[i]->base % all[i]->es)
            return fail(x, SHELL_ERR_ALIGNMENT, all[i]->base, "GEMM %s address 0x%" PRIx64 " is not %u-byte aligned",
                        nm[i], all[i]->base, all[i]->es);
        if (all[i]->ld % all[i]->es)
            return fail(x, SHELL_ERR_ALIGNMENT, desc_addr, "GEMM LD%c %" PRIu64 " is not a multiple of %u", "ABC"[i],
                        all[i]->ld, all[i]->es);
        uint64_t natural = mat_line_elems(all[i]) * all[i]->es;
        if (!all[i]->ld) all[i]->ld = natural;
        else if (all[i]->ld < natural)
            return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM LD%c %" PRIu64 " is below the %" PRIu64 "-byte line",
                        "ABC"[i], all[i]->ld, natural);
    }
    if (has_bias && bias % ces)
        return fail(x, SHELL_ERR_ALIGNMENT, bias, "GEMM bias address 0x%" PRIx64 " is not %u-byte aligned", bias, ces);
    if ((uint64_t)m * k > SHX_MAX_ELEMS || (uint64_t)k * n > SHX_MAX_ELEMS || (uint64_t)m * n > SHX_MAX_ELEMS)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr,
                    "GEMM %" PRIu32 "x%" PRIu32 "x%" PRIu32 " exceeds the model's %llu-element operand limit", m, n, k,
                    (unsigned long long)SHX_MAX_ELEMS);
    if ((uint64_t)m * n * k > c->p->max_macs)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr,
                    "GEMM %" PRIu32 "x%" PRIu32 "x%" PRIu32 " (%" PRIu64 " MACs) exceeds the implementation limit max_macs=%" PRIu64,
                    m, n, k, (uint64_t)m * n * k, c->p->max_macs);
    int need_c = has_beta || epi == SHELL_EPI_ADD || epi == SHELL_EPI_MUL;
    if (m && n && k && (mat_range(c, x, &A, 0) || mat_range(c, x, &B, 0))) return;
    if (mat_range(c, x, &C, 1)) return;
    if (has_bias && m && add_range(c, x, bias, (uint64_t)n * ces, 0)) return;

    uint64_t macs = (uint64_t)m * n * k;
    uint64_t io = (uint64_t)m * k * es + (uint64_t)k * n * es + (uint64_t)m * n * ces * (need_c ? 2 : 1) +
                  (has_bias ? (uint64_t)n * ces : 0);
    size_t szA = (size_t)m * k, szB = (size_t)k * n, szC = (size_t)m * n;
    uint64_t maxline = (uint64_t)(m > n ? m : n);
    if (k > maxline) maxline = k;
    /* operands as the shared kernels take them (include/npukit/gemm.h): int8
     * stays int8, BF16 stays BF16 (npk_gemm_bf16 widens it while packing), FP16
     * and FP8 are widened to fp32 (exactly). Row-major INT8/BF16 operands
     * without a transpose are used in place in guest memory when they can be
     * (mat_direct), and C too when nothing follows the product (no epilogue,
     * alpha, beta, bias, int8 output) and it overlaps neither operand nor the
     * command ring: the kernel then reads A and B and writes C there. */
    int plain = !has_alpha && !has_beta && !has_bias && epi == SHELL_EPI_NONE && !i8;
    int zc = m && n && k && !c->p->timing_only && host_le() && !col && (dt == SHELL_INT8 || dt == SHELL_BF16);
    int want_dc = zc && plain && !mat_overlap(&C, &A) && !mat_overlap(&C, &B) &&
                  !mat_overlaps(&C, c->ring_lo, c->ring_hi - c->ring_lo);
    const void *da = zc && !ta ? mat_direct(c, x, &A, 0) : NULL, *db = zc && !tb ? mat_direct(c, x, &B, 0) : NULL;
    size_t ebytes = dt == SHELL_INT8 ? 1 : dt == SHELL_BF16 ? 2 : 4;
    size_t lda_e = da ? A.ld / es : k, ldb_e = db ? B.ld / es : n, ldc_e = n;
    shx_scratch *scr = c->scr;
    void *a = da ? NULL : npk_gemm_ws_reserve(&scr->a, szA * ebytes),
         *b = db ? NULL : npk_gemm_ws_reserve(&scr->b, szB * ebytes);
    uint32_t *cv = want_dc ? NULL : npk_gemm_ws_reserve(&scr->c, szC * 4), *acc = NULL;
    uint32_t *biasv = malloc(n ? (size_t)n * 4 : 4);
    uint8_t *line = malloc(maxline * 4 + 4), *bbuf = NULL;
    if ((!da && !a) || (!db && !b) || (!want_dc && !cv) || !biasv || !line) goto oom;
    int kind = dt == SHELL_INT8 ? LD_I8 : dt == SHELL_BF16 ? LD_RAW16 : LD_F32;
    if (m && n) {
        if (k && ((!da && load_mat(c, x, &A, dt, ta, kind, a, k, line)) ||
                  (!db && load_mat(c, x, &B, dt, tb, kind, b, n, line))))
            goto out;
        if (need_c && load_mat(c, x, &C, dt, 0, i8 ? LD_I8_AS_I32 : LD_RAW32, cv, n, line)) goto out;
        if (has_bias) {
            bbuf = malloc((size_t)n * ces);
            if (!bbuf || rd(c, x, bias, bbuf, (size_t)n * ces)) {
                if (!bbuf) fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM bias: host out of memory");
                goto out;
            }
            for (uint32_t j = 0; j < n; j++)
                biasv[j] = i8 ? (uint32_t)(int32_t)(int8_t)bbuf[j] : shx_u32(bbuf + 4 * (size_t)j);
        }
    }
    void *dc = want_dc ? mat_direct(c, x, &C, 1) : NULL; /* after the loads, as the copy's writes */
    if (dc) acc = dc, ldc_e = C.ld / 4;
    else if (!(acc = npk_gemm_ws_reserve(&scr->acc, szC * 4)) || (!cv && !(cv = npk_gemm_ws_reserve(&scr->c, szC * 4))))
        goto oom;
    if (c->p->timing_only) memset(cv, 0, szC ? szC * 4 : 4);
    else if (m && n) {
        int rc = gemm_blocks(c, x, dt == SHELL_INT8 ? GK_S8 : dt == SHELL_BF16 ? GK_BF16 : GK_F32, m, n, k,
                             da ? da : a, lda_e, db ? db : b, ldb_e, acc, ldc_e);
        if (rc > 0) goto out; /* abandoned */
        if (rc) goto oom;
    }
    if (dc) goto out; /* C written in place */
    if (!c->p->timing_only && plain) cv = acc; /* C = the accumulators */
    for (uint32_t i = 0; i < m && !c->p->timing_only && !plain; i++) {
        const uint32_t *ar = acc + (size_t)i * n;
        if (dt == SHELL_INT8) {
            for (uint32_t j = 0; j < n; j++) {
                size_t ci = (size_t)i * n + j;
                uint32_t old = cv[ci], res;
                if (!has_alpha && !has_beta) {
                    uint32_t u = ar[j] + (has_bias ? biasv[j] : 0);
                    switch (epi) {
                    case SHELL_EPI_RELU: res = (int32_t)u < 0 ? 0 : u; break;
                    case SHELL_EPI_GELU: res = (uint32_t)to_i32(gelu_d((double)(int32_t)u)); break;
                    case SHELL_EPI_ADD: res = u + old; break;
                    case SHELL_EPI_MUL: res = u * old; break;
                    default: res = u; break;
                    }
                    if (i8) res = (uint32_t)rq_int((int32_t)res, shift);
                } else {
                    float f = (float)(int32_t)ar[j];
                    if (has_alpha) f = f * alpha;
                    if (has_beta) f = f + beta * (float)(int32_t)old;
                    if (has_bias) f = f + (float)(int32_t)biasv[j];
                    switch (epi) {
                    case SHELL_EPI_RELU: f = f < 0 ? 0.0f : f; break;
                    case SHELL_EPI_GELU: f = (float)gelu_d(f); break;
                    case SHELL_EPI_ADD: f = f + (float)(int32_t)old; break;
                    case SHELL_EPI_MUL: f = f * (float)(int32_t)old; break;
                    default: break;
                    }
                    res = i8 ? (uint32_t)rq_float(f, shift) : (uint32_t)to_i32(f);
                }
                cv[ci] = res;
            }
        } else {
            for (uint32_t j = 0; j < n; j++) {
                size_t ci = (size_t)i * n + j;
                float old = f_of(cv[ci]), f = f_of(ar[j]);
                if (has_alpha) f = f * alpha;
                if (has_beta) f = f + beta * old;
                if (has_bias) f = f + f_of(biasv[j]);
                switch (epi) {
                case SHELL_EPI_RELU: f = f < 0 ? 0.0f : f; break;
                case SHELL_EPI_GELU: f = (float)gelu_d(f); break;
                case SHELL_EPI_ADD: f = f + old; break;
                case SHELL_EPI_MUL: f = f * old; break;
                default: break;
                }
                cv[ci] = u_of(f);
            }
        }
    }
    /* write C line by line (a row-major int32/fp32 row straight from cv on a little-endian host) */
    for (uint64_t l = 0; l < mat_lines(&C) && m && n; l++) {
        uint64_t le = mat_line_elems(&C);
        if (!col && ces == 4 && host_le()) {
            if (wr(c, x, C.base + l * C.ld, cv + l * n, le * 4)) break;
            continue;
        }
        for (uint64_t e = 0; e < le; e++) {
            uint64_t i = col ? e : l, j = col ? l : e;
            uint32_t v = cv[i * n + j];
            uint8_t *p = line + ces * e;
            p[0] = (uint8_t)v;
            if (ces == 4) {
                p[1] = (uint8_t)(v >> 8);
                p[2] = (uint8_t)(v >> 16);
                p[3] = (uint8_t)(v >> 24);
            }
        }
        if (wr(c, x, C.base + l * C.ld, line, le * ces)) break;
    }
    goto out;
oom:
    fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "GEMM %" PRIu32 "x%" PRIu32 "x%" PRIu32 ": host out of memory", m, n, k);
out:
    free(biasv);
    free(line);
    free(bbuf);
    if (scr->a.cap + scr->b.cap + scr->acc.cap + scr->c.cap + scr->kern.cap > SHX_SCRATCH_KEEP) shx_scratch_free(scr);
    x->macs = x->err ? 0 : macs;
    x->dtype = dt;
    uint32_t rate = dt == SHELL_FP16 || dt == SHELL_BF16 ? c->p->gemm_fmacs : c->p->gemm_macs;
    uint64_t t = cdiv(macs, rate), tb2 = cdiv(io, c->p->gemm_bpc);
    if (c->p->rtlgen) {
        /* perf model: A and B on the input link, C at the GEMM dtype's width
         * on the output link (each gemm_bpc bytes per cycle), in series */
        uint64_t in = ((uint64_t)m * k + (uint64_t)k * n) * es, outb = (uint64_t)m * n * es;
        tb2 = cdiv(in + outb, c->p->gemm_bpc);
    }
    x->dur = c->p->gemm_setup + (t > tb2 ? t : tb2) + avg_lat(x);
    x->bytes = io;
    snprintf(x->args, sizeof x->args,
             "\"m\":%" PRIu32 ",\"n\":%" PRIu32 ",\"k\":%" PRIu32 ",\"macs\":%" PRIu64 ",\"dtype\":\"%s\",\"v\":%u", m, n,
             k, x->macs, npk_shell_dtype_name(dt), size == 1 ? 1u : 2u);
}

/* ---- VEC_OP and SOFTMAX ------------------------------------------------------------ */

static double el_in(unsigned dt, const uint8_t *p, double q_scale) {
    if (dt == SHELL_INT8) return (int8_t)p[0] * q_scale;
    return load_float(dt, p);
}

static void el_out(unsigned dt, uint8_t *p, double v) {
    uint16_t h;
    switch (dt) {
    case SHELL_INT8: {
        double q = v != v ? 0 : rint(v * 16.0);
        p[0] = (uint8_t)(int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
        return;
    }
    case SHELL_FP16: h = npk_fp16_from_f64(v); break;
    case SHELL_BF16: h = npk_bf16_from_f64(v); break;
    default: p[0] = npk_fp8_from_f64(v); return;
    }
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

static uint8_t to_q07(double prob) {
    if (prob != prob) return 0;
    double q = floor(prob * 127.0 + 0.5);
    return (uint8_t)(q < 0 ? 0 : q > 127 ? 127 : q);
}

/* Row softmax in place over doubles: non-finite rules of docs/shell.md. */
static void softmax_d(double *v, size_t n) {
    double mx = -INFINITY;
    size_t pinf = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] != v[i]) {
            for (size_t j = 0; j < n; j++) v[j] = NAN;
            return;
        }
        if (v[i] > mx) mx = v[i];
        pinf += v[i] == INFINITY;
    }
    if (mx == -INFINITY) {
        for (size_t j = 0; j < n; j++) v[j] = NAN;
        return;
    }
    if (pinf) {
        for (size_t j = 0; j < n; j++) v[j] = v[j] == INFINITY ? 1.0 / (double)pinf : 0.0;
        return;
    }
    double sum = 0;
    for (size_t j = 0; j < n; j++) {
        v[j] = exp(v[j] - mx);
        sum += v[j];
    }
    for (size_t j = 0; j < n; j++) v[j] = v[j] / sum;
}

static double lim(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static const unsigned vec_cost[17] = {1, 1, 1, 2, 4, 2, 1, 1, 4, 1, 2, 2, 2, 2, 1, 1, 2};

static void exec_vec(shx_ctx *c, const uint8_t *d, uint64_t desc_addr, shx_res *x) {
    x->engine = SHX_VEC;
    unsigned op = d[1] & 15, dt = d[1] >> 4;
    uint64_t src = shx_u64(d + 8), dst = shx_u64(d + 16);
    uint32_t bytes = shx_u32(d + 24), ext = shx_u32(d + 28);
    unsigned extop = ext & 0xff, row = ext >> 16;
    if (dt > SHELL_FP8) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "VEC_OP dtype %u is not 0..3", dt);
    if (ext & 0xff00) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "VEC_EXT reserved bits 15:8 are set");
    if (extop > SHELL_VEC_EXT_RMSNORM || (extop && op))
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "VEC_EXT op %u with FLAGS op %u is not defined", extop, op);
    unsigned eop = extop ? 16 : op; /* 16 = RMSNorm */
    unsigned es = dt == SHELL_FP16 || dt == SHELL_BF16 ? 2 : 1;
    if (bytes % es) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "VEC_OP size %" PRIu32 " is not a multiple of %u", bytes, es);
    if (src % es) return fail(x, SHELL_ERR_ALIGNMENT, src, "VEC_OP source 0x%" PRIx64 " is not %u-byte aligned", src, es);
    if (dst % es) return fail(x, SHELL_ERR_ALIGNMENT, dst, "VEC_OP destination 0x%" PRIx64 " is not %u-byte aligned", dst, es);
    size_t count = bytes / es;
    if (count > SHX_MAX_ELEMS || count > c->p->max_elems)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr,
                    "VEC_OP of %zu elements exceeds the implementation limit max_elems=%" PRIu64, count, c->p->max_elems);
    int rowwise = eop == 4 || eop == 5 || eop == 8 || eop == 9 || eop == 16;
    int second = eop == 1 || eop == 2 || eop == 6 || eop == 7 || eop == 8 || eop == 9;
    size_t rl = rowwise && row ? row : count;
    if (rowwise && rl && count % rl)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "VEC_OP of %zu elements is not a whole number of %zu-element rows",
                    count, rl);
    if (add_range(c, x, src, bytes, 0) || add_range(c, x, dst, bytes, 1)) return;
    uint8_t *xs = malloc(bytes + 1), *ys = malloc(bytes + 1);
    double *v = malloc((rl ? rl : 1) * sizeof *v), *g = malloc((rl ? rl : 1) * sizeof *g);
    if (!xs || !ys || !v || !g) {
        fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "VEC_OP: host out of memory");
        goto out;
    }
    if (rd(c, x, src, xs, bytes) || (second && rd(c, x, dst, ys, bytes))) goto out;
    if (c->p->timing_only) {
        memset(ys, 0, bytes);
    } else if (!rowwise) {
        for (size_t i = 0; i < count; i++) {
            if (!(i & 0xffff) && i && stopping(c, x)) goto out;
            double a = el_in(dt, xs + i * es, 1.0 / 16), r;
            double b = second ? el_in(dt, ys + i * es, 1.0 / 16) : 0;
            switch (eop) {
            case 0: r = a < 0 ? 0.0 : a; break;
            case 1: r = a + b; break;
            case 2: r = a * b; break;
            case 3: r = gelu_d(a); break;
            case 6: r = b * (a > 0 ? 1.0 : 0.0); break;
            case 7: r = b * (0.5 * (1.0 + erf(a * 0.70710678118654752440)) + a * exp(-0.5 * a * a) * 0.39894228040143267794);
                break;
            case 10: r = 1.0 / (1.0 + exp(-a)); break;
            case 11: r = tanh(a); break;
            case 12: r = lim(a / 6.0 + 0.5, 0.0, 1.0); break;
            case 13: r = lim(a, -1.0, 1.0); break;
            case 14: r = lim(a, 0.0, 6.0); break;
            default: r = a < 0 ? 0.01 * a : a; break; /* 15 leakyrelu */
            }
            el_out(dt, ys + i * es, r);
        }
    } else {
        for (size_t base = 0; base < count; base += rl) {
            if (base && stopping(c, x)) goto out;
            double xin = eop == 4 ? 1.0 : eop == 8 ? 1.0 / 127 : 1.0 / 16;
            for (size_t i = 0; i < rl; i++) {
                if (!(i & 0xffff) && i && stopping(c, x)) goto out;
                v[i] = el_in(dt, xs + (base + i) * es, xin);
                g[i] = second ? el_in(dt, ys + (base + i) * es, 1.0 / 16) : 0;
            }
            uint8_t *o = ys + base * es;
            if (eop == 4) {
                softmax_d(v, rl);
                if (rl > 0xffff && stopping(c, x)) goto out;
                for (size_t i = 0; i < rl; i++) {
                    if (dt == SHELL_INT8) o[i] = to_q07(v[i]);
                    else el_out(dt, o + i * es, v[i]);
                }
            } else if (eop == 8) {
                double dot = 0;
                for (size_t i = 0; i < rl; i++) dot += g[i] * v[i];
                for (size_t i = 0; i < rl; i++) el_out(dt, o + i * es, v[i] * (g[i] - dot));
            } else {
                double mu = 0, var = 0;
                if (eop != 16) {
                    for (size_t i = 0; i < rl; i++) mu += v[i];
                    mu /= (double)rl;
                }
                for (size_t i = 0; i < rl; i++) var += (v[i] - mu) * (v[i] - mu);
                var /= (double)rl;
                double sd = sqrt(var + 1e-5);
                if (eop != 9) {
                    for (size_t i = 0; i < rl; i++) el_out(dt, o + i * es, (v[i] - mu) / sd);
                } else {
                    double mg = 0, mgx = 0;
                    for (size_t i = 0; i < rl; i++) {
                        mg += g[i];
                        mgx += g[i] * ((v[i] - mu) / sd);
                    }
                    mg /= (double)rl;
                    mgx /= (double)rl;
                    for (size_t i = 0; i < rl; i++) el_out(dt, o + i * es, (g[i] - mg - ((v[i] - mu) / sd) * mgx) / sd);
                }
            }
        }
    }
    wr(c, x, dst, ys, bytes);
out:
    free(xs);
    free(ys);
    free(v);
    free(g);
    uint64_t io = (uint64_t)bytes * (second ? 3 : 2);
    uint64_t t = cdiv((uint64_t)count * vec_cost[eop], c->p->vec_lanes), tb = cdiv(io, c->p->vec_bpc);
    x->eops = (uint64_t)count * vec_cost[eop];
    if (c->p->rtlgen) tb = cdiv(2 * (uint64_t)bytes, c->p->vec_bpc); /* SIZE in + SIZE out */
    x->bytes = io;
    x->dur = c->p->vec_setup + (t > tb ? t : tb) + avg_lat(x);
    snprintf(x->args, sizeof x->args, "\"op\":\"%s\",\"dtype\":\"%s\",\"elems\":%zu",
             eop == 16 ? "rmsnorm" : npk_shell_vec_op_name(eop), npk_shell_dtype_name(dt), count);
}

static void exec_softmax(shx_ctx *c, const uint8_t *d, uint64_t desc_addr, shx_res *x) {
    x->engine = SHX_VEC;
    unsigned dt = d[1] >> 4;
    uint64_t src = shx_u64(d + 8), dst = shx_u64(d + 16);
    uint32_t rb = shx_u16(d + 24), rows = shx_u16(d + 26);
    if (d[1] & 15) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "SOFTMAX FLAGS[3:0] are reserved (0x%02x)", d[1]);
    if (dt > SHELL_FP8) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "SOFTMAX dtype %u is not 0..3", dt);
    unsigned es = dt == SHELL_FP16 || dt == SHELL_BF16 ? 2 : 1;
    if (rb % es) return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "SOFTMAX ROW_BYTES %" PRIu32 " is not a multiple of %u", rb, es);
    if (src % es) return fail(x, SHELL_ERR_ALIGNMENT, src, "SOFTMAX source 0x%" PRIx64 " is not %u-byte aligned", src, es);
    if (dst % es) return fail(x, SHELL_ERR_ALIGNMENT, dst, "SOFTMAX destination 0x%" PRIx64 " is not %u-byte aligned", dst, es);
    size_t n = rb / es;
    if ((uint64_t)rb * rows > SHX_MAX_BYTES)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "SOFTMAX of more than the model's 1 GiB limit");
    if ((uint64_t)rb * rows / es > c->p->max_elems)
        return fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr,
                    "SOFTMAX of %" PRIu64 " elements exceeds the implementation limit max_elems=%" PRIu64,
                    (uint64_t)rb * rows / es, c->p->max_elems);
    if (add_range(c, x, src, (uint64_t)rb * rows, 0) || add_range(c, x, dst, (uint64_t)rb * rows, 1)) return;
    uint8_t *buf = malloc(rb + 1);
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!buf || !v) {
        fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "SOFTMAX: host out of memory");
    } else {
        for (uint32_t r = 0; r < rows; r++) {
            if (rd(c, x, src + (uint64_t)r * rb, buf, rb)) break;
            if (c->p->timing_only) {
                memset(buf, 0, rb);
                if (wr(c, x, dst + (uint64_t)r * rb, buf, rb)) break;
                continue;
            }
            for (size_t i = 0; i < n; i++) v[i] = el_in(dt, buf + i * es, 1.0);
            softmax_d(v, n);
            for (size_t i = 0; i < n; i++) {
                if (dt == SHELL_INT8) buf[i] = to_q07(v[i]);
                else el_out(dt, buf + i * es, v[i]);
            }
            if (wr(c, x, dst + (uint64_t)r * rb, buf, rb)) break;
        }
    }
    free(buf);
    free(v);
    uint64_t elems = (uint64_t)n * rows, io = (uint64_t)rb * rows * 2;
    uint64_t t = cdiv(elems * 6, c->p->vec_lanes), tb = cdiv(io, c->p->vec_bpc);
    x->eops = elems * 6;
    x->bytes = io;
    x->dur = c->p->vec_setup + (c->p->rtlgen ? 0 : rows) + (t > tb ? t : tb) + avg_lat(x);
    snprintf(x->args, sizeof x->args, "\"dtype\":\"%s\",\"rows\":%" PRIu32 ",\"row_elems\":%zu", npk_shell_dtype_name(dt),
             rows, n);
}

void shx_exec(shx_ctx *c, const uint8_t *d, unsigned size, uint64_t desc_addr, shx_res *x) {
    memset(x, 0, sizeof *x);
    x->engine = SHX_CTRL;
    uint8_t *buf = NULL;
    switch (d[0]) {
    case SHELL_OP_DMA_COPY:
    case SHELL_OP_DMA_STRIDED:
    case SHELL_OP_DMA_GATHER:
    case SHELL_OP_DMA_SCATTER:
        buf = malloc(SHX_CHUNK);
        if (!buf) {
            x->engine = SHX_DMA;
            fail(x, SHELL_ERR_BAD_DESCRIPTOR, desc_addr, "DMA: host out of memory");
            break;
        }
        if (d[0] == SHELL_OP_DMA_COPY) exec_dma_copy(c, d, desc_addr, x, buf);
        else if (d[0] == SHELL_OP_DMA_STRIDED) exec_dma_strided(c, d, desc_addr, x, buf);
        else exec_dma_list(c, d, desc_addr, x, buf);
        break;
    case SHELL_OP_GEMM: exec_gemm(c, d, size, desc_addr, x); break;
    case SHELL_OP_VEC_OP: exec_vec(c, d, desc_addr, x); break;
    case SHELL_OP_SOFTMAX: exec_softmax(c, d, desc_addr, x); break;
    default: fail(x, SHELL_ERR_INVALID_OPCODE, desc_addr, "opcode 0x%02x", d[0]); break;
    }
    free(buf);
}
