// SPDX-License-Identifier: MIT
/* The graph IR's accessors (src/graph/ir.h): a node's attributes by name,
 * used by the importer, the operator table (src/graph/ops.c), the QDQ matcher
 * and the backends alike. */
#include <string.h>

#include "graph/ir.h"

const npk_attr *npk_node_attr(const npk_node *n, const char *name) {
    for (size_t i = 0; i < n->n_attr; i++)
        if (!strcmp(n->attr[i].name, name)) return &n->attr[i];
    return NULL;
}
int64_t npk_node_attr_i(const npk_node *n, const char *name, int64_t def) {
    const npk_attr *a = npk_node_attr(n, name);
    return a && a->type == NPK_ATTR_INT ? a->i : def;
}
double npk_node_attr_f(const npk_node *n, const char *name, double def) {
    const npk_attr *a = npk_node_attr(n, name);
    return a && a->type == NPK_ATTR_FLOAT ? a->f : a && a->type == NPK_ATTR_INT ? (double)a->i : def;
}
const char *npk_node_attr_s(const npk_node *n, const char *name, const char *def) {
    const npk_attr *a = npk_node_attr(n, name);
    return a && a->type == NPK_ATTR_STRING ? a->s : def;
}
size_t npk_node_attr_ints(const npk_node *n, const char *name, const int64_t **v) {
    static const int64_t none[1] = {0};
    const npk_attr *a = npk_node_attr(n, name);
    if (!a || a->type != NPK_ATTR_INTS || !a->n || !a->ints) {
        *v = none; /* never NULL: callers copy n elements with memcpy (n 0 is fine) */
        return 0;
    }
    *v = a->ints;
    return a->n;
}
