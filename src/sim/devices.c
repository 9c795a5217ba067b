/* The registry of device models. */
#include "npukit/sim.h"

#include <string.h>

extern const npk_dev_class npk_e1_class;
extern const npk_dev_class npk_v0_class;
extern const npk_dev_class npk_shell_class;
extern const npk_dev_class npk_pccx_class;

static const npk_dev_class *const classes[] = {&npk_e1_class, &npk_v0_class, &npk_shell_class, &npk_pccx_class};

const npk_dev_class *const *npk_dev_classes(size_t *n) {
    *n = sizeof classes / sizeof classes[0];
    return classes;
}

const npk_dev_class *npk_dev_class_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (!strcmp(classes[i]->name, name)) return classes[i];
    return NULL;
}
