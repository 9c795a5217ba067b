// SPDX-License-Identifier: MIT
/*
 * npukit base layer: status codes and the thread's error message.
 *
 * Every npukit function that can fail returns NPK_OK (0) or a negative
 * npk_status; the message naming the cause is available from npk_errmsg() on
 * the same thread. Every layer (models, drivers, ops, graph, llm, tools) uses
 * these; this header depends on nothing else in npukit.
 */
#ifndef NPUKIT_ERROR_H
#define NPUKIT_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. Functions return 0 or the negated code. */
typedef enum npk_status {
    NPK_OK = 0,
    NPK_EINVAL = 1,      /* invalid argument or request, refused before the device saw it */
    NPK_EDEVICE = 2,     /* the device latched an error state (see the message) */
    NPK_ETIMEDOUT = 3,   /* the device did not finish within the wait budget */
    NPK_EIO = 4,         /* transport failure (socket, pipe, mmap) */
    NPK_ENOMEM = 5,      /* host or guest memory exhausted */
    NPK_EUNSUPPORTED = 6,/* valid request the device or runtime cannot do */
    NPK_EFORMAT = 7,     /* malformed input file or stream */
    NPK_EBUS = 8         /* bus error on a guest memory access */
} npk_status;

/* Message for the last error set on this thread ("" when none). */
const char *npk_errmsg(void);
/* Name of a status code ("EINVAL", ...). */
const char *npk_status_name(int status);
/* Set the thread's error message; returns -code so callers can `return npk_err(...)`. */
int npk_err(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prefix the current message with context ("descriptor 2: ..."); a message that already
 * starts with the same context is left as it is. Returns -code. */
int npk_err_prefix(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Library version string. */
const char *npk_version(void);

#ifdef __cplusplus
}
#endif
#endif
