// SPDX-License-Identifier: MIT
/* The e1 lowering context, evidence, the GEMM tile engine (direct MMIO and
 * descriptor-ring batches) and the GEMM-based operators: matmul,
 * batch_matmul, qkv_projection, attention_qk, attention_av, conv2d. */
#include "e1_lower_int.h"
#include "npukit/trace.h"

#include <inttypes.h>

#include <stdlib.h>

static const char *host_step_names[NPK_HOST_STEP_COUNT] = {
    "accumulates_split_k", "pads_k", "requantizes", "saturates_int8", "broadcasts_bias", "transposes_keys",
    "iterates_heads", "slices_packed_qkv", "materializes_im2col", "applies_mask", "generates_causal_mask",
    "generates_sliding_window_mask", "divides_by_row_sum", "computes_reciprocal_rms", "converts_float_to_q8_8",
    "requantizes_products", "uses_2_4_metadata", "tracks_cache_lengths", "materializes_cache_view",
    "applies_cache_window", "clamps_exp2_delta", "stages_descriptors"};

const char *npk_lower_host_step_name(unsigned bit) { return bit < NPK_HOST_STEP_COUNT ? host_step_names[bit] : "?"; }

int npk_lower_new(npk_lower **out, npk_e1 *drv) {
    *out = NULL;
    if (!drv) return npk_err(NPK_EINVAL, "e1 lowering: no driver");
    npk_lower *L = calloc(1, sizeof *L);
    if (!L) return npk_err(NPK_ENOMEM, "out of memory");
    L->e = drv;
    L->port = npk_e1_port(drv);
    L->batching = 1;
    int rc = npk_port_alloc(L->port, LW_ARENA_BYTES, 64, &L->arena);
    if (rc) {
        free(L);
        return npk_err_prefix(rc, "e1 lowering: allocating the descriptor staging arena");
    }
    if (L->arena + LW_ARENA_BYTES > 0xffffffffull) {
        npk_port_free(L->port, L->arena);
        free(L);
        return npk_err(NPK_EUNSUPPORTED, "e1 lowering: the staging arena is above 4 GiB (descriptors hold 32-bit addresses)");
    }
    *out = L;
    return 0;
}

void npk_lower_free(npk_lower *L) {
    if (!L) return;
    npk_port_free(L->port, L->arena);
    free(L);
}

npk_e1 *npk_lower_driver(npk_lower *L) { return L->e; }
void npk_lower_set_batching(npk_lower *L, int on) { L->batching = on != 0; }

/* ---- tile shapes ---- */

/* 1 when no C store of the tile lands on a byte a later MAC reads (int8):
 * the engine runs cells (i, j) in order and stores C[i][j] at the cell's
 * last MAC, after that MAC's reads, so a store may cover A rows and B
 * columns only later cells no longer read (e1-rtl-notes.md: "C may alias A
 * or B for later cells"). */
static int alias_safe(const npk_e1_gemm *g) {
    for (unsigned c = 0; c < g->m * g->n; c++) {
        unsigned cw = g->c_base + (c / g->n) * g->c_stride + 4 * (c % g->n); /* C[c]: bytes cw..cw+3 */
        for (unsigned d = c + 1; d < g->m * g->n; d++) {
            unsigned i = d / g->n, j = d % g->n;
            for (unsigned l = 0; l < g->k; l++) {
                unsigned a = g->a_base + i * g->a_stride + l, b = g->b_base + l * g->b_stride + j;
                if ((a >= cw && a < cw + 4) || (b >= cw && b < cw + 4)) return 0;
            }
        }
    }
    return 1;
}

/* The tile's layout: the packed one (A at 0, B after it, C word-aligned
 * after B: npk_e1_gemm_layout) when A|B and C fit side by side; else, for
 * int8, C at 0 and A|B at the top of the scratchpad (B ending at byte 64, A
 * right below it), with C growing over the A rows the engine has finished
 * (3x3x7: C 0..35, A 22..42, B 43..63, the stream 20..63). 0, or -1 when
 * neither fits. */
static int tile_layout(int int4, unsigned m, unsigned n, unsigned k, lw_layout *t) {
    memset(t, 0, sizeof *t);
    if (m < 1 || m > 3 || n < 1 || n > 3 || k < 1 || k > 7) return -1;
    unsigned ab = int4 ? (m * k + k * n + 1) / 2 : m * k + k * n;
    if (((ab + 3) & ~3u) + 4 * m * n <= E1_SCRATCH_BYTES) {
        if (npk_e1_gemm_layout(int4, m, n, k, &t->g)) return -1;
        t->slen = t->g.c_base;
        return 0;
    }
    if (int4) return -1;
    npk_e1_gemm *g = &t->g;
    g->m = m, g->n = n, g->k = k;
    g->b_base = E1_SCRATCH_BYTES - k * n;
    g->a_base = g->b_base - m * k;
    g->a_stride = k, g->b_stride = n;
    g->c_base = 0, g->c_stride = 4 * n;
    t->soff = g->a_base & ~3u;
    t->slen = E1_SCRATCH_BYTES - t->soff;
    t->lead = g->a_base - t->soff;
    /* A and B end inside the scratchpad by construction, C (M*N words from 0) is at most 36 bytes */
    if (m * k + k * n > E1_SCRATCH_BYTES - 4 || t->slen > 60 || g->c_stride > 15 || !alias_safe(g)) return -1;
    return 0;
}

/* tile_layout through the context's table (L may be NULL: computed). NULL when the tile does not fit. */
static const lw_layout *layout_of(npk_lower *L, int int4, unsigned m, unsigned n, unsigned k, lw_layout *tmp) {
    if (m < 1 || m > 3 || n < 1 || n > 3 || k < 1 || k > 7) return NULL;
    if (!L) return tile_layout(int4, m, n, k, tmp) ? NULL : tmp;
    unsigned char *st = &L->lay_state[int4 != 0][m - 1][n - 1][k - 1];
    lw_layout *t = &L->lay[int4 != 0][m - 1][n - 1][k - 1];
    if (!*st) *st = tile_layout(int4, m, n, k, t) ? 2 : 1;
    return *st == 1 ? t : NULL;
}

static int tile_fits(int int4, unsigned m, unsigned n, unsigned k) {
    lw_layout t;
    return !tile_layout(int4, m, n, k, &t);
}

/* Cycles of one streamed descriptor with writeback at zero memory latency:
 * fetch 4 words, launch, stream, launch, M*N*K MACs, writeback, advance
 * (2 cycles per bus transaction; e1-rtl-notes.md). */
static unsigned desc_cycles(const lw_layout *t) {
    return 2 * (4 + t->slen / 4 + t->g.m * t->g.n) + t->g.m * t->g.n * t->g.k + 3;
}

/* The largest descriptor the automatic choice takes: 8 cycles below the
 * 128-cycle ring timeout at zero memory latency (the 3x3x7 int8 tile takes
 * 114), and 110 once a ring batch timed out (slower memory: every tile of
 * at most 42 MACs, which leaves room for 1-2 cycles of latency per beat). */
static unsigned desc_limit(const npk_lower *L) { return L && L->slow_mem ? 110u : 120u; }

int npk_lower_set_tile(npk_lower *L, int int4, unsigned m, unsigned n, unsigned k) {
    int i = int4 != 0;
    if (!m && !n && !k) {
        L->force[i][0] = L->force[i][1] = L->force[i][2] = 0;
        return 0;
    }
    if (!tile_fits(int4, m, n, k))
        return npk_err(NPK_EINVAL, "e1 lowering: a %ux%ux%u %s tile does not fit the 64-byte scratchpad (A|B + int32 C)",
                       m, n, k, int4 ? "int4" : "int8");
    L->force[i][0] = m;
    L->force[i][1] = n;
    L->force[i][2] = k;
    return 0;
}

void npk_lower_pick_tile(npk_lower *L, int int4, unsigned M, unsigned K, unsigned N, unsigned *tm, unsigned *tn,
                         unsigned *tk) {
    int i = int4 != 0;
    if (L && L->force[i][0]) {
        *tm = L->force[i][0];
        *tn = L->force[i][1];
        *tk = L->force[i][2];
        return;
    }
    uint64_t best = UINT64_MAX;
    unsigned bm = 1, bn = 1, bk = 1, lim = desc_limit(L);
    for (unsigned k = 7; k >= 1; k--)
        for (unsigned m = 3; m >= 1; m--)
            for (unsigned n = 3; n >= 1; n--) {
                lw_layout tmp;
                const lw_layout *t = layout_of(L, int4, m, n, k, &tmp);
                /* leave margin below the ring's 128-cycle progress timeout */
                if (!t || desc_cycles(t) > lim) continue;
                uint64_t c = (uint64_t)((M + m - 1) / m) * ((N + n - 1) / n) * ((K + k - 1) / k);
                if (c < best) {
                    best = c;
                    bm = m;
                    bn = n;
                    bk = k;
                }
            }
    *tm = bm;
    *tn = bn;
    *tk = bk;
}

/* ---- evidence ---- */

void lw_open(lw_op *op, npk_lower *L, const char *name, npk_lower_out *out, npk_lower_out *golden,
             npk_lower_evidence *ev) {
    op->L = L;
    op->name = name;
    op->out = out;
    op->golden = golden;
    op->ev = ev;
    op->st = *npk_e1_get_stats(L->e);
    op->mmio = npk_port_mmio_count(L->port);
    op->cycles = npk_port_cycles(L->port);
    op->tiles = L->tiles;
    op->pad = L->pad_values;
    op->retries = L->retries;
    op->host = L->host;
    op->tm = L->tile_m;
    op->tn = L->tile_n;
    op->tk = L->tile_k;
    L->host = 0;
    L->tile_m = L->tile_n = L->tile_k = 0;
    L->depth++;
}

int lw_close(lw_op *op, int rc) {
    npk_lower *L = op->L;
    npk_lower_evidence *ev = op->ev;
    const npk_e1_stats *st = npk_e1_get_stats(L->e);
    if (ev) {
        memset(ev, 0, sizeof *ev);
        ev->op = op->name;
        ev->tiles = L->tiles - op->tiles;
        ev->tile_m = L->tile_m;
        ev->tile_n = L->tile_n;
        ev->tile_k = L->tile_k;
        for (unsigned i = 0; i < E1_NUM_OPCODES; i++) {
            ev->direct[i] = st->direct[i] - op->st.direct[i];
            ev->desc[i] = st->desc[i] - op->st.desc[i];
        }
        ev->batches = st->batches - op->st.batches;
        ev->macs = st->macs - op->st.macs;
        ev->mmio = npk_port_mmio_count(L->port) - op->mmio;
        ev->cycles = npk_port_cycles(L->port) - op->cycles;
        ev->pad_values = L->pad_values - op->pad;
        ev->desc_retries = L->retries - op->retries;
        ev->host = L->host;
        ev->cpu_fallback = 0;
    }
    if (npk_port_trace(L->port)) {
        /* the lowering step on the host, nested inside its caller's */
        char args[160];
        snprintf(args, sizeof args, "\"macs\":%" PRIu64 ",\"tiles\":%" PRIu64 ",\"batches\":%" PRIu64
                 ",\"host_steps\":%u,\"depth\":%u",
                 st->macs - op->st.macs, L->tiles - op->tiles, st->batches - op->st.batches, L->host, L->depth);
        npk_port_trace_host(L->port, "lowering", op->name, op->cycles, args);
    }
    L->depth--;
    L->host |= op->host;
    if (op->tm * op->tn * op->tk > L->tile_m * L->tile_n * L->tile_k) {
        L->tile_m = op->tm;
        L->tile_n = op->tn;
        L->tile_k = op->tk;
    }
    npk_lower_out_free(&op->gtmp);
    if (rc) {
        npk_lower_out_free(op->out);
        if (op->golden) npk_lower_out_free(op->golden);
    }
    return rc;
}

/* ---- NPU primitives ---- */

int lw_scalar(npk_lower *L, unsigned op, uint32_t a, uint32_t b, uint32_t acc, int ternary, uint32_t *res) {
    npk_e1_result r;
    int rc = npk_e1_scalar(L->e, op, a, b, acc, ternary, &r);
    if (rc) return rc;
    *res = r.result;
    return 0;
}

int lw_relu(npk_lower *L, const int32_t *in, int32_t *out, size_t n) {
    int8_t buf[63];
    for (size_t o = 0; o < n; o += 63) {
        unsigned len = (unsigned)(n - o < 63 ? n - o : 63);
        for (unsigned i = 0; i < len; i++) buf[i] = (int8_t)in[o + i];
        int rc = npk_e1_relu(L->e, buf, buf, len);
        if (rc) return rc;
        for (unsigned i = 0; i < len; i++) out[o + i] = buf[i];
    }
    return 0;
}

/* One GEMM tile: C[m][n] += A[m][k] x B[k][n], each operand given by its
 * first element and row pitch (elements) in the caller's int32 matrices, or
 * (a8, b8 set, a, b NULL) in int8 matrices (the ONNX backend's operands). */
typedef struct tile {
    const int32_t *a, *b;
    const int8_t *a8, *b8;
    int32_t *c;
    size_t lda, ldb, ldc;
    unsigned m, n, k;
    int wide; /* int8: 8 bytes from every A row and 4 from every B row may be read (in bounds) */
} tile;

static void note_tile(npk_lower *L, const tile *t) {
    L->tiles++;
    if (t->m * t->n * t->k > L->tile_m * L->tile_n * L->tile_k) {
        L->tile_m = t->m;
        L->tile_n = t->n;
        L->tile_k = t->k;
    }
}

static void accumulate(const tile *t, const int32_t *c) {
    for (unsigned i = 0; i < t->m; i++)
        for (unsigned j = 0; j < t->n; j++) {
            int32_t *d = &t->c[(size_t)i * t->ldc + j];
            *d = (int32_t)((uint32_t)*d + (uint32_t)c[i * t->n + j]);
        }
}

/* accumulate from the written-back C words (little-endian int32, row-major m x n). */
static void accumulate_raw(const tile *t, const uint8_t *raw) {
    for (unsigned i = 0; i < t->m; i++) {
        int32_t *d = t->c + (size_t)i * t->ldc;
        const uint8_t *r = raw + 4 * i * t->n;
        for (unsigned j = 0; j < t->n; j++) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            uint32_t w;
            memcpy(&w, r + 4 * j, 4);
#else
            uint32_t w = (uint32_t)r[4 * j] | (uint32_t)r[4 * j + 1] << 8 | (uint32_t)r[4 * j + 2] << 16 |
                         (uint32_t)r[4 * j + 3] << 24;
#endif
            d[j] = (int32_t)((uint32_t)d[j] + w);
        }
    }
}

static void tile_operands(const tile *t, int8_t *a, int8_t *b) {
    if (t->a8) {
        for (unsigned i = 0; i < t->m; i++)
            for (unsigned l = 0; l < t->k; l++) a[i * t->k + l] = t->a8[(size_t)i * t->lda + l];
        for (unsigned l = 0; l < t->k; l++)
            for (unsigned j = 0; j < t->n; j++) b[l * t->n + j] = t->b8[(size_t)l * t->ldb + j];
        return;
    }
    for (unsigned i = 0; i < t->m; i++)
        for (unsigned l = 0; l < t->k; l++) a[i * t->k + l] = (int8_t)t->a[(size_t)i * t->lda + l];
    for (unsigned l = 0; l < t->k; l++)
        for (unsigned j = 0; j < t->n; j++) b[l * t->n + j] = (int8_t)t->b[(size_t)l * t->ldb + j];
}

/* Scratchpad image of a tile as its layout places it (from the stream's
 * first byte): lay->lead zero bytes, A (row stride k), B (row stride n),
 * zeros after them up to LW_SLOT_BYTES; int4 packs two elements per byte,
 * low nibble first. */
static void tile_image(int int4, const lw_layout *lay, const tile *t, uint8_t *img) {
    unsigned na = t->m * t->k, nb = t->k * t->n;
    if (!int4 && t->a8 && t->wide) { /* int8 rows: fixed-size copies, each row's overhang overwritten */
        uint8_t buf[LW_SLOT_BYTES + 16] __attribute__((aligned(16)));
        memset(buf, 0, sizeof buf);
        uint8_t *o = buf + lay->lead;
        for (unsigned i = 0; i < t->m; i++, o += t->k) memcpy(o, t->a8 + (size_t)i * t->lda, 8);
        for (unsigned l = 0; l < t->k; l++, o += t->n) memcpy(o, t->b8 + (size_t)l * t->ldb, 4);
        memset(o, 0, 8); /* the last rows' overhang (at most 7 bytes) */
        memcpy(img, buf, LW_SLOT_BYTES);
        return;
    }
    if (!int4 && t->a8) { /* int8 rows: byte copies */
        uint8_t *o = img;
        for (unsigned i = 0; i < lay->lead; i++) *o++ = 0;
        for (unsigned i = 0; i < t->m; i++, o += t->k) {
            const int8_t *r = t->a8 + (size_t)i * t->lda;
            for (unsigned l = 0; l < t->k; l++) o[l] = (uint8_t)r[l];
        }
        for (unsigned l = 0; l < t->k; l++, o += t->n) {
            const int8_t *r = t->b8 + (size_t)l * t->ldb;
            for (unsigned j = 0; j < t->n; j++) o[j] = (uint8_t)r[j];
        }
        memset(o, 0, LW_SLOT_BYTES - (lay->lead + na + nb));
        return;
    }
    if (!int4) {
        uint8_t *o = img;
        for (unsigned i = 0; i < lay->lead; i++) *o++ = 0;
        for (unsigned i = 0; i < t->m; i++) {
            const int32_t *r = t->a + (size_t)i * t->lda;
            for (unsigned l = 0; l < t->k; l++) *o++ = (uint8_t)r[l];
        }
        for (unsigned l = 0; l < t->k; l++) {
            const int32_t *r = t->b + (size_t)l * t->ldb;
            for (unsigned j = 0; j < t->n; j++) *o++ = (uint8_t)r[j];
        }
        memset(o, 0, LW_SLOT_BYTES - (lay->lead + na + nb));
        return;
    }
    int8_t a[21], b[21];
    tile_operands(t, a, b);
    memset(img, 0, LW_SLOT_BYTES);
    for (unsigned e = 0; e < na + nb; e++) {
        int8_t v = e < na ? a[e] : b[e - na];
        img[e / 2] |= (uint8_t)(((uint8_t)v & 0xf) << (4 * (e & 1)));
    }
}

static int tile_direct(npk_lower *L, int int4, const tile *t) {
    int8_t a[21], b[21];
    int32_t c[9];
    lw_layout tmp;
    int rc;
    const lw_layout *lay = layout_of(L, int4, t->m, t->n, t->k, &tmp);
    if (!lay) return npk_err(NPK_EINVAL, "e1 lowering: a %ux%ux%u tile does not fit the scratchpad", t->m, t->n, t->k);
    if (!lay->soff) { /* the packed layout: the driver's tile */
        tile_operands(t, a, b);
        rc = npk_e1_gemm_tile(L->e, int4, t->m, t->n, t->k, a, b, c);
    } else { /* C over finished A rows: the image at its offset, the GEMM on it, C read back */
        uint8_t img[LW_SLOT_BYTES], raw[4 * 9];
        tile_image(int4, lay, t, img);
        rc = npk_e1_scratch_write(L->e, lay->soff, img, lay->slen);
        if (!rc) rc = npk_e1_gemm_run(L->e, &lay->g, int4);
        if (!rc) rc = npk_e1_scratch_read(L->e, lay->g.c_base, raw, 4 * t->m * t->n);
        for (unsigned i = 0; !rc && i < t->m * t->n; i++)
            c[i] = (int32_t)((uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 | (uint32_t)raw[4 * i + 2] << 16 |
                             (uint32_t)raw[4 * i + 3] << 24);
    }
    if (rc) return rc;
    note_tile(L, t);
    accumulate(t, c);
    return 0;
}

/* One ring batch of up to 7 same-shape tiles: stage their images in guest
 * memory, one streamed GEMM descriptor with writeback per tile. Returns 1
 * (nothing accumulated) when the ring timed out on a descriptor longer than
 * the slow-memory limit: the caller plans the product again. */
static int tile_batch(npk_lower *L, int int4, const lw_layout *lay, const tile *ts, unsigned n) {
    npk_e1_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gemm = lay->g;
    unsigned len = lay->slen, cbytes = 4 * ts[0].m * ts[0].n;
    int rc;
    npk_e1_desc d[LW_SLOTS];
    /* the slot images and writebacks: in guest memory itself when the port
     * has it in place, else staged with one write and read with one read */
    uint8_t local[LW_ARENA_USED], *direct = npk_port_direct(L->port, L->arena, LW_ARENA_USED);
    uint8_t *img = direct ? direct : local;
    for (unsigned s = 0; s < n; s++) {
        tile_image(int4, lay, &ts[s], img + s * LW_SLOT_BYTES);
        uint64_t src = L->arena + s * LW_SLOT_BYTES, dst = L->arena + (LW_SLOTS + s) * LW_SLOT_BYTES;
        d[s] = npk_e1_desc_stream(int4 ? E1_OP_GEMM_S4 : E1_OP_GEMM_S8, src, lay->soff, len, dst);
    }
    if (!direct && (rc = npk_port_mem_write(L->port, L->arena, img, (n - 1) * LW_SLOT_BYTES + len)))
        return npk_err_prefix(rc, "e1 lowering: staging the tiles");
    L->host |= NPK_HOST_STAGES_DESCRIPTORS;
    rc = npk_e1_submit(L->e, d, n, &cfg, 0, NULL);
    if (rc == -NPK_EDEVICE && e1_ds_code(npk_e1_last_fault(L->e)->desc_status) == E1_DS_TIMEOUT) {
        /* memory too slow for the ring's progress timeout */
        L->retries++;
        if (!L->slow_mem && desc_cycles(lay) > 110) {
            L->slow_mem = 1; /* from now on tiles that leave room for latency */
            return 1;
        }
        /* the same tiles as direct MMIO commands (still on the NPU) */
        for (unsigned s = 0; s < n; s++)
            if ((rc = tile_direct(L, int4, &ts[s]))) return rc;
        return 0;
    }
    if (rc) return rc;
    const uint8_t *wb = img + LW_SLOTS * LW_SLOT_BYTES;
    if (!direct &&
        (rc = npk_port_mem_read(L->port, L->arena + LW_SLOTS * LW_SLOT_BYTES, local + LW_SLOTS * LW_SLOT_BYTES,
                                (n - 1) * LW_SLOT_BYTES + cbytes)))
        return npk_err_prefix(rc, "e1 lowering: reading the written-back tiles");
    for (unsigned s = 0; s < n; s++) {
        note_tile(L, &ts[s]);
        accumulate_raw(&ts[s], wb + s * LW_SLOT_BYTES);
    }
    return 0;
}

/* The ring batches' order: tiles grouped by shape, largest shapes first
 * (shape key m*100 + n*10 + k: m, n, k < 10), each shape's tiles in the
 * reference order of ts (what a stable sort by shape gives); at most
 * LW_SHAPES shapes. ts is reordered in place through tmp (nt tiles). */
#define LW_SHAPES 16
static void order_by_shape(tile *ts, size_t nt, tile *tmp) {
    unsigned key[LW_SHAPES], nk = 0;
    size_t at[LW_SHAPES] = {0};
    for (size_t i = 0; i < nt; i++) {
        unsigned k = ts[i].m * 100 + ts[i].n * 10 + ts[i].k, s = 0;
        while (s < nk && key[s] != k) s++;
        if (s == nk) key[nk++] = k;
        at[s]++;
    }
    for (unsigned a = 1; a < nk; a++) /* keys descending, their counts along */
        for (unsigned b = a; b > 0 && key[b - 1] < key[b]; b--) {
            unsigned tk = key[b];
            size_t tc = at[b];
            key[b] = key[b - 1], at[b] = at[b - 1];
            key[b - 1] = tk, at[b - 1] = tc;
        }
    for (size_t s = 0, pos = 0; s < nk; s++) { /* counts -> first positions */
        size_t c = at[s];
        at[s] = pos;
        pos += c;
    }
    for (size_t i = 0; i < nt; i++) {
        unsigned k = ts[i].m * 100 + ts[i].n * 10 + ts[i].k, s = 0;
        while (key[s] != k) s++;
        tmp[at[s]++] = ts[i];
    }
    memcpy(ts, tmp, nt * sizeof *ts);
}

/* Run nt tiles (ts has room for 2*nt: the second half reorders them):
 * direct MMIO one by one, or ring batches of up to 7 tiles of one shape.
 * The C blocks must be zeroed by the caller. 1: a ring timed out on a long
 * descriptor (slow memory), plan again with L->slow_mem set. */
static int run_tiles(npk_lower *L, int int4, tile *ts, size_t nt) {
    int rc = 0;
    if (!L->batching) {
        for (size_t i = 0; i < nt && !rc; i++) rc = tile_direct(L, int4, &ts[i]);
        return rc;
    }
    /* group by shape: one GEMM configuration per ring batch */
    order_by_shape(ts, nt, ts + nt);
    size_t i = 0;
    while (i < nt && !rc) {
        unsigned n = 1;
        while (n < LW_SLOTS && i + n < nt && ts[i + n].m == ts[i].m && ts[i + n].n == ts[i].n && ts[i + n].k == ts[i].k)
            n++;
        lw_layout tmp;
        const lw_layout *lay = layout_of(L, int4, ts[i].m, ts[i].n, ts[i].k, &tmp);
        if (!lay)
            return npk_err(NPK_EINVAL, "e1 lowering: a %ux%ux%u tile does not fit the scratchpad", ts[i].m, ts[i].n,
                           ts[i].k);
        rc = tile_batch(L, int4, lay, ts + i, n);
        i += n;
    }
    return rc;
}

/* The operands of a tiled product: int32 (A, B) or int8 (A8, B8) matrices
 * with row pitches in elements, and C (int32, pitch ldc). */
typedef struct gemm_args {
    const int32_t *A, *B;
    const int8_t *A8, *B8;
    size_t lda, ldb;
    int32_t *C;
    size_t ldc;
    const int8_t *a8end, *b8end; /* int8: past the last byte of A, of B that may be read */
} gemm_args;

static tile tile_at(const gemm_args *g, unsigned i0, unsigned j0, unsigned k0, unsigned m, unsigned n, unsigned k) {
    tile t = {g->A ? g->A + i0 * g->lda + k0 : NULL, g->B ? g->B + k0 * g->ldb + j0 : NULL,
              g->A8 ? g->A8 + i0 * g->lda + k0 : NULL, g->B8 ? g->B8 + k0 * g->ldb + j0 : NULL,
              g->C + i0 * g->ldc + j0, g->lda, g->ldb, g->ldc, m, n, k, 0};
    if (g->A8) /* offsets from the matrices' starts: no pointer past an end is formed */
        t.wide = (size_t)(t.a8 - g->A8) + (m - 1) * g->lda + 8 <= (size_t)(g->a8end - g->A8) &&
                 (size_t)(t.b8 - g->B8) + (k - 1) * g->ldb + 4 <= (size_t)(g->b8end - g->B8);
    return t;
}

static int gemm_run(npk_lower *L, int int4, unsigned M, unsigned K, unsigned N, const gemm_args *g) {
again:;
    unsigned tm, tn, tk;
    npk_lower_pick_tile(L, int4, M, K, N, &tm, &tn, &tk);
    size_t nt = (size_t)((M + tm - 1) / tm) * ((N + tn - 1) / tn) * ((K + tk - 1) / tk);
    tile *ts = malloc(2 * nt * sizeof *ts); /* the tiles, then room to reorder them */
    if (!ts) return npk_err(NPK_ENOMEM, "out of memory (%zu GEMM tiles)", nt);
    size_t c = 0;
    /* the reference order: row blocks, then column blocks, then K chunks */
    for (unsigned i0 = 0; i0 < M; i0 += tm)
        for (unsigned j0 = 0; j0 < N; j0 += tn)
            for (unsigned k0 = 0; k0 < K; k0 += tk)
                ts[c++] = tile_at(g, i0, j0, k0, M - i0 < tm ? M - i0 : tm, N - j0 < tn ? N - j0 : tn,
                                  K - k0 < tk ? K - k0 : tk);
    for (unsigned i = 0; i < M; i++) memset(g->C + i * g->ldc, 0, (size_t)N * sizeof *g->C);
    if (K > tk) L->host |= NPK_HOST_ACCUMULATES_SPLIT_K;
    int rc = run_tiles(L, int4, ts, nt);
    free(ts);
    if (rc == 1) goto again; /* slow memory: the whole product again with tiles that leave room for it */
    return rc;
}

int lw_gemm(npk_lower *L, int int4, unsigned M, unsigned K, unsigned N, const int32_t *A, const int32_t *B,
            int32_t *C) {
    gemm_args g = {A, B, NULL, NULL, K, N, C, N, NULL, NULL};
    return gemm_run(L, int4, M, K, N, &g);
}

int npk_lower_matmul_s8(npk_lower *L, unsigned M, unsigned K, unsigned N, const int8_t *A, size_t lda,
                        const int8_t *B, size_t ldb, int32_t *C, size_t ldc) {
    npk_lower_out out;
    lw_op op;
    memset(&out, 0, sizeof out);
    memset(&op.gtmp, 0, sizeof op.gtmp);
    lw_open(&op, L, "matmul", &out, NULL, NULL); /* int8 operands: nothing to range-check */
    gemm_args ga = {NULL, NULL, A, B, lda, ldb, C, ldc, A + (size_t)(M - 1) * lda + K, B + (size_t)(K - 1) * ldb + N};
    return lw_close(&op, gemm_run(L, 0, M, K, N, &ga));
}

/* ---- GEMM operators ---- */

int npk_lower_matmul(npk_lower *L, int int4, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *out,
                     npk_lower_out *golden, npk_lower_evidence *ev) {
    /* at the top level with no golden wanted, only its operand checks (the
     * product itself would be thrown away) */
    LW_OPEN(op, L, "matmul", out, golden, ev, g,
            golden ? npk_golden_matmul(int4, lhs, rhs, g) : npk_golden_matmul_check(int4, lhs, rhs));
    int rc;
    unsigned d[2] = {lhs->dim[0], rhs->dim[1]};
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 2, d);
    rc = r ? lw_gemm(L, int4, lhs->dim[0], lhs->dim[1], rhs->dim[1], lhs->data, rhs->data, r->data) : -NPK_ENOMEM;
    return lw_close(&op, rc);
}

/* The band tile: m rows, n outputs (K = n + F - 1 <= 7) with the fewest
 * tiles among shapes that fit and keep the descriptor within desc_limit. */
static uint64_t band_pick(npk_lower *L, unsigned R, unsigned O, unsigned W, unsigned F, unsigned *bm, unsigned *bn) {
    uint64_t best = 0;
    *bm = *bn = 0;
    for (unsigned n = 3; n >= 1; n--) {
        unsigned k = n + F - 1;
        if (k > 7) continue;
        for (unsigned m = 3; m >= 1; m--) {
            lw_layout tmp;
            const lw_layout *t = layout_of(L, 0, m, n, k, &tmp);
            if (!t || desc_cycles(t) > desc_limit(L)) continue;
            uint64_t c = (uint64_t)((R + m - 1) / m) * ((W + n - 1) / n) * O;
            if (!best || c < best) best = c, *bm = m, *bn = n;
        }
    }
    return best;
}

uint64_t npk_lower_band_tiles(npk_lower *L, unsigned R, unsigned O, unsigned W, unsigned F) {
    unsigned m, n;
    return F && W ? band_pick(L, R, O, W, F, &m, &n) : 0;
}

/* The band product of npk_lower_band_matmul on int32 (lines, taps) or int8
 * (lines8, taps8) operands: lines [R][O][P], taps [O][F], result [R][W]. */
static int band_run(npk_lower *L, unsigned R, unsigned O, unsigned P, unsigned F, const int32_t *lines,
                    const int32_t *taps, const int8_t *lines8, const int8_t *taps8, int32_t *res) {
    const unsigned W = P - F + 1;
    int rc = 0;
    tile *ts = NULL;
    int32_t *band = NULL;
    int8_t *band8 = NULL;
again:;
    unsigned tm, tn;
    if (!band_pick(L, R, O, W, F, &tm, &tn)) {
        rc = npk_err(NPK_EUNSUPPORTED, "e1 lowering: %u taps per line do not fit a GEMM tile (K <= 7)", F);
        goto done;
    }
    const unsigned kb = tn + F - 1; /* the band block of one o: kb x tn, row pitch tn */
    size_t nt = (size_t)((R + tm - 1) / tm) * ((W + tn - 1) / tn) * O, nband = (size_t)O * kb * tn;
    free(ts);
    free(band);
    free(band8);
    band = NULL, band8 = NULL;
    ts = malloc(2 * nt * sizeof *ts);
    if (lines8) band8 = calloc(nband + 4, 1); /* + 4: whole 4-byte rows (tile_image) */
    else band = calloc(nband, sizeof *band);
    if (!ts || (!band && !band8)) {
        rc = npk_err(NPK_ENOMEM, "out of memory (%zu band tiles)", nt);
        goto done;
    }
    for (unsigned o = 0; o < O; o++)
        for (unsigned l = 0; l < kb; l++)
            for (unsigned j = 0; j < tn; j++)
                if (l >= j && l - j < F) {
                    size_t d = ((size_t)o * kb + l) * tn + j, t = (size_t)o * F + l - j;
                    if (band8) band8[d] = taps8[t];
                    else band[d] = taps[t];
                }
    size_t c = 0;
    for (unsigned i0 = 0; i0 < R; i0 += tm)
        for (unsigned x0 = 0; x0 < W; x0 += tn)
            for (unsigned o = 0; o < O; o++) {
                unsigned n = W - x0 < tn ? W - x0 : tn;
                size_t la = ((size_t)i0 * O + o) * P + x0, lb = (size_t)o * kb * tn;
                tile t = {lines ? lines + la : NULL, band ? band + lb : NULL, lines8 ? lines8 + la : NULL,
                          band8 ? band8 + lb : NULL, res + (size_t)i0 * W + x0, (size_t)O * P, tn, W,
                          R - i0 < tm ? R - i0 : tm, n, n + F - 1, 0};
                t.wide = lines8 && la + (size_t)(t.m - 1) * O * P + 8 <= (size_t)R * O * P; /* band8 has 4 bytes more */
                ts[c++] = t;
            }
    memset(res, 0, (size_t)R * W * sizeof *res);
    if (O > 1) L->host |= NPK_HOST_ACCUMULATES_SPLIT_K;
    rc = run_tiles(L, 0, ts, nt);
    if (rc == 1) {
        rc = 0;
        goto again; /* slow memory: again with tiles that leave room for it */
    }
done:
    free(ts);
    free(band);
    free(band8);
    return rc;
}

int npk_lower_band_matmul(npk_lower *L, const npk_ltensor *lines, const npk_ltensor *taps, npk_lower_out *out,
                          npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "band_matmul", out, golden, ev, g,
            golden ? npk_golden_band_matmul(lines, taps, g) : npk_golden_band_matmul_check(lines, taps));
    const unsigned R = lines->dim[0], O = lines->dim[1], P = lines->dim[2], F = taps->dim[1], W = P - F + 1;
    unsigned d[2] = {R, W};
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 2, d);
    int rc = r ? band_run(L, R, O, P, F, lines->data, taps->data, NULL, NULL, r->data) : -NPK_ENOMEM;
    return lw_close(&op, rc);
}

int npk_lower_band_matmul_s8(npk_lower *L, unsigned R, unsigned O, unsigned P, unsigned F, const int8_t *lines,
                             const int8_t *taps, int32_t *result) {
    if (!F || F > P) return npk_err(NPK_EINVAL, "e1 lowering: %u taps on lines of %u positions", F, P);
    npk_lower_out out;
    lw_op op;
    memset(&out, 0, sizeof out);
    memset(&op.gtmp, 0, sizeof op.gtmp);
    lw_open(&op, L, "band_matmul", &out, NULL, NULL); /* int8 operands: nothing to range-check */
    return lw_close(&op, band_run(L, R, O, P, F, NULL, NULL, lines, taps, result));
}

/* [B][H][M][K] x [B][H][K][N] -> "result" [B][H][M][N]: one tiled GEMM per
 * (batch, head) slice, the host iterating the heads. */
static int heads_gemm(npk_lower *L, int int4, const npk_ltensor *lhs, const npk_ltensor *rhs, npk_lower_out *out) {
    unsigned B = lhs->dim[0], H = lhs->dim[1], M = lhs->dim[2], K = lhs->dim[3], N = rhs->dim[3];
    unsigned d[4] = {B, H, M, N};
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 4, d);
    int rc = r ? 0 : -NPK_ENOMEM;
    for (unsigned s = 0; s < B * H && !rc; s++)
        rc = lw_gemm(L, int4, M, K, N, lhs->data + (size_t)s * M * K, rhs->data + (size_t)s * K * N,
                     r->data + (size_t)s * M * N);
    L->host |= NPK_HOST_ITERATES_HEADS;
    return rc;
}

int npk_lower_batch_matmul(npk_lower *L, int int4, const npk_ltensor *lhs, const npk_ltensor *rhs,
                           npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "batch_matmul", out, golden, ev, g, npk_golden_batch_matmul(int4, lhs, rhs, g));
    return lw_close(&op, heads_gemm(L, int4, lhs, rhs, out));
}

int npk_lower_qkv_projection(npk_lower *L, const npk_ltensor *input, const npk_ltensor *packed_weight,
                             unsigned shift, npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "qkv_projection", out, golden, ev, g, npk_golden_qkv_projection(input, packed_weight, shift, g));
    unsigned T = input->dim[0], D = input->dim[1];
    unsigned dq[2] = {T, D}, dp[2] = {T, 3 * D};
    int rc = 0;
    npk_ltensor *q = npk_out_add(out, "q", NPK_LD_I8, 2, dq), *k = npk_out_add(out, "k", NPK_LD_I8, 2, dq),
                *v = npk_out_add(out, "v", NPK_LD_I8, 2, dq), *p = npk_out_add(out, "packed", NPK_LD_I32, 2, dp);
    if (!q || !k || !v || !p) rc = -NPK_ENOMEM;
    if (!rc) rc = lw_gemm(L, 0, T, D, 3 * D, input->data, packed_weight->data, p->data);
    if (!rc) {
        npk_ltensor *qkv[3] = {q, k, v};
        for (unsigned t = 0; t < T; t++)
            for (unsigned s = 0; s < 3; s++)
                for (unsigned j = 0; j < D; j++)
                    qkv[s]->data[t * D + j] = npk_clamp8(npk_asr(p->data[(size_t)t * 3 * D + s * D + j], shift));
        L->host |= NPK_HOST_SLICES_PACKED_QKV | NPK_HOST_REQUANTIZES;
    }
    return lw_close(&op, rc);
}

int npk_lower_attention_qk(npk_lower *L, int int4, const npk_ltensor *query, const npk_ltensor *key,
                           npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "attention_qk", out, golden, ev, g, npk_golden_attention_qk(int4, query, key, g));
    unsigned B = query->dim[0], H = query->dim[1], Tq = query->dim[2], D = query->dim[3], Tk = key->dim[2];
    unsigned d[4] = {B, H, Tq, Tk};
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 4, d);
    int32_t *kt = malloc((size_t)D * Tk * sizeof *kt);
    if (!r || !kt) rc = npk_err(NPK_ENOMEM, "out of memory");
    for (unsigned s = 0; s < B * H && !rc; s++) {
        const int32_t *k = key->data + (size_t)s * Tk * D;
        for (unsigned t = 0; t < Tk; t++)
            for (unsigned l = 0; l < D; l++) kt[(size_t)l * Tk + t] = k[(size_t)t * D + l]; /* host transposes K */
        rc = lw_gemm(L, int4, Tq, D, Tk, query->data + (size_t)s * Tq * D, kt, r->data + (size_t)s * Tq * Tk);
    }
    free(kt);
    L->host |= NPK_HOST_TRANSPOSES_KEYS | NPK_HOST_ITERATES_HEADS;
    return lw_close(&op, rc);
}

int npk_lower_attention_av(npk_lower *L, int int4, const npk_ltensor *attention, const npk_ltensor *value,
                           npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "attention_av", out, golden, ev, g, npk_golden_attention_av(int4, attention, value, g));
    return lw_close(&op, heads_gemm(L, int4, attention, value, out));
}

int npk_lower_conv2d(npk_lower *L, int int4, const npk_ltensor *input, const npk_ltensor *filter,
                     npk_lower_out *out, npk_lower_out *golden, npk_lower_evidence *ev) {
    LW_OPEN(op, L, "conv2d", out, golden, ev, g, npk_golden_conv2d(int4, input, filter, g));
    unsigned H = input->dim[1], W = input->dim[2], C = input->dim[3];
    unsigned KH = filter->dim[0], KW = filter->dim[1], O = filter->dim[3];
    unsigned OH = H - KH + 1, OW = W - KW + 1, R = OH * OW, Kc = KH * KW * C;
    unsigned d[4] = {1, OH, OW, O};
    int rc = 0;
    npk_ltensor *r = npk_out_add(out, "result", NPK_LD_I32, 4, d);
    int32_t *col = malloc((size_t)R * Kc * sizeof *col);
    if (!r || !col) rc = npk_err(NPK_ENOMEM, "out of memory (im2col)");
    if (!rc) {
        /* host im2col: row (y, x), column (fy, fx, c) matches the HWIO filter rows */
        for (unsigned y = 0; y < OH; y++)
            for (unsigned x = 0; x < OW; x++)
                for (unsigned fy = 0; fy < KH; fy++)
                    for (unsigned fx = 0; fx < KW; fx++)
                        for (unsigned c = 0; c < C; c++)
                            col[(size_t)(y * OW + x) * Kc + (fy * KW + fx) * C + c] =
                                input->data[(((size_t)(y + fy)) * W + (x + fx)) * C + c];
        L->host |= NPK_HOST_MATERIALIZES_IM2COL;
        /* the HWIO filter is already the [KH*KW*C][O] matrix in row-major order */
        rc = lw_gemm(L, int4, R, Kc, O, col, filter->data, r->data);
    }
    free(col);
    return lw_close(&op, rc);
}
