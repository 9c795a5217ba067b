// SPDX-License-Identifier: MIT
/* The reference mapper's int8 GEMM streams end to end (issue #13): the
 * golden_gemm_v2 schedules of yhmtmt/RTLGen (npu/mapper/examples, copied in
 * tests/data/rtlgen) and its mlp1 schedule, mapped with npu shell-map's mapper
 * and run on the shell model. Their GEMMs have LDC = N bytes: int8 C (the
 * reference mapper's int8-wide tensors, docs/shell.md decision 12), saturated
 * to int8 (shift 0), fed as A to the next GEMM; mlp1's biases are int8 too.
 * Expected values are computed here with plain loops over the inputs. */
#include "test_shell_util.h"

#include <stdio.h>

#define RING 0x1000000000ull

static char *read_text(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/rtlgen/%s", NPUKIT_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    char *t = malloc(65536);
    *len = fread(t, 1, 65535, f);
    t[*len] = 0;
    fclose(f);
    return t;
}

/* Map a schedule file and run it; returns the port (caller closes). */
static npk_port *run_schedule(const char *name, void (*init)(npk_port *)) {
    size_t tl;
    char *y = read_text(name, &tl);
    uint8_t *bin = NULL;
    size_t len = 0;
    CHECK_EQ(npk_shell_map_yaml(y, tl, &bin, &len, NULL), 0);
    npk_port *p = open_shell(NULL);
    init(p);
    npk_shell *sh;
    npk_shell_opts o = {4096, RING, 0, 0};
    CHECK_EQ(npk_shell_open(&sh, p, &o), 0);
    int rc = npk_shell_run(sh, bin, len, 10000000);
    CHECK_EQ(rc, 0);
    if (rc) fprintf(stderr, "%s: %s\n", name, npk_errmsg());
    CHECK(reg(p, SHELL_IRQ_STATUS) & SHELL_IRQ_EVENT);
    npk_shell_close(sh);
    free(bin);
    free(y);
    return p;
}

static int8_t sat8(int64_t v) { return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v); }

/* C[m][n] = sat8(A[m][k] * B[k][n] (+ bias[n]) (relu)), row-major int8 */
static void gemm8(int m, int n, int k, const int8_t *a, const int8_t *b, const int8_t *bias, int relu, int8_t *c) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int64_t s = bias ? bias[j] : 0;
            for (int l = 0; l < k; l++) s += a[i * k + l] * b[l * n + j];
            if (relu && s < 0) s = 0;
            c[i * n + j] = sat8(s);
        }
}

static int8_t GA[4096], GC[4096];
static void golden_init(npk_port *p) {
    for (int i = 0; i < 4096; i++) GA[i] = (int8_t)rnd(), GC[i] = (int8_t)(rnd() % 7) - 3;
    npk_port_mem_write(p, 0x0, GA, sizeof GA);
    npk_port_mem_write(p, 0x2000, GC, sizeof GC);
}

static void test_golden(void) {
    int8_t d[256], e[256], got[4096];
    npk_port *p = run_schedule("golden_gemm_v2_schedule.yml", golden_init);
    gemm8(16, 16, 16, GA, GC, NULL, 0, d);
    npk_port_mem_read(p, 0x3000, got, 4096);
    CHECK(!memcmp(got, d, 256));
    for (int i = 256; i < 4096; i++) CHECK_EQ(got[i], 0); /* int8 rows: 256 bytes, nothing beyond */
    npk_port_close(p);

    /* the C of the first GEMM is the A of the second */
    const char *two[2] = {"golden_gemm_v2_two_schedule.yml", "golden_gemm_v2_ooo_schedule.yml"};
    for (int t = 0; t < 2; t++) {
        p = run_schedule(two[t], golden_init);
        gemm8(16, 16, 16, GA, GC, NULL, 0, d);
        gemm8(16, 16, 16, d, GC, NULL, 0, e);
        npk_port_mem_read(p, 0x3000, got, 256);
        CHECK(!memcmp(got, d, 256));
        npk_port_mem_read(p, 0x4000, got, 256);
        CHECK(!memcmp(got, e, 256));
        npk_port_close(p);
    }
}

static int8_t X[8 * 64], W1[64 * 128], B1[128], W2[128 * 64], B2[64];
static void mlp_init(npk_port *p) {
    for (size_t i = 0; i < sizeof X; i++) X[i] = (int8_t)(rnd() % 31) - 15;
    for (size_t i = 0; i < sizeof W1; i++) W1[i] = (int8_t)(rnd() % 5) - 2;
    for (size_t i = 0; i < sizeof B1; i++) B1[i] = (int8_t)(rnd() % 41) - 20;
    for (size_t i = 0; i < sizeof W2; i++) W2[i] = (int8_t)(rnd() % 5) - 2;
    for (size_t i = 0; i < sizeof B2; i++) B2[i] = (int8_t)(rnd() % 41) - 20;
    npk_port_mem_write(p, 0x3000000000ull, X, sizeof X);
    npk_port_mem_write(p, 0x3000000400ull, W1, sizeof W1);
    npk_port_mem_write(p, 0x3000002400ull, B1, sizeof B1);
    npk_port_mem_write(p, 0x3000002480ull, W2, sizeof W2);
    npk_port_mem_write(p, 0x3000004480ull, B2, sizeof B2);
}

static void test_mlp1(void) {
    npk_port *p = run_schedule("mlp1_schedule.yml", mlp_init);
    int8_t y1[8 * 128], y[8 * 64], got[8 * 64];
    gemm8(8, 128, 64, X, W1, B1, 1, y1);
    gemm8(8, 64, 128, y1, W2, B2, 0, y);
    npk_port_mem_read(p, 0x3000000200ull, got, sizeof got);
    CHECK(!memcmp(got, y, sizeof y));
    /* the values exercise saturation and relu */
    int sat = 0, zero = 0;
    for (size_t i = 0; i < sizeof y1; i++) sat += y1[i] == 127, zero += y1[i] == 0;
    CHECK(sat > 0 && zero > 0);
    npk_port_close(p);
}

int main(void) {
    test_golden();
    test_mlp1();
    return CHECK_DONE();
}
