// SPDX-License-Identifier: MIT
/* The port layer: one API over every row of the port table (src/rt/ports.def),
 * and the guest-buffer allocator every port shares. */
#include "port.h"

#include <stdlib.h>
#include <string.h>

/* Default guest-memory arena for buffers (a backend's open may replace it: uio). */
#define ARENA_BASE 0x80000000ull
#define ARENA_SIZE 0x400000000ull /* 16 GiB of addresses (pages are only taken when written): a 4B-parameter INT4 weight stream is 1.7 GB */

/* The row of the port table that takes spec, and what follows its scheme. */
static const npk_port_backend *port_row(const char *spec, const char **arg) {
    size_t n;
    const npk_port_backend *const *rows = npk_port_rows(&n);
    if (!spec || !*spec) {
        *arg = "";
        return rows[0];
    }
    for (size_t i = 0; i < n; i++)
        for (const char *const *s = rows[i]->schemes; *s; s++) {
            size_t len = strlen(*s);
            if ((*s)[len - 1] == ':' ? !strncmp(spec, *s, len) : !strcmp(spec, *s)) {
                *arg = spec + len; /* "" after an exact match */
                return rows[i];
            }
        }
    return NULL;
}

int npk_port_check_spec(const char *spec) {
    const char *arg;
    const npk_port_backend *be = port_row(spec, &arg);
    if (!be) return npk_err(NPK_EINVAL, "unknown port '%s' (expected %s)", spec, npk_port_specs());
    size_t l = strlen(spec) - strlen(arg);
    if (l && spec[l - 1] == ':' && !*arg) return npk_err(NPK_EINVAL, "port '%s': nothing after '%.*s'", spec, (int)l, spec);
    return 0;
}

int npk_port_open(npk_port **out, const char *spec, const char *device, const char *opts) {
    *out = NULL;
    const npk_dev_class *cls = npk_dev_class_find(device);
    if (!cls) return npk_dev_unknown(device);
    const char *arg;
    const npk_port_backend *be = port_row(spec, &arg);
    if (!be) return npk_err(NPK_EINVAL, "unknown port '%s' (expected %s)", spec, npk_port_specs());
    npk_port *p = calloc(1, sizeof *p);
    if (!p) return npk_err(NPK_ENOMEM, "out of memory");
    p->cls = cls;
    p->be = be;
    p->arena_base = ARENA_BASE;
    p->arena_size = ARENA_SIZE;
    int rc = be->open(p, spec, arg, opts);
    if (rc) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void npk_port_close(npk_port *p) {
    if (!p) return;
    npk_port_free_all(p);
    if (p->be && p->be->close) p->be->close(p);
    free(p);
}

int npk_port_read32(npk_port *p, uint32_t off, uint32_t *val) {
    p->mmio_count++;
    return p->be->read32(p, off, val);
}

int npk_port_write32(npk_port *p, uint32_t off, uint32_t val) {
    p->mmio_count++;
    return p->be->write32(p, off, val);
}

int npk_port_write64(npk_port *p, uint32_t off, uint64_t val) {
    if (p->be->write64) {
        p->mmio_count++;
        return p->be->write64(p, off, val);
    }
    int rc = npk_port_write32(p, off, (uint32_t)val);
    return rc ? rc : npk_port_write32(p, off + 4, (uint32_t)(val >> 32));
}

int npk_port_mem_read(npk_port *p, uint64_t addr, void *buf, size_t len) {
    return len ? p->be->mem_read(p, addr, buf, len) : 0;
}

int npk_port_mem_write(npk_port *p, uint64_t addr, const void *buf, size_t len) {
    return len ? p->be->mem_write(p, addr, buf, len) : 0;
}

int npk_port_wait(npk_port *p, uint64_t cycles) {
    int rc = p->be->wait(p, cycles);
    if (!rc) p->cycles += cycles;
    return rc;
}

int npk_port_irq(npk_port *p, int line) { return p->be->irq(p, line); }
int npk_port_reset(npk_port *p) {
    if (!p->be->reset) return npk_err(NPK_EUNSUPPORTED, "port '%s' cannot reset the device", p->be->info.name);
    return p->be->reset(p);
}
uint64_t npk_port_cycles(const npk_port *p) { return p->cycles; }
uint64_t npk_port_hz(const npk_port *p) { return npk_port_clock(p); }
uint64_t npk_port_mmio_count(const npk_port *p) { return p->mmio_count; }

int npk_port_energy(npk_port *p, npk_energy *e, npk_area *a, uint32_t *tech_nm) {
    if (!p->be->energy) return -NPK_EUNSUPPORTED;
    return p->be->energy(p, e, a, tech_nm);
}
int npk_port_jobs(npk_port *p) { return p->be->jobs ? p->be->jobs(p) : 0; }

static int no_jobs(const npk_port *p) {
    return npk_err(NPK_EUNSUPPORTED, "port '%s' takes no jobs (its drivers program the device through registers)",
                   p->be->info.name);
}

int npk_port_job_submit(npk_port *p, const npk_pjob *j) {
    return p->be->job_submit ? p->be->job_submit(p, j) : no_jobs(p);
}

int npk_port_job_check(npk_port *p, npk_pjob_state *s) {
    return p->be->job_check ? p->be->job_check(p, 0, 0, s) : no_jobs(p);
}

int npk_port_job_wait(npk_port *p, uint64_t timeout_ns, npk_pjob_state *s) {
    return p->be->job_check ? p->be->job_check(p, 1, timeout_ns, s) : no_jobs(p);
}

int npk_port_job_fallback_done(npk_port *p, uint32_t index) {
    return p->be->job_fallback_done ? p->be->job_fallback_done(p, index) : no_jobs(p);
}

const char *npk_port_device(const npk_port *p) { return p->cls->name; }
const char *npk_port_kind(const npk_port *p) { return p->be->info.name; }
npk_sim *npk_port_sim(npk_port *p) { return p->sim; }

/* First-fit allocator over the port's arena; blocks kept sorted. */
/* First fit at or above `from` in the arena; hook: tell the backend (npk_port_alloc). */
static int alloc_from(npk_port *p, uint64_t from, uint64_t size, uint64_t align, int hook, uint64_t *addr) {
    if (!size) size = 1;
    if (!align) align = 16;
    if (align & (align - 1)) return npk_err(NPK_EINVAL, "alignment %llu is not a power of two", (unsigned long long)align);
    uint64_t cur = from;
    npk_alloc_block **link = &p->blocks;
    for (; *link && (*link)->addr + (*link)->size <= from; link = &(*link)->next) {}
    for (;;) {
        uint64_t a = (cur + align - 1) & ~(align - 1);
        npk_alloc_block *next = *link;
        uint64_t limit = next ? next->addr : p->arena_base + p->arena_size;
        if (a >= cur && a + size >= a && a + size <= limit) {
            npk_alloc_block *b = malloc(sizeof *b);
            if (!b) return npk_err(NPK_ENOMEM, "out of memory");
            b->addr = a;
            b->size = size;
            b->host = 0;
            b->next = next;
            *link = b;
            *addr = a;
            if (hook && p->be->allocated) p->be->allocated(p, a, size);
            return 0;
        }
        if (!next) break;
        cur = next->addr + next->size > cur ? next->addr + next->size : cur;
        link = &next->next;
    }
    return npk_err(NPK_ENOMEM, "guest memory arena (%llu bytes) cannot fit %llu more bytes",
                   (unsigned long long)p->arena_size, (unsigned long long)size);
}

int npk_port_alloc(npk_port *p, uint64_t size, uint64_t align, uint64_t *addr) {
    return alloc_from(p, p->arena_base, size, align, 1, addr);
}

/* Host buffers are mapped in the arena's upper half: npk_port_alloc fills it
 * from the bottom, and the in-process port keeps its host-backed extents
 * after a free, which a mapping must not overlap. */
int npk_port_map_host(npk_port *p, void *host, uint64_t size, uint64_t *addr) {
    if (!p->be->map_host || !host || !size)
        return npk_err(NPK_EUNSUPPORTED, "port '%s' cannot map host memory", p->be->info.name);
    uint64_t a;
    int rc = alloc_from(p, p->arena_base + p->arena_size / 2, size, 64, 0, &a);
    if (rc) return rc;
    if ((rc = p->be->map_host(p, a, size, host))) {
        npk_port_free(p, a);
        return rc;
    }
    for (npk_alloc_block *b = p->blocks; b; b = b->next)
        if (b->addr == a) b->host = 1;
    *addr = a;
    return 0;
}

int npk_port_reserve(npk_port *p, uint64_t addr, uint64_t size) {
    if (!size) size = 1;
    if (addr + size < addr) return npk_err(NPK_EINVAL, "reserved range 0x%llx + %llu wraps", (unsigned long long)addr,
                                           (unsigned long long)size);
    if (addr >= p->arena_base + p->arena_size || addr + size <= p->arena_base) return 0;
    npk_alloc_block **link = &p->blocks;
    for (; *link && (*link)->addr + (*link)->size <= addr; link = &(*link)->next) {}
    if (*link && (*link)->addr < addr + size)
        return npk_err(NPK_EINVAL, "guest memory [0x%llx, 0x%llx) overlaps an allocation at 0x%llx",
                       (unsigned long long)addr, (unsigned long long)(addr + size), (unsigned long long)(*link)->addr);
    npk_alloc_block *b = malloc(sizeof *b);
    if (!b) return npk_err(NPK_ENOMEM, "out of memory");
    b->addr = addr;
    b->size = size;
    b->host = 0;
    b->next = *link;
    *link = b;
    return 0;
}

void *npk_port_direct(npk_port *p, uint64_t addr, uint64_t len) {
    return p->be->direct ? p->be->direct(p, addr, len) : NULL;
}

void npk_port_free(npk_port *p, uint64_t addr) {
    for (npk_alloc_block **link = &p->blocks; *link; link = &(*link)->next) {
        if ((*link)->addr == addr) {
            npk_alloc_block *b = *link;
            *link = b->next;
            if (b->host) p->be->unmap_host(p, b->addr);
            free(b);
            return;
        }
    }
}

void npk_port_free_all(npk_port *p) {
    while (p->blocks) {
        npk_alloc_block *b = p->blocks;
        p->blocks = b->next;
        if (b->host) p->be->unmap_host(p, b->addr);
        free(b);
    }
}
