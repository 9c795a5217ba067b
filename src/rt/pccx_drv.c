// SPDX-License-Identifier: MIT
/* The pccx driver: instruction issue, sync with fault reporting, host window
 * and weight-stream management, L2 transfer helpers and the documented CVO
 * sequences. Talks to the device only through the port layer: instructions
 * go to INSTR_LO/HI, or, on a port with the job hook (kmd:,
 * rt/port_submit.h), into a stream in guest memory that the kernel feeds to
 * the queue as one job per sync. */
#include "npukit/npu.h"
#include "npukit/pccx_drv.h"
#include "npukit/devtab.h"
#include "npukit/trace.h"
#include "npukit/job.h"
#include "npukit/numfmt.h"
#include "rt/port_submit.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCACHE 60          /* driver-managed constant-cache entries 0..59 */
#define SCR_COPY 62        /* fmap scratch entry for copy_l2 */
#define STAGE_BYTES 65536u /* staging area at the top of the host window */

/* A constant-cache entry the driver knows: bit 48 (valid) | a << 32 | b << 16 | c, 0 when unknown
 * (one compare per entry when looking a shape up). */
static uint64_t cc_key(uint16_t a, uint16_t b, uint16_t c) {
    return 1ull << 48 | (uint64_t)a << 32 | (uint64_t)b << 16 | c;
}

/* The hint slot of a key (cache_entry). */
static unsigned cc_hash(uint64_t key) { return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 58); }

struct npk_pccx {
    npk_port *port;
    npk_pccx_cfg cfg;
    uint64_t hwin_base, hwin_size, hwin_next, stage_off;
    uint64_t ws_base, ws_size, ws_next;
    uint64_t ws_ptr;
    int ws_known;
    unsigned pending; /* instructions possibly still queued */
    int eta_ok;       /* IDLE_ETA was seen non-zero while busy: the device has it (check_idle) */
    uint32_t l2_words, lanes; /* the device's L2 size and GEMV cores (registers CAP_L2_WORDS, CAP_LANES) */
    uint64_t cc[2][64]; /* cc_key of each entry */
    uint8_t hint[2][64]; /* per key hash: cache_entry's last answer while cc is unchanged (0xff: none) */
    unsigned next[2];
    uint8_t *stage; /* [STAGE_BYTES] host copy of the staging area, reused by every L2 transfer */
    /* jobs (npk_port_jobs): the instructions since the last sync, their stream in guest memory */
    int jobs;
    uint64_t stream;
    uint64_t *sbuf;
    uint32_t sn;
    uint64_t since_reset; /* instructions queued since the device's last reset (ERR_INDEX counts them) */
};

#define STREAM_INSNS 16384u /* instructions per job; a longer run between syncs is several jobs */

npk_port *npk_pccx_port(npk_pccx *d) { return d->port; }
uint64_t npk_pccx_hwin_base(const npk_pccx *d) { return d->hwin_base; }
uint64_t npk_pccx_hwin_size(const npk_pccx *d) { return d->hwin_size; }
uint32_t npk_pccx_l2_words(const npk_pccx *d) { return d->l2_words; }
unsigned npk_pccx_lanes(const npk_pccx *d) { return d->lanes; }

static int rd(npk_pccx *d, uint32_t off, uint32_t *v) { return npk_port_read32(d->port, off, v); }
static int wr(npk_pccx *d, uint32_t off, uint32_t v) { return npk_port_write32(d->port, off, v); }

static void forget_state(npk_pccx *d) {
    memset(d->cc, 0, sizeof d->cc);
    memset(d->hint, 0xff, sizeof d->hint);
    d->ws_known = 0;
}

static int program_windows(npk_pccx *d) {
    int rc;
    if ((rc = wr(d, NPK_PCCX_HWIN_BASE_LO, (uint32_t)d->hwin_base)) ||
        (rc = wr(d, NPK_PCCX_HWIN_BASE_HI, (uint32_t)(d->hwin_base >> 32))) ||
        (rc = wr(d, NPK_PCCX_HWIN_SIZE, (uint32_t)d->hwin_size)) ||
        (rc = wr(d, NPK_PCCX_WS_ADDR_LO, (uint32_t)d->ws_base)) ||
        (rc = wr(d, NPK_PCCX_WS_ADDR_HI, (uint32_t)(d->ws_base >> 32))) ||
        (rc = wr(d, NPK_PCCX_WS_LIMIT_LO, (uint32_t)(d->ws_base + d->ws_size))) ||
        (rc = wr(d, NPK_PCCX_WS_LIMIT_HI, (uint32_t)((d->ws_base + d->ws_size) >> 32))))
        return rc;
    d->ws_ptr = d->ws_base;
    d->ws_known = 1;
    return 0;
}

int npk_pccx_open(npk_pccx **out, npk_port *port, const npk_pccx_cfg *cfg) {
    *out = NULL;
    if (!port) return npk_err(NPK_EINVAL, "pccx driver: no port");
    if (strcmp(npk_port_device(port), "pccx"))
        return npk_err(NPK_EINVAL, "pccx driver: the port is for device '%s'", npk_port_device(port));
    npk_pccx *d = calloc(1, sizeof *d);
    if (!d || !(d->stage = malloc(STAGE_BYTES))) {
        free(d);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    d->port = port;
    if (cfg) d->cfg = *cfg;
    if (!d->cfg.hwin_bytes) d->cfg.hwin_bytes = 0x200000;
    if (!d->cfg.ws_bytes) d->cfg.ws_bytes = 16u << 20;
    if (!d->cfg.sync_budget) d->cfg.sync_budget = 1ull << 34;
    int rc;
    if (d->cfg.hwin_bytes > 0x200000 || d->cfg.hwin_bytes < 2 * STAGE_BYTES || d->cfg.hwin_bytes % 16) {
        rc = npk_err(NPK_EINVAL, "pccx driver: host window of %" PRIu64 " bytes (must be a multiple of 16 in 128 KiB..2 MiB)",
                     d->cfg.hwin_bytes);
        goto fail;
    }
    uint32_t id = 0, ver = 0;
    if ((rc = rd(d, NPK_PCCX_ID, &id)) || (rc = rd(d, NPK_PCCX_VERSION, &ver))) goto fail;
    if (id != NPK_PCCX_ID_VALUE || ver != 2) {
        rc = npk_err(NPK_EDEVICE, "pccx driver: device ID 0x%08x version %u is not a pccx v002 (0x%08x, 2)", id, ver,
                     NPK_PCCX_ID_VALUE);
        goto fail;
    }
    if ((rc = rd(d, NPK_PCCX_CAP_L2_WORDS, &d->l2_words)) || (rc = rd(d, NPK_PCCX_CAP_LANES, &d->lanes))) goto fail;
    if (!d->l2_words || d->l2_words > NPK_PCCX_L2_MAX_WORDS || !d->lanes || d->lanes > 31) {
        rc = npk_err(NPK_EDEVICE, "pccx driver: the device reports %u L2 words and %u GEMV lanes (expected 1..%u, 1..31)",
                     d->l2_words, d->lanes, NPK_PCCX_L2_MAX_WORDS);
        goto fail;
    }
    if ((rc = wr(d, NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET))) goto fail;
    d->hwin_size = d->cfg.hwin_bytes;
    d->ws_size = (d->cfg.ws_bytes + 15) / 16 * 16;
    if ((rc = npk_port_alloc(port, d->hwin_size, 64, &d->hwin_base))) goto fail;
    if ((rc = npk_port_alloc(port, d->ws_size, 64, &d->ws_base))) {
        npk_port_free(port, d->hwin_base);
        goto fail;
    }
    d->stage_off = d->hwin_size - STAGE_BYTES;
    /* a port that takes jobs: instructions go to a stream (without room for it, to the registers) */
    if (npk_port_jobs(port) && (d->sbuf = malloc(STREAM_INSNS * sizeof *d->sbuf)) &&
        !npk_port_alloc(port, STREAM_INSNS * 8u, 64, &d->stream))
        d->jobs = npk_port_jobs(port);
    if ((rc = program_windows(d))) {
        npk_port_free(port, d->hwin_base);
        npk_port_free(port, d->ws_base);
        if (d->jobs) npk_port_free(port, d->stream);
        goto fail;
    }
    *out = d;
    return 0;
fail:
    free(d->sbuf);
    free(d->stage);
    free(d);
    return rc;
}

void npk_pccx_close(npk_pccx *d) {
    if (!d) return;
    npk_port_free(d->port, d->hwin_base);
    npk_port_free(d->port, d->ws_base);
    if (d->jobs) npk_port_free(d->port, d->stream);
    free(d->sbuf);
    free(d->stage);
    free(d);
}

/* ---- issue / sync ------------------------------------------------------------------ */

static int report_fault(npk_pccx *d) {
    uint32_t code = 0, idx = 0, lo = 0, hi = 0, alo = 0, ahi = 0;
    int rc;
    if ((rc = rd(d, NPK_PCCX_ERR_CODE, &code)) || (rc = rd(d, NPK_PCCX_ERR_INDEX, &idx)) ||
        (rc = rd(d, NPK_PCCX_ERR_INSTR_LO, &lo)) || (rc = rd(d, NPK_PCCX_ERR_INSTR_HI, &hi)) ||
        (rc = rd(d, NPK_PCCX_ERR_ADDR_LO, &alo)) || (rc = rd(d, NPK_PCCX_ERR_ADDR_HI, &ahi)))
        return rc;
    npk_port_job_code(d->port, code);
    /* abort the rest of the batch and clear the fault */
    if ((rc = wr(d, NPK_PCCX_CTRL, NPK_PCCX_CTRL_FLUSH)) || (rc = wr(d, NPK_PCCX_STATUS, NPK_PCCX_STATUS_ERROR)))
        return rc;
    d->pending = 0;
    forget_state(d);
    char text[200];
    npk_pccx_format((uint64_t)hi << 32 | lo, text, sizeof text);
    return npk_err(NPK_EDEVICE, "pccx fault %s (code %u) at instruction #%u `%s` (address 0x%" PRIx64 "); queue flushed",
                   npk_pccx_fault_name(code), code, idx, text, (uint64_t)ahi << 32 | alo);
}

/* Soft reset after a hang or a timeout (include/npukit/job.h): CTRL.RESET
 * drops the queue, then the host and weight-stream windows are programmed
 * again and the driver forgets what the device held. */
static int soft_reset(npk_pccx *d) {
    int rc = wr(d, NPK_PCCX_CTRL, NPK_PCCX_CTRL_RESET);
    d->pending = 0;
    forget_state(d);
    if (!rc) rc = program_windows(d);
    if (!rc) npk_port_job_recovered(d->port);
    return rc;
}

/* Poll check: idle (done), a latched fault or a hang (failure), else busy
 * with the device's IDLE_ETA as the next wait. A device known to have
 * IDLE_ETA (eta_ok) is looked at through it alone: it reads 0 exactly when
 * STATUS has none of BUSY, ERROR and HUNG, all ones when ERROR or HUNG is
 * set (then STATUS says which), else the wait (docs/pccx.md section 4); the
 * same decisions at the same cycles as reading STATUS first, with one
 * register read per look instead of two. A chip without the register (it
 * is a model aid) reads 0 there and is looked at through STATUS. */
static int check_idle(void *ctx, npk_poll *pl) {
    npk_pccx *d = ctx;
    uint32_t st = 0, eta = 0;
    int rc;
    if (d->eta_ok) {
        if ((rc = rd(d, NPK_PCCX_IDLE_ETA, &eta))) return rc;
        if (!eta) return NPK_POLL_DONE;
        if (eta != 0xffffffffu) {
            pl->hint = eta;
            return NPK_POLL_BUSY;
        }
    }
    if ((rc = rd(d, NPK_PCCX_STATUS, &st))) return rc;
    if (st & NPK_PCCX_STATUS_ERROR) return report_fault(d);
    if (st & NPK_PCCX_STATUS_HUNG) {
        rc = soft_reset(d);
        if (rc) return npk_err_prefix(rc, "pccx: the device hung on a bus access (no response); the soft reset failed");
        return npk_err(NPK_ETIMEDOUT, "pccx: the device hung on a bus access (no response); it was soft-reset");
    }
    if (!(st & NPK_PCCX_STATUS_BUSY)) return NPK_POLL_DONE;
    if ((rc = rd(d, NPK_PCCX_IDLE_ETA, &eta))) return rc;
    if (eta && eta != 0xffffffffu) d->eta_ok = 1;
    pl->hint = eta && eta != 0xffffffffu ? eta : 1;
    return NPK_POLL_BUSY;
}

static int timed_out(npk_pccx *d, const npk_poll *pl) {
    int rc = soft_reset(d);
    if (rc) return npk_err_prefix(rc, "pccx: still busy after %" PRIu64 " cycles; the soft reset failed", pl->waited);
    return npk_err(NPK_ETIMEDOUT, "pccx: still busy after %" PRIu64 " cycles; it was soft-reset", pl->waited);
}

/* ---- jobs through the port (kmd: the kernel feeds the queue, watches, recovers) ---- */

/* The job ended badly: the kernel reset the device (CTRL.RESET), or must (reset): the
 * windows are programmed again and the driver forgets what the device held. */
static int job_failed(npk_pccx *d, int rc, int reset) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", npk_errmsg());
    d->pending = d->sn = 0;
    d->since_reset = 0;
    forget_state(d);
    int r2 = reset ? npk_port_reset(d->port) : 0;
    if (!r2) r2 = program_windows(d);
    if (r2) return npk_err_prefix(-rc, "%s; recovering the device failed", msg);
    npk_err(-rc, "%s", msg);
    return rc;
}

/* One report of the running job (npk_pjob_state_fn): NPK_POLL_DONE, _BUSY (with the next wait as
 * hint), or its error. */
static int job_state(void *ctx, const npk_pjob_state *s, npk_poll *pl) {
    npk_pccx *d = ctx;
    switch (s->result) {
    case NPK_PJOB_OK:
        d->since_reset += d->sn;
        d->pending = d->sn = 0;
        return NPK_POLL_DONE;
    case NPK_PJOB_BUSY:
        if (s->eta == 0xffffffffu) { /* hung on a bus beat (or faulted): the register path's soft reset */
            npk_err(NPK_ETIMEDOUT, "pccx: the device hung on a bus access (no response); it was soft-reset");
            npk_port_job_recovered(d->port);
            return job_failed(d, -NPK_ETIMEDOUT, 1);
        }
        /* instructions still to queue: look every cycle (as the register path waits for room); then IDLE_ETA */
        if (pl) pl->hint = s->progress < d->sn ? 1 : s->eta ? s->eta : 1;
        return NPK_POLL_BUSY;
    case NPK_PJOB_TIMEOUT:
        npk_err(NPK_ETIMEDOUT, "pccx: no completion before the kernel's timeout; it soft-reset the device");
        npk_port_job_recovered(d->port);
        return job_failed(d, -NPK_ETIMEDOUT, 0);
    default: { /* ERROR: the kernel reset the device; ERR_INDEX counts instructions since the reset */
        npk_port_job_code(d->port, s->code);
        char text[200] = "?";
        if (s->index >= d->since_reset && s->index - d->since_reset < d->sn)
            npk_pccx_format(d->sbuf[s->index - d->since_reset], text, sizeof text);
        npk_err(NPK_EDEVICE, "pccx fault %s (code %u) at instruction #%u `%s` (address 0x%" PRIx64 "); queue flushed",
                npk_pccx_fault_name(s->code), s->code, s->index, text, s->fault_addr);
        return job_failed(d, -NPK_EDEVICE, 0);
    }
    }
}

/* The instructions since the last sync as one job, until it ends: polled between steps of
 * the caller's clock with the register path's schedule, or the kernel waits. */
static int run_stream(npk_pccx *d) {
    if (!d->sn) return 0;
    int rc = npk_port_mem_write(d->port, d->stream, d->sbuf, (size_t)d->sn * 8u);
    npk_pjob job = {.format = NPK_PJOB_PCCX_STREAM, .addr = d->stream, .count = d->sn};
    if (!rc) rc = npk_port_job_submit(d->port, &job);
    if (rc) return job_failed(d, npk_err_prefix(-rc, "pccx: submitting %u instructions", d->sn), 1);
    npk_poll pl = {.budget = d->cfg.sync_budget, .step = 1, .max_step = 1, .clamp = 1, .what = "pccx: waiting"};
    rc = npk_port_job_until(d->port, &pl, job_state, d);
    if (!pl.expired) return rc;
    npk_err(NPK_ETIMEDOUT, "pccx: still busy after %" PRIu64 " cycles; it was soft-reset", pl.waited);
    npk_port_job_recovered(d->port);
    return job_failed(d, -NPK_ETIMEDOUT, 1);
}

static int sync_impl(npk_pccx *d) {
    if (d->jobs) return run_stream(d);
    npk_poll pl = {.budget = d->cfg.sync_budget, .step = 1, .max_step = 1, .clamp = 1, .what = "pccx: waiting"};
    int rc = npk_poll_run(d->port, &pl, check_idle, d);
    if (pl.expired) return timed_out(d, &pl);
    if (!rc) d->pending = 0;
    return rc;
}

/* Each wait for idle is a job (include/npukit/job.h) on track "runtime". */
int npk_pccx_sync(npk_pccx *d) {
    npk_job j;
    npk_job_begin(&j, d->port, "runtime", "sync");
    return npk_job_end(&j, sync_impl(d));
}

/* Poll check: the queue has room for 8 more instructions. */
static int check_room(void *ctx, npk_poll *pl) {
    npk_pccx *d = ctx;
    uint32_t q = 0, st = 0;
    int rc;
    (void)pl;
    if ((rc = rd(d, NPK_PCCX_STATUS, &st))) return rc;
    if (st & (NPK_PCCX_STATUS_ERROR | NPK_PCCX_STATUS_HUNG)) {
        rc = npk_pccx_sync(d);
        return rc ? rc : NPK_POLL_DONE;
    }
    if ((rc = rd(d, NPK_PCCX_QUEUE_COUNT, &q))) return rc;
    if (q >= NPK_PCCX_QUEUE_DEPTH - 8) return NPK_POLL_BUSY;
    d->pending = q;
    return NPK_POLL_DONE;
}

static int make_room(npk_pccx *d) {
    if (d->pending < NPK_PCCX_QUEUE_DEPTH - 8) return 0;
    npk_poll pl = {.budget = d->cfg.sync_budget, .step = 1, .max_step = 1, .clamp = 1, .what = "pccx: waiting"};
    int rc = npk_poll_run(d->port, &pl, check_room, d);
    return pl.expired ? timed_out(d, &pl) : rc;
}

int npk_pccx_issue(npk_pccx *d, uint64_t word) {
    if (d->jobs) {
        if (d->sn == STREAM_INSNS) {
            int rc = npk_pccx_sync(d);
            if (rc) return rc;
        }
        d->sbuf[d->sn++] = word;
        d->pending++;
        return 0;
    }
    int rc = make_room(d);
    if (rc) return rc;
    if ((rc = npk_port_write64(d->port, NPK_PCCX_INSTR_LO, word))) return rc;
    d->pending++;
    return 0;
}

static int issue_checked(npk_pccx *d, const npk_pccx_insn *in) {
    uint64_t w;
    int rc = npk_pccx_encode(in, &w);
    if (rc) return rc;
    return npk_pccx_issue(d, w);
}

int npk_pccx_gemv(npk_pccx *d, uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                  unsigned lanes) {
    npk_pccx_insn in = {.op = NPK_PCCX_OP_GEMV, .dest = dest, .src = src, .flags = flags, .size_ptr = size_ptr,
                        .shape_ptr = shape_ptr, .lanes = lanes};
    d->ws_known = 0; /* the record size depends on cache entries the driver may not know */
    return issue_checked(d, &in);
}

int npk_pccx_gemm(npk_pccx *d, uint32_t dest, uint32_t src, unsigned flags, unsigned size_ptr, unsigned shape_ptr,
                  unsigned lanes) {
    npk_pccx_insn in = {.op = NPK_PCCX_OP_GEMM, .dest = dest, .src = src, .flags = flags, .size_ptr = size_ptr,
                        .shape_ptr = shape_ptr, .lanes = lanes};
    d->ws_known = 0;
    return issue_checked(d, &in);
}

/* The hot issuers (CVO, MEMCPY, GEMV/GEMM through mm_w) build the word directly when every
 * field fits (the same word npk_pccx_encode gives); otherwise issue_checked names the field. */
int npk_pccx_cvo(npk_pccx *d, unsigned func, uint32_t src, uint32_t dst, unsigned length, unsigned flags,
                 unsigned async) {
    if (!(func >> 4 | (src | dst) >> 17 | length >> 16 | flags >> 5 | async >> 1))
        return npk_pccx_issue(d, npk_pccx_cvo_word(func, src, dst, length, flags, async));
    npk_pccx_insn in = {.op = NPK_PCCX_OP_CVO, .func = func, .src = src, .dest = dst, .length = length,
                        .flags = flags, .async = async};
    return issue_checked(d, &in);
}

int npk_pccx_memcpy(npk_pccx *d, unsigned from_device, unsigned to_device, uint32_t dest, uint32_t src,
                    uint32_t aux, unsigned shape_ptr, unsigned async) {
    if (!(from_device >> 1 | to_device >> 1 | (dest | src | aux) >> 17 | shape_ptr >> 6 | async >> 1))
        return npk_pccx_issue(d, npk_pccx_memcpy_word(from_device, to_device, dest, src, aux, shape_ptr, async));
    npk_pccx_insn in = {.op = NPK_PCCX_OP_MEMCPY, .from_device = from_device, .to_device = to_device, .dest = dest,
                        .src = src, .aux = aux, .shape_ptr = shape_ptr, .async = async};
    return issue_checked(d, &in);
}

int npk_pccx_memset(npk_pccx *d, unsigned cache, unsigned index, uint16_t a, uint16_t b, uint16_t c) {
    npk_pccx_insn in = {.op = NPK_PCCX_OP_MEMSET, .cache = cache, .index = index, .a = a, .b = b, .c = c};
    int rc = issue_checked(d, &in);
    if (!rc && cache < 2 && index < 64) {
        /* the scan's first match changes only for the entry's old key and its new one: forget the
         * hints of their hash slots (a hint is used only while it is the scan's answer) */
        const uint64_t old = d->cc[cache][index], key = cc_key(a, b, c);
        d->hint[cache][cc_hash(old)] = d->hint[cache][cc_hash(key)] = 0xff;
        d->cc[cache][index] = key;
    }
    return rc;
}

/* ---- registers ---------------------------------------------------------------------- */

static int quiesce(npk_pccx *d) { return d->pending ? npk_pccx_sync(d) : 0; }

int npk_pccx_set_wstream(npk_pccx *d, uint64_t addr, uint64_t limit) {
    if (addr % 16) return npk_err(NPK_EINVAL, "weight-stream address 0x%" PRIx64 " is not 16-byte aligned", addr);
    int rc = quiesce(d);
    if (rc || (rc = wr(d, NPK_PCCX_WS_ADDR_LO, (uint32_t)addr)) || (rc = wr(d, NPK_PCCX_WS_ADDR_HI, (uint32_t)(addr >> 32))) ||
        (rc = wr(d, NPK_PCCX_WS_LIMIT_LO, (uint32_t)limit)) || (rc = wr(d, NPK_PCCX_WS_LIMIT_HI, (uint32_t)(limit >> 32))))
        return rc;
    d->ws_ptr = addr;
    d->ws_known = 1;
    return 0;
}

static int set_ws_ptr(npk_pccx *d, uint64_t addr) {
    if (d->ws_known && d->ws_ptr == addr) return 0;
    int rc = quiesce(d);
    if (rc || (rc = wr(d, NPK_PCCX_WS_ADDR_LO, (uint32_t)addr)) || (rc = wr(d, NPK_PCCX_WS_ADDR_HI, (uint32_t)(addr >> 32))))
        return rc;
    d->ws_ptr = addr;
    d->ws_known = 1;
    return 0;
}

int npk_pccx_wstream_at(npk_pccx *d, const npk_pccx_wmat *w) { return set_ws_ptr(d, w->addr); }

static int set_reg16(npk_pccx *d, uint32_t off, uint16_t v) {
    int rc = quiesce(d);
    return rc ? rc : wr(d, off, v);
}

static int get_reg16(npk_pccx *d, uint32_t off, uint16_t *v) {
    uint32_t x = 0;
    int rc = quiesce(d);
    if (rc || (rc = rd(d, off, &x))) return rc;
    *v = (uint16_t)x;
    return 0;
}

int npk_pccx_set_emax(npk_pccx *d, uint16_t v) { return set_reg16(d, NPK_PCCX_EMAX, v); }
int npk_pccx_get_emax(npk_pccx *d, uint16_t *v) { return get_reg16(d, NPK_PCCX_EMAX, v); }
int npk_pccx_set_scalar(npk_pccx *d, uint16_t v) { return set_reg16(d, NPK_PCCX_SCALAR, v); }
int npk_pccx_get_scalar(npk_pccx *d, uint16_t *v) { return get_reg16(d, NPK_PCCX_SCALAR, v); }

/* ---- host window and shapes ------------------------------------------------------------ */

int npk_pccx_hwin_alloc(npk_pccx *d, uint64_t bytes, uint64_t *offset) {
    uint64_t b = (bytes + 15) / 16 * 16;
    if (!bytes || b > d->stage_off - d->hwin_next)
        return npk_err(NPK_ENOMEM, "pccx host window: %" PRIu64 " bytes requested, %" PRIu64 " free", bytes,
                       d->stage_off - d->hwin_next);
    *offset = d->hwin_next;
    d->hwin_next += b;
    return 0;
}

void npk_pccx_hwin_reset(npk_pccx *d) { d->hwin_next = 0; }

static int cache_entry(npk_pccx *d, unsigned bank, uint16_t a, uint16_t b, uint16_t c) {
    const uint64_t key = cc_key(a, b, c), *cc = d->cc[bank];
    const unsigned h = cc_hash(key);
    if (d->hint[bank][h] < NCACHE && cc[d->hint[bank][h]] == key) return d->hint[bank][h]; /* the scan's answer */
    for (unsigned i = 0; i < NCACHE; i++)
        if (cc[i] == key) {
            d->hint[bank][h] = (uint8_t)i;
            return (int)i;
        }
    unsigned i = d->next[bank]++ % NCACHE;
    int rc = npk_pccx_memset(d, bank, i, a, b, c);
    return rc ? rc : (int)i;
}

int npk_pccx_fmap_entry(npk_pccx *d, uint16_t a, uint16_t b, uint16_t c) { return cache_entry(d, 0, a, b, c); }
int npk_pccx_weight_entry(npk_pccx *d, uint16_t n, uint16_t k, uint16_t g) { return cache_entry(d, 1, n, k, g); }

static int scratch_shape(npk_pccx *d, unsigned idx, uint16_t a, uint16_t b, uint16_t c) {
    if (d->cc[0][idx] == cc_key(a, b, c)) return 0;
    return npk_pccx_memset(d, 0, idx, a, b, c);
}

static int l2_check(const npk_pccx *d, uint32_t l2, size_t n, const char *what) {
    uint64_t words = ((uint64_t)n + 7) / 8;
    if (!n || l2 + words > d->l2_words)
        return npk_err(NPK_EINVAL, "%s: %zu elements at L2 word %u do not fit in L2 (%u words)", what, n, l2,
                       d->l2_words);
    return 0;
}

/* The L2 <-> host transfers go through the staging area at the top of the
 * host window, STAGE_BYTES (32768 elements) at a time, with the driver's one
 * host buffer (d->stage) as the bytes' copy: no allocation per transfer. */
#define STAGE_ELEMS (STAGE_BYTES / 2)

/* The staged chunk of cnt elements (zero-padded to whole words in d->stage)
 * to L2 word l2, synced: no copy still reads the staging area when a helper
 * returns. No drain first: async work already queued (a CVO) may overlap
 * this copy. */
static int stage_to_l2(npk_pccx *d, uint32_t l2, size_t cnt, int in_place) {
    size_t words = (cnt + 7) / 8;
    int rc = in_place ? 0 : npk_port_mem_write(d->port, d->hwin_base + d->stage_off, d->stage, words * 16);
    int sh = rc ? rc : npk_pccx_fmap_entry(d, 1, 8, (uint16_t)words); /* a cached shape: no MEMSET per copy */
    if (sh < 0 || (rc = npk_pccx_memcpy(d, 1, 0, l2, 0, (uint32_t)(d->stage_off / 16), (unsigned)sh, 0)))
        return sh < 0 ? sh : rc;
    return npk_pccx_sync(d);
}

/* cnt elements at L2 word l2 into d->stage. */
static int l2_to_stage(npk_pccx *d, uint32_t l2, size_t cnt) {
    size_t words = (cnt + 7) / 8;
    int rc, sh = npk_pccx_fmap_entry(d, 1, 8, (uint16_t)words);
    if (sh < 0) return sh;
    if ((rc = npk_pccx_memcpy(d, 0, 1, 0, l2, (uint32_t)(d->stage_off / 16), (unsigned)sh, 0)) ||
        (rc = npk_pccx_sync(d)))
        return rc;
    return npk_port_mem_read(d->port, d->hwin_base + d->stage_off, d->stage, words * 16);
}

/* Zero the padding lanes of the last word of a chunk of cnt elements. */
static void stage_pad(uint8_t *buf, size_t cnt) {
    size_t end = (cnt + 7) / 8 * 16;
    memset(buf + 2 * cnt, 0, end - 2 * cnt);
}

/* n values to L2 from word l2 on, through the staging area: bf16 bit patterns (v16) or floats
 * (v32, rounded to bf16), whichever is given. */
static int write_l2(npk_pccx *d, uint32_t l2, const uint16_t *v16, const float *v32, size_t n) {
    int rc = l2_check(d, l2, n, "pccx write");
    for (size_t done = 0; done < n && !rc; done += STAGE_ELEMS) {
        size_t cnt = n - done < STAGE_ELEMS ? n - done : STAGE_ELEMS;
        /* the staging area itself where the port has it in host memory (the in-process model: the
         * same guest-memory write as npk_port_mem_write's, without the copy), else d->stage */
        uint8_t *direct = npk_port_direct(d->port, d->hwin_base + d->stage_off, (cnt + 7) / 8 * 16),
                *buf = direct ? direct : d->stage;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* the staging bytes are the little-endian elements: convert in place (vectorized) */
        if (v32) npk_bf16_from_f32_n((uint16_t *)buf, v32 + done, cnt);
        else memcpy(buf, v16 + done, 2 * cnt);
#else
        for (size_t i = 0; i < cnt; i++) {
            uint32_t b = v32 ? npk_bf16_from_f32(v32[done + i]) : v16[done + i];
            buf[2 * i] = (uint8_t)b;
            buf[2 * i + 1] = (uint8_t)(b >> 8);
        }
#endif
        stage_pad(buf, cnt);
        rc = stage_to_l2(d, (uint32_t)(l2 + done / 8), cnt, direct != NULL);
    }
    return rc;
}

/* n values from L2 word l2 on, through the staging area: as bf16 bit patterns (v16) or floats
 * (v32), whichever is given. */
static int read_l2(npk_pccx *d, uint32_t l2, uint16_t *v16, float *v32, size_t n) {
    int rc = l2_check(d, l2, n, "pccx read");
    for (size_t done = 0; done < n && !rc; done += STAGE_ELEMS) {
        size_t cnt = n - done < STAGE_ELEMS ? n - done : STAGE_ELEMS;
        if ((rc = l2_to_stage(d, (uint32_t)(l2 + done / 8), cnt))) break;
        const uint8_t *buf = d->stage;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (v32) npk_bf16_to_f32_n(v32 + done, (const uint16_t *)buf, cnt);
        else memcpy(v16 + done, buf, 2 * cnt);
#else
        for (size_t i = 0; i < cnt; i++) {
            uint16_t b = (uint16_t)(buf[2 * i] | buf[2 * i + 1] << 8);
            if (v32) v32[done + i] = npk_bf16_to_f32(b);
            else v16[done + i] = b;
        }
#endif
    }
    return rc;
}

int npk_pccx_write_bf16(npk_pccx *d, uint32_t l2, const uint16_t *v, size_t n) { return write_l2(d, l2, v, NULL, n); }
int npk_pccx_read_bf16(npk_pccx *d, uint32_t l2, uint16_t *v, size_t n) { return read_l2(d, l2, v, NULL, n); }
int npk_pccx_write_f32(npk_pccx *d, uint32_t l2, const float *v, size_t n) { return write_l2(d, l2, NULL, v, n); }
int npk_pccx_read_f32(npk_pccx *d, uint32_t l2, float *v, size_t n) { return read_l2(d, l2, NULL, v, n); }

int npk_pccx_copy_l2(npk_pccx *d, uint32_t dst, uint32_t src, size_t n) {
    int rc = l2_check(d, dst, n, "pccx copy destination");
    if (rc || (rc = l2_check(d, src, n, "pccx copy source"))) return rc;
    uint64_t words = ((uint64_t)n + 7) / 8;
    for (uint64_t done = 0; done < words && !rc; done += 65535) {
        uint64_t w = words - done < 65535 ? words - done : 65535;
        if ((rc = scratch_shape(d, SCR_COPY, 1, 8, (uint16_t)w))) break;
        rc = npk_pccx_memcpy(d, 0, 0, (uint32_t)(dst + done), (uint32_t)(src + done), 0, SCR_COPY, 0);
    }
    return rc;
}

/* ---- weights -------------------------------------------------------------------------------- */

int npk_pccx_wmat_upload_q4(npk_pccx *d, const int8_t *q, const float *scales, unsigned n, unsigned k, unsigned g,
                            npk_pccx_wmat *out) {
    npk_pccx_wmat w;
    int rc = npk_pccx_wmat_reserve(d, n, k, g, &w);
    if (rc) return rc;
    uint8_t *rec = malloc(w.bytes);
    if (!rec) rc = npk_err(NPK_ENOMEM, "out of memory");
    if (!rc) rc = npk_pccx_wrec_pack(q, scales, n, k, g, rec);
    if (!rc) rc = npk_port_mem_write(d->port, w.addr, rec, w.bytes);
    free(rec);
    if (rc) {
        d->ws_next -= w.bytes; /* nothing uploaded */
        return rc;
    }
    *out = w;
    return 0;
}

int npk_pccx_wmat_reserve(npk_pccx *d, unsigned n, unsigned k, unsigned g, npk_pccx_wmat *out) {
    if (!n || !k || n > 65535 || k > 65535 || g > k)
        return npk_err(NPK_EINVAL, "pccx weights %ux%u with group %u: dimensions must be 1..65535 and group <= k", n, k, g);
    uint64_t size = npk_pccx_wrec_size(n, k, g, 1);
    if (size > d->ws_size - d->ws_next)
        return npk_err(NPK_ENOMEM, "pccx weight arena full: %" PRIu64 " bytes needed, %" PRIu64 " of %" PRIu64 " free",
                       size, d->ws_size - d->ws_next, d->ws_size);
    out->n = (uint16_t)n;
    out->k = (uint16_t)k;
    out->g = (uint16_t)g;
    out->w_scale = 1;
    out->addr = d->ws_base + d->ws_next;
    out->bytes = size;
    d->ws_next += size;
    return 0;
}

int npk_pccx_wmat_upload(npk_pccx *d, const float *w, unsigned n, unsigned k, unsigned g, npk_pccx_wmat *out) {
    if (!n || !k || n > 65535 || k > 65535 || g > k)
        return npk_err(NPK_EINVAL, "pccx weights %ux%u with group %u: dimensions must be 1..65535 and group <= k", n, k, g);
    unsigned gg = g ? g : k;
    size_t ns = (size_t)n * ((k + gg - 1) / gg);
    int8_t *q = malloc((size_t)n * k);
    float *s = malloc(ns * sizeof *s);
    if (!q || !s) {
        free(q);
        free(s);
        return npk_err(NPK_ENOMEM, "out of memory");
    }
    npk_pccx_quantize_q4(w, n, k, g, q, s);
    int rc = npk_pccx_wmat_upload_q4(d, q, s, n, k, g, out);
    free(q);
    free(s);
    return rc;
}

void npk_pccx_wmat_reset(npk_pccx *d) { d->ws_next = 0; }

int npk_pccx_wmat_ones(npk_pccx *d, unsigned k, npk_pccx_wmat *out) {
    if (!k || k > 65535) return npk_err(NPK_EINVAL, "pccx ones row: k %u (1..65535)", k);
    uint64_t size = npk_pccx_wrec_size(1, k, 0, 0);
    if (size > d->ws_size - d->ws_next)
        return npk_err(NPK_ENOMEM, "pccx weight arena full: %" PRIu64 " bytes needed, %" PRIu64 " of %" PRIu64 " free",
                       size, d->ws_size - d->ws_next, d->ws_size);
    uint8_t *rec = malloc(size);
    if (!rec) return npk_err(NPK_ENOMEM, "out of memory");
    memset(rec, 0, size);
    for (unsigned i = 0; i < k; i++) rec[i / 2] |= (uint8_t)(1u << (4 * (i & 1))); /* INT4 1, low nibble = even */
    uint64_t addr = d->ws_base + d->ws_next;
    int rc = npk_port_mem_write(d->port, addr, rec, size);
    free(rec);
    if (rc) return rc;
    d->ws_next += size;
    *out = (npk_pccx_wmat){.n = 1, .k = (uint16_t)k, .g = 0, .w_scale = 0, .addr = addr, .bytes = size};
    return 0;
}

npk_pccx_wmat npk_pccx_wmat_ones_prefix(const npk_pccx_wmat *ones, unsigned k) {
    npk_pccx_wmat w = *ones;
    w.k = (uint16_t)k;
    w.bytes = npk_pccx_wrec_size(1, k, 0, 0);
    return w;
}

static int mm_w(npk_pccx *d, unsigned op, uint32_t dest, uint32_t src, unsigned m, const npk_pccx_wmat *w,
                unsigned flags) {
    if (!m || m > 65535) return npk_err(NPK_EINVAL, "pccx %s: %u rows (1..65535)", op ? "gemm" : "gemv", m);
    if (flags & ~(NPK_PCCX_ACCM | NPK_PCCX_FINDEMAX))
        return npk_err(NPK_EINVAL, "pccx %s: flags 0x%x (only ACCM and FINDEMAX)", op ? "gemm" : "gemv", flags);
    uint64_t sw = (uint64_t)m * ((w->k + 7u) / 8), dw = (uint64_t)m * ((w->n + 7u) / 8);
    if (src + sw > d->l2_words || dest + dw > d->l2_words)
        return npk_err(NPK_EINVAL, "pccx %s: %u x %u input at L2 %u or %u x %u output at L2 %u exceeds L2",
                       op ? "gemm" : "gemv", m, w->k, src, m, w->n, dest);
    int fi = npk_pccx_fmap_entry(d, 1, (uint16_t)m, w->k);
    if (fi < 0) return fi;
    int wi = npk_pccx_weight_entry(d, w->n, w->k, w->g);
    if (wi < 0) return wi;
    int rc = set_ws_ptr(d, w->addr);
    if (rc) return rc;
    /* dest and src fit (checked against L2 above), the flags are ACCM, FINDEMAX, W_SCALE, the entries < 64 */
    const uint64_t word = npk_pccx_gemv_word(dest, src, flags | (w->w_scale ? NPK_PCCX_W_SCALE : 0), (unsigned)wi,
                                             (unsigned)fi, 0) |
                          (uint64_t)op << 60;
    if ((rc = npk_pccx_issue(d, word))) return rc;
    d->ws_ptr = w->addr + w->bytes;
    return 0;
}

int npk_pccx_gemv_w(npk_pccx *d, uint32_t dest, uint32_t src, unsigned m, const npk_pccx_wmat *w, unsigned flags) {
    return mm_w(d, NPK_PCCX_OP_GEMV, dest, src, m, w, flags);
}

int npk_pccx_gemm_w(npk_pccx *d, uint32_t dest, uint32_t src, unsigned m, const npk_pccx_wmat *w, unsigned flags) {
    return mm_w(d, NPK_PCCX_OP_GEMM, dest, src, m, w, flags);
}

/* ---- sequences ------------------------------------------------------------------------------ */

int npk_pccx_softmax(npk_pccx *d, uint32_t src, uint32_t dst, uint32_t tmp, unsigned n, int use_emax) {
    if (!n || n > 65535) return npk_err(NPK_EINVAL, "pccx softmax: length %u (1..65535)", n);
    int rc;
    if ((rc = npk_pccx_cvo(d, NPK_PCCX_CVO_EXP, src, dst, n, use_emax ? NPK_PCCX_CVO_SUB_EMAX : 0, 0)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_REDUCE_SUM, dst, tmp, n, 0, 0)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_SCALE, dst, dst, n, NPK_PCCX_CVO_RECIP_SCALE, 0)))
        return rc;
    return 0;
}

void npk_pccx_rmsnorm_consts(unsigned n, float eps, uint16_t k[16]) {
    memset(k, 0, 16 * sizeof *k);
    k[0] = npk_bf16_from_f64((double)n * eps);
    k[8] = npk_bf16_from_f64((double)n);
}

int npk_pccx_rmsnorm_issue(npk_pccx *d, uint32_t x, uint32_t sq, uint32_t dst, uint32_t tmp, unsigned n,
                           unsigned async) {
    if (!n || n > 65535) return npk_err(NPK_EINVAL, "pccx rmsnorm: length %u (1..65535)", n);
    if (tmp + 2 > d->l2_words) return npk_err(NPK_EINVAL, "pccx rmsnorm: scratch words at %u exceed L2", tmp);
    int rc;
    if ((rc = npk_pccx_cvo(d, NPK_PCCX_CVO_REDUCE_SUM, sq, tmp, n, NPK_PCCX_CVO_ACCM, async)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_REDUCE_SUM, tmp + 1, tmp + 1, 1, 0, async)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_SCALE, tmp, tmp, 1, NPK_PCCX_CVO_RECIP_SCALE, async)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_SQRT, tmp, tmp, 1, 0, async)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_RECIP, tmp, tmp, 1, 0, async)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_REDUCE_SUM, tmp, tmp, 1, 0, async)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_SCALE, x, dst, n, 0, async)))
        return rc;
    return 0;
}

int npk_pccx_rmsnorm(npk_pccx *d, uint32_t x, uint32_t sq, uint32_t dst, uint32_t tmp, unsigned n, float eps) {
    if (!n || n > 65535) return npk_err(NPK_EINVAL, "pccx rmsnorm: length %u (1..65535)", n);
    if (tmp + 2 > d->l2_words) return npk_err(NPK_EINVAL, "pccx rmsnorm: scratch words at %u exceed L2", tmp);
    uint16_t k[16];
    npk_pccx_rmsnorm_consts(n, eps, k);
    int rc = npk_pccx_write_bf16(d, tmp, k, 16);
    return rc ? rc : npk_pccx_rmsnorm_issue(d, x, sq, dst, tmp, n, 0);
}

int npk_pccx_rope(npk_pccx *d, uint32_t ang, uint32_t sin_dst, uint32_t cos_dst, unsigned n) {
    if (!n || n > 65535) return npk_err(NPK_EINVAL, "pccx rope: length %u (1..65535)", n);
    int rc;
    if ((rc = npk_pccx_cvo(d, NPK_PCCX_CVO_SIN, ang, sin_dst, n, 0, 0)) ||
        (rc = npk_pccx_cvo(d, NPK_PCCX_CVO_COS, ang, cos_dst, n, 0, 0)))
        return rc;
    return 0;
}

/* ---- counters --------------------------------------------------------------------------------- */

static int rd64(npk_pccx *d, uint32_t lo, uint64_t *v) {
    uint32_t a = 0, b = 0;
    int rc = rd(d, lo, &a);
    if (!rc) rc = rd(d, lo + 4, &b);
    *v = (uint64_t)b << 32 | a;
    return rc;
}

int npk_pccx_stats_get(npk_pccx *d, npk_pccx_stats *st) {
    memset(st, 0, sizeof *st);
    uint32_t v = 0;
    int rc;
    if ((rc = rd(d, NPK_PCCX_INSTR_ISSUED, &v))) return rc;
    st->issued = v;
    if ((rc = rd(d, NPK_PCCX_INSTR_RETIRED, &v))) return rc;
    st->retired = v;
    for (unsigned i = 0; i < 5; i++) {
        if ((rc = rd(d, NPK_PCCX_CNT_GEMV + 4 * i, &v))) return rc;
        st->per_op[i] = v;
    }
    if ((rc = rd64(d, NPK_PCCX_CYCLES_LO, &st->cycles)) || (rc = rd64(d, NPK_PCCX_WS_BYTES_LO, &st->ws_bytes)) ||
        (rc = rd64(d, NPK_PCCX_DMA_BYTES_LO, &st->dma_bytes)) || (rc = rd64(d, NPK_PCCX_MACS_LO, &st->macs)))
        return rc;
    if ((rc = rd(d, NPK_PCCX_SFU_ELEMS, &v))) return rc;
    st->sfu_elems = v;
    for (unsigned i = 0; i < 4; i++) {
        if ((rc = rd(d, NPK_PCCX_GEMV_CYCLES + 4 * i, &v))) return rc;
        st->engine_cycles[i] = v;
    }
    return 0;
}

int npk_pccx_stats_clear(npk_pccx *d) {
    int rc = quiesce(d);
    return rc ? rc : wr(d, NPK_PCCX_CTRL, NPK_PCCX_CTRL_CLR_PERF);
}

/* The pccx row of the driver-level device table (include/npukit/devtab.h). */
const npk_dev_rt npk_pccx_rt = {
    .model = &npk_pccx_class,
    .stream_format = "64-bit instructions, one per line with named fields",
    .assemble = npk_pccx_asm,
    .disassemble = npk_pccx_disasm,
};
