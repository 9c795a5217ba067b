// SPDX-License-Identifier: MIT
/*
 * Compiled command streams of the graph devices (v0, shell): what a compiled
 * model (.npkb, docs/npkb.md) stores so that `npu exec` replays it instead of
 * encoding it again.
 *
 * A stream is recorded during one run of the executor (npk_run_opts.stream
 * in record mode) and replayed by later runs (replay mode):
 *   - the guest-memory plan: the arena's guest address and size and every
 *     device buffer (offset, size, node span); a replay reserves the same
 *     arena and requires the same plan;
 *   - per device node, in execution order, records:
 *       WRITE  constant bytes the host stages at a guest address before the
 *              node's work (weights: constant views, conv weight matrices);
 *       V0     a batch of pre-encoded 64-byte v0 descriptors (one
 *              npk_v0_run: written to the ring, doorbell, wait);
 *       SHELL  the bytes a batch pushes into the shell ring (one push of
 *              the stream, kick, wait).
 * Data that depends on the inputs (activations, im2col matrices, results)
 * still moves at run time; the host arithmetic (requantization, CPU nodes)
 * still runs.
 */
#ifndef NPUKIT_GRAPH_CSTREAM_H
#define NPUKIT_GRAPH_CSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npukit/graph.h"

enum { NPK_CS_WRITE = 1, NPK_CS_V0 = 2, NPK_CS_SHELL = 3 };

typedef struct npk_cs_buf {
    uint64_t off, size;
    int32_t first, last; /* node span */
} npk_cs_buf;

typedef struct npk_cs_rec {
    uint32_t type, node;
    uint64_t addr; /* WRITE: guest address; 0 otherwise */
    uint64_t len;
    const uint8_t *data;
} npk_cs_rec;

struct npk_cstream {
    int replay;               /* 0: record, 1: replay */
    uint64_t arena_base, arena_size;
    npk_cs_buf *bufs;
    uint32_t n_bufs;
    int have_plan;
    npk_cs_rec *recs;
    size_t n_recs, cap_recs;
    size_t cursor;            /* replay: next record */
    int owns_data;            /* record mode: every record's data is malloc'ed */
};

/* An empty stream in record mode. */
int npk_cs_new_record(npk_cstream **out);
/* A stream in replay mode over the GMEM and CMDS payloads (not copied: they
 * must outlive the stream). Checks their structure: -NPK_EFORMAT naming the
 * record and the field. */
int npk_cs_parse(npk_cstream **out, const uint8_t *gmem, size_t gmem_len, const uint8_t *cmds, size_t cmds_len);
void npk_cs_free(npk_cstream *s);
/* Serialize (record mode): malloc'ed payloads of the GMEM and CMDS sections. */
int npk_cs_serialize(const npk_cstream *s, uint8_t **gmem, size_t *gmem_len, uint8_t **cmds, size_t *cmds_len);
/* Record mode: append a record (the data is copied). */
int npk_cs_put(npk_cstream *s, uint32_t type, int node, uint64_t addr, const void *data, size_t len);
/* Replay mode: the next record, which must be of `type` for `node`. */
int npk_cs_take(npk_cstream *s, uint32_t type, int node, const npk_cs_rec **rec);
/* Number of descriptors in a SHELL record's bytes (walks the SIZE fields). */
size_t npk_cs_shell_count(const uint8_t *p, size_t len);
/* The listing: the memory plan and every record, descriptor batches
 * disassembled (v0 and shell text forms). g (may be NULL) names the nodes. */
int npk_cs_list(const npk_cstream *s, const npk_graph *g, FILE *f);

#endif
