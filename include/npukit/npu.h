// SPDX-License-Identifier: MIT
/*
 * npukit runtime API: the port layer (status codes and error messages are
 * include/npukit/error.h, included here).
 *
 * Every driver in npukit talks to its device through an npk_port. A port
 * is one row of the port table (npk_port_infos, `npu ports`), today one of:
 *
 *   "sim"                 the in-process device model (default)
 *   "qtest:PATH"          an external model speaking QEMU's qtest text
 *                         protocol on the Unix socket PATH (for example
 *                         `npu qtest --device e1 --socket PATH`)
 *   "qtest-spawn:NPU"     start `NPU qtest --device D` as a child process and
 *                         talk to it over pipes (NPU is the npu binary path)
 *   "uio:/dev/uioN"       real hardware: map 0 of the UIO device is the MMIO
 *                         window; guest memory is the physically contiguous
 *                         buffer given with ",mem=PATH,phys=ADDR,size=BYTES"
 *   "kmd:/dev/npuN"       a PCI function driven by npukit's kernel driver
 *                         (kmod/npukit.ko, docs/kmod.md): registers through
 *                         its ioctls, guest memory one DMA buffer (",mem=BYTES")
 *
 * All functions return NPK_OK (0) or a negative npk_status; the message that
 * names the cause is available from npk_errmsg() on the same thread.
 */
#ifndef NPUKIT_NPU_H
#define NPUKIT_NPU_H

#include "npukit/energy.h"
#include <stddef.h>
#include <stdint.h>

#include "npukit/error.h" /* status codes, npk_err, npk_errmsg */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- port layer ---------------------------------------------------------- */

typedef struct npk_port npk_port;
struct npk_sim; /* include/npukit/sim.h */

/* Open a port to a device ("e1", "v0", "shell", "pccx"). spec NULL means "sim".
 * opts are device/model options for the in-process model (NULL for defaults). */
int npk_port_open(npk_port **out, const char *spec, const char *device, const char *opts);

/* The port table: one row per kind of port, in the order `npu ports` lists them
 * (src/rt/ports.def). name is what npk_port_kind returns, syntax the specs the
 * row takes ("qtest:PATH, qtest-spawn:NPU"), help one line saying what it is. */
typedef struct npk_port_info {
    const char *name, *syntax, *help;
} npk_port_info;
const npk_port_info *const *npk_port_infos(size_t *n);
/* Every row's syntax: "sim, sim:mem-limit=BYTES, qtest:PATH, ... or uio:/dev/uioN". */
const char *npk_port_specs(void);
void npk_port_close(npk_port *p);
/* Check a port spec's form without opening it (the CLI refuses a bad --port
 * before any work): 0, or NPK_EINVAL naming the expected forms. */
int npk_port_check_spec(const char *spec);

/* 32-bit register access at a byte offset inside the device's MMIO window. */
int npk_port_read32(npk_port *p, uint32_t off, uint32_t *val);
int npk_port_write32(npk_port *p, uint32_t off, uint32_t val);
/* 64-bit register write (low word first on ports without 64-bit access). */
int npk_port_write64(npk_port *p, uint32_t off, uint64_t val);
/* Guest memory, as the CPU sees it (never faulted, no device latency). */
int npk_port_mem_read(npk_port *p, uint64_t addr, void *buf, size_t len);
int npk_port_mem_write(npk_port *p, uint64_t addr, const void *buf, size_t len);
/* Let `cycles` device cycles pass (the sim steps, qtest sends clock_step,
 * uio and kmd sleep the equivalent time). */
int npk_port_wait(npk_port *p, uint64_t cycles);
/* Level of the device's interrupt line `line` (0 = main). */
int npk_port_irq(npk_port *p, int line);
/* Device reset: every register to its reset value and the device idle
 * (the model's power-on reset; guest memory is kept). sim: in process;
 * qtest: npukit's `npu_reset` command (a QEMU without it refuses,
 * NPK_EUNSUPPORTED); uio: NPK_EUNSUPPORTED. */
int npk_port_reset(npk_port *p);
/* Device cycles elapsed since open, and the device clock in Hz. */
uint64_t npk_port_cycles(const npk_port *p);
uint64_t npk_port_hz(const npk_port *p);
/* Number of MMIO register accesses made through this port. */
uint64_t npk_port_mmio_count(const npk_port *p);
/* The device's energy model (docs/energy.md): dynamic energy since open
 * (leak_pj 0), area and technology node. 0, or -NPK_EUNSUPPORTED when the port
 * cannot see it (a device without an energy model, a port to hardware or
 * to another process). */
int npk_port_energy(npk_port *p, npk_energy *e, npk_area *a, uint32_t *tech_nm);
/* Device name and the port kind ("sim", "qtest", "uio", "kmd"). */
const char *npk_port_device(const npk_port *p);
const char *npk_port_kind(const npk_port *p);
/* The in-process model behind a "sim" port (NULL for other ports); tests
 * use it for fault injection and to inspect the model. */
struct npk_sim *npk_port_sim(npk_port *p);

/* Guest memory allocator for buffers the device reads or writes
 * (descriptor rings, tensors). Returns guest physical addresses. */
int npk_port_alloc(npk_port *p, uint64_t size, uint64_t align, uint64_t *addr);
void npk_port_free(npk_port *p, uint64_t addr);
/* Zero copy on the in-process port: the host pointer of guest memory
 * [addr, addr+len) when it lies in one host-contiguous allocation (every
 * npk_port_alloc of >= 4 KiB on the sim port is one), else NULL (other
 * ports, or use npk_port_mem_read/write). Writes through it are guest
 * memory writes; the device must not be running on the range. */
void *npk_port_direct(npk_port *p, uint64_t addr, uint64_t len);
/* Zero copy of a host buffer (the in-process port): guest memory at *addr
 * (64-byte aligned, size bytes) becomes the caller's [host, host + size), so
 * that the device reads and writes that buffer in place, until
 * npk_port_free(p, *addr) (or npk_port_free_all); the caller keeps the buffer
 * alive until then and does not touch it while the device runs on it.
 * -NPK_EUNSUPPORTED when the port cannot (ports to other processes or
 * hardware, a model with a declared memory map, whose timing depends on the
 * address): the caller then copies through npk_port_alloc. */
int npk_port_map_host(npk_port *p, void *host, uint64_t size, uint64_t *addr);
/* Reserve [addr, addr + size) at a fixed address (a compiled package's
 * arena or descriptors) so that later allocations avoid it; fails when it
 * overlaps an allocation. Release it with npk_port_free(p, addr). A range
 * outside the allocator's arena needs no reservation and succeeds. */
int npk_port_reserve(npk_port *p, uint64_t addr, uint64_t size);
/* Free every allocation at once. */
void npk_port_free_all(npk_port *p);

#ifdef __cplusplus
}
#endif
#endif
