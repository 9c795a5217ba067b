// SPDX-License-Identifier: MIT
/* What a graph uses that npukit does not run: the unsupported-operator list
 * and check (npu run, onnx-test, onnx-ops), and the run report's release. */
#include "graph/exec_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct unsupported operators of g in order of first appearance. */
typedef struct unsup {
    const char *domain, *op;
    size_t count, first;   /* nodes using it; index of the first */
    size_t shown[3];       /* node indices named in the message (within their graph) */
    const char *names[3];  /* their names */
    const char *inside[3]; /* the node whose subgraph holds it, NULL at the top level */
} unsup;

/* The graph and, recursively, the subgraphs of its control-flow nodes. */
static size_t collect_unsupported_in(const npk_graph *g, const char *inside, unsup *u, size_t cap, size_t nu,
                                     size_t *n_nodes) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const npk_node *n = &g->nodes[i];
        for (size_t a = 0; a < n->n_attr; a++)
            if (n->attr[a].g) nu = collect_unsupported_in(n->attr[a].g, n->name, u, cap, nu, n_nodes);
        if (n->op_id != NPK_OP_NONE) continue;
        ++*n_nodes;
        size_t k;
        for (k = 0; k < nu; k++)
            if (!strcmp(u[k].op, n->op) && !strcmp(u[k].domain, n->domain)) break;
        if (k == nu) {
            if (nu == cap) continue; /* counted in n_nodes, not listed */
            memset(&u[nu], 0, sizeof u[nu]);
            u[nu].domain = n->domain;
            u[nu].op = n->op;
            u[nu++].first = i;
        }
        if (u[k].count < 3) {
            u[k].shown[u[k].count] = i;
            u[k].names[u[k].count] = n->name;
            u[k].inside[u[k].count] = inside;
        }
        u[k].count++;
    }
    return nu;
}

static size_t collect_unsupported(const npk_graph *g, unsup *u, size_t cap, size_t *n_nodes) {
    *n_nodes = 0;
    return collect_unsupported_in(g, NULL, u, cap, 0, n_nodes);
}

static void op_label(const unsup *u, char *buf, size_t len) {
    const char *cls = !*u->domain || !strcmp(u->domain, "ai.onnx") ? npk_onnx_op_unsupported_class(u->op)
                      : !strcmp(u->domain, "ai.onnx.preview.training") ? "training operator"
                                                                        : NULL;
    snprintf(buf, len, "%s%s%s%s%s%s", u->domain, *u->domain ? "." : "", u->op, cls ? " (" : "", cls ? cls : "",
             cls ? ")" : "");
}

size_t npk_graph_unsupported_list(const npk_graph *g, char *buf, size_t len) {
    unsup u[64];
    size_t nn, nu = collect_unsupported(g, u, 64, &nn), at = 0;
    if (len) buf[0] = 0;
    for (size_t k = 0; k < nu && at < len; k++) {
        char lab[160];
        op_label(&u[k], lab, sizeof lab);
        int w = snprintf(buf + at, len - at, "%s%s", k ? ", " : "", lab);
        if (w < 0) break;
        at += (size_t)w;
    }
    return nu;
}

int npk_graph_check(const npk_graph *g, const char **op_out) {
    if (op_out) *op_out = NULL;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const npk_node *n = &g->nodes[i];
        if (n->n_in - n->n_outer > NPK_OP_MAX_IO || n->n_out > NPK_OP_MAX_IO || n->n_in > NPK_OP_MAX_IN) {
            if (op_out) *op_out = n->op;
            return npk_err(NPK_EUNSUPPORTED,
                           "node '%s' (index %zu): %d inputs and %d outputs (at most %d each supported, %d with the "
                           "outer-scope values of its subgraphs)",
                           n->name, i, n->n_in - n->n_outer, n->n_out, NPK_OP_MAX_IO, NPK_OP_MAX_IN);
        }
    }
    unsup u[64];
    size_t nn, nu = collect_unsupported(g, u, 64, &nn);
    if (!nu) return 0;
    if (op_out) *op_out = u[0].op;
    /* one message naming every unsupported operator with its node count and
     * the first nodes using it, so a user sees the whole list at once */
    char msg[960];
    size_t at = (size_t)snprintf(msg, sizeof msg, "%zu unsupported operator%s in %zu node%s: ", nu, nu > 1 ? "s" : "", nn,
                                 nn > 1 ? "s" : "");
    for (size_t k = 0; k < nu && at < sizeof msg; k++) {
        char lab[160], nodes[400];
        op_label(&u[k], lab, sizeof lab);
        size_t nat = 0;
        size_t shown = u[k].count < 3 ? u[k].count : 3;
        for (size_t j = 0; j < shown && nat < sizeof nodes; j++)
            nat += (size_t)snprintf(nodes + nat, sizeof nodes - nat, "%s'%s' (index %zu%s%s%s)", j ? ", " : "",
                                    u[k].names[j], u[k].shown[j], u[k].inside[j] ? " in a subgraph of '" : "",
                                    u[k].inside[j] ? u[k].inside[j] : "", u[k].inside[j] ? "'" : "");
        if (u[k].count > shown && nat < sizeof nodes)
            snprintf(nodes + nat, sizeof nodes - nat, " and %zu more", u[k].count - shown);
        at += (size_t)snprintf(msg + at, sizeof msg - at, "%s%s x%zu (node%s %s)", k ? "; " : "", lab, u[k].count,
                               u[k].count > 1 ? "s" : "", nodes);
    }
    return npk_err(NPK_EUNSUPPORTED, "%s", msg);
}

void npk_run_report_fini(npk_run_report *r) {
    if (!r) return;
    free(r->nodes);
    r->nodes = NULL;
    r->n_nodes = 0;
}
