// SPDX-License-Identifier: MIT
/* `npu qtest` as a QEMU drop-in: the QEMU command line of libqtest and of
 * QEMU's Python QEMUQtestMachine, the qtest socket as a client, and a small
 * QMP monitor (docs/qtest.md, "QEMU drop-in"). */
#ifndef NPUKIT_TOOLS_QEMU_COMPAT_H
#define NPUKIT_TOOLS_QEMU_COMPAT_H

#include <signal.h>

#include "npukit/sim.h"
#include "sim/qtest.h"

#define QEMU_MAX_CHARDEV 8

typedef struct qemu_chardev {
    const char *spec; /* "socket,id=ID,..." as given */
    char *path;       /* path=PATH (malloc'ed), or NULL */
    int fd;           /* fd=N, or -1 */
} qemu_chardev;

typedef struct qemu_opts {
    int active;                /* any QEMU-style option seen */
    char *qtest_path;          /* -qtest unix:PATH / unix:path=PATH (malloc'ed) */
    const char *qtest_log;     /* -qtest-log FILE */
    char *qmp_path;            /* -qmp unix:PATH (malloc'ed) */
    int qmp_fd;                /* -mon chardev=ID with fd=N */
    const char *mon_chardev;   /* -mon chardev=ID */
    const char *machine_dev;   /* device named by -machine npu-D / D */
    qemu_chardev chardevs[QEMU_MAX_CHARDEV];
    int nchardevs;
} qemu_opts;

/* If argv[*i] is a QEMU option, consume it (and its value) into o and return
 * 1; return 0 if it is not one; on a bad one print a usage error and return
 * -2 (exit code 2). */
int qemu_opt_parse(qemu_opts *o, int argc, char **argv, int *i);
/* Check the collected options (QMP chardev found, ...); 0 or exit code 2. */
int qemu_opts_finish(qemu_opts *o);
void qemu_opts_free(qemu_opts *o);

/* Connect to the test's sockets and serve qtest and QMP until the qtest
 * connection ends, QMP 'quit', or *cfg->stop. Returns 0 or an exit code (1). */
int qemu_serve(npk_sim *sim, const npk_qtest_cfg *cfg, const qemu_opts *o);

#endif
