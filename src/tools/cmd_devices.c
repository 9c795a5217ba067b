// SPDX-License-Identifier: MIT
/* npu devices, npu ports: list the device models and the ports (generated from
 * the device and port tables). */
#include "cli.h"
#include "npukit/devtab.h"
#include "npukit/opt.h"
#include "npukit/sim.h"

#include <inttypes.h>

/* The arguments of a listing command: --help (prints usage and returns 1 with
 * *rc = 0) or none (returns 0); anything else is a usage error (returns 1). */
static int listing_args(const char *cmd, const char *usage, int argc, char **argv, int *rc) {
    *rc = 0;
    if (cli_wants_help(argc, argv)) {
        printf("usage: npu %s\n\n%s\n\noptions:\n", cmd, usage);
        cli_help_opts(NULL, 0);
        return 1;
    }
    *rc = cli_parse(cmd, NULL, 0, NULL, argc, argv, NULL, 0, NULL);
    return *rc != 0;
}

static const char devices_usage[] = "Lists every device model: name, MMIO window, clock, IRQ lines, command-stream\n"
                                    "format and options (pass them with --device-opt KEY=VALUE[,KEY=VALUE...]).";
static const char ports_usage[] = "Lists every kind of port a driver can reach a device through: its spec syntax (the\n"
                                  "value of --port) and what it is (docs/ports.md).";

int cmd_devices(int argc, char **argv) {
    int rc;
    if (listing_args("devices", devices_usage, argc, argv, &rc)) return rc;
    size_t n;
    const npk_dev_rt *const *r = npk_dev_rts(&n);
    for (size_t i = 0; i < n; i++) {
        const npk_dev_class *c = r[i]->model;
        printf("%-6s mmio 0x%08" PRIx64 "+0x%x  clock %" PRIu64 " Hz  irq lines %d  %s\n", c->name, c->mmio_base,
               c->mmio_size, c->hz, c->n_irq, c->summary);
        printf("       stream: %s\n", r[i]->stream_format ? r[i]->stream_format : "(none)");
        if (!c->n_opts) printf("       options: (none)\n");
        else {
            printf("       options:\n");
            npk_opt_help(c->opts, c->n_opts, stdout, 9);
        }
    }
    return 0;
}

/* npu ports: list the kinds of port (generated from the port table). */
int cmd_ports(int argc, char **argv) {
    int rc;
    if (listing_args("ports", ports_usage, argc, argv, &rc)) return rc;
    size_t n;
    const npk_port_info *const *r = npk_port_infos(&n);
    for (size_t i = 0; i < n; i++) printf("%-6s %s\n       %s\n", r[i]->name, r[i]->syntax, r[i]->help);
    return 0;
}
