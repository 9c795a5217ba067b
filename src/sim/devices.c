/* The device table, model level: one npk_dev_class per line of
 * include/npukit/devices.def. */
#include "npukit/error.h"
#include "npukit/sim.h"

#include <string.h>

static const npk_dev_class *const classes[] = {
#define NPK_DEVICE(d) &npk_##d##_class,
#include "npukit/devices.def"
};

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

const char *npk_dev_names(void) {
    static const char names[] =
#define NPK_DEVICE(d) ", " #d
#include "npukit/devices.def"
        ;
    return names + 2;
}

int npk_dev_unknown(const char *name) {
    return npk_err(NPK_EINVAL, "unknown device '%s' (known: %s)", name ? name : "", npk_dev_names());
}
