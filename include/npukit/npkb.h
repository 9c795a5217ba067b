// SPDX-License-Identifier: MIT
/*
 * npukit: compiled models for the graph devices (.npkb, docs/npkb.md).
 *
 * `npu compile --device v0|shell MODEL.onnx -o MODEL.npkb` writes one
 * self-contained, versioned file: the model (graph and weights, ONNX
 * encoding), the compiled plan (per node: CPU or device, the driver call,
 * MACs, modeled cycles; the guest-memory plan), the I/O bindings, and a
 * checksum. `npu exec MODEL.npkb --input ...` runs it on any port without
 * the ONNX file and checks that the executor's partition equals the plan.
 *
 * Layout (little-endian, version 2): a 32-byte header ("NPKB", u16
 * version 2, u16 header size 32, u32 section count, u32 flags 0, char
 * device[16]), then sections {char tag[4], u32 0, u64 length, payload, zero
 * padding to 8}: MODL (model bytes), PLAN (text), IOBD (text), GMEM (the
 * guest-memory plan), CMDS (the command stream: constant writes and
 * pre-encoded descriptor batches, replayed by npu exec), and last CKSM (u64
 * FNV-1a of every byte before the CKSM section).
 */
#ifndef NPUKIT_NPKB_H
#define NPUKIT_NPKB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npukit/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPK_NPKB_VERSION 2

/* 1 when data starts with the NPKB magic. */
int npk_npkb_is(const uint8_t *data, size_t len);

/* The devices whose models compile (the npkb column of the device table's
 * graph rows): "v0, shell"; npk_npkb_device_ok(name) is 1 for them. */
const char *npk_npkb_device_names(void);
int npk_npkb_device_ok(const char *device);

/* Compile an ONNX model for device (v0 or shell): check it, run the
 * executor once on the in-process model with deterministic inputs (seed 1)
 * to obtain the partition, driver calls, guest-memory plan and modeled
 * cycles, and write the container into *out (malloc'ed). */
int npk_npkb_compile(const uint8_t *onnx, size_t len, const char *device, uint8_t **out, size_t *out_len);
/* The same run with device model options (NULL: the defaults), e.g. v0's
 * array size: the stream is recorded for that configuration, so replay it
 * ('npu exec') with the same options. */
int npk_npkb_compile_opts(const uint8_t *onnx, size_t len, const char *device, const char *dev_opts, uint8_t **out,
                          size_t *out_len);

typedef struct npk_npkb npk_npkb;
/* Open a container: magic, version, sections, sizes and the checksum are
 * verified (-NPK_EFORMAT naming what is wrong: truncated, tampered, ...). */
int npk_npkb_open(npk_npkb **out, const uint8_t *data, size_t len);
void npk_npkb_free(npk_npkb *k);
const char *npk_npkb_device(const npk_npkb *k);
/* The compiled command stream (guest-memory plan, weights, descriptor
 * batches): give it as npk_run_opts.stream to replay it. Owned by k. */
npk_cstream *npk_npkb_stream(const npk_npkb *k);
/* Load the compiled model's graph. */
int npk_npkb_graph(const npk_npkb *k, npk_graph **g);
/* Check a run's partition against the compiled plan (same node order,
 * placement, driver call and MACs per node; the same guest arena size).
 * -NPK_EINVAL naming the first node that differs. */
int npk_npkb_check_run(const npk_npkb *k, const npk_run_report *r);
/* The listing: header, sections, I/O bindings and the plan. */
int npk_npkb_list(const npk_npkb *k, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
