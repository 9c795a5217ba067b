/* npu devices: list the device models (generated from the device table). */
#include "cli.h"
#include "npukit/devtab.h"
#include "npukit/opt.h"
#include "npukit/sim.h"

#include <inttypes.h>

int cmd_devices(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: npu devices\n\nLists every device model: name, MMIO window, clock, IRQ lines, command-stream\n"
               "format and options (pass them with --device-opt KEY=VALUE[,KEY=VALUE...]).\n\noptions:\n");
        cli_help_opts(NULL, 0);
        return 0;
    }
    int urc = cli_parse("devices", NULL, 0, NULL, argc, argv, NULL, 0, NULL);
    if (urc) return urc;
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
