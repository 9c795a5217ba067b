// SPDX-License-Identifier: MIT
/* Sparse guest memory with a memory map, per-region latency and fault injection. */
#include "npukit/error.h"
#include "npukit/range.h"
#include "npukit/sim.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_SHIFT 12
#define PAGE_SIZE (1u << PAGE_SHIFT)
#define WGEN_SHIFT 16 /* write generations per 64 KiB block */
#define WGEN_N 16384u /* blocks tracked (aliased modulo 1 GiB) */

typedef struct page {
    uint64_t pfn;
    struct page *next;
    uint8_t data[PAGE_SIZE];
} page;

typedef struct region {
    uint64_t base, size;
    uint32_t latency;
    char name[32];
} region;

typedef struct fault_rule {
    npk_fault f;
    uint64_t seen;  /* matching beats observed since the rule was added */
    uint32_t fired;
} fault_rule;

/* A host-contiguous range of guest memory (npk_mem_attach): peeks, pokes and
 * DMA beats inside it use its buffer instead of pages, and npk_bus_direct
 * hands its pointer to a device that can compute in place (zero copy). */
typedef struct extent {
    uint64_t base, size;
    uint8_t *data;
    int foreign; /* npk_mem_attach_host: the caller's memory, not freed or counted */
} extent;

struct npk_mem {
    extent *ext;
    size_t next_n;
    uint64_t ext_bytes;
    page **buckets;
    size_t nbuckets, npages;
    region *regions;
    size_t nregions;
    uint32_t default_latency;
    fault_rule *faults;
    size_t nfaults;
    npk_mem_stats stats;
    npk_mem_watch_fn watch;
    void *watch_ctx;
    uint64_t limit_pages; /* 0 = no cap */
    uint64_t wgen;        /* writes so far; wgen_blk[b]: the last one in block b */
    uint64_t wgen_blk[WGEN_N];
    uint64_t map_gen;     /* changes of the map, extents, latencies, fault rules, watcher (npk_mem_map_gen) */
};

/* Record a write of [addr, addr+len). */
static void touch(npk_mem *m, uint64_t addr, uint64_t len) {
    if (!len) return;
    uint64_t first = addr >> WGEN_SHIFT, last = (addr + (len - 1)) >> WGEN_SHIFT;
    if (addr + (len - 1) < addr || last - first >= WGEN_N) first = 0, last = WGEN_N - 1;
    m->wgen++;
    for (uint64_t b = first; b <= last; b++) m->wgen_blk[b & (WGEN_N - 1)] = m->wgen;
}

uint64_t npk_mem_wgen(const npk_mem *m, uint64_t addr, uint64_t len) {
    if (!len) return 0;
    uint64_t first = addr >> WGEN_SHIFT, last = (addr + (len - 1)) >> WGEN_SHIFT, g = 0;
    if (addr + (len - 1) < addr || last - first >= WGEN_N) return m->wgen;
    for (uint64_t b = first; b <= last; b++)
        if (m->wgen_blk[b & (WGEN_N - 1)] > g) g = m->wgen_blk[b & (WGEN_N - 1)];
    return g;
}

npk_mem *npk_mem_new(void) {
    npk_mem *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->nbuckets = 1024;
    m->limit_pages = NPK_MEM_DEFAULT_LIMIT >> PAGE_SHIFT;
    m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
    if (!m->buckets) {
        free(m);
        return NULL;
    }
    return m;
}

void npk_mem_clear(npk_mem *m) {
    m->map_gen++;
    touch(m, 0, UINT64_MAX);
    for (size_t e = 0; e < m->next_n; e++)
        if (!m->ext[e].foreign) free(m->ext[e].data);
    free(m->ext);
    m->ext = NULL;
    m->next_n = 0;
    m->ext_bytes = 0;
    for (size_t i = 0; i < m->nbuckets; i++) {
        page *p = m->buckets[i];
        while (p) {
            page *n = p->next;
            free(p);
            p = n;
        }
        m->buckets[i] = NULL;
    }
    m->npages = 0;
}

void npk_mem_free(npk_mem *m) {
    if (!m) return;
    npk_mem_clear(m);
    free(m->buckets);
    free(m->regions);
    free(m->faults);
    free(m);
}

static size_t hash_pfn(uint64_t pfn, size_t n) {
    pfn *= 0x9E3779B97F4A7C15ull;
    return (size_t)(pfn >> 32) & (n - 1);
}

static page *find_page(const npk_mem *m, uint64_t pfn) {
    for (page *p = m->buckets[hash_pfn(pfn, m->nbuckets)]; p; p = p->next)
        if (p->pfn == pfn) return p;
    return NULL;
}

static void grow(npk_mem *m) {
    size_t nn = m->nbuckets * 2;
    page **nb = calloc(nn, sizeof *nb);
    if (!nb) return; /* keep the old table; lookups stay correct, only slower */
    for (size_t i = 0; i < m->nbuckets; i++) {
        page *p = m->buckets[i];
        while (p) {
            page *n = p->next;
            size_t h = hash_pfn(p->pfn, nn);
            p->next = nb[h];
            nb[h] = p;
            p = n;
        }
    }
    free(m->buckets);
    m->buckets = nb;
    m->nbuckets = nn;
}

static page *get_page(npk_mem *m, uint64_t pfn) {
    page *p = find_page(m, pfn);
    if (p) return p;
    if (m->npages >= m->nbuckets * 2) grow(m);
    p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->pfn = pfn;
    size_t h = hash_pfn(pfn, m->nbuckets);
    p->next = m->buckets[h];
    m->buckets[h] = p;
    m->npages++;
    return p;
}

static const region *find_region(const npk_mem *m, uint64_t addr, size_t len) {
    for (size_t i = 0; i < m->nregions; i++) {
        const region *r = &m->regions[i];
        if (addr >= r->base && addr - r->base < r->size && len <= r->size - (addr - r->base)) return r;
    }
    return NULL;
}

/* 1 if [addr, addr+len) is memory under the map. */
static int mapped(const npk_mem *m, uint64_t addr, size_t len) {
    if (!npk_range_ok(addr, len, NULL)) return 0; /* wraps the address space */
    if (!m->nregions) return 1;
    return find_region(m, addr, len) != NULL;
}

int npk_mem_map(npk_mem *m, uint64_t base, uint64_t size, uint32_t latency, const char *name) {
    if (!size || !npk_range_ok(base, size, NULL))
        return npk_err(NPK_EINVAL, "memory region 0x%" PRIx64 "+0x%" PRIx64 " is empty or wraps", base, size);
    for (size_t i = 0; i < m->nregions; i++) {
        const region *r = &m->regions[i];
        if (npk_range_overlap(base, size, r->base, r->size))
            return npk_err(NPK_EINVAL, "memory region 0x%" PRIx64 "+0x%" PRIx64 " overlaps region '%s'", base,
                           size, r->name);
    }
    region *nr = realloc(m->regions, (m->nregions + 1) * sizeof *nr);
    if (!nr) return npk_err(NPK_ENOMEM, "out of memory");
    m->regions = nr;
    region *r = &nr[m->nregions++];
    m->map_gen++;
    r->base = base;
    r->size = size;
    r->latency = latency;
    snprintf(r->name, sizeof r->name, "%s", name ? name : "ram");
    return 0;
}

void npk_mem_set_latency(npk_mem *m, uint32_t cycles) {
    m->default_latency = cycles;
    m->map_gen++;
}

uint64_t npk_mem_map_gen(const npk_mem *m) { return m->map_gen; }

static const extent *find_ext(const npk_mem *m, uint64_t addr, uint64_t *next) {
    *next = UINT64_MAX;
    for (size_t e = 0; e < m->next_n; e++) {
        const extent *x = &m->ext[e];
        if (addr >= x->base && addr - x->base < x->size) return x;
        if (x->base > addr && x->base < *next) *next = x->base;
    }
    return NULL;
}

static void peek_pages(const npk_mem *m, uint64_t addr, void *buf, size_t len);
static void poke_pages(npk_mem *m, uint64_t addr, const void *buf, size_t len);

/* Split [addr, addr+len) into extent and page pieces. */
static void ext_copy(npk_mem *m, const npk_mem *cm, uint64_t addr, uint8_t *rbuf, const uint8_t *wbuf, size_t len) {
    while (len) {
        uint64_t next;
        const extent *x = find_ext(cm, addr, &next);
        size_t n;
        if (x) {
            n = x->base + x->size - addr < len ? (size_t)(x->base + x->size - addr) : len;
            if (rbuf) memcpy(rbuf, x->data + (addr - x->base), n);
            else memcpy(x->data + (addr - x->base), wbuf, n);
        } else {
            n = next - addr < len ? (size_t)(next - addr) : len;
            if (rbuf) peek_pages(cm, addr, rbuf, n);
            else poke_pages(m, addr, wbuf, n);
        }
        if (rbuf) rbuf += n;
        else wbuf += n;
        addr += n;
        len -= n;
    }
}

int npk_mem_peek(const npk_mem *m, uint64_t addr, void *buf, size_t len) {
    if (!mapped(m, addr, len))
        return npk_err(NPK_EBUS, "address 0x%" PRIx64 "+%zu is outside the memory map", addr, len);
    if (m->next_n) ext_copy(NULL, m, addr, buf, NULL, len);
    else peek_pages(m, addr, buf, len);
    return 0;
}

static void peek_pages(const npk_mem *m, uint64_t addr, void *buf, size_t len) {
    uint8_t *out = buf;
    while (len) {
        uint64_t off = addr & (PAGE_SIZE - 1);
        size_t n = PAGE_SIZE - off;
        if (n > len) n = len;
        const page *p = find_page(m, addr >> PAGE_SHIFT);
        if (p)
            memcpy(out, p->data + off, n);
        else
            memset(out, 0, n);
        out += n;
        addr += n;
        len -= n;
    }
}

int npk_parse_size(const char *text, uint64_t *out) {
    const char *s = text ? text : "";
    if (!*s || *s == '-' || *s == '+' || *s == ' ')
        return npk_err(NPK_EINVAL, "bad size '%s' (expected bytes, optionally with K, M, G or T)", s);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (end == s || errno) return npk_err(NPK_EINVAL, "bad size '%s' (out of range or not a number)", s);
    unsigned shift = 0;
    if (*end) {
        const char *u = "KMGT", *f = strchr(u, *end >= 'a' ? *end - 32 : *end);
        if (!f || end[1]) return npk_err(NPK_EINVAL, "bad size '%s' (expected bytes, optionally with K, M, G or T)", s);
        shift = 10u * (unsigned)(f - u + 1);
    }
    if (shift && v > (UINT64_MAX >> shift)) return npk_err(NPK_EINVAL, "size '%s' is out of range (over 2^64 bytes)", s);
    *out = (uint64_t)v << shift;
    return 0;
}

void npk_mem_set_limit(npk_mem *m, uint64_t bytes) { m->limit_pages = bytes >> PAGE_SHIFT; }
uint64_t npk_mem_limit(const npk_mem *m) { return m->limit_pages << PAGE_SHIFT; }
uint64_t npk_mem_used(const npk_mem *m) { return ((uint64_t)m->npages << PAGE_SHIFT) + m->ext_bytes; }

/* Make every page of [addr, addr+len) exist before anything is written, so a
 * write that cannot complete (cap, host memory) changes nothing: pages added
 * before a failure are zero, which reads the same as absent. */
static int reserve(npk_mem *m, uint64_t addr, size_t len) {
    if (!len) return 0;
    if (!npk_range_ok(addr, len, NULL))
        return npk_err(NPK_EBUS, "address 0x%" PRIx64 "+%zu wraps around the address space", addr, len);
    uint64_t first = addr >> PAGE_SHIFT, last = (addr + len - 1) >> PAGE_SHIFT, missing = 0;
    for (uint64_t pfn = first; pfn <= last; pfn++)
        if (!find_page(m, pfn)) missing++;
    if (m->limit_pages && m->npages + missing + (m->ext_bytes >> PAGE_SHIFT) > m->limit_pages)
        return npk_err(NPK_ENOMEM,
                       "guest memory cap of %" PRIu64 " bytes reached: writing 0x%" PRIx64 "+%zu needs %" PRIu64
                       " more KiB on top of %" PRIu64 " KiB in use (raise the cap with --mem-limit)",
                       npk_mem_limit(m), addr, len, missing * (PAGE_SIZE / 1024),
                       (uint64_t)m->npages * (PAGE_SIZE / 1024));
    for (uint64_t pfn = first; missing && pfn <= last; pfn++)
        if (!get_page(m, pfn))
            return npk_err(NPK_ENOMEM, "out of host memory for guest page 0x%" PRIx64, pfn);
    return 0;
}

/* Reserve the page pieces of [addr, addr+len) (extent pieces need nothing). */
static int reserve_all(npk_mem *m, uint64_t addr, size_t len) {
    if (!m->next_n) return reserve(m, addr, len);
    while (len) {
        uint64_t next;
        const extent *x = find_ext(m, addr, &next);
        size_t n = x ? (x->base + x->size - addr < len ? (size_t)(x->base + x->size - addr) : len)
                     : (next - addr < len ? (size_t)(next - addr) : len);
        if (!x) {
            int rc = reserve(m, addr, n);
            if (rc) return rc;
        }
        addr += n;
        len -= n;
    }
    return 0;
}

int npk_mem_poke(npk_mem *m, uint64_t addr, const void *buf, size_t len) {
    if (!mapped(m, addr, len))
        return npk_err(NPK_EBUS, "address 0x%" PRIx64 "+%zu is outside the memory map", addr, len);
    if (!npk_range_ok(addr, len, NULL))
        return npk_err(NPK_EBUS, "address 0x%" PRIx64 "+%zu wraps around the address space", addr, len);
    int rc = reserve_all(m, addr, len);
    if (rc) return rc;
    touch(m, addr, len);
    if (m->next_n) ext_copy(m, m, addr, NULL, buf, len);
    else poke_pages(m, addr, buf, len);
    return 0;
}

static void poke_pages(npk_mem *m, uint64_t addr, const void *buf, size_t len) {
    const uint8_t *in = buf;
    while (len) {
        uint64_t off = addr & (PAGE_SIZE - 1);
        size_t n = PAGE_SIZE - off;
        if (n > len) n = len;
        page *p = find_page(m, addr >> PAGE_SHIFT);
        memcpy(p->data + off, in, n);
        in += n;
        addr += n;
        len -= n;
    }
}

int npk_mem_fill(npk_mem *m, uint64_t addr, uint8_t value, size_t len) {
    if (!mapped(m, addr, len))
        return npk_err(NPK_EBUS, "address 0x%" PRIx64 "+%zu is outside the memory map", addr, len);
    int r = reserve_all(m, addr, len);
    if (r) return r;
    uint8_t chunk[256];
    memset(chunk, value, sizeof chunk);
    while (len) {
        size_t n = len < sizeof chunk ? len : sizeof chunk;
        int rc = npk_mem_poke(m, addr, chunk, n);
        if (rc) return rc;
        addr += n;
        len -= n;
    }
    return 0;
}

/* Apply fault rules to one beat; returns the response. */
static npk_bus_resp check_faults(npk_mem *m, npk_access acc, uint64_t addr, size_t len) {
    npk_bus_resp resp = NPK_BUS_OK;
    for (size_t i = 0; i < m->nfaults; i++) {
        fault_rule *r = &m->faults[i];
        if (!(r->f.access & acc)) continue;
        if (r->f.len && !npk_range_overlap(addr, len, r->f.addr, r->f.len)) continue;
        uint64_t idx = r->seen++;
        if (r->f.count && r->fired >= r->f.count) continue;
        if (r->f.beat >= 0 && idx != (uint64_t)r->f.beat) continue;
        r->fired++;
        if (r->f.resp > resp) resp = r->f.resp;
    }
    return resp;
}

static npk_bus_resp beat(npk_mem *m, npk_access acc, uint64_t addr, void *rbuf, const void *wbuf, size_t len,
                         uint32_t *latency) {
    uint32_t lat = m->default_latency;
    npk_bus_resp resp = NPK_BUS_OK;
    if (m->nregions) {
        const region *r = find_region(m, addr, len);
        if (r)
            lat = r->latency;
        else
            resp = NPK_BUS_ERROR;
    } else if (!npk_range_ok(addr, len, NULL)) {
        resp = NPK_BUS_ERROR;
    }
    if (resp == NPK_BUS_OK && m->nfaults) resp = check_faults(m, acc, addr, len);
    if (latency) *latency = lat;
    if (resp == NPK_BUS_OK) {
        if (acc == NPK_ACC_READ) {
            if (rbuf) npk_mem_peek(m, addr, rbuf, len);
            m->stats.read_beats++;
            m->stats.read_bytes += len;
        } else {
            if (wbuf && npk_mem_poke(m, addr, wbuf, len)) resp = NPK_BUS_ERROR; /* host OOM: report as a bus error */
            m->stats.write_beats++;
            m->stats.write_bytes += len;
        }
    }
    if (resp == NPK_BUS_ERROR) m->stats.errors++;
    if (resp == NPK_BUS_HANG) m->stats.hangs++;
    if (m->watch) m->watch(m->watch_ctx, acc, addr, len, resp);
    return resp;
}

npk_bus_resp npk_bus_read(npk_mem *m, uint64_t addr, void *buf, size_t len, uint32_t *latency) {
    return beat(m, NPK_ACC_READ, addr, buf, NULL, len, latency);
}

npk_bus_resp npk_bus_write(npk_mem *m, uint64_t addr, const void *buf, size_t len, uint32_t *latency) {
    return beat(m, NPK_ACC_WRITE, addr, NULL, buf, len, latency);
}

int npk_bus_plain(const npk_mem *m, uint64_t addr, size_t len, uint32_t *latency) {
    if (!len || m->nfaults || m->watch) return 0;
    const region *r = m->nregions ? find_region(m, addr, len) : NULL;
    if (m->nregions ? r == NULL : !npk_range_ok(addr, len, NULL)) return 0;
    if (latency) *latency = r ? r->latency : m->default_latency;
    return 1;
}

int npk_bus_burst(npk_mem *m, npk_access acc, uint64_t addr, void *rbuf, const void *wbuf, size_t len,
                  size_t beat_bytes, uint32_t *latency) {
    /* Without fault rules or a watcher, a transfer that lies in one region (or
     * anywhere when no map is declared) has every beat succeed with that
     * region's latency: move the bytes at once and count the beats. A write
     * the host cannot hold (the page cap) writes nothing here: the caller's
     * beat-by-beat path then writes the beats before the failing one. */
    uint32_t lat;
    if (!npk_bus_plain(m, addr, len, &lat)) return 0;
    if (!beat_bytes) beat_bytes = 16;
    uint64_t beats = (len + beat_bytes - 1) / beat_bytes;
    if (acc == NPK_ACC_READ) {
        if (rbuf) npk_mem_peek(m, addr, rbuf, len);
        m->stats.read_beats += beats;
        m->stats.read_bytes += len;
    } else {
        if (wbuf && npk_mem_poke(m, addr, wbuf, len)) return 0;
        m->stats.write_beats += beats;
        m->stats.write_bytes += len;
    }
    if (latency) *latency = lat;
    return 1;
}

static npk_bus_resp copy(npk_mem *m, npk_access acc, uint64_t addr, void *rbuf, const void *wbuf, size_t len,
                         size_t beat_bytes, size_t *done, uint64_t *fault_addr, uint64_t *cycles) {
    size_t pos = 0;
    uint64_t cyc = 0;
    npk_bus_resp resp = NPK_BUS_OK;
    if (!beat_bytes) beat_bytes = 16;
    if (!npk_range_ok(addr, len, NULL)) {
        /* A transfer past 2^64 would wrap to address 0: refused before any
         * beat, as a bus error at its start address (nothing moves). */
        m->stats.errors++;
        if (m->watch) m->watch(m->watch_ctx, acc, addr, len, NPK_BUS_ERROR);
        if (done) *done = 0;
        if (fault_addr) *fault_addr = addr;
        if (cycles) *cycles = 0;
        return NPK_BUS_ERROR;
    }
    uint32_t blat;
    if (npk_bus_burst(m, acc, addr, rbuf, wbuf, len, beat_bytes, &blat)) {
        if (done) *done = len;
        if (cycles) *cycles = (len + beat_bytes - 1) / beat_bytes * blat;
        return NPK_BUS_OK;
    }
    while (pos < len) {
        size_t n = len - pos < beat_bytes ? len - pos : beat_bytes;
        uint32_t lat = 0;
        resp = beat(m, acc, addr + pos, rbuf ? (uint8_t *)rbuf + pos : NULL,
                    wbuf ? (const uint8_t *)wbuf + pos : NULL, n, &lat);
        cyc += lat;
        if (resp != NPK_BUS_OK) {
            if (fault_addr) *fault_addr = addr + pos;
            break;
        }
        pos += n;
    }
    if (done) *done = pos;
    if (cycles) *cycles = cyc;
    return resp;
}

int npk_mem_attach(npk_mem *m, uint64_t base, uint64_t size) {
    if (!size || !npk_range_ok(base, size, NULL) || size > SIZE_MAX) return npk_err(NPK_EINVAL, "bad extent 0x%" PRIx64 "+%" PRIu64, base, size);
    if (!mapped(m, base, (size_t)size))
        return npk_err(NPK_EBUS, "extent 0x%" PRIx64 "+%" PRIu64 " is outside the memory map", base, size);
    for (size_t e = 0; e < m->next_n; e++)
        if (npk_range_overlap(base, size, m->ext[e].base, m->ext[e].size))
            return npk_err(NPK_EINVAL, "extent 0x%" PRIx64 "+%" PRIu64 " overlaps another", base, size);
    if (m->limit_pages && ((uint64_t)m->npages << PAGE_SHIFT) + m->ext_bytes + size > npk_mem_limit(m))
        return npk_err(NPK_ENOMEM, "guest memory cap of %" PRIu64 " bytes reached", npk_mem_limit(m));
    extent *ne = realloc(m->ext, (m->next_n + 1) * sizeof *ne);
    if (!ne) return npk_err(NPK_ENOMEM, "out of memory");
    m->ext = ne;
    uint8_t *data = calloc(1, (size_t)size);
    if (!data) return npk_err(NPK_ENOMEM, "out of host memory for a %" PRIu64 "-byte extent", size);
    /* the range keeps its contents: copy the pages that exist (others read 0) */
    for (uint64_t pfn = base >> PAGE_SHIFT; pfn <= (base + size - 1) >> PAGE_SHIFT; pfn++) {
        const page *pg = find_page(m, pfn);
        if (!pg) continue;
        /* offsets from base (an extent may end exactly at 2^64) */
        uint64_t lo = pfn << PAGE_SHIFT > base ? (pfn << PAGE_SHIFT) - base : 0;
        uint64_t hi = (pfn << PAGE_SHIFT) + PAGE_SIZE - base; /* modulo 2^64: exact, below 2^64 */
        if (hi > size) hi = size;
        memcpy(data + lo, pg->data + ((base + lo) & (PAGE_SIZE - 1)), (size_t)(hi - lo));
    }
    m->ext[m->next_n++] = (extent){base, size, data, 0};
    m->map_gen++;
    m->ext_bytes += size;
    return 0;
}

static void *ext_ptr(const npk_mem *m, uint64_t addr, uint64_t len) {
    uint64_t next;
    const extent *x = m->next_n ? find_ext(m, addr, &next) : NULL;
    if (!x || len > x->size - (addr - x->base)) return NULL;
    return x->data + (addr - x->base);
}

void *npk_mem_direct(npk_mem *m, uint64_t addr, uint64_t len) {
    void *p = ext_ptr(m, addr, len);
    if (p) touch(m, addr, len); /* the caller may write through the pointer */
    return p;
}

void *npk_bus_direct(npk_mem *m, npk_access acc, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes,
                     size_t beat_bytes) {
    if (!rows || !rowbytes || m->nfaults || m->watch || (stride < rowbytes && rows > 1)) return NULL;
    uint64_t span;
    if (!npk_range_span(rows, stride, rowbytes, &span) || !npk_range_ok(base, span, NULL) || span > SIZE_MAX)
        return NULL; /* the caller's copy path reports the wrap */
    if (m->nregions && !find_region(m, base, (size_t)span)) return NULL;
    void *p = ext_ptr(m, base, span);
    if (!p) return NULL;
    if (!beat_bytes) beat_bytes = 16;
    uint64_t beats = rows * ((rowbytes + beat_bytes - 1) / beat_bytes);
    if (acc == NPK_ACC_READ) {
        m->stats.read_beats += beats;
        m->stats.read_bytes += rows * rowbytes;
    } else {
        touch(m, base, span);
        m->stats.write_beats += beats;
        m->stats.write_bytes += rows * rowbytes;
    }
    return p;
}

int npk_bus_window(const npk_mem *m, uint64_t addr, uint64_t *base, uint64_t *size, uint8_t **data,
                   uint32_t *latency) {
    if (m->nfaults || m->watch || !m->next_n) return 0;
    uint64_t next;
    const extent *x = find_ext(m, addr, &next);
    if (!x) return 0;
    uint64_t lo = x->base, hi = x->base + (x->size - 1); /* inclusive: an extent may end at 2^64 */
    uint32_t lat = m->default_latency;
    if (m->nregions) {
        const region *r = find_region(m, addr, 1);
        if (!r) return 0;
        if (r->base > lo) lo = r->base;
        if (r->base + (r->size - 1) < hi) hi = r->base + (r->size - 1);
        lat = r->latency;
    }
    if (hi - lo >= (uint64_t)SIZE_MAX) return 0; /* no size_t span: the caller takes the usual path */
    *base = lo;
    *size = hi - lo + 1;
    *data = x->data + (lo - x->base);
    *latency = lat;
    return 1;
}

void npk_bus_count(npk_mem *m, npk_access acc, uint64_t addr, uint64_t bytes, uint64_t beats) {
    if (acc == NPK_ACC_READ) {
        m->stats.read_beats += beats;
        m->stats.read_bytes += bytes;
    } else {
        touch(m, addr, bytes);
        m->stats.write_beats += beats;
        m->stats.write_bytes += bytes;
    }
}

npk_bus_resp npk_bus_copy_in(npk_mem *m, uint64_t addr, void *buf, size_t len, size_t beat_bytes, size_t *done,
                             uint64_t *fault_addr, uint64_t *cycles) {
    return copy(m, NPK_ACC_READ, addr, buf, NULL, len, beat_bytes, done, fault_addr, cycles);
}

npk_bus_resp npk_bus_copy_out(npk_mem *m, uint64_t addr, const void *buf, size_t len, size_t beat_bytes,
                              size_t *done, uint64_t *fault_addr, uint64_t *cycles) {
    return copy(m, NPK_ACC_WRITE, addr, NULL, buf, len, beat_bytes, done, fault_addr, cycles);
}

int npk_mem_add_fault(npk_mem *m, const npk_fault *f) {
    if (!f || !(f->access & NPK_ACC_ANY) || f->resp == NPK_BUS_OK)
        return npk_err(NPK_EINVAL, "fault rule needs an access kind and an error or hang response");
    fault_rule *n = realloc(m->faults, (m->nfaults + 1) * sizeof *n);
    if (!n) return npk_err(NPK_ENOMEM, "out of memory");
    m->faults = n;
    memset(&n[m->nfaults], 0, sizeof *n);
    n[m->nfaults++].f = *f;
    m->map_gen++;
    return 0;
}

void npk_mem_clear_faults(npk_mem *m) {
    free(m->faults);
    m->faults = NULL;
    m->nfaults = 0;
    m->map_gen++;
}

static int parse_u64(const char **s, uint64_t *v) {
    char *end;
    if (!**s || **s == '-' || **s == '+' || **s == ' ') return -1; /* strtoull would negate "-1" */
    errno = 0;
    unsigned long long x = strtoull(*s, &end, 0);
    if (end == *s || errno == ERANGE) return -1;
    *v = x;
    *s = end;
    return 0;
}

/* 1, and *s past it, when *s starts with prefix. */
static int take(const char **s, const char *prefix) {
    size_t n = strlen(prefix);
    if (strncmp(*s, prefix, n)) return 0;
    *s += n;
    return 1;
}

int npk_fault_parse(const char *text, npk_fault *f) {
    memset(f, 0, sizeof *f);
    f->beat = -1;
    f->resp = NPK_BUS_ERROR;
    const char *s = text;
    if (take(&s, "read@")) f->access = NPK_ACC_READ;
    else if (take(&s, "write@")) f->access = NPK_ACC_WRITE;
    else if (take(&s, "any@")) f->access = NPK_ACC_ANY;
    else return npk_err(NPK_EINVAL, "fault '%s': expected read@, write@ or any@ADDR", text);
    if (!strncmp(s, "*", 1) && (s[1] == 0 || s[1] == '#' || s[1] == '=')) {
        s++; /* any address */
    } else {
        if (parse_u64(&s, &f->addr)) return npk_err(NPK_EINVAL, "fault '%s': bad address", text);
        f->len = 1;
        if (*s == '+') {
            s++;
            if (parse_u64(&s, &f->len) || !f->len) return npk_err(NPK_EINVAL, "fault '%s': bad length", text);
            if (f->addr + (f->len - 1) < f->addr)
                return npk_err(NPK_EINVAL, "fault '%s': the range is out of range (it wraps past 2^64)", text);
        }
    }
    while (*s) {
        uint64_t v;
        if (*s == '#') {
            s++;
            if (parse_u64(&s, &v)) return npk_err(NPK_EINVAL, "fault '%s': bad beat number", text);
            f->beat = (int64_t)v;
        } else if (*s == '*') {
            s++;
            if (parse_u64(&s, &v) || v > UINT32_MAX)
                return npk_err(NPK_EINVAL, "fault '%s': bad count (expected 1..%u; omit *COUNT for every match)", text, UINT32_MAX);
            if (!v) return npk_err(NPK_EINVAL, "fault '%s': count 0 is out of range (expected 1..%u; omit *COUNT for every match)", text, UINT32_MAX);
            f->count = (uint32_t)v;
        } else if (take(&s, "=error")) {
            f->resp = NPK_BUS_ERROR;
        } else if (take(&s, "=hang")) {
            f->resp = NPK_BUS_HANG;
        } else {
            return npk_err(NPK_EINVAL, "fault '%s': unexpected '%s'", text, s);
        }
    }
    return 0;
}

int npk_mem_map_parse(npk_mem *m, const char *text) {
    const char *s = text;
    uint64_t base, size, lat = 0;
    if (parse_u64(&s, &base) || *s++ != '+' || parse_u64(&s, &size))
        return npk_err(NPK_EINVAL, "memory region '%s': expected BASE+SIZE[@LATENCY][:NAME]", text);
    if (*s == '@') {
        s++;
        if (parse_u64(&s, &lat) || lat > 1000000)
            return npk_err(NPK_EINVAL, "memory region '%s': bad latency", text);
    }
    const char *name = "ram";
    if (*s == ':') name = s + 1;
    else if (*s) return npk_err(NPK_EINVAL, "memory region '%s': unexpected '%s'", text, s);
    return npk_mem_map(m, base, size, (uint32_t)lat, name);
}

void npk_mem_get_stats(const npk_mem *m, npk_mem_stats *s) { *s = m->stats; }
void npk_mem_reset_stats(npk_mem *m) { memset(&m->stats, 0, sizeof m->stats); }

void npk_mem_set_watch(npk_mem *m, npk_mem_watch_fn fn, void *ctx) {
    m->watch = fn;
    m->watch_ctx = ctx;
    m->map_gen++;
}

int npk_mem_attach_host(npk_mem *m, uint64_t base, uint64_t size, void *host) {
    if (!size || !host || base + (size - 1) < base || size > SIZE_MAX)
        return npk_err(NPK_EINVAL, "bad host extent 0x%" PRIx64 "+0x%" PRIx64, base, size);
    if (!mapped(m, base, (size_t)size))
        return npk_err(NPK_EBUS, "host extent 0x%" PRIx64 "+0x%" PRIx64 " is outside the memory map", base, size);
    for (size_t e = 0; e < m->next_n; e++)
        if (base < m->ext[e].base + m->ext[e].size && m->ext[e].base < base + size)
            return npk_err(NPK_EINVAL, "host extent 0x%" PRIx64 "+0x%" PRIx64 " overlaps another", base, size);
    extent *ne = realloc(m->ext, (m->next_n + 1) * sizeof *ne);
    if (!ne) return npk_err(NPK_ENOMEM, "out of memory");
    m->ext = ne;
    m->ext[m->next_n++] = (extent){base, size, host, 1};
    m->map_gen++;
    touch(m, base, size);
    return 0;
}

void npk_mem_unmap_host(npk_mem *m) {
    size_t k = 0;
    for (size_t e = 0; e < m->next_n; e++)
        if (!m->ext[e].foreign) m->ext[k++] = m->ext[e];
        else touch(m, m->ext[e].base, m->ext[e].size);
    m->next_n = k;
    m->map_gen++;
    free(m->regions);
    m->regions = NULL;
    m->nregions = 0;
}

void npk_mem_detach_host(npk_mem *m, uint64_t base) {
    for (size_t e = 0; e < m->next_n; e++)
        if (m->ext[e].foreign && m->ext[e].base == base) {
            touch(m, base, m->ext[e].size);
            m->ext[e] = m->ext[--m->next_n];
            m->map_gen++;
            return;
        }
}

int npk_mem_has_map(const npk_mem *m) { return m->nregions != 0; }

void npk_mem_touch(npk_mem *m, uint64_t addr, uint64_t len) { touch(m, addr, len); }
