// SPDX-License-Identifier: MIT
/* The device table drives every device through the generic paths: model
 * creation with default and explicit options, option errors, the qtest
 * handshake (npu_info matches the table row), reset, and the help texts
 * (npu devices, npu qtest --help) generated from the table. */
#include "check.h"
#include "npukit/devtab.h"
#include "npukit/npu.h"
#include "npukit/opt.h"
#include "npukit/sim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *run(const char *cmd) {
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - 1 - n, p)) > 0) {
        n += r;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
    }
    pclose(p);
    if (buf) buf[n] = 0;
    return buf;
}

/* Every option: its default is accepted, a value past its range is refused
 * with "out of range", garbage with "not a number", a repeat with "twice". */
static void options(const npk_dev_class *c) {
    char kv[256];
    for (size_t i = 0; i < c->n_opts; i++) {
        const npk_opt *o = &c->opts[i];
        if (o->type == NPK_OPT_STR) continue; /* named values (presets): the model's own tests */
        CHECK(o->def != NULL);
        snprintf(kv, sizeof kv, "%s=%s", o->name, o->def);
        CHECK_EQ(npk_dev_check_opts(c, kv), 0);
        npk_sim *s = npk_sim_new(c->name, kv);
        CHECK(s != NULL);
        npk_sim_free(s);
        snprintf(kv, sizeof kv, "%s=%s,%s=%s", o->name, o->def, o->name, o->def);
        CHECK(npk_dev_check_opts(c, kv) != 0 && strstr(npk_errmsg(), "twice"));
        snprintf(kv, sizeof kv, "%s=zz", o->name);
        CHECK(npk_dev_check_opts(c, kv) != 0 && strstr(npk_errmsg(), "not a number"));
        if (o->type == NPK_OPT_F64) snprintf(kv, sizeof kv, "%s=%g", o->name, o->fmax * 2 + 1);
        else if (o->type == NPK_OPT_BOOL) snprintf(kv, sizeof kv, "%s=2", o->name);
        else if (o->max && o->max < UINT64_MAX) snprintf(kv, sizeof kv, "%s=%llu", o->name, (unsigned long long)o->max + 1);
        else snprintf(kv, sizeof kv, "%s=99999999999999999999999", o->name);
        CHECK(npk_dev_check_opts(c, kv) != 0 && strstr(npk_errmsg(), "out of range"));
        CHECK(npk_sim_new(c->name, kv) == NULL); /* the model refuses what the check refuses */
    }
    CHECK(npk_dev_check_opts(c, "no_such_option=1") != 0 && strstr(npk_errmsg(), "no_such_option"));
    CHECK(npk_sim_new(c->name, "no_such_option=1") == NULL);
    CHECK(npk_dev_check_opts(c, "novalue") != 0 && strstr(npk_errmsg(), "key=value"));
}

/* The qtest handshake: npu_info reports the table row; npu_reset answers OK. */
static void qtest(const npk_dev_class *c) {
    char cmd[512], want[256];
    snprintf(cmd, sizeof cmd, "printf 'npu_info\\nnpu_reset\\nnpu_regs\\n' | %s qtest --device %s", NPU_BIN, c->name);
    char *out = run(cmd);
    CHECK(out != NULL);
    snprintf(want, sizeof want, "OK device=%s hz=%llu mmio=0x%llx+0x%x irqs=%d ns=0 cycles=0", c->name,
             (unsigned long long)c->hz, (unsigned long long)c->mmio_base, c->mmio_size, c->n_irq);
    CHECK(out && !strncmp(out, want, strlen(want)));
    CHECK(out && strstr(out, "\nOK\nOK "));
    free(out);
}

/* The clock: every device takes clock_mhz, its default is the class's clock,
 * a given value becomes the instance's clock (machine time, qtest npu_info,
 * the port) and 0 is refused. */
static void clock(const npk_dev_class *c) {
    const npk_opt *o = npk_opt_find(c->opts, c->n_opts, "clock_mhz");
    CHECK(o != NULL);
    if (!o) return;
    CHECK_EQ(strtoull(o->def, NULL, 10) * 1000000ull, c->hz);
    npk_sim *s = npk_sim_new(c->name, NULL);
    CHECK(s && npk_sim_hz(s) == c->hz);
    npk_sim_free(s);
    s = npk_sim_new(c->name, "clock_mhz=250");
    CHECK(s && npk_sim_hz(s) == 250000000ull);
    if (s) {
        npk_sim_step(s, 1000);
        CHECK_EQ(npk_sim_ns(s), 4000); /* 1000 cycles at 250 MHz */
    }
    npk_sim_free(s);
    CHECK(npk_sim_new(c->name, "clock_mhz=0") == NULL && strstr(npk_errmsg(), "clock_mhz") &&
          strstr(npk_errmsg(), "out of range"));
    npk_port *p = NULL;
    CHECK_EQ(npk_port_open(&p, "sim", c->name, "clock_mhz=250"), 0);
    CHECK(p && npk_port_hz(p) == 250000000ull);
    npk_port_close(p);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "printf 'npu_info\n' | %s qtest --device %s --device-opt clock_mhz=250", NPU_BIN, c->name);
    char *out = run(cmd);
    CHECK(out && strstr(out, " hz=250000000 "));
    free(out);
    snprintf(cmd, sizeof cmd, "qtest-spawn:%s", NPU_BIN);
    p = NULL;
    CHECK_EQ(npk_port_open(&p, cmd, c->name, "clock_mhz=250"), 0);
    CHECK(p && npk_port_hz(p) == 250000000ull);
    npk_port_close(p);
}

/* Reset: a fresh model and a reset one read the same registers, however
 * dirty the reset one was: every register written with all ones through the
 * bus (enables, masks, commands, pointers), the device run a while, so IRQ
 * lines and state derived from registers are set; after npk_sim_reset every
 * register reads its reset value and every IRQ line is low (the table's
 * hooks recompute them, npk_regfile_reset_dev). */
static void reset(const npk_dev_class *c) {
    npk_sim *a = npk_sim_new(c->name, NULL), *b = npk_sim_new(c->name, NULL);
    CHECK(a && b);
    if (!a || !b) return;
    npk_dev *d = npk_sim_dev(b);
    size_t it = 0;
    for (const npk_reg *r; (r = npk_regfile_next(d->regs, &it));)
        npk_sim_write(b, c->mmio_base + r->off, 4, 0xffffffffu);
    npk_sim_step(b, 1000);
    npk_sim_reset(b);
    for (int line = 0; line < c->n_irq; line++) CHECK_EQ(npk_sim_irq(b, line), 0);
    char *da = NULL, *db = NULL;
    size_t la = 0, lb = 0;
    FILE *fa = open_memstream(&da, &la), *fb = open_memstream(&db, &lb);
    npk_sim_dump_regs(a, fa);
    npk_sim_dump_regs(b, fb);
    fclose(fa);
    fclose(fb);
    CHECK(la > 0 && la == lb && !memcmp(da, db, la));
    free(da);
    free(db);
    npk_sim_free(a);
    npk_sim_free(b);
}

int main(void) {
    size_t n, nr;
    const npk_dev_class *const *c = npk_dev_classes(&n);
    const npk_dev_rt *const *r = npk_dev_rts(&nr);
    CHECK(n >= 4);
    CHECK_EQ(n, nr);
    char *devs = run(NPU_BIN " devices"), *qhelp = run(NPU_BIN " qtest --help");
    CHECK(devs && qhelp);
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i]->model == c[i]);
        CHECK(npk_dev_class_find(c[i]->name) == c[i]);
        CHECK(strstr(npk_dev_names(), c[i]->name) != NULL);
        CHECK(!r[i]->stream_format || (r[i]->assemble && r[i]->disassemble));
        options(c[i]);
        qtest(c[i]);
        clock(c[i]);
        reset(c[i]);
        /* help texts name the device and every option with its default */
        char line[64];
        snprintf(line, sizeof line, "%s ", c[i]->name);
        CHECK(devs && strstr(devs, line));
        CHECK(qhelp && strstr(qhelp, c[i]->name));
        for (size_t k = 0; devs && k < c[i]->n_opts; k++) {
            char want[128];
            snprintf(want, sizeof want, "%s=", c[i]->opts[k].name);
            CHECK(strstr(devs, want) != NULL);
        }
    }
    CHECK(npk_dev_class_find("nosuch") == NULL);
    CHECK(npk_dev_unknown("nosuch") != 0 && strstr(npk_errmsg(), "known: "));
    free(devs);
    free(qhelp);
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
