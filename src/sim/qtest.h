// SPDX-License-Identifier: MIT
/*
 * The qtest protocol engine: QEMU's qtest text protocol over one simulated
 * machine (npk_sim). It lives in the library so that `npu qtest`, the tests
 * and fuzzers drive exactly the same code.
 *
 * The engine is transport-free: bytes go in through npk_qtest_feed(), every
 * reply line and every asynchronous "IRQ raise N" / "IRQ lower N" line comes
 * out through the output callback, '\n'-terminated, in protocol order.
 * npk_qtest_serve_fd() and npk_qtest_serve_socket() add the stdio and Unix
 * socket transports used by `npu qtest`.
 *
 * The protocol, the verbs and where we differ from QEMU are described in
 * docs/qtest.md.
 */
#ifndef NPUKIT_SIM_QTEST_H
#define NPUKIT_SIM_QTEST_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npukit/sim.h"

/* Largest payload of read/write/b64read/b64write (bytes); larger requests FAIL. */
#define NPK_QTEST_MAX_BULK (1u << 20)
/* Largest memset (bytes). */
#define NPK_QTEST_MAX_MEMSET (64u << 20)
/* Longest request line accepted (bytes, without the newline). Longer lines
 * are discarded up to their newline and answered with one FAIL. */
#define NPK_QTEST_MAX_LINE (2u * NPK_QTEST_MAX_BULK + 256u)
/* Default bound of "run until idle" (clock_step without N, --settle), in cycles. */
#define NPK_QTEST_IDLE_LIMIT 100000000ull

typedef struct npk_qtest npk_qtest;

/* Receives protocol output: `len` bytes (one or more complete lines). */
typedef void (*npk_qtest_out_fn)(void *ctx, const char *data, size_t len);

typedef struct npk_qtest_cfg {
    int settle;            /* 1: run the device until idle after every access */
    uint64_t idle_limit;   /* bound of run-until-idle in cycles (0 = NPK_QTEST_IDLE_LIMIT) */
    FILE *log;             /* copy of the conversation ("> request", "< reply"), or NULL */
    volatile sig_atomic_t *stop; /* when set and *stop becomes non-zero (a signal
                            * handler), the serve functions return 0 soon */
    int irq_always;        /* 1: report IRQ lines from the first request; 0 (QEMU): only
                            * after irq_intercept_in/irq_intercept_out */
} npk_qtest_cfg;

/* Create an engine over `sim` (not owned; it must outlive the engine). cfg may
 * be NULL for the defaults. Installs the machine's IRQ callback. Returns NULL
 * with npk_errmsg() set on failure. */
npk_qtest *npk_qtest_new(npk_sim *sim, const npk_qtest_cfg *cfg, npk_qtest_out_fn out, void *ctx);
/* Detach from the machine (removes the IRQ callback) and free. */
void npk_qtest_free(npk_qtest *q);

/* Feed raw input bytes: every complete line is executed in order. */
void npk_qtest_feed(npk_qtest *q, const void *buf, size_t len);
/* End of input: a final line without '\n' is executed, then input is reset. */
void npk_qtest_eof(npk_qtest *q);
/* Execute one request line (no newline; a trailing '\r' is ignored). Blank
 * lines and lines starting with '#' produce no reply. Returns 0 when the
 * reply was OK, 1 when it was FAIL, -1 when there was no reply. */
int npk_qtest_command(npk_qtest *q, const char *line);

/* Simulated time of the engine's virtual clock in ns, and device cycles run. */
uint64_t npk_qtest_ns(const npk_qtest *q);
uint64_t npk_qtest_cycles(const npk_qtest *q);

/* Serve until end of input: read requests from in_fd, write replies to
 * out_fd (which may be the same socket). Returns 0 at EOF or when the peer
 * went away, or a negative npk_status on a read error. SIGPIPE is never
 * raised for a socket peer; for pipes the caller should ignore SIGPIPE. */
int npk_qtest_serve_fd(npk_qtest *q, int in_fd, int out_fd);
/* Listen on the Unix socket `path` (a socket file there that refuses
 * connections is stale and replaced; a live server's socket or any other
 * existing file is an error), accept one connection, serve it to its end,
 * then remove the socket (also when stopped through cfg.stop). `ready` (may be NULL) is called once the
 * socket accepts connections. Returns 0 or a negative npk_status. */
int npk_qtest_serve_socket(npk_qtest *q, const char *path, void (*ready)(void *ctx, const char *path), void *ctx);

/* ---- encodings shared with the qtest port client -------------------------- */

/* Standard base64 (RFC 4648, '=' padded). Returns a malloc'ed NUL-terminated
 * string or NULL when out of memory. */
char *npk_b64_encode(const uint8_t *data, size_t len);
/* Decode standard base64 (padding optional, no whitespace). On success
 * *out is a malloc'ed buffer (free it) of the returned length (>= 0). On
 * malformed input returns a negative npk_status with the reason (the bad
 * character and its position) in npk_errmsg(). */
long npk_b64_decode(const char *text, uint8_t **out);

#endif
