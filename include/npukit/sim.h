// SPDX-License-Identifier: MIT
/*
 * npukit simulated platform: guest memory with fault injection, the device
 * interface every model implements, register tables, and the machine that
 * ties one device to its memory and clock.
 *
 * Time: every device advances in cycles of its own clock: the instance's
 * npk_dev.hz, set from the device option clock_mhz (NPK_OPT_CLOCK_MHZ), whose
 * default is the class's npk_dev_class.hz; nanoseconds = cycles * 1e9 / hz.
 */
#ifndef NPUKIT_SIM_H
#define NPUKIT_SIM_H

#include "npukit/energy.h"
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- guest memory ---------------------------------------------------------
 * Sparse 64-bit physical memory. Pages (4 KiB) are allocated on first write;
 * untouched memory reads 0. With no region declared every address is memory.
 * Once a region is declared (npk_mem_map) only declared regions exist and a
 * device access elsewhere is a bus error; host (peek/poke) access elsewhere
 * fails with -NPK_EBUS.
 */
typedef struct npk_mem npk_mem;

typedef enum npk_bus_resp {
    NPK_BUS_OK = 0,    /* beat completed */
    NPK_BUS_ERROR = 1, /* slave/decode error response */
    NPK_BUS_HANG = 2   /* no response ever arrives */
} npk_bus_resp;

typedef enum npk_access { NPK_ACC_READ = 1, NPK_ACC_WRITE = 2, NPK_ACC_ANY = 3 } npk_access;

npk_mem *npk_mem_new(void);
void npk_mem_free(npk_mem *m);
/* Drop every page (memory reads 0 again); regions and faults stay. */
void npk_mem_clear(npk_mem *m);
/* Declare a region [base, base+size) with an access latency in cycles added
 * to every device beat that targets it. name is copied. */
int npk_mem_map(npk_mem *m, uint64_t base, uint64_t size, uint32_t latency, const char *name);
/* Latency of beats when no memory map is declared (default 0). */
void npk_mem_set_latency(npk_mem *m, uint32_t cycles);
/* Guest-memory cap: the host memory its pages may take, in bytes (rounded
 * down to whole 4 KiB pages). A write needing pages beyond the cap fails with
 * -NPK_ENOMEM naming the cap and changes nothing; a device beat beyond it is
 * a bus error. Default NPK_MEM_DEFAULT_LIMIT; 0 = no cap. */
#define NPK_MEM_DEFAULT_LIMIT (4ull << 30)
void npk_mem_set_limit(npk_mem *m, uint64_t bytes);
uint64_t npk_mem_limit(const npk_mem *m);
/* Parse a byte count: a number (strtoull base 0) with an optional binary
 * suffix K, M, G or T (KiB...TiB). Returns 0, or -NPK_EINVAL on a malformed
 * or overflowing value (with npk_errmsg set). */
int npk_parse_size(const char *text, uint64_t *out);
/* Bytes of host memory the guest pages take now. */
uint64_t npk_mem_used(const npk_mem *m);
/* Host-side (CPU) access: no faults, no latency, not counted. A failed poke
 * or fill (outside the map, over the cap, out of host memory) writes nothing. */
int npk_mem_peek(const npk_mem *m, uint64_t addr, void *buf, size_t len);
int npk_mem_poke(npk_mem *m, uint64_t addr, const void *buf, size_t len);
int npk_mem_fill(npk_mem *m, uint64_t addr, uint8_t value, size_t len);

/* Device-side access: one bus beat of len bytes. Checks the map and the
 * fault rules; *latency (may be NULL) receives the extra wait cycles.
 * On NPK_BUS_ERROR / NPK_BUS_HANG nothing is transferred. */
npk_bus_resp npk_bus_read(npk_mem *m, uint64_t addr, void *buf, size_t len, uint32_t *latency);
npk_bus_resp npk_bus_write(npk_mem *m, uint64_t addr, const void *buf, size_t len, uint32_t *latency);
/* A multi-beat device transfer: `len` bytes in beats of `beat` bytes, stopping
 * at the first failing beat. Returns its response; *done_bytes (may be NULL)
 * gets the bytes moved before the failure, *fault_addr that beat's address,
 * *cycles the summed latency of the beats issued. buf may be NULL: the beats
 * are checked, counted and timed, but no data moves (timing-only models).
 * A transfer whose range wraps past 2^64 (npukit/range.h) issues no beat: it
 * returns NPK_BUS_ERROR with nothing moved and *fault_addr = addr. */
npk_bus_resp npk_bus_copy_in(npk_mem *m, uint64_t addr, void *buf, size_t len, size_t beat,
                             size_t *done_bytes, uint64_t *fault_addr, uint64_t *cycles);
npk_bus_resp npk_bus_copy_out(npk_mem *m, uint64_t addr, const void *buf, size_t len, size_t beat,
                              size_t *done_bytes, uint64_t *fault_addr, uint64_t *cycles);

/* The fast path of a multi-beat transfer: when no fault rule or watcher must
 * see the beats and [addr, addr+len) lies in one region (anywhere, short of
 * wrapping, when no map is declared), every beat of `beat` bytes succeeds
 * with the same latency. Then move the bytes (buf NULL: none), count the
 * beats in the statistics exactly as one npk_bus_read/npk_bus_write per beat
 * would, set *latency (may be NULL) to that per-beat latency and return 1.
 * Otherwise return 0 with nothing moved or counted (also for a write the host
 * cannot hold): the caller then goes beat by beat. */
int npk_bus_burst(npk_mem *m, npk_access acc, uint64_t addr, void *rbuf, const void *wbuf, size_t len, size_t beat,
                  uint32_t *latency);
/* 1 (and *latency, may be NULL) when npk_bus_burst over [addr, addr+len)
 * would take its fast path for a read; a write also needs the host to hold
 * the bytes. Nothing is moved or counted. */
int npk_bus_plain(const npk_mem *m, uint64_t addr, size_t len, uint32_t *latency);

/* Fault injection. A rule matches device beats of the given access kind that
 * overlap [addr, addr+len) (len 0 = every address). With beat >= 0 it fires
 * only on the beat-th matching beat (0-based) counted from when it was added;
 * with beat < 0 on every matching beat. count limits how many times it fires
 * (0 = unlimited). */
typedef struct npk_fault {
    npk_access access;
    uint64_t addr, len;
    int64_t beat;
    npk_bus_resp resp;
    uint32_t count;
} npk_fault;
int npk_mem_add_fault(npk_mem *m, const npk_fault *f);
void npk_mem_clear_faults(npk_mem *m);
/* Parse "read|write|any@ADDR[+LEN][#BEAT][=error|hang][*COUNT]" into a rule. */
int npk_fault_parse(const char *text, npk_fault *f);
/* Parse "BASE+SIZE[@LATENCY][:NAME]" and declare the region. */
int npk_mem_map_parse(npk_mem *m, const char *text);

/* Zero copy for in-process ports (issue 15 point 3): make [base, base+size)
 * one host-contiguous buffer (its contents kept; counted against the cap).
 * Extents never overlap (an overlapping request fails and the range stays
 * paged) and live until npk_mem_clear/npk_mem_free. npk_mem_direct: the host
 * pointer of [addr, addr+len) if it lies in one extent, else NULL.
 * npk_bus_direct: the same for a device's strided DMA of rows x rowbytes
 * (stride apart), accounting its beats in the statistics as
 * npk_bus_copy_in/out would; NULL (nothing accounted) when a fault rule or
 * watcher must see the beats, a region check fails or the range is not in
 * one extent: the caller then copies. */
int npk_mem_attach(npk_mem *m, uint64_t base, uint64_t size);
void *npk_mem_direct(npk_mem *m, uint64_t addr, uint64_t len);
void *npk_bus_direct(npk_mem *m, npk_access acc, uint64_t base, uint64_t stride, uint64_t rows, uint64_t rowbytes,
                     size_t beat_bytes);
/* A device's view of the plain, host-backed guest memory around addr, for
 * many small transfers in one step (the host cannot change the map, the
 * extents, the fault rules or the watcher while a device steps): 1 when no
 * fault rule or watcher must see beats and addr lies in an extent (and, with
 * a memory map, in a region); then [*base, *base + *size) is the part of that
 * extent inside that region (the whole extent without a map), *data its host
 * pointer and *latency its per-beat latency. A transfer inside the window is
 * exactly what npk_bus_direct of it would give: the caller moves the bytes
 * through the pointer and accounts the beats with npk_bus_count (statistics,
 * and for a write its write generation). 0: nothing is set. */
int npk_bus_window(const npk_mem *m, uint64_t addr, uint64_t *base, uint64_t *size, uint8_t **data,
                   uint32_t *latency);
void npk_bus_count(npk_mem *m, npk_access acc, uint64_t addr, uint64_t bytes, uint64_t beats);
/* A number that changes whenever what npk_bus_window, npk_bus_plain or
 * npk_bus_direct answer may change (the memory map and its latencies, the
 * extents, the fault rules, the watcher): a caller may keep a window while it
 * stays the same. */
uint64_t npk_mem_map_gen(const npk_mem *m);

/* Memory owned by someone else (a virtual platform's guest RAM, shared with
 * the hypervisor): [base, base+size) becomes the host buffer `host` (size
 * bytes, not copied, not freed, not counted against the cap); the range must
 * lie in the memory map and overlap no extent. npk_mem_unmap_host drops every
 * such extent and every declared region (the caller then declares the new
 * map); npk_mem_touch records that [addr, addr+len) may have been written
 * behind the layer's back (another agent writing the host buffer), so data
 * derived from it is taken anew (npk_mem_wgen). */
int npk_mem_attach_host(npk_mem *m, uint64_t base, uint64_t size, void *host);
void npk_mem_unmap_host(npk_mem *m);
/* Drop the one npk_mem_attach_host extent at base (its owner takes the memory
 * back; the range reads as it did before the attach). 1 when a memory map is
 * declared (npk_mem_map). */
void npk_mem_detach_host(npk_mem *m, uint64_t base);
int npk_mem_has_map(const npk_mem *m);
void npk_mem_touch(npk_mem *m, uint64_t addr, uint64_t len);

/* Write generation of [addr, addr+len): a number that changes whenever a byte
 * of the range may have changed since it was last asked (pokes, fills, device
 * writes, npk_mem_clear; npk_mem_direct and a writing npk_bus_direct count
 * as writes of their range, so a host writing through such a pointer takes
 * it anew before each burst). Conservative: writes near the range (same
 * 64 KiB block modulo 1 GiB) change it too. Devices use it to keep data
 * derived from guest memory (the pccx weight cache). */
uint64_t npk_mem_wgen(const npk_mem *m, uint64_t addr, uint64_t len);

/* Device beat statistics since creation (or npk_mem_reset_stats). */
typedef struct npk_mem_stats {
    uint64_t read_beats, write_beats, read_bytes, write_bytes, errors, hangs;
} npk_mem_stats;
void npk_mem_get_stats(const npk_mem *m, npk_mem_stats *s);
void npk_mem_reset_stats(npk_mem *m);
/* Observe every device beat (for invariant checks such as guard pages). */
typedef void (*npk_mem_watch_fn)(void *ctx, npk_access acc, uint64_t addr, size_t len, npk_bus_resp r);
void npk_mem_set_watch(npk_mem *m, npk_mem_watch_fn fn, void *ctx);

/* ---- register tables --------------------------------------------------------
 * A device declares its registers once, as data (include/npukit/<dev>_regs.def,
 * see npukit/regfield.h), and the model expands that list into a table indexed
 * by word offset: entry i describes offset 4*i; entries with name == NULL are
 * holes. A write computes
 *   next = (val & ~(ro | w1c | rsv)) | (old & ro) | (old & w1c & ~val)
 * (reserved bits read 0; writing 1 to a W1C bit clears it), then
 * then pre_write (if any) returns the value actually stored, and post_write
 * (if any) runs after the store with the old value and the raw value written.
 * A read returns the stored value, or read(stored) when the register has a
 * read hook (read hooks have no side effects: peek uses them); post_read runs
 * after a bus read only (side effects of reading, e.g. an auto-incrementing
 * window). Reset stores every reset value.
 *
 * Guest errors (QEMU's LOG_GUEST_ERROR): a bus access to an offset with no
 * register, a write to read-only bits (to a read-only register: any value
 * but the one it reads; elsewhere: a 1 to a read-only bit that reads 0), a
 * write setting reserved bits, and an access of a width the
 * window does not take are counted per device, traced on the device's
 * "guest errors" track and, when a log is set, printed one line each.
 */
typedef struct npk_dev npk_dev;
typedef struct npk_reg npk_reg;
struct npk_reg {
    uint32_t off;
    const char *name;
    uint32_t reset;
    uint32_t ro;   /* read-only bits: writes leave them; changing them is a guest error */
    uint32_t w1c;  /* write-1-to-clear bits */
    uint32_t rsv;  /* reserved bits: read 0, writes ignored; setting them is a guest error */
    uint32_t (*read)(npk_dev *d, const npk_reg *r, uint32_t stored);
    void (*post_read)(npk_dev *d, const npk_reg *r, uint32_t val);
    uint32_t (*pre_write)(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val, uint32_t next);
    void (*post_write)(npk_dev *d, const npk_reg *r, uint32_t old, uint32_t val);
};

typedef struct npk_regfile {
    const npk_reg *tab; /* slots entries, indexed by word offset */
    size_t slots;       /* table entries (<= span / 4) */
    size_t n;           /* registers declared (named entries) */
    uint32_t *val;      /* stored values, parallel to tab */
    uint32_t span;      /* bytes decoded (a power of two); offsets alias modulo span */
} npk_regfile;

/* tab has `slots` entries; every named entry i must have off == 4*i. */
int npk_regfile_init(npk_regfile *rf, const npk_reg *tab, size_t slots, uint32_t span);
void npk_regfile_fini(npk_regfile *rf);
/* Every register to its table reset value. */
void npk_regfile_reset(npk_regfile *rf);
/* Device reset through the table (QEMU's register_reset): every register to
 * its reset value, then every POST_WRITE hook runs as if the reset value had
 * been written (old = the value before), so state derived from registers
 * (IRQ lines, pointers, window lanes) is recomputed by the code that keeps it
 * on a write. A model clears its non-register state first, then calls this. */
void npk_regfile_reset_dev(npk_regfile *rf, npk_dev *d);
/* Table entry at a byte offset (after aliasing) or NULL. */
const npk_reg *npk_regfile_find(const npk_regfile *rf, uint32_t off);
/* Iterate the declared registers in offset order: returns the next entry
 * after *i (start with *i = 0) or NULL at the end. */
const npk_reg *npk_regfile_next(const npk_regfile *rf, size_t *i);
/* Stored value of an entry (no hook). */
uint32_t *npk_regfile_slot(npk_regfile *rf, uint32_t off);
/* Bus access. An unknown offset reads 0 and ignores writes (a guest error). */
uint32_t npk_regfile_read(npk_regfile *rf, npk_dev *d, uint32_t off);
void npk_regfile_write(npk_regfile *rf, npk_dev *d, uint32_t off, uint32_t val);
/* What a read would return, without the read's side effects (post_read) and
 * without recording guest errors: register dumps and qtest npu_regs. */
uint32_t npk_regfile_peek(const npk_regfile *rf, npk_dev *d, uint32_t off);

typedef enum npk_guest_error {
    NPK_GE_UNKNOWN_OFFSET = 0, /* no register at the offset */
    NPK_GE_READ_ONLY = 1,      /* a write changing read-only bits */
    NPK_GE_RESERVED = 2,       /* a write setting reserved bits */
    NPK_GE_WIDTH = 3,          /* an access size/alignment the window does not take */
    NPK_GE_COUNT
} npk_guest_error;
/* Short name of a kind ("unknown-offset", "read-only", "reserved", "width"). */
const char *npk_guest_error_name(npk_guest_error kind);
/* Record one guest error of device d (NULL: ignored) at register offset off. */
void npk_dev_guest_error(npk_dev *d, npk_guest_error kind, uint32_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- devices ---------------------------------------------------------------- */
#define NPK_MAX_IRQ 4

typedef struct npk_dev_ops {
    uint32_t (*read32)(npk_dev *d, uint32_t off);
    void (*write32)(npk_dev *d, uint32_t off, uint32_t val);
    /* Optional 64-bit register write (pccx INSTR); NULL = two 32-bit writes. */
    void (*write64)(npk_dev *d, uint32_t off, uint64_t val);
    /* Advance the device by `cycles` clock cycles. */
    void (*step)(npk_dev *d, uint64_t cycles);
    /* 1 when no internal activity would change state as time passes. */
    int (*idle)(npk_dev *d);
    /* Power-on reset: every register to its reset value. */
    void (*reset)(npk_dev *d);
    void (*destroy)(npk_dev *d);
    /* Optional: 1 when the device is busy but waits for an answer that never
     * comes (a hung bus beat); it is idle() too, yet not done. NULL = never. */
    int (*stalled)(npk_dev *d);
    /* Optional: cycles from now in which the device can neither go idle nor
     * move an interrupt line (>= 1; shell, v0 and pccx answer the cycles to
     * their next state change, e1 also the engine cycles before an op's
     * last one): run loops that stop when the device goes idle step that
     * many at once instead of cycle by cycle (an idle device may answer
     * anything >= 1). NULL = 1 (step by step). */
    uint64_t (*quiet)(npk_dev *d);
    /* Optional (NULL: the device has no energy model): the dynamic energy the
     * device spent since creation (its counted accesses priced with
     * include/npukit/energy.h; leak_pj 0: leakage is area x modeled time,
     * priced by whoever knows the time), its area and technology node. Not
     * reset by reset(); never depends on timing_only. docs/energy.md. */
    void (*energy)(npk_dev *d, npk_energy *e, npk_area *a, uint32_t *tech_nm);
} npk_dev_ops;

typedef void (*npk_irq_fn)(void *ctx, int line, int level);

struct npk_dev {
    const npk_dev_ops *ops;
    const struct npk_dev_class *cls;
    npk_mem *mem;          /* the device's bus for DMA (not owned) */
    uint64_t cycles;       /* cycles elapsed since creation */
    uint64_t hz;           /* this instance's clock (option clock_mhz); 0 = the class's hz */
    int irq_level[NPK_MAX_IRQ];
    npk_irq_fn irq_cb;
    void *irq_ctx;
    npk_regfile *regs;     /* the register table, for dumps and reset checks */
    struct npk_trace *trace; /* optional trace sink (NULL = off) */
    uint64_t guest_errors[NPK_GE_COUNT]; /* guest errors since creation, per kind */
    FILE *guest_log;       /* one line per guest error, or NULL */
    /* The serving process's stop flag (npu qtest, npu vp: set by SIGTERM or
     * SIGINT), or NULL. A model whose one action (an instruction or
     * descriptor) can take long on the host looks at it between blocks of
     * that work (npk_dev_stopping) and, once it is set, abandons the action
     * as if one of its bus beats had never answered (the device's documented
     * hung state; what the action wrote so far stays). The server then shuts
     * down; nothing else sets the flag (issue 32 point 3). */
    volatile sig_atomic_t *stop;
    /* Optional, with stop: called at the same places (at most every few
     * tens of milliseconds of host work, often more), so that the server
     * answers other clients during one long action (npu qtest's "FAIL busy"). */
    void (*poll)(void *ctx);
    void *poll_ctx;
};

/* 1 when the serving process asked the device to stop its work (npk_dev.stop);
 * runs the server's poll hook first. */
static inline int npk_dev_stopping(const npk_dev *d) {
    if (d->poll) d->poll(d->poll_ctx);
    return d->stop && *d->stop;
}

/* Set an IRQ line level; calls irq_cb when it changes. */
void npk_dev_set_irq(npk_dev *d, int line, int level);
/* The instance's clock in Hz (npk_dev.hz, else its class's). */
uint64_t npk_dev_hz(const npk_dev *d);

/* The clock option every device takes, one row of its option table: a
 * uint32_t field of the model's option struct, default DEF (text, MHz, the
 * class's clock). The model sets npk_dev.hz = value * 1e6. */
#define NPK_OPT_CLOCK_MHZ(type, field, def)                                                            \
    {"clock_mhz", NULL, NPK_OPT_U32, offsetof(type, field), def, 1, 100000, 0, 0, 0, "MHZ",            \
     "device clock in MHz: modeled time = cycles / clock (cycle counts stay, except where a\n"         \
     "parameter is given per second)", 0}

/* The timing-only option every device takes (an int field): the model skips
 * its functional compute (results in guest memory are zeros) and does
 * everything else as before (descriptor decode and checks, every bus beat and
 * its faults, registers, IRQs, counters), so the cycles are exactly those of
 * the functional run (docs/sweep.md "Timing-only runs"). */
#define NPK_OPT_TIMING_ONLY(type, field)                                                               \
    {"timing_only", NULL, NPK_OPT_BOOL, offsetof(type, field), "0", 0, 1, 0, 0, 0, NULL,               \
     "1: skip the functional compute (outputs are zeros), same cycles and counters", 0}

typedef struct npk_dev_class {
    const char *name;      /* "e1" */
    const char *summary;   /* one line */
    uint64_t mmio_base;    /* physical base of the register window */
    uint32_t mmio_size;    /* window size in bytes */
    uint64_t hz;           /* device clock */
    int n_irq;             /* IRQ lines */
    /* The typed option table (include/npukit/opt.h): names, types, defaults,
     * ranges and help. `npu devices` prints it; create() parses with it. */
    const struct npk_opt *opts;
    size_t n_opts;
    /* opts: comma-separated key=value list (may be NULL). On failure returns
     * NULL with the reason in npk_errmsg(). */
    npk_dev *(*create)(npk_mem *mem, const char *opts);
    /* Optional: the checks beyond the table's (a value naming a preset), so
     * that npk_dev_check_opts refuses everything create() would. 0 or NPK_EINVAL. */
    int (*check_opts)(const char *opts);
    /* PCI device ID of the device's function on the virtual platform (vendor
     * NPK_PCI_VENDOR, class 0x1200; docs/vp.md); 0 = not offered as PCI. */
    uint16_t pci_device;
} npk_dev_class;

/* PCI vendor ID of every npukit function on the virtual platform (docs/vp.md). */
#define NPK_PCI_VENDOR 0x1234
/* PCI class code (base class, subclass, prog-if): a processing accelerator. */
#define NPK_PCI_CLASS 0x120000

/* The device table (include/npukit/devices.def lists the devices once; this is
 * its model-level row per device: npk_e1_class, npk_v0_class, ...). */
#define NPK_DEVICE(d) extern const npk_dev_class npk_##d##_class;
#include "npukit/devices.def"
const npk_dev_class *npk_dev_class_find(const char *name);
const npk_dev_class *const *npk_dev_classes(size_t *n);
/* "e1, v0, shell, pccx": the device names for messages and help. */
const char *npk_dev_names(void);
/* Check an option string against a class's table without creating a model
 * (0, or NPK_EINVAL naming the bad option). */
int npk_dev_check_opts(const npk_dev_class *c, const char *opts);
/* Unknown device: NPK_EINVAL with "unknown device 'NAME' (known: ...)". */
int npk_dev_unknown(const char *name);

/* ---- the machine: one device, its memory and its clock ---------------------- */
typedef struct npk_sim npk_sim;

npk_sim *npk_sim_new(const char *device, const char *opts);
/* The same for a device class that is not in the registry (tests define tiny
 * devices of their own). cls must outlive the machine. */
npk_sim *npk_sim_new_class(const npk_dev_class *cls, const char *opts);
void npk_sim_free(npk_sim *s);
npk_mem *npk_sim_mem(npk_sim *s);
npk_dev *npk_sim_dev(npk_sim *s);
const npk_dev_class *npk_sim_class(const npk_sim *s);
/* CPU access at a physical address: the MMIO window goes to the device
 * (size 4 or 8 only), anything else to guest memory. */
int npk_sim_read(npk_sim *s, uint64_t addr, unsigned size, uint64_t *val);
int npk_sim_write(npk_sim *s, uint64_t addr, unsigned size, uint64_t val);
void npk_sim_step(npk_sim *s, uint64_t cycles);
/* Cycles the device may be stepped at once before its state can change
 * (its quiet op, else 1; at least 1). */
uint64_t npk_dev_quiet(npk_dev *d);
/* Step until the device is idle or max_cycles passed; returns cycles run
 * (the exact cycle the device went idle: quiet spans are stepped at once). */
uint64_t npk_sim_run_until_idle(npk_sim *s, uint64_t max_cycles);
uint64_t npk_sim_cycles(const npk_sim *s);
/* The device instance's clock in Hz (its clock_mhz option). */
uint64_t npk_sim_hz(const npk_sim *s);
/* Simulated time in ns (cycles converted with the device clock). */
uint64_t npk_sim_ns(const npk_sim *s);
int npk_sim_irq(const npk_sim *s, int line);
void npk_sim_reset(npk_sim *s);
void npk_sim_set_irq_cb(npk_sim *s, npk_irq_fn fn, void *ctx);
/* Print every register of the table as "NAME OFFSET VALUE" lines (peeked:
 * the dump changes no device state). */
void npk_sim_dump_regs(npk_sim *s, FILE *f);
/* Guest errors of the device: one kind, or all kinds with kind < 0. */
uint64_t npk_sim_guest_errors(const npk_sim *s, int kind);
/* Print one line per guest error on f (NULL = stop). */
void npk_sim_set_guest_log(npk_sim *s, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
