// SPDX-License-Identifier: MIT
/* Thread-local error messages and status names (include/npukit/error.h). */
#include "npukit/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char errbuf[1024];

const char *npk_errmsg(void) { return errbuf; }

const char *npk_status_name(int status) {
    if (status < 0) status = -status;
    switch (status) {
    case NPK_OK: return "OK";
    case NPK_EINVAL: return "EINVAL";
    case NPK_EDEVICE: return "EDEVICE";
    case NPK_ETIMEDOUT: return "ETIMEDOUT";
    case NPK_EIO: return "EIO";
    case NPK_ENOMEM: return "ENOMEM";
    case NPK_EUNSUPPORTED: return "EUNSUPPORTED";
    case NPK_EFORMAT: return "EFORMAT";
    case NPK_EBUS: return "EBUS";
    default: return "EUNKNOWN";
    }
}

int npk_err(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return code > 0 ? -code : code;
}

int npk_err_prefix(int code, const char *fmt, ...) {
    char prefix[512], old[sizeof errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, errbuf, sizeof old);
    size_t n = strlen(prefix);
    /* A message that already starts with this context ("record 'op0' (matmul): ...", set by
     * an inner layer) is not prefixed twice. */
    if (n && !strncmp(old, prefix, n) && old[n] == ':' && old[n + 1] == ' ') return code > 0 ? -code : code;
    if (n > sizeof errbuf - 3) n = sizeof errbuf - 3;
    memcpy(errbuf, prefix, n);
    errbuf[n] = ':';
    errbuf[n + 1] = ' ';
    size_t rest = sizeof errbuf - n - 2;
    size_t m = strlen(old);
    if (m >= rest) m = rest - 1;
    memcpy(errbuf + n + 2, old, m);
    errbuf[n + 2 + m] = 0;
    return code > 0 ? -code : code;
}

const char *npk_version(void) { return "0.1.0"; }
