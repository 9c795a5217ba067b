// SPDX-License-Identifier: MIT
/*
 * The port table (src/rt/ports.def, docs/architecture.md "How to add a port"):
 * every row is reachable by its own spec syntax and reports its own kind, the
 * default port is the first row, and an unknown spec is refused with the list
 * of every row's syntax in table order. The rows' optional hooks are checked
 * by what they do: the in-process port backs a 4 KiB allocation with host
 * memory (npk_port_direct) and caps guest memory with sim:mem-limit, a port
 * without those hooks returns no host pointer.
 */
#include "check.h"
#include "npukit/npu.h"

#include <stdlib.h>
#include <string.h>

/* The first spec a row's syntax names ("qtest:PATH, qtest-spawn:NPU" -> "qtest:"). */
static void first_scheme(const char *syntax, char *out, size_t n) {
    size_t k = strcspn(syntax, ",: ");
    if (syntax[k] == ':') k++;
    snprintf(out, n, "%.*s", (int)k, syntax);
}

static void test_rows(void) {
    size_t n;
    const npk_port_info *const *r = npk_port_infos(&n);
    CHECK(n >= 3);
    const char *specs = npk_port_specs();
    const char *at = specs;
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i]->name && *r[i]->name && r[i]->syntax && *r[i]->syntax && r[i]->help && *r[i]->help);
        for (size_t j = 0; j < i; j++) CHECK(strcmp(r[i]->name, r[j]->name));
        /* the specs list holds every syntax, in table order, joined by ", " and a last " or " */
        const char *s = strstr(at, r[i]->syntax);
        CHECK(s != NULL);
        if (!s) continue;
        if (i == 0) CHECK(s == specs);
        else CHECK(!strncmp(s - (i + 1 == n ? 4 : 2), i + 1 == n ? " or " : ", ", i + 1 == n ? 4 : 2));
        at = s + strlen(r[i]->syntax);
    }
    CHECK_EQ(*at, 0);

    /* the default port is the first row */
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, NULL, "e1", NULL), 0);
    if (p) CHECK_STR(npk_port_kind(p), r[0]->name);
    npk_port_close(p);
    p = NULL;
    CHECK_EQ(npk_port_open(&p, "", "e1", NULL), 0);
    if (p) CHECK_STR(npk_port_kind(p), r[0]->name);
    npk_port_close(p);

    /* every row takes the first spec its syntax names: the open reaches that row (it
     * opens, or fails with a message of its own, never "unknown port") */
    for (size_t i = 0; i < n; i++) {
        char spec[64];
        first_scheme(r[i]->syntax, spec, sizeof spec);
        p = NULL;
        int rc = npk_port_open(&p, spec, "v0", NULL);
        if (!rc) {
            CHECK_STR(npk_port_kind(p), r[i]->name);
            npk_port_close(p);
        } else {
            CHECK(strstr(npk_errmsg(), "unknown port") == NULL);
            CHECK(p == NULL);
        }
    }
    /* qtest through the table: the spawned server's port says qtest */
    p = NULL;
    int rc = npk_port_open(&p, "qtest-spawn:" NPU_BIN, "e1", NULL);
    CHECK_EQ(rc, 0);
    if (!rc) {
        CHECK_STR(npk_port_kind(p), "qtest");
        uint64_t a = 0;
        CHECK_EQ(npk_port_alloc(p, 8192, 4096, &a), 0);
        CHECK(npk_port_direct(p, a, 8192) == NULL); /* no host pointer across processes */
        npk_port_close(p);
    }
}

static void test_unknown(void) {
    npk_port *p = (npk_port *)1;
    CHECK_EQ(npk_port_open(&p, "bogus:x", "e1", NULL), -NPK_EINVAL);
    CHECK(p == NULL);
    char want[1024];
    snprintf(want, sizeof want, "unknown port 'bogus:x' (expected %s)", npk_port_specs());
    CHECK_STR(npk_errmsg(), want);
    /* a scheme ending in ':' is a prefix, the others are exact: "sims" and "uio" are no spec */
    CHECK_EQ(npk_port_open(&p, "sims", "e1", NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "unknown port 'sims'") != NULL);
    CHECK_EQ(npk_port_open(&p, "uio", "e1", NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "unknown port 'uio'") != NULL);
    /* the device is checked before the port */
    CHECK_EQ(npk_port_open(&p, "bogus", "nosuch", NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "nosuch") != NULL);
}

static void test_sim_hooks(void) {
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, "sim:", "e1", NULL), -NPK_EINVAL);
    CHECK(strstr(npk_errmsg(), "unknown sim port option ''") != NULL);
    CHECK_EQ(npk_port_open(&p, "sim:mem-limit=64K", "e1", NULL), 0);
    if (!p) return;
    CHECK_STR(npk_port_kind(p), "sim");
    uint64_t a = 0, b = 0;
    CHECK_EQ(npk_port_alloc(p, 8192, 4096, &a), 0);
    uint8_t *h = npk_port_direct(p, a, 8192); /* the allocation hook backed it */
    CHECK(h != NULL);
    if (h) {
        h[5] = 0xa5;
        uint8_t got = 0;
        CHECK_EQ(npk_port_mem_read(p, a + 5, &got, 1), 0);
        CHECK_EQ(got, 0xa5);
    }
    /* 64 KiB of guest memory: 128 KiB more cannot be written */
    CHECK_EQ(npk_port_alloc(p, 128 << 10, 16, &b), 0);
    uint8_t *big = calloc(1, 128 << 10);
    CHECK(big != NULL);
    if (big) CHECK(npk_port_mem_write(p, b, big, 128 << 10) != 0);
    free(big);
    npk_port_close(p);
}

int main(void) {
    test_rows();
    test_unknown();
    test_sim_hooks();
    return CHECK_DONE();
}
