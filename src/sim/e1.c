/* PLACEHOLDER: the e1 device model is being written (see its issue). */
#include "npukit/npu.h"
#include "npukit/sim.h"

static npk_dev *create(npk_mem *mem, const char *opts) {
    (void)mem;
    (void)opts;
    npk_err(NPK_EUNSUPPORTED, "the e1 device model is not available in this build yet");
    return NULL;
}

const npk_dev_class npk_e1_class = {
    .name = "e1",
    .summary = "(not available yet)",
    .mmio_base = 0x10020000,
    .mmio_size = 4096,
    .hz = 1000000000,
    .n_irq = 2,
    .options = "",
    .create = create,
};
