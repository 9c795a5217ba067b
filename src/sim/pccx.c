/* PLACEHOLDER: the pccx device model is being written (see its issue). */
#include "npukit/npu.h"
#include "npukit/sim.h"

static npk_dev *create(npk_mem *mem, const char *opts) {
    (void)mem;
    (void)opts;
    npk_err(NPK_EUNSUPPORTED, "the pccx device model is not available in this build yet");
    return NULL;
}

const npk_dev_class npk_pccx_class = {
    .name = "pccx",
    .summary = "(not available yet)",
    .mmio_base = 0x10040000,
    .mmio_size = 4096,
    .hz = 400000000,
    .n_irq = 1,
    .options = "",
    .create = create,
};
