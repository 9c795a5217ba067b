/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * npukit_accel.h - user-space interface of the npukit kernel driver
 * (kmod/npukit.c): one character device /dev/npuN per PCI function.
 *
 * The kernel owns the function's registers, its interrupt line, its reset
 * and the DMA buffers; user space never maps registers. Every ioctl
 * returns 0 or -1 with errno set; an unknown ioctl number fails with
 * ENOTTY, a bad argument with EINVAL (or the errno named below) and is
 * never logged by the kernel.
 *
 * Typical use:
 *   fd = open("/dev/npu0", O_RDWR);             (one open at a time: EBUSY)
 *   ioctl(fd, NPUKIT_IOCTL_GET_INFO, &info);    device kind, IDs, clock
 *   ioctl(fd, NPUKIT_IOCTL_BO_CREATE, &bo);     DMA buffer: handle, bus address
 *   p = mmap(0, bo.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, bo.mmap_offset);
 *   ... write a descriptor ring / instruction stream and tensors into p ...
 *   ioctl(fd, NPUKIT_IOCTL_SUBMIT, &job);       the kernel rings the doorbell
 *   ioctl(fd, NPUKIT_IOCTL_WAIT, &wait);        ok, error + device code, or timeout
 *   ioctl(fd, NPUKIT_IOCTL_COUNTERS, &cnt);     cycle and performance counters
 *   ioctl(fd, NPUKIT_IOCTL_CLOCK, &clk);        the device's own clock (`npu vp`)
 *
 * All structures have explicit padding and the same layout on 32- and
 * 64-bit user space; reserved and padding fields must be zero (EINVAL).
 */
#ifndef NPUKIT_ACCEL_H
#define NPUKIT_ACCEL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define NPUKIT_API_VERSION 2

/* PCI identity of npukit functions (served by `npu vp`). */
#define NPUKIT_PCI_VENDOR 0x1234
#define NPUKIT_PCI_DEVICE_E1 0x4e01
#define NPUKIT_PCI_DEVICE_V0 0x4e02
#define NPUKIT_PCI_DEVICE_SHELL 0x4e03
#define NPUKIT_PCI_DEVICE_PCCX 0x4e04

/* Device kinds (npukit's device table). */
#define NPUKIT_KIND_E1 1
#define NPUKIT_KIND_V0 2
#define NPUKIT_KIND_SHELL 3
#define NPUKIT_KIND_PCCX 4

/**
 * struct npukit_info - NPUKIT_IOCTL_GET_INFO (out)
 * @api_version: NPUKIT_API_VERSION of the running driver
 * @kind: NPUKIT_KIND_*
 * @vendor: PCI vendor ID
 * @device: PCI device ID
 * @id: the device's identification register (v0 ID, shell VERSION,
 *      pccx ID; 0 for e1, which has none)
 * @caps: the device's capability register (v0 CAPS, shell CAPABILITIES,
 *        pccx CAP_LANES; 0 for e1)
 * @mmio_size: length of the register window (BAR 0) in bytes
 * @clock_hz: device clock in Hz (config dword 0x40 in kHz when the
 *            function provides it, else the device class's clock)
 * @max_bo_size: largest buffer object NPUKIT_IOCTL_BO_CREATE accepts
 * @irq_mode: 1 when completion is interrupt driven, 0 when polled
 *            (module parameter irq; polling is the mode under TCG)
 * @flags: NPUKIT_INFO_CLOCK when the function has a virtual platform's
 *         clock window (see NPUKIT_IOCTL_CLOCK)
 * @carveout_base: bus address of the driver's carve-out (module parameters
 *                 carveout_base and carveout_size: guest RAM the kernel does
 *                 not use, e.g. above its mem= limit), 0 when there is none
 * @carveout_size: its size in bytes (0: none); see NPUKIT_BO_CARVEOUT
 * @reserved: zero
 */
struct npukit_info {
	__u32 api_version;
	__u32 kind;
	__u32 vendor;
	__u32 device;
	__u32 id;
	__u32 caps;
	__u64 mmio_size;
	__u64 clock_hz;
	__u64 max_bo_size;
	__u32 irq_mode;
	__u32 flags;
	__u64 carveout_base;
	__u64 carveout_size;
	__u64 reserved[2];
};

/* struct npukit_info flags */
#define NPUKIT_INFO_CLOCK 0x1	/* a clock window (`npu vp` BAR 2): NPUKIT_IOCTL_CLOCK works */

/* struct npukit_bo_create flags */
#define NPUKIT_BO_CARVEOUT 0x1	/* the whole carve-out at its fixed address (size 0 or its size) */

/**
 * struct npukit_bo_create - NPUKIT_IOCTL_BO_CREATE
 * @size: (in) bytes, 1 .. max_bo_size; rounded up to whole pages (out)
 * @flags: (in) 0, or NPUKIT_BO_CARVEOUT: the buffer is the driver's
 *         carve-out, physically contiguous at carveout_base (a compiled
 *         package's fixed guest addresses, more than max_bo_size); one
 *         such buffer per device at a time (EBUSY), ENODEV without one
 * @handle: (out) buffer handle, > 0, private to this open file
 * @dma_addr: (out) the address the device uses for byte 0 (guest physical
 *            without an IOMMU); physically contiguous, page aligned
 * @mmap_offset: (out) pass to mmap() to map the buffer (MAP_SHARED)
 *
 * Buffers come from dma_alloc_coherent() (or are the carve-out) and are zeroed. They live until
 * NPUKIT_IOCTL_BO_FREE and the last mapping are gone, or the file closes.
 */
struct npukit_bo_create {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 dma_addr;
	__u64 mmap_offset;
};

/**
 * struct npukit_bo_free - NPUKIT_IOCTL_BO_FREE (in)
 * @handle: a handle of this file (ENOENT otherwise)
 * @pad: zero
 */
struct npukit_bo_free {
	__u32 handle;
	__u32 pad;
};

/* struct npukit_reg flags */
#define NPUKIT_REG_WRITE 0x1

/**
 * struct npukit_reg - NPUKIT_IOCTL_REG: one 32-bit register access that
 * the kernel performs for a user-space driver that programs the device
 * itself (npukit's runtime drivers over the kmd port)
 * @offset: (in) byte offset in the register window, 4-byte aligned and
 *          inside mmio_size (EINVAL otherwise)
 * @value: (in) the value to write, or (out) the value read
 * @flags: (in) NPUKIT_REG_WRITE or 0 (read)
 * @pad: zero
 */
struct npukit_reg {
	__u32 offset;
	__u32 value;
	__u32 flags;
	__u32 pad;
};

/* struct npukit_submit formats: one per device kind (EINVAL on another). */
#define NPUKIT_JOB_E1_RING 1	/* e1 descriptor ring of 8 x 16 bytes */
#define NPUKIT_JOB_V0_DESC 2	/* v0 descriptor batch on a ring of 64-byte descriptors */
#define NPUKIT_JOB_SHELL_RING 3	/* shell command-queue batch (byte ring) */
#define NPUKIT_JOB_PCCX_STREAM 4	/* pccx stream of 64-bit instructions */

/* struct npukit_submit flags */
#define NPUKIT_SUBMIT_FALLBACK 0x1	/* v0: CTRL.cpu_fallback_select (see WAIT_FALLBACK) */

/**
 * struct npukit_submit - NPUKIT_IOCTL_SUBMIT: start a job; at most one job
 * runs per device (EBUSY while one has not been waited for)
 * @format: NPUKIT_JOB_* matching the device kind
 * @handle: buffer object holding the ring or the instruction stream
 * @offset: byte offset of the ring (e1 16-byte, v0 64-byte, shell 64-byte
 *          aligned) or of the first instruction (pccx, 8-byte aligned)
 *          inside the buffer
 * @count: descriptors (e1 1..7, v0 1..ring_len-1), bytes of commands
 *         (shell, a multiple of 64, < ring_len) or instructions (pccx,
 *         >= 1) to run; the whole ring/stream must lie inside the buffer
 * @ring_len: v0: ring entries (power of two, 2..256); shell: ring bytes
 *            (power of two, 128..2^20); e1, pccx: zero
 * @first: ring index (e1, v0) or byte offset (shell) of the first
 *         descriptor: where the device's consumer index stands; pccx: zero
 * @flags: NPUKIT_SUBMIT_*
 * @pad: zero
 * @window_addr: v0: TENSOR_MEM window base; must lie with window_size
 *               inside one buffer object of this file; others: zero
 * @window_size: v0: TENSOR_MEM window length; others: zero
 * @seqno: (out) job number, counting from 1 per open file
 */
struct npukit_submit {
	__u32 format;
	__u32 handle;
	__u64 offset;
	__u32 count;
	__u32 ring_len;
	__u32 first;
	__u32 flags;
	__u64 window_addr;
	__u64 window_size;
	__u64 seqno;
};

/* struct npukit_wait results */
#define NPUKIT_WAIT_OK 0	/* the device finished every descriptor */
#define NPUKIT_WAIT_ERROR 1	/* the device latched an error: dev_code */
#define NPUKIT_WAIT_TIMEOUT 2	/* no completion in time: device soft-reset */
#define NPUKIT_WAIT_FALLBACK 3	/* v0: descriptor index needs the CPU */
#define NPUKIT_WAIT_BUSY 4	/* NPUKIT_WAIT_POLL: the job still runs */

/* struct npukit_wait flags */
#define NPUKIT_WAIT_POLL 0x1	/* check once, never sleep nor reset: OK, ERROR, FALLBACK or BUSY */

/**
 * struct npukit_wait - NPUKIT_IOCTL_WAIT: wait for the running job
 * @timeout_ns: (in) how long to wait, 1 ns .. 60 s
 * @result: (out) NPUKIT_WAIT_*
 * @dev_code: (out) the device's error code for NPUKIT_WAIT_ERROR (v0
 *            STATUS.err_code, shell ERROR_CODE, pccx ERR_CODE, e1
 *            DESC_STATUS), else 0
 * @index: (out) v0: the descriptor index of an error or fallback
 *         (ERR_DESC_INDEX); pccx: the faulting instruction (ERR_INDEX)
 * @recovered: (out) 1 when the kernel soft-reset the device (after a
 *             timeout or a bus error); the device is usable again
 * @fault_addr: (out) the device's fault address register, if any
 * @desc: (out) NPUKIT_WAIT_FALLBACK: the 64-byte descriptor at index
 * @flags: (in) NPUKIT_WAIT_POLL or 0
 * @progress: (out) where the device stands in the job: v0 and e1 the ring
 *            index it consumes next (DESC_TAIL), shell the command queue's
 *            head (CQ_HEAD), pccx the instructions the kernel has put in
 *            the queue so far (of count)
 * @eta: (out) NPUKIT_WAIT_BUSY on pccx: the device's IDLE_ETA (cycles
 *       until idle if nothing more is queued); else 0
 *
 * The job stays the device's running job after NPUKIT_WAIT_FALLBACK and
 * NPUKIT_WAIT_BUSY: for FALLBACK the user-space delegate executes desc,
 * then NPUKIT_IOCTL_FALLBACK_DONE and waits again. Every other result ends
 * the job. ENOENT: no job runs. Without an interrupt (polling mode) the
 * kernel checks the device with a growing interval from 20 us to 1 ms; on
 * a function whose clock is stepped (NPUKIT_IOCTL_CLOCK) it advances the
 * device itself instead, by 64 cycles doubling to 65536 between checks.
 * With NPUKIT_WAIT_POLL, timeout_ns must be 0: the caller owns time (on a
 * stepped clock it steps the device between polls, as a simulator's
 * polling driver does, so the device's cycles equal its own port's).
 */
struct npukit_wait {
	__s64 timeout_ns;
	__u32 result;
	__u32 dev_code;
	__u32 index;
	__u32 recovered;
	__u64 fault_addr;
	__u8 desc[64];
	__u32 flags;
	__u32 progress;
	__u64 eta;
};

/**
 * struct npukit_fallback_done - NPUKIT_IOCTL_FALLBACK_DONE (in), v0 only:
 * the user-space delegate executed descriptor @index; the kernel clears
 * IRQ_STATUS.unsupported_op and STATUS.error and writes DESC_TAIL past
 * it (v0's CPU-fallback contract). EINVAL unless the last wait returned
 * NPUKIT_WAIT_FALLBACK for this index.
 * @index: the index NPUKIT_WAIT_FALLBACK reported
 * @pad: zero
 */
struct npukit_fallback_done {
	__u32 index;
	__u32 pad;
};

#define NPUKIT_MAX_COUNTERS 16

/**
 * struct npukit_counters - NPUKIT_IOCTL_COUNTERS (out)
 * @cycles: the device's busy-cycle counter (v0 PERF_CYCLES, e1
 *          PERF_CYCLES, pccx CYCLES_HI:LO; shell: the sum of its
 *          PERF_*_CYCLES engines is not a cycle count, so 0)
 * @count: valid entries of @values
 * @pad: zero
 * @values: the device's performance registers in register-window order
 *          (v0 0x040..0x04C then 0x080..0x0AC, e1 0x50..0x7C, shell
 *          0x060..0x07C, pccx 0x70..0xC0), one 32-bit register each
 */
struct npukit_counters {
	__u64 cycles;
	__u32 count;
	__u32 pad;
	__u64 values[NPUKIT_MAX_COUNTERS];
};

/**
 * struct npukit_irq - NPUKIT_IOCTL_IRQ (out): interrupts since the last call
 * @count: interrupts the kernel took for this device since the last call
 *         (always 0 in polling mode)
 * @status: the device's interrupt status bits they carried, ORed
 */
struct npukit_irq {
	__u32 count;
	__u32 status;
};

/* struct npukit_clock flags */
#define NPUKIT_CLOCK_SET_MODE 0x1	/* set the mode to @mode first */
#define NPUKIT_CLOCK_STEP 0x2	/* then advance a stepped device by @step cycles */

/* struct npukit_clock modes */
#define NPUKIT_CLOCK_FREE 0	/* the platform advances a busy device on its own */
#define NPUKIT_CLOCK_STEPPED 1	/* the device advances only through NPUKIT_CLOCK_STEP */

/**
 * struct npukit_clock - NPUKIT_IOCTL_CLOCK: the device's own clock, on a
 * function that has a virtual platform's clock window (`npu vp` BAR 2,
 * NPUKIT_INFO_CLOCK; ENODEV otherwise)
 * @flags: (in) NPUKIT_CLOCK_SET_MODE, NPUKIT_CLOCK_STEP or both
 * @mode: (in with SET_MODE) NPUKIT_CLOCK_FREE or NPUKIT_CLOCK_STEPPED;
 *        (out) the mode
 * @step: (in with STEP) cycles, 1 .. 2^32 - 1; EINVAL unless the mode is
 *        NPUKIT_CLOCK_STEPPED
 * @cycles: (out) device cycles since the function was created (after the
 *          step)
 * @status: (out) bit 0: the device is idle; bit 1: it is stalled on a
 *          hung bus beat
 * @clock_khz: (out) the device clock in kHz
 * @reserved: zero
 *
 * The mode returns to NPUKIT_CLOCK_FREE when the file is closed.
 */
struct npukit_clock {
	__u32 flags;
	__u32 mode;
	__u64 step;
	__u64 cycles;
	__u32 status;
	__u32 clock_khz;
	__u64 reserved[2];
};

#define NPUKIT_IOCTL_BASE 0xB9
#define NPUKIT_IOCTL_GET_INFO _IOR(NPUKIT_IOCTL_BASE, 0x00, struct npukit_info)
#define NPUKIT_IOCTL_BO_CREATE _IOWR(NPUKIT_IOCTL_BASE, 0x01, struct npukit_bo_create)
#define NPUKIT_IOCTL_BO_FREE _IOW(NPUKIT_IOCTL_BASE, 0x02, struct npukit_bo_free)
#define NPUKIT_IOCTL_REG _IOWR(NPUKIT_IOCTL_BASE, 0x03, struct npukit_reg)
#define NPUKIT_IOCTL_SUBMIT _IOWR(NPUKIT_IOCTL_BASE, 0x04, struct npukit_submit)
#define NPUKIT_IOCTL_WAIT _IOWR(NPUKIT_IOCTL_BASE, 0x05, struct npukit_wait)
#define NPUKIT_IOCTL_FALLBACK_DONE _IOW(NPUKIT_IOCTL_BASE, 0x06, struct npukit_fallback_done)
#define NPUKIT_IOCTL_COUNTERS _IOR(NPUKIT_IOCTL_BASE, 0x07, struct npukit_counters)
#define NPUKIT_IOCTL_RESET _IO(NPUKIT_IOCTL_BASE, 0x08)
#define NPUKIT_IOCTL_IRQ _IOR(NPUKIT_IOCTL_BASE, 0x09, struct npukit_irq)
#define NPUKIT_IOCTL_CLOCK _IOWR(NPUKIT_IOCTL_BASE, 0x0a, struct npukit_clock)

#endif /* NPUKIT_ACCEL_H */
