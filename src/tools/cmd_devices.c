/* npu devices: list the device models. */
#include "cli.h"
#include "npukit/sim.h"

#include <inttypes.h>

int cmd_devices(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: npu devices\n\nLists every device model: name, MMIO window, clock, IRQ lines and options.\n");
        return 0;
    }
    if (argc > 1) return cli_usage_error("devices", "unexpected argument '%s'", argv[1]);
    size_t n;
    const npk_dev_class *const *c = npk_dev_classes(&n);
    for (size_t i = 0; i < n; i++) {
        printf("%-6s mmio 0x%08" PRIx64 "+0x%x  clock %" PRIu64 " Hz  irq lines %d  %s\n", c[i]->name, c[i]->mmio_base,
               c[i]->mmio_size, c[i]->hz, c[i]->n_irq, c[i]->summary);
        if (c[i]->options && *c[i]->options) printf("       options: %s\n", c[i]->options);
    }
    return 0;
}
