// SPDX-License-Identifier: MIT
/* The device table, model level: one npk_dev_class per line of
 * include/npukit/devices.def. */
#include "npukit/error.h"
#include "npukit/opt.h"
#include "npukit/sim.h"

#include <stdlib.h>
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

int npk_dev_check_opts(const npk_dev_class *c, const char *opts) {
    size_t sz = 16;
    for (size_t i = 0; i < c->n_opts; i++)
        if (c->opts[i].off + 16 > sz) sz = c->opts[i].off + 16;
    void *scratch = calloc(1, sz);
    if (!scratch) return npk_err(NPK_ENOMEM, "out of memory");
    int rc = npk_opt_defaults(c->opts, c->n_opts, scratch);
    if (!rc) rc = npk_opt_parse_kv(c->opts, c->n_opts, scratch, opts, c->name);
    free(scratch);
    if (!rc && c->check_opts) rc = c->check_opts(opts);
    return rc;
}
