/* SPDX-License-Identifier: MIT */
/*
 * The virtual platform's device side (docs/vp.md): a device of the device
 * table served as a conventional PCI function to a hypervisor (QEMU) in
 * another process.
 *
 * Two parts, so that another transport (vfio-user) can be added beside the
 * first one without touching the function:
 *
 *   npk_vp_fn         the PCI function over one machine (npk_sim): config
 *                     space (IDs, class, command/status, BAR0, INTx pin),
 *                     BAR0 decoding into the register window, INTx through
 *                     an irqfd/resample pair, guest RAM as the device's DMA
 *                     memory (behind npk_mem, so fault rules still apply),
 *                     reset through the register table, and the device's
 *                     clock (run before reads, in the background while busy).
 *   npk_vp_transport  one connection speaking a wire protocol; it decodes
 *                     messages into calls on the function. The one transport
 *                     today is QEMU 7.2's multi-process protocol
 *                     (x-pci-proxy-dev, npk_vp_mpqemu_new).
 *
 * npk_vp_serve runs connections until their peers go away, stepping busy
 * devices between messages.
 */
#ifndef NPUKIT_SIM_VP_H
#define NPUKIT_SIM_VP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npukit/sim.h"

/* Config space (conventional PCI, 256 bytes). */
#define NPK_VP_CFG_SIZE 256u
/* Dword 0x40 (vendor-specific): the device instance's clock in kHz. */
#define NPK_VP_CFG_CLOCK_KHZ 0x40u
/* BAR2: the platform's clock window (docs/vp.md "The clock window"). */
#define NPK_VP_CLK_SIZE 4096u
#define NPK_VP_CLK_ID 0x00u        /* RO 0x4b435056 ("VPCK") */
#define NPK_VP_CLK_VERSION 0x04u   /* RO 1 */
#define NPK_VP_CLK_MODE 0x08u      /* RW bit 0: 0 free-running (settle on reads), 1 stepped */
#define NPK_VP_CLK_STEP_LO 0x10u   /* W: the low word of the next step */
#define NPK_VP_CLK_STEP_HI 0x14u   /* W: must be 0; the write steps the device by STEP_LO cycles */
#define NPK_VP_CLK_CYCLES_LO 0x18u /* RO: device cycles since creation (a read latches CYCLES_HI) */
#define NPK_VP_CLK_CYCLES_HI 0x1cu
#define NPK_VP_CLK_STATUS 0x20u    /* RO bit 0: the device is idle; bit 1: stalled on a hung bus beat */
#define NPK_VP_CLK_KHZ 0x24u       /* RO the device clock in kHz */
#define NPK_VP_CLK_ID_VALUE 0x4b435056u
/* Default bound of the run before a register read, in ms of host time. */
#define NPK_VP_SETTLE_MS 200u
/* Default quiet time after which a busy device runs without a register read, in ms. */
#define NPK_VP_QUIET_MS 50u

typedef struct npk_vp_cfg {
    uint32_t settle_ms;          /* run the busy device before a BAR read for at most this long (0: default) */
    FILE *log;                   /* one line per message ("> ..." received, "< ..." sent), or NULL */
    volatile sig_atomic_t *stop; /* serve returns 0 soon after *stop becomes non-zero */
    uint32_t quiet_ms;           /* a busy device runs on its own after this long without a message (0: default) */
} npk_vp_cfg;

typedef struct npk_vp_fn npk_vp_fn;

/* A function over `sim` (not owned; it must outlive the function). name
 * labels messages ("v0"). Installs the machine's IRQ callback. NULL with
 * npk_errmsg() when the device has no PCI ID. */
npk_vp_fn *npk_vp_fn_new(npk_sim *sim, const npk_vp_cfg *cfg);
void npk_vp_fn_free(npk_vp_fn *f);
npk_sim *npk_vp_fn_sim(npk_vp_fn *f);
/* BAR0's size: the register window rounded up to a power of two, >= 4 KiB. */
uint32_t npk_vp_bar_size(const npk_vp_fn *f);

/* Config space access (len 1, 2 or 4, inside the 256 bytes, naturally
 * aligned). A bad access reads all ones and writes nothing; it returns
 * -NPK_EINVAL with the reason (the caller reports it; the function is unharmed). */
int npk_vp_cfg_read(npk_vp_fn *f, uint32_t addr, int len, uint32_t *val);
int npk_vp_cfg_write(npk_vp_fn *f, uint32_t addr, uint32_t val, int len);
/* BAR0 (the register window) or BAR2 (the clock window) access at the
 * absolute guest-physical address addr (size 1, 2, 4 or 8). Reads first run the busy device (settle). Accesses the window does not
 * take are guest errors of the device (read 0 / ignored); an address outside
 * BAR0 or while memory decoding is off returns -NPK_EINVAL (reads: all ones). */
int npk_vp_bar_read(npk_vp_fn *f, uint64_t addr, unsigned size, uint64_t *val);
int npk_vp_bar_write(npk_vp_fn *f, uint64_t addr, uint64_t val, unsigned size);
/* Guest RAM: n regions, region i = [gpa[i], gpa[i]+size[i]) is the file fd[i]
 * at offset off[i] (mapped shared). Replaces the previous map; the fds are
 * the caller's (not closed). */
int npk_vp_set_ram(npk_vp_fn *f, size_t n, const uint64_t *gpa, const uint64_t *size, const int *fd,
                   const int64_t *off);
/* INTx: irqfd is written (uint64 1) to raise the line; resample is readable
 * after the guest's EOI. Takes ownership of both fds (-1: none). */
void npk_vp_set_intx(npk_vp_fn *f, int irqfd, int resample);
/* Function-level reset: the device through its register table (npk_sim_reset),
 * the command register, BAR0 and the interrupt line register; INTx deasserted. */
void npk_vp_reset(npk_vp_fn *f);
/* The INTx level now (OR of the device's IRQ lines), and the resample fd (-1). */
int npk_vp_intx(const npk_vp_fn *f);
int npk_vp_resample_fd(const npk_vp_fn *f);
/* The resample fd is readable: consume it and re-raise INTx if still pending. */
void npk_vp_resampled(npk_vp_fn *f);
/* 1 while the device has work (not idle). */
int npk_vp_busy(npk_vp_fn *f);
/* 1 while the device has work and runs on its own (free-running mode). */
int npk_vp_autorun(npk_vp_fn *f);
/* Run the busy device for at most max_us microseconds of host time (or until idle). */
void npk_vp_run(npk_vp_fn *f, uint64_t max_us);
/* Messages and accesses counted so far. */
typedef struct npk_vp_stats {
    uint64_t messages, cfg_reads, cfg_writes, bar_reads, bar_writes, ram_maps, resets, errors;
} npk_vp_stats;
const npk_vp_stats *npk_vp_fn_stats(const npk_vp_fn *f);

/* ---- transports ------------------------------------------------------------ */
typedef struct npk_vp_transport npk_vp_transport;
struct npk_vp_transport {
    const char *kind;          /* "mpqemu" */
    npk_vp_fn *fn;             /* the function it drives */
    int fd;                    /* pollable for input */
    /* Read and handle one message. 0: handled; 1: the peer closed the
     * connection between messages; negative: a protocol or transport error
     * (npk_errmsg names the message and the cause; the connection is unusable). */
    int (*handle)(npk_vp_transport *t);
    void (*free)(npk_vp_transport *t);
};

/* QEMU 7.2's multi-process protocol (x-pci-proxy-dev) on the connected
 * stream socket fd (owned). */
npk_vp_transport *npk_vp_mpqemu_new(npk_vp_fn *fn, int fd, const npk_vp_cfg *cfg);

/* Serve n connections until every peer has closed (0), the stop flag is set
 * (0), or a connection fails (its negative status; the message names the
 * device). */
int npk_vp_serve(npk_vp_transport **t, size_t n, const npk_vp_cfg *cfg);

/* Wire format of the multi-process protocol (docs/vp.md), for clients and tests. */
enum {
    NPK_MPQEMU_SYNC_SYSMEM = 0,
    NPK_MPQEMU_RET = 1,
    NPK_MPQEMU_PCI_CFGWRITE = 2,
    NPK_MPQEMU_PCI_CFGREAD = 3,
    NPK_MPQEMU_BAR_WRITE = 4,
    NPK_MPQEMU_BAR_READ = 5,
    NPK_MPQEMU_SET_IRQFD = 6,
    NPK_MPQEMU_DEVICE_RESET = 7,
    NPK_MPQEMU_CMD_MAX
};
#define NPK_MPQEMU_HDR 16u      /* int32 cmd, 4 padding, uint64 size */
#define NPK_MPQEMU_MAX_FDS 8
#define NPK_MPQEMU_SYSMEM_SIZE 192u /* uint64 gpa[8], size[8], int64 offset[8] */
#define NPK_MPQEMU_CFG_SIZE 12u     /* uint32 addr, uint32 val, int32 len */
#define NPK_MPQEMU_BAR_SIZE 24u     /* uint64 addr, uint64 val, uint32 size, bool memory, 3 padding */

#endif
