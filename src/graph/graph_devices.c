// SPDX-License-Identifier: MIT
/* The device table, graph level: one npk_dev_graph per line of
 * include/npukit/devices.def (each defined beside its backend, src/graph/dev_<d>.c). */
#include "graph/exec.h"

#include <stdio.h>
#include <string.h>

static const npk_dev_graph *const graph_rows[] = {
#define NPK_DEVICE(d) &npk_##d##_graph,
#include "npukit/devices.def"
};

const npk_dev_graph *npk_dev_graph_find(const char *name) {
    for (size_t i = 0; name && i < sizeof graph_rows / sizeof graph_rows[0]; i++)
        if (!strcmp(graph_rows[i]->name, name)) return graph_rows[i];
    return NULL;
}

const char *npk_graph_device_names(void) {
    static const char names[] = "cpu"
#define NPK_DEVICE(d) ", " #d
#include "npukit/devices.def"
        ;
    return names;
}

const char *npk_npkb_device_names(void) {
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < sizeof graph_rows / sizeof graph_rows[0]; i++)
            if (graph_rows[i]->npkb)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                         graph_rows[i]->name);
    return names;
}

int npk_npkb_device_ok(const char *device) {
    const npk_dev_graph *r = npk_dev_graph_find(device);
    return r && r->npkb;
}

const char *npk_onnx_op_devices(const char *op, char *buf, size_t len) {
    size_t nr = sizeof graph_rows / sizeof graph_rows[0], at = 0;
    const char *notes[16];
    size_t nn = 0;
    if (len) buf[0] = 0;
    /* distinct notes in device order, each with the devices that have it */
    for (size_t r = 0; r < nr; r++)
        for (const npk_dev_op *o = graph_rows[r]->ops; o && o->op; o++) {
            if (strcmp(o->op, op)) continue;
            size_t k;
            for (k = 0; k < nn && strcmp(notes[k], o->note); k++) {}
            if (k == nn && nn < 16) notes[nn++] = o->note;
        }
    for (size_t k = 0; k < nn && at < len; k++) {
        int first = 1;
        at += (size_t)snprintf(buf + at, len - at, "%s", k ? "; " : "");
        for (size_t r = 0; r < nr && at < len; r++)
            for (const npk_dev_op *o = graph_rows[r]->ops; o && o->op && at < len; o++)
                if (!strcmp(o->op, op) && !strcmp(o->note, notes[k])) {
                    at += (size_t)snprintf(buf + at, len - at, "%s%s", first ? "" : ", ", graph_rows[r]->name);
                    first = 0;
                }
        if (*notes[k] && at < len) at += (size_t)snprintf(buf + at, len - at, " (%s)", notes[k]);
    }
    return buf;
}

int npk_graph_device_check(const char *device) {
    if (device && (!strcmp(device, "cpu") || npk_dev_graph_find(device))) return 0;
    return npk_err(NPK_EINVAL, "unknown device '%s' (known: %s)", device ? device : "", npk_graph_device_names());
}
