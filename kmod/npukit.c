// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * npukit.ko - Linux driver for npukit's NPU devices served as PCI functions
 * (e1, v0, shell, pccx; `npu vp`). One misc character device /dev/npuN per
 * function; the interface is include/npukit/uapi/npukit_accel.h and docs/kmod.md.
 *
 * The driver owns the registers (user space reaches them only through
 * ioctls), the interrupt line, resets and the DMA buffers. Completion is
 * polled by default (irq=0): under QEMU TCG the proxy device drops INTx.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <asm/unaligned.h>

#include "npukit_accel.h"

static bool irq;
module_param(irq, bool, 0444);
MODULE_PARM_DESC(irq, "interrupt-driven completion (default 0: poll; INTx is dropped under QEMU TCG)");

static ulong carveout_base;
module_param(carveout_base, ulong, 0444);
MODULE_PARM_DESC(carveout_base, "bus address of RAM the kernel does not use (above mem=), for fixed-address buffers");
static ulong carveout_size;
module_param(carveout_size, ulong, 0444);
MODULE_PARM_DESC(carveout_size, "size of that carve-out in bytes (0: none)");

#define NPK_MAX_BO_SIZE (4UL << 20)	/* dma_alloc_coherent without CMA: order 10 */
#define NPK_MAX_BOS 4096
#define NPK_MAX_TIMEOUT_NS (60LL * NSEC_PER_SEC)

/* v0 registers (e1-npu-v0-microarch.md) */
#define V0_ID 0x000
#define V0_CAPS 0x004
#define V0_CTRL 0x008
#define V0_STATUS 0x00c
#define V0_IRQ_STATUS 0x010
#define V0_IRQ_MASK 0x014
#define V0_DESC_BASE_LO 0x018
#define V0_DESC_BASE_HI 0x01c
#define V0_DESC_RING_LEN 0x020
#define V0_DESC_TAIL 0x028
#define V0_DESC_DOORBELL 0x02c
#define V0_TMEM_BASE_LO 0x030
#define V0_TMEM_BASE_HI 0x034
#define V0_TMEM_LEN 0x038
#define V0_ERR_DESC_INDEX 0x050
#define V0_ERR_FAULT_LO 0x054
#define V0_ERR_FAULT_HI 0x058
#define V0_COMPLETION_TAG 0x05c
#define V0_CTRL_ENABLE BIT(0)
#define V0_CTRL_FLUSH BIT(1)
#define V0_CTRL_IRQ_ENABLE BIT(2)
#define V0_CTRL_FALLBACK BIT(3)
#define V0_ST_BUSY BIT(0)
#define V0_ST_ERROR BIT(4)
#define V0_IRQ_DONE BIT(0)
#define V0_IRQ_ERROR BIT(1)
#define V0_IRQ_UNSUPPORTED BIT(2)
#define V0_IRQ_BUS_ERROR BIT(3)
#define V0_IRQ_OVERFLOW BIT(4)
#define V0_IRQ_ALL 0x1f
#define V0_ID_VALUE 0x4e505530
#define V0_DESC_BYTES 64
#define V0_RING_MAX 256

/* shell registers (npu-shell-contract.md) */
#define SH_VERSION 0x000
#define SH_CAPS 0x004
#define SH_STATUS 0x008
#define SH_CONTROL 0x00c
#define SH_IRQ_STATUS 0x010
#define SH_IRQ_ENABLE 0x014
#define SH_CQ_BASE_LO 0x020
#define SH_CQ_BASE_HI 0x024
#define SH_CQ_SIZE 0x028
#define SH_CQ_HEAD 0x02c
#define SH_CQ_TAIL 0x030
#define SH_DOORBELL 0x040
#define SH_ERROR_CODE 0x044
#define SH_ERROR_ADDR_LO 0x048
#define SH_ERROR_ADDR_HI 0x04c
#define SH_ST_IDLE BIT(0)
#define SH_ST_ERROR BIT(2)
#define SH_CTL_RESET BIT(0)
#define SH_IRQ_CQ_EMPTY BIT(0)
#define SH_IRQ_EVENT BIT(1)
#define SH_IRQ_ERROR BIT(2)
#define SH_DESC_BYTES 32

/* pccx registers (pccx-isa.md Part 3.3 and npukit's extension) */
#define PX_INSTR_LO 0x00
#define PX_INSTR_HI 0x04
#define PX_STATUS 0x08
#define PX_ID 0x10
#define PX_ERR_CODE 0x18
#define PX_ERR_INDEX 0x1c
#define PX_ERR_ADDR_LO 0x28
#define PX_ERR_ADDR_HI 0x2c
#define PX_IRQ_EN 0x30
#define PX_QUEUE_COUNT 0x34
#define PX_QUEUE_CAP 0x38
#define PX_IDLE_ETA 0x3c
#define PX_CYCLES_LO 0x78
#define PX_CYCLES_HI 0x7c
#define PX_CTRL 0xc4
#define PX_CAP_LANES 0xcc
#define PX_ST_BUSY BIT(0)
#define PX_ST_DONE BIT(1)
#define PX_ST_ERROR BIT(2)
#define PX_ST_HUNG BIT(3)
#define PX_CTRL_RESET BIT(1)
#define PX_ID_VALUE 0x70636378

/* the virtual platform's clock window, BAR 2 of an `npu vp` function (docs/vp.md) */
#define CLK_ID 0x00
#define CLK_MODE 0x08
#define CLK_STEP_LO 0x10
#define CLK_STEP_HI 0x14
#define CLK_CYCLES_LO 0x18
#define CLK_CYCLES_HI 0x1c
#define CLK_STATUS 0x20
#define CLK_KHZ 0x24
#define CLK_ID_VALUE 0x4b435056
#define CLK_WINDOW 0x28

/* e1 registers (e1-npu.md) */
#define E1_CTRL_STATUS 0x0c
#define E1_CMD_PARAM 0x30
#define E1_DESC_BASE 0x40
#define E1_DESC_HEAD 0x44
#define E1_DESC_TAIL 0x48
#define E1_DESC_STATUS 0x4c
#define E1_PERF_CYCLES 0x50
#define E1_CTRL_START BIT(0)
#define E1_CTRL_CLEAR BIT(1)
#define E1_ST_BUSY BIT(0)
#define E1_ST_ERROR BIT(2)
#define E1_CMD_DESC BIT(0)
#define E1_RING_ENTRIES 8
#define E1_DESC_BYTES 16

struct npk_dev;

struct npk_bo {
	struct kref ref;
	struct npk_dev *ndev;
	bool carveout;		/* memremap()ed carve-out, not dma_alloc_coherent */
	u32 handle;
	size_t size;
	void *vaddr;
	dma_addr_t dma;
};

struct npk_file {
	struct npk_dev *ndev;
	struct idr bos;		/* handle -> npk_bo, under ndev->lock */
	u64 seqno;
};

struct npk_job {
	bool active;
	struct npk_bo *bo;	/* holds a reference while active */
	u64 offset;
	u32 count;
	u32 ring_len;
	u32 first;
	u32 end;		/* v0, e1: ring index after the batch; shell: byte offset */
	u32 pushed;		/* pccx: instructions written to the queue */
	bool fb_pending;	/* v0: WAIT returned FALLBACK for fb_index */
	u32 fb_index;
	bool seen_valid;	/* v0: the check read DESC_TAIL (seen): a poll's progress */
	u32 seen;
};

struct npk_kind {
	const char *name;
	u32 kind;
	u32 format;
	u64 hz;
	unsigned int dma_bits;
	u32 id_reg;		/* identification register, with caps_reg; ~0: none */
	u32 caps_reg;
	u32 perf_lo[2];		/* performance register ranges, inclusive */
	u32 perf_hi[2];
	int (*start)(struct npk_dev *nd, struct npukit_submit *s);
	/* 1: the job ended, or stopped for the CPU (v0 fallback) */
	int (*check)(struct npk_dev *nd, struct npukit_wait *w);
	void (*reset)(struct npk_dev *nd);
	u32 (*irq_ack)(struct npk_dev *nd);
	void (*irq_arm)(struct npk_dev *nd);
	u64 (*cycles)(struct npk_dev *nd);
	/* where the device stands in the job (struct npukit_wait.progress) */
	u32 (*progress)(struct npk_dev *nd);
};

struct npk_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *clk;	/* the clock window (BAR 2), or NULL */
	bool stepped;		/* its mode: the device advances only through steps */
	resource_size_t mmio_size;
	const struct npk_kind *kind;
	struct miscdevice misc;
	char name[16];
	int minor_id;
	u64 clock_hz;
	struct mutex lock;	/* registers, job, open state */
	bool opened;
	bool use_irq;
	wait_queue_head_t wq;
	spinlock_t irq_lock;	/* irq_* below */
	u32 irq_count;
	u32 irq_bits;
	bool irq_event;
	struct npk_job job;
	u64 job_gen;		/* counts submits: a wait notices a job replaced under it */
	u64 jobs;		/* jobs started since probe (sysfs "jobs") */
	atomic_t bo_live;	/* buffer objects not yet freed (sysfs "buffers") */
	bool carveout_used;	/* the carve-out is a live buffer object (under lock) */
	/* v0: the ring configuration the device holds */
	bool v0_programmed;
	u64 v0_ring;
	u32 v0_len;
	u64 v0_win;
	u64 v0_win_len;
	u32 v0_ctrl;
	/* shell: the ring the device holds */
	bool sh_programmed;
	u64 sh_ring;
	u32 sh_size;
};

static DEFINE_IDA(npk_ida);

static u32 rd(struct npk_dev *nd, u32 off)
{
	return ioread32(nd->regs + off);
}

static void wr(struct npk_dev *nd, u32 off, u32 val)
{
	iowrite32(val, nd->regs + off);
}

/* ---- buffer objects ---------------------------------------------------- */

static void npk_bo_release(struct kref *ref)
{
	struct npk_bo *bo = container_of(ref, struct npk_bo, ref);

	if (bo->carveout) {
		memunmap(bo->vaddr);
		bo->ndev->carveout_used = false;
	} else {
		dma_free_coherent(&bo->ndev->pdev->dev, bo->size, bo->vaddr, bo->dma);
	}
	atomic_dec(&bo->ndev->bo_live);
	kfree(bo);
}

static void npk_bo_put(struct npk_bo *bo)
{
	kref_put(&bo->ref, npk_bo_release);
}

/* The buffer object of this file holding [addr, addr + len). */
static struct npk_bo *npk_bo_find_range(struct npk_file *nf, u64 addr, u64 len)
{
	struct npk_bo *bo;
	int id;

	idr_for_each_entry(&nf->bos, bo, id) {
		u64 rel = addr - bo->dma;

		if (addr >= bo->dma && rel <= bo->size && len <= bo->size - rel)
			return bo;
	}
	return NULL;
}

static int npk_bo_create(struct npk_file *nf, struct npukit_bo_create *a)
{
	struct npk_dev *nd = nf->ndev;
	struct npk_bo *bo;
	int id;

	if (a->flags & ~NPUKIT_BO_CARVEOUT)
		return -EINVAL;
	if (a->flags & NPUKIT_BO_CARVEOUT) {
		if (!carveout_size)
			return -ENODEV;
		if (a->size && a->size != carveout_size)
			return -EINVAL;
		if (nd->carveout_used)
			return -EBUSY;
	} else if (!a->size || a->size > NPK_MAX_BO_SIZE) {
		return -EINVAL;
	}
	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	kref_init(&bo->ref);
	bo->ndev = nd;
	if (a->flags & NPUKIT_BO_CARVEOUT) {
		bo->carveout = true;
		bo->size = carveout_size;
		bo->dma = carveout_base;
		bo->vaddr = memremap(carveout_base, carveout_size, MEMREMAP_WB);
		if (bo->vaddr)
			nd->carveout_used = true;
	} else {
		bo->size = PAGE_ALIGN(a->size);
		bo->vaddr = dma_alloc_coherent(&nd->pdev->dev, bo->size, &bo->dma,
					       GFP_KERNEL | __GFP_NOWARN);
	}
	if (!bo->vaddr) {
		kfree(bo);
		return -ENOMEM;
	}
	atomic_inc(&nd->bo_live);
	memset(bo->vaddr, 0, bo->size);
	id = idr_alloc(&nf->bos, bo, 1, NPK_MAX_BOS, GFP_KERNEL);
	if (id < 0) {
		npk_bo_put(bo);
		return id == -ENOSPC ? -ENOSPC : id;
	}
	bo->handle = id;
	a->size = bo->size;
	a->handle = id;
	a->dma_addr = bo->dma;
	a->mmap_offset = (u64)id << 32;
	return 0;
}

static int npk_bo_free(struct npk_file *nf, struct npukit_bo_free *a)
{
	struct npk_bo *bo;

	if (a->pad)
		return -EINVAL;
	bo = idr_find(&nf->bos, a->handle);
	if (!bo)
		return -ENOENT;
	idr_remove(&nf->bos, a->handle);
	npk_bo_put(bo);
	return 0;
}

static void npk_vm_open(struct vm_area_struct *vma)
{
	struct npk_bo *bo = vma->vm_private_data;

	kref_get(&bo->ref);
}

static void npk_vm_close(struct vm_area_struct *vma)
{
	npk_bo_put(vma->vm_private_data);
}

static const struct vm_operations_struct npk_vm_ops = {
	.open = npk_vm_open,
	.close = npk_vm_close,
};

static int npk_mmap(struct file *f, struct vm_area_struct *vma)
{
	struct npk_file *nf = f->private_data;
	struct npk_dev *nd = nf->ndev;
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct npk_bo *bo;
	int ret;

	if (off & 0xffffffffULL)
		return -EINVAL;
	mutex_lock(&nd->lock);
	bo = idr_find(&nf->bos, (unsigned long)(off >> 32));
	if (!bo || len > bo->size) {
		mutex_unlock(&nd->lock);
		return -EINVAL;
	}
	vma->vm_pgoff = 0;
	if (bo->carveout)
		ret = remap_pfn_range(vma, vma->vm_start, PHYS_PFN(bo->dma), len,
				      vma->vm_page_prot);
	else
		ret = dma_mmap_coherent(&nd->pdev->dev, vma, bo->vaddr, bo->dma, len);
	if (!ret) {
		vma->vm_private_data = bo;
		vma->vm_ops = &npk_vm_ops;
		kref_get(&bo->ref);
	}
	mutex_unlock(&nd->lock);
	return ret;
}

/* ---- v0 ------------------------------------------------------------------ */

/* Program the ring registers; flush first (drop the ring, DESC_TAIL = 0) or not (idle). */
static void v0_program(struct npk_dev *nd, bool flush)
{
	if (flush)
		wr(nd, V0_CTRL, V0_CTRL_FLUSH);
	wr(nd, V0_DESC_BASE_LO, lower_32_bits(nd->v0_ring));
	wr(nd, V0_DESC_BASE_HI, upper_32_bits(nd->v0_ring));
	wr(nd, V0_DESC_RING_LEN, nd->v0_len);
	wr(nd, V0_TMEM_BASE_LO, lower_32_bits(nd->v0_win));
	wr(nd, V0_TMEM_BASE_HI, upper_32_bits(nd->v0_win));
	wr(nd, V0_TMEM_LEN, (u32)nd->v0_win_len);
	wr(nd, V0_IRQ_MASK, nd->use_irq ? V0_IRQ_ALL : 0);
	wr(nd, V0_IRQ_STATUS, V0_IRQ_ALL);
	wr(nd, V0_CTRL, nd->v0_ctrl);
	nd->v0_programmed = true;
}

static void v0_reset(struct npk_dev *nd)
{
	/* CTRL.flush drops the ring and resets STATUS/ERR_*; re-arm it */
	if (nd->v0_programmed)
		v0_program(nd, true);
	else
		wr(nd, V0_CTRL, V0_CTRL_FLUSH);
}

static int v0_start(struct npk_dev *nd, struct npukit_submit *s)
{
	struct npk_job *j = &nd->job;
	u64 ring = j->bo->dma + s->offset;
	u32 ctrl = V0_CTRL_ENABLE;

	if (s->ring_len < 2 || s->ring_len > V0_RING_MAX || (s->ring_len & (s->ring_len - 1)) ||
	    s->offset % V0_DESC_BYTES || s->first >= s->ring_len || !s->count ||
	    s->count >= s->ring_len || s->flags & ~NPUKIT_SUBMIT_FALLBACK ||
	    (u64)s->ring_len * V0_DESC_BYTES > j->bo->size - s->offset ||
	    s->window_size > U32_MAX)
		return -EINVAL;
	if (s->flags & NPUKIT_SUBMIT_FALLBACK)
		ctrl |= V0_CTRL_FALLBACK;
	if (nd->use_irq)
		ctrl |= V0_CTRL_IRQ_ENABLE;
	if (!nd->v0_programmed || nd->v0_ring != ring || nd->v0_len != s->ring_len ||
	    nd->v0_win != s->window_addr || nd->v0_win_len != s->window_size ||
	    nd->v0_ctrl != ctrl) {
		bool first_time = !nd->v0_programmed;

		nd->v0_ring = ring;
		nd->v0_len = s->ring_len;
		nd->v0_win = s->window_addr;
		nd->v0_win_len = s->window_size;
		nd->v0_ctrl = ctrl;
		/* no job runs: the device is idle and keeps DESC_TAIL (modulo a new length) */
		v0_program(nd, first_time);
	}
	if ((rd(nd, V0_DESC_TAIL) & (s->ring_len - 1)) != s->first)
		return -EINVAL;
	j->end = (s->first + s->count) & (s->ring_len - 1);
	/* descriptors are in coherent memory: make them visible before the doorbell */
	wmb();
	wr(nd, V0_DESC_DOORBELL, j->end);
	return 0;
}

static int v0_check(struct npk_dev *nd, struct npukit_wait *w)
{
	struct npk_job *j = &nd->job;
	u32 st = rd(nd, V0_STATUS);
	u32 irqs, code;

	if (st == U32_MAX)
		return 0;	/* the function does not answer: wait for the timeout */
	if (!(st & V0_ST_ERROR)) {
		j->seen = rd(nd, V0_DESC_TAIL);
		j->seen_valid = true;
		if ((j->seen & (j->ring_len - 1)) != j->end || (st & V0_ST_BUSY))
			return 0;
		wr(nd, V0_IRQ_STATUS, V0_IRQ_DONE);
		w->result = NPUKIT_WAIT_OK;
		return 1;
	}
	code = (st >> 16) & 0xff;
	irqs = rd(nd, V0_IRQ_STATUS);
	w->dev_code = code;
	w->index = rd(nd, V0_ERR_DESC_INDEX) & (j->ring_len - 1);
	w->fault_addr = ((u64)rd(nd, V0_ERR_FAULT_HI) << 32) | rd(nd, V0_ERR_FAULT_LO);
	if ((irqs & V0_IRQ_UNSUPPORTED) && (nd->v0_ctrl & V0_CTRL_FALLBACK) &&
	    !(irqs & (V0_IRQ_BUS_ERROR | V0_IRQ_OVERFLOW))) {
		/* CPU fallback: hand the descriptor to the user-space delegate */
		memcpy(w->desc, (u8 *)j->bo->vaddr + j->offset + (u64)w->index * V0_DESC_BYTES,
		       V0_DESC_BYTES);
		j->fb_pending = true;
		j->fb_index = w->index;
		w->result = NPUKIT_WAIT_FALLBACK;
		return 1;
	}
	w->result = NPUKIT_WAIT_ERROR;
	if (irqs & (V0_IRQ_BUS_ERROR | V0_IRQ_OVERFLOW)) {
		v0_reset(nd);	/* flush is required for bus_error and queue_overflow */
		w->recovered = 1;
	} else {
		/* unsupported_op: dismiss it; the rest of the batch is dropped */
		wr(nd, V0_IRQ_STATUS, V0_IRQ_UNSUPPORTED | V0_IRQ_ERROR);
		v0_reset(nd);
	}
	return 1;
}

static int v0_fallback_done(struct npk_dev *nd, u32 index)
{
	struct npk_job *j = &nd->job;
	const u8 *d;

	if (!j->active || !j->fb_pending || index != j->fb_index)
		return -EINVAL;
	d = (const u8 *)j->bo->vaddr + j->offset + (u64)index * V0_DESC_BYTES;
	wr(nd, V0_COMPLETION_TAG, get_unaligned_le32(d + 60));
	wr(nd, V0_IRQ_STATUS, V0_IRQ_UNSUPPORTED | V0_IRQ_ERROR);
	wr(nd, V0_DESC_TAIL, (index + 1) & (j->ring_len - 1));
	j->fb_pending = false;
	return 0;
}

static u32 v0_irq_ack(struct npk_dev *nd)
{
	u32 bits = rd(nd, V0_IRQ_STATUS) & rd(nd, V0_IRQ_MASK);

	if (bits)
		wr(nd, V0_IRQ_MASK, 0);	/* level line: mask until the waiter looked */
	return bits;
}

static void v0_irq_arm(struct npk_dev *nd)
{
	wr(nd, V0_IRQ_MASK, V0_IRQ_ALL);
}

static u64 v0_cycles(struct npk_dev *nd)
{
	return rd(nd, 0x040);
}

static u32 v0_progress(struct npk_dev *nd)
{
	return rd(nd, V0_DESC_TAIL);
}

/* ---- shell --------------------------------------------------------------- */

static void shell_reset(struct npk_dev *nd)
{
	wr(nd, SH_CONTROL, SH_CTL_RESET);
	nd->sh_programmed = false;
}

static int shell_start(struct npk_dev *nd, struct npukit_submit *s)
{
	struct npk_job *j = &nd->job;
	u64 ring = j->bo->dma + s->offset;

	if (s->ring_len < 128 || s->ring_len > (1U << 20) || (s->ring_len & (s->ring_len - 1)) ||
	    s->offset % 64 || s->first % SH_DESC_BYTES || s->first >= s->ring_len ||
	    !s->count || s->count % SH_DESC_BYTES || s->count >= s->ring_len || s->flags ||
	    s->window_addr || s->window_size || s->ring_len > j->bo->size - s->offset)
		return -EINVAL;
	if (!(rd(nd, SH_STATUS) & SH_ST_IDLE))
		return -EBUSY;
	if (!nd->sh_programmed || nd->sh_ring != ring || nd->sh_size != s->ring_len) {
		shell_reset(nd);
		wr(nd, SH_CQ_BASE_LO, lower_32_bits(ring));
		wr(nd, SH_CQ_BASE_HI, upper_32_bits(ring));
		wr(nd, SH_CQ_SIZE, s->ring_len);
		wr(nd, SH_CQ_TAIL, 0);
		nd->sh_ring = ring;
		nd->sh_size = s->ring_len;
		nd->sh_programmed = true;
	}
	wr(nd, SH_IRQ_STATUS, SH_IRQ_CQ_EMPTY | SH_IRQ_EVENT | SH_IRQ_ERROR);
	wr(nd, SH_IRQ_ENABLE, nd->use_irq ? SH_IRQ_CQ_EMPTY | SH_IRQ_ERROR : 0);
	wr(nd, SH_CQ_HEAD, s->first);
	wr(nd, SH_CQ_TAIL, s->first);
	if (rd(nd, SH_CQ_HEAD) != s->first)
		return -EIO;
	j->end = (s->first + s->count) & (s->ring_len - 1);
	/* commands are in coherent memory: make them visible before the new tail */
	wmb();
	wr(nd, SH_CQ_TAIL, j->end);
	wr(nd, SH_DOORBELL, 1);
	return 0;
}

static int shell_check(struct npk_dev *nd, struct npukit_wait *w)
{
	u32 st = rd(nd, SH_STATUS);

	if (st == U32_MAX)
		return 0;
	if (st & SH_ST_ERROR) {
		u32 code = rd(nd, SH_ERROR_CODE);

		w->result = NPUKIT_WAIT_ERROR;
		w->dev_code = code;
		w->index = rd(nd, SH_CQ_HEAD);
		w->fault_addr = ((u64)rd(nd, SH_ERROR_ADDR_HI) << 32) | rd(nd, SH_ERROR_ADDR_LO);
		/* the queue keeps the failed command: reset so the next job starts clean */
		shell_reset(nd);
		w->recovered = 1;
		return 1;
	}
	if (!(st & SH_ST_IDLE))
		return 0;
	wr(nd, SH_IRQ_STATUS, SH_IRQ_CQ_EMPTY | SH_IRQ_EVENT);
	w->result = NPUKIT_WAIT_OK;
	return 1;
}

static u32 shell_irq_ack(struct npk_dev *nd)
{
	u32 bits = rd(nd, SH_IRQ_STATUS) & rd(nd, SH_IRQ_ENABLE);

	if (bits)
		wr(nd, SH_IRQ_ENABLE, 0);
	return bits;
}

static void shell_irq_arm(struct npk_dev *nd)
{
	wr(nd, SH_IRQ_ENABLE, SH_IRQ_CQ_EMPTY | SH_IRQ_ERROR);
}

static u64 shell_cycles(struct npk_dev *nd)
{
	return 0;
}

static u32 shell_progress(struct npk_dev *nd)
{
	return rd(nd, SH_CQ_HEAD);
}

/* ---- pccx ---------------------------------------------------------------- */

static void pccx_reset(struct npk_dev *nd)
{
	wr(nd, PX_CTRL, PX_CTRL_RESET);
}

/* Push as many instructions as the queue takes; true when all are in. */
static bool pccx_push(struct npk_dev *nd)
{
	struct npk_job *j = &nd->job;
	u32 cap = rd(nd, PX_QUEUE_CAP);
	u32 used = rd(nd, PX_QUEUE_COUNT);
	const u8 *p = (const u8 *)j->bo->vaddr + j->offset;

	if (cap == U32_MAX || used == U32_MAX)
		return false;
	while (j->pushed < j->count && used < cap) {
		const u8 *ins = p + (u64)j->pushed * 8;

		wr(nd, PX_INSTR_LO, get_unaligned_le32(ins));
		wr(nd, PX_INSTR_HI, get_unaligned_le32(ins + 4));
		j->pushed++;
		used++;
	}
	return j->pushed == j->count;
}

static int pccx_start(struct npk_dev *nd, struct npukit_submit *s)
{
	struct npk_job *j = &nd->job;

	if (s->ring_len || s->first || s->flags || s->window_addr || s->window_size ||
	    s->offset % 8 || !s->count || (u64)s->count * 8 > j->bo->size - s->offset)
		return -EINVAL;
	if (rd(nd, PX_STATUS) & (PX_ST_ERROR | PX_ST_HUNG))
		return -EIO;
	wr(nd, PX_STATUS, PX_ST_DONE);
	wr(nd, PX_IRQ_EN, nd->use_irq ? 3 : 0);
	j->pushed = 0;
	pccx_push(nd);
	return 0;
}

static int pccx_check(struct npk_dev *nd, struct npukit_wait *w)
{
	u32 st = rd(nd, PX_STATUS);

	if (st == U32_MAX)
		return 0;
	if (st & PX_ST_ERROR) {
		w->result = NPUKIT_WAIT_ERROR;
		w->dev_code = rd(nd, PX_ERR_CODE);
		w->index = rd(nd, PX_ERR_INDEX);
		w->fault_addr = ((u64)rd(nd, PX_ERR_ADDR_HI) << 32) | rd(nd, PX_ERR_ADDR_LO);
		pccx_reset(nd);	/* drop the rest of the stream */
		w->recovered = 1;
		return 1;
	}
	if (st & PX_ST_HUNG)
		return 0;	/* only the timeout and a reset end a hang */
	if (!pccx_push(nd) || (st & PX_ST_BUSY) || rd(nd, PX_QUEUE_COUNT))
		return 0;
	if (rd(nd, PX_STATUS) & PX_ST_BUSY)
		return 0;
	wr(nd, PX_STATUS, PX_ST_DONE);
	w->result = NPUKIT_WAIT_OK;
	return 1;
}

static u32 pccx_irq_ack(struct npk_dev *nd)
{
	u32 bits = rd(nd, PX_STATUS) & (PX_ST_DONE | PX_ST_ERROR) & (rd(nd, PX_IRQ_EN) << 1);

	if (bits)
		wr(nd, PX_IRQ_EN, 0);
	return bits;
}

static void pccx_irq_arm(struct npk_dev *nd)
{
	wr(nd, PX_IRQ_EN, 3);
}

static u64 pccx_cycles(struct npk_dev *nd)
{
	u32 hi, lo;

	do {
		hi = rd(nd, PX_CYCLES_HI);
		lo = rd(nd, PX_CYCLES_LO);
	} while (hi != rd(nd, PX_CYCLES_HI) && hi != U32_MAX);
	return ((u64)hi << 32) | lo;
}

static u32 pccx_progress(struct npk_dev *nd)
{
	return nd->job.pushed;
}

/* ---- e1 ------------------------------------------------------------------ */

static void e1_reset(struct npk_dev *nd)
{
	wr(nd, E1_CTRL_STATUS, E1_CTRL_CLEAR);
}

static int e1_start(struct npk_dev *nd, struct npukit_submit *s)
{
	struct npk_job *j = &nd->job;
	u64 ring = j->bo->dma + s->offset;
	u32 st;

	if (s->ring_len || s->flags || s->window_addr || s->window_size || s->offset % 16 ||
	    s->first >= E1_RING_ENTRIES || !s->count || s->count >= E1_RING_ENTRIES ||
	    E1_RING_ENTRIES * E1_DESC_BYTES > j->bo->size - s->offset || ring + 128 > (1ULL << 32))
		return -EINVAL;
	st = rd(nd, E1_CTRL_STATUS);
	if (st & E1_ST_BUSY)
		return -EBUSY;
	j->end = (s->first + s->count) % E1_RING_ENTRIES;
	/* clear an error a register user left; done stays (the last batch's counters with it) */
	if (st & E1_ST_ERROR)
		wr(nd, E1_CTRL_STATUS, E1_CTRL_CLEAR);
	wr(nd, E1_DESC_BASE, (u32)ring);
	wr(nd, E1_DESC_TAIL, s->first);
	wr(nd, E1_DESC_HEAD, j->end);
	wr(nd, E1_CMD_PARAM, rd(nd, E1_CMD_PARAM) | E1_CMD_DESC);
	/* descriptors are in coherent memory: make them visible before START */
	wmb();
	wr(nd, E1_CTRL_STATUS, E1_CTRL_START);
	return 0;
}

static int e1_check(struct npk_dev *nd, struct npukit_wait *w)
{
	u32 st = rd(nd, E1_CTRL_STATUS);

	if (st == U32_MAX || (st & E1_ST_BUSY))
		return 0;
	if (st & E1_ST_ERROR) {
		w->result = NPUKIT_WAIT_ERROR;
		w->dev_code = rd(nd, E1_DESC_STATUS);
		w->index = rd(nd, E1_DESC_TAIL);
		wr(nd, E1_CTRL_STATUS, E1_CTRL_CLEAR);
	} else {
		w->result = NPUKIT_WAIT_OK;
		/*
		 * done is e1's interrupt line: clear it when the IRQ is requested (a shared level
		 * line left high); polling leaves it, and the last batch's counters, as they are
		 */
		if (nd->use_irq)
			wr(nd, E1_CTRL_STATUS, E1_CTRL_CLEAR);
	}
	return 1;
}

static u32 e1_irq_ack(struct npk_dev *nd)
{
	return 0;	/* e1's line is CTRL_STATUS.done: completion is polled */
}

static void e1_irq_arm(struct npk_dev *nd)
{
}

static u64 e1_cycles(struct npk_dev *nd)
{
	return rd(nd, E1_PERF_CYCLES);
}

static u32 e1_progress(struct npk_dev *nd)
{
	return rd(nd, E1_DESC_TAIL);
}

static const struct npk_kind npk_kinds[] = {
	[NPUKIT_KIND_E1] = {
		.name = "e1", .kind = NPUKIT_KIND_E1, .format = NPUKIT_JOB_E1_RING,
		.hz = 1000000000, .dma_bits = 32, .id_reg = ~0U,
		.perf_lo = { 0x50, 0 }, .perf_hi = { 0x7c, 0 },
		.start = e1_start, .check = e1_check, .reset = e1_reset,
		.irq_ack = e1_irq_ack, .irq_arm = e1_irq_arm, .cycles = e1_cycles,
		.progress = e1_progress,
	},
	[NPUKIT_KIND_V0] = {
		.name = "v0", .kind = NPUKIT_KIND_V0, .format = NPUKIT_JOB_V0_DESC,
		.hz = 1000000000, .dma_bits = 64, .id_reg = V0_ID, .caps_reg = V0_CAPS,
		.perf_lo = { 0x40, 0x80 }, .perf_hi = { 0x4c, 0xac },
		.start = v0_start, .check = v0_check, .reset = v0_reset,
		.irq_ack = v0_irq_ack, .irq_arm = v0_irq_arm, .cycles = v0_cycles,
		.progress = v0_progress,
	},
	[NPUKIT_KIND_SHELL] = {
		.name = "shell", .kind = NPUKIT_KIND_SHELL, .format = NPUKIT_JOB_SHELL_RING,
		.hz = 1000000000, .dma_bits = 64, .id_reg = SH_VERSION, .caps_reg = SH_CAPS,
		.perf_lo = { 0x60, 0 }, .perf_hi = { 0x7c, 0 },
		.start = shell_start, .check = shell_check, .reset = shell_reset,
		.irq_ack = shell_irq_ack, .irq_arm = shell_irq_arm, .cycles = shell_cycles,
		.progress = shell_progress,
	},
	[NPUKIT_KIND_PCCX] = {
		.name = "pccx", .kind = NPUKIT_KIND_PCCX, .format = NPUKIT_JOB_PCCX_STREAM,
		.hz = 400000000, .dma_bits = 64, .id_reg = PX_ID, .caps_reg = PX_CAP_LANES,
		.perf_lo = { 0x70, 0 }, .perf_hi = { 0xc0, 0 },
		.start = pccx_start, .check = pccx_check, .reset = pccx_reset,
		.irq_ack = pccx_irq_ack, .irq_arm = pccx_irq_arm, .cycles = pccx_cycles,
		.progress = pccx_progress,
	},
};

/* ---- the clock window ---------------------------------------------------- */

static void clk_set_mode(struct npk_dev *nd, bool stepped)
{
	iowrite32(stepped ? 1 : 0, nd->clk + CLK_MODE);
	nd->stepped = stepped;
}

/*
 * A stepped device advances by cycles (at most 2^32 - 1) before the write is answered: one
 * 64-bit write of STEP_LO and STEP_HI (one MMIO round trip instead of two under QEMU)
 */
static void clk_step(struct npk_dev *nd, u32 cycles)
{
	writeq(cycles, nd->clk + CLK_STEP_LO);
}

static int npk_clock(struct npk_dev *nd, struct npukit_clock *c)
{
	u32 hi;

	if (c->flags & ~(NPUKIT_CLOCK_SET_MODE | NPUKIT_CLOCK_STEP) || c->cycles || c->status ||
	    c->clock_khz || c->reserved[0] || c->reserved[1] ||
	    (!(c->flags & NPUKIT_CLOCK_SET_MODE) && c->mode) || c->mode > NPUKIT_CLOCK_STEPPED ||
	    (!(c->flags & NPUKIT_CLOCK_STEP) && c->step) ||
	    ((c->flags & NPUKIT_CLOCK_STEP) && (!c->step || c->step > U32_MAX)))
		return -EINVAL;
	if (!nd->clk)
		return -ENODEV;
	if (c->flags & NPUKIT_CLOCK_SET_MODE)
		clk_set_mode(nd, c->mode == NPUKIT_CLOCK_STEPPED);
	if (c->flags & NPUKIT_CLOCK_STEP) {
		if (!nd->stepped)
			return -EINVAL;
		clk_step(nd, (u32)c->step);
	}
	c->mode = nd->stepped ? NPUKIT_CLOCK_STEPPED : NPUKIT_CLOCK_FREE;
	c->cycles = ioread32(nd->clk + CLK_CYCLES_LO);
	hi = ioread32(nd->clk + CLK_CYCLES_HI);
	c->cycles |= (u64)hi << 32;
	c->status = ioread32(nd->clk + CLK_STATUS) & 3;
	c->clock_khz = ioread32(nd->clk + CLK_KHZ);
	return 0;
}

/* ---- jobs ---------------------------------------------------------------- */

static void npk_job_end(struct npk_dev *nd)
{
	struct npk_job *j = &nd->job;

	if (j->bo)
		npk_bo_put(j->bo);
	memset(j, 0, sizeof(*j));
}

static int npk_submit(struct npk_file *nf, struct npukit_submit *s)
{
	struct npk_dev *nd = nf->ndev;
	struct npk_job *j = &nd->job;
	struct npk_bo *bo;
	int ret;

	if (s->format != nd->kind->format || s->seqno)
		return -EINVAL;
	if (j->active)
		return -EBUSY;
	bo = idr_find(&nf->bos, s->handle);
	if (!bo)
		return -ENOENT;
	if (s->offset >= bo->size)
		return -EINVAL;
	if (s->window_size && !npk_bo_find_range(nf, s->window_addr, s->window_size))
		return -EINVAL;
	kref_get(&bo->ref);
	j->bo = bo;
	j->offset = s->offset;
	j->count = s->count;
	j->ring_len = s->ring_len;
	j->first = s->first;
	j->active = true;
	nd->job_gen++;
	spin_lock_irq(&nd->irq_lock);
	nd->irq_event = false;
	spin_unlock_irq(&nd->irq_lock);
	ret = nd->kind->start(nd, s);
	if (ret) {
		npk_job_end(nd);
		return ret;
	}
	s->seqno = ++nf->seqno;
	nd->jobs++;
	return 0;
}

static bool npk_irq_seen(struct npk_dev *nd)
{
	bool ev;

	spin_lock_irq(&nd->irq_lock);
	ev = nd->irq_event;
	nd->irq_event = false;
	spin_unlock_irq(&nd->irq_lock);
	return ev;
}

/* Called with nd->lock held; drops it while sleeping. */
static int npk_wait(struct npk_dev *nd, struct npukit_wait *w)
{
	struct npk_job *j = &nd->job;
	u64 deadline, now, gen = nd->job_gen;
	unsigned long step_us = 20;
	u32 step_cycles = 64;
	bool poll = w->flags & NPUKIT_WAIT_POLL;
	int ret = 0;

	if (w->flags & ~NPUKIT_WAIT_POLL || w->progress || w->eta ||
	    (poll && w->timeout_ns) ||
	    (!poll && (w->timeout_ns <= 0 || w->timeout_ns > NPK_MAX_TIMEOUT_NS)) ||
	    w->result || w->dev_code || w->index || w->recovered || w->fault_addr ||
	    memchr_inv(w->desc, 0, 64))
		return -EINVAL;
	if (!j->active || j->fb_pending)
		return j->fb_pending ? -EINVAL : -ENOENT;
	deadline = ktime_get_ns() + w->timeout_ns;
	for (;;) {
		j->seen_valid = false;
		if (nd->kind->check(nd, w))
			break;
		if (poll) {
			/* the job goes on: report where it stands */
			w->result = NPUKIT_WAIT_BUSY;
			w->progress = j->seen_valid ? j->seen : nd->kind->progress(nd);
			if (nd->kind->kind == NPUKIT_KIND_PCCX)
				w->eta = rd(nd, PX_IDLE_ETA);
			return 0;
		}
		now = ktime_get_ns();
		if (now >= deadline) {
			nd->kind->reset(nd);
			w->result = NPUKIT_WAIT_TIMEOUT;
			w->recovered = 1;
			break;
		}
		if (nd->stepped) {
			/* nothing advances a stepped device but its steps: advance it here */
			clk_step(nd, step_cycles);
			if (step_cycles < 65536)
				step_cycles *= 2;
			if (signal_pending(current))
				return -ERESTARTSYS;
			cond_resched();
			continue;
		}
		mutex_unlock(&nd->lock);
		if (nd->use_irq) {
			/* at most 10 ms: a lost interrupt costs a poll, not the timeout */
			unsigned long left = min(nsecs_to_jiffies(deadline - now) + 1,
						 msecs_to_jiffies(10));
			long r;

			r = wait_event_interruptible_timeout(nd->wq, READ_ONCE(nd->irq_event),
							     left);
			if (r < 0)
				ret = -ERESTARTSYS;
		} else {
			usleep_range(step_us, step_us + step_us / 4);
			if (step_us < 1000)
				step_us *= 2;
			if (signal_pending(current))
				ret = -ERESTARTSYS;
		}
		mutex_lock(&nd->lock);
		if (ret)
			return ret;	/* the job keeps running; wait again */
		if (!j->active || j->fb_pending || nd->job_gen != gen)
			return -ECANCELED;	/* another thread reset or waited for it */
		if (nd->use_irq && npk_irq_seen(nd))
			nd->kind->irq_arm(nd);
	}
	w->progress = nd->kind->progress(nd);
	if (w->result != NPUKIT_WAIT_FALLBACK)
		npk_job_end(nd);
	return 0;
}

static void npk_counters(struct npk_dev *nd, struct npukit_counters *c)
{
	const struct npk_kind *k = nd->kind;
	u32 off;
	int r;

	memset(c, 0, sizeof(*c));
	c->cycles = k->cycles(nd);
	for (r = 0; r < 2; r++) {
		if (!k->perf_hi[r])
			continue;
		for (off = k->perf_lo[r]; off <= k->perf_hi[r] && c->count < NPUKIT_MAX_COUNTERS;
		     off += 4)
			c->values[c->count++] = rd(nd, off);
	}
}

static irqreturn_t npk_irq(int irqno, void *data)
{
	struct npk_dev *nd = data;
	u32 bits = nd->kind->irq_ack(nd);

	if (!bits || bits == U32_MAX)
		return IRQ_NONE;
	spin_lock(&nd->irq_lock);
	nd->irq_count++;
	nd->irq_bits |= bits;
	nd->irq_event = true;
	spin_unlock(&nd->irq_lock);
	wake_up(&nd->wq);
	return IRQ_HANDLED;
}

/* ---- file operations ------------------------------------------------------ */

static int npk_open(struct inode *inode, struct file *f)
{
	struct npk_dev *nd = container_of(f->private_data, struct npk_dev, misc);
	struct npk_file *nf;

	nf = kzalloc(sizeof(*nf), GFP_KERNEL);
	if (!nf)
		return -ENOMEM;
	mutex_lock(&nd->lock);
	if (nd->opened) {
		mutex_unlock(&nd->lock);
		kfree(nf);
		return -EBUSY;
	}
	nd->opened = true;
	mutex_unlock(&nd->lock);
	nf->ndev = nd;
	idr_init(&nf->bos);
	f->private_data = nf;
	return 0;
}

static int npk_release(struct inode *inode, struct file *f)
{
	struct npk_file *nf = f->private_data;
	struct npk_dev *nd = nf->ndev;
	struct npk_bo *bo;
	int id;

	mutex_lock(&nd->lock);
	if (nd->job.active) {
		/* the device may still use the buffers: stop it first */
		nd->kind->reset(nd);
		npk_job_end(nd);
	}
	idr_for_each_entry(&nf->bos, bo, id)
		npk_bo_put(bo);
	idr_destroy(&nf->bos);
	if (nd->clk && nd->stepped)
		clk_set_mode(nd, false);	/* the next opener finds a device that runs */
	nd->opened = false;
	mutex_unlock(&nd->lock);
	wake_up(&nd->wq);	/* a remove waiting for the last close */
	kfree(nf);
	return 0;
}

static int npk_get_info(struct npk_dev *nd, struct npukit_info *info)
{
	const struct npk_kind *k = nd->kind;

	memset(info, 0, sizeof(*info));
	info->api_version = NPUKIT_API_VERSION;
	info->kind = k->kind;
	info->vendor = nd->pdev->vendor;
	info->device = nd->pdev->device;
	if (k->id_reg != ~0U) {
		info->id = rd(nd, k->id_reg);
		info->caps = rd(nd, k->caps_reg);
	}
	info->mmio_size = nd->mmio_size;
	info->clock_hz = nd->clock_hz;
	info->max_bo_size = NPK_MAX_BO_SIZE;
	info->irq_mode = nd->use_irq;
	info->flags = nd->clk ? NPUKIT_INFO_CLOCK : 0;
	info->carveout_base = carveout_size ? carveout_base : 0;
	info->carveout_size = carveout_size;
	return 0;
}

static int npk_reg(struct npk_dev *nd, struct npukit_reg *r)
{
	if (r->flags & ~NPUKIT_REG_WRITE || r->pad || r->offset % 4 ||
	    (u64)r->offset + 4 > nd->mmio_size)
		return -EINVAL;
	if (r->flags & NPUKIT_REG_WRITE)
		wr(nd, r->offset, r->value);
	else
		r->value = rd(nd, r->offset);
	return 0;
}

static void npk_irq_take(struct npk_dev *nd, struct npukit_irq *q)
{
	spin_lock_irq(&nd->irq_lock);
	q->count = nd->irq_count;
	q->status = nd->irq_bits;
	nd->irq_count = 0;
	nd->irq_bits = 0;
	spin_unlock_irq(&nd->irq_lock);
}

union npk_args {
	struct npukit_info info;
	struct npukit_bo_create bo_create;
	struct npukit_bo_free bo_free;
	struct npukit_reg reg;
	struct npukit_submit submit;
	struct npukit_wait wait;
	struct npukit_fallback_done fb;
	struct npukit_counters counters;
	struct npukit_irq irq;
	struct npukit_clock clock;
};

static long npk_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct npk_file *nf = f->private_data;
	struct npk_dev *nd = nf->ndev;
	void __user *uarg = (void __user *)arg;
	unsigned int size = _IOC_SIZE(cmd);
	union npk_args a;
	long ret;

	switch (cmd) {
	case NPUKIT_IOCTL_GET_INFO:
	case NPUKIT_IOCTL_BO_CREATE:
	case NPUKIT_IOCTL_BO_FREE:
	case NPUKIT_IOCTL_REG:
	case NPUKIT_IOCTL_SUBMIT:
	case NPUKIT_IOCTL_WAIT:
	case NPUKIT_IOCTL_FALLBACK_DONE:
	case NPUKIT_IOCTL_COUNTERS:
	case NPUKIT_IOCTL_RESET:
	case NPUKIT_IOCTL_IRQ:
	case NPUKIT_IOCTL_CLOCK:
		break;
	default:
		return -ENOTTY;
	}
	if (size > sizeof(a))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(&a, uarg, size))
		return -EFAULT;

	mutex_lock(&nd->lock);
	switch (cmd) {
	case NPUKIT_IOCTL_GET_INFO:
		ret = npk_get_info(nd, &a.info);
		break;
	case NPUKIT_IOCTL_BO_CREATE:
		ret = npk_bo_create(nf, &a.bo_create);
		break;
	case NPUKIT_IOCTL_BO_FREE:
		ret = npk_bo_free(nf, &a.bo_free);
		break;
	case NPUKIT_IOCTL_REG:
		ret = npk_reg(nd, &a.reg);
		break;
	case NPUKIT_IOCTL_SUBMIT:
		ret = npk_submit(nf, &a.submit);
		break;
	case NPUKIT_IOCTL_WAIT:
		ret = npk_wait(nd, &a.wait);
		break;
	case NPUKIT_IOCTL_FALLBACK_DONE:
		ret = nd->kind->kind == NPUKIT_KIND_V0 && !a.fb.pad ?
		      v0_fallback_done(nd, a.fb.index) : -EINVAL;
		break;
	case NPUKIT_IOCTL_COUNTERS:
		npk_counters(nd, &a.counters);
		ret = 0;
		break;
	case NPUKIT_IOCTL_RESET:
		nd->kind->reset(nd);
		if (nd->job.active)
			npk_job_end(nd);
		ret = 0;
		break;
	case NPUKIT_IOCTL_CLOCK:
		ret = npk_clock(nd, &a.clock);
		break;
	default: /* NPUKIT_IOCTL_IRQ */
		npk_irq_take(nd, &a.irq);
		ret = 0;
		break;
	}
	mutex_unlock(&nd->lock);
	if (ret == 0 && (_IOC_DIR(cmd) & _IOC_READ) && copy_to_user(uarg, &a, size)) {
		/* a buffer the caller cannot learn about would leak until close */
		if (cmd == NPUKIT_IOCTL_BO_CREATE) {
			struct npukit_bo_free fr = { .handle = a.bo_create.handle };

			mutex_lock(&nd->lock);
			npk_bo_free(nf, &fr);
			mutex_unlock(&nd->lock);
		}
		return -EFAULT;
	}
	return ret;
}

/* /sys/class/misc/npuN/buffers: live buffer objects (the load/unload test checks 0) */
static ssize_t buffers_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct miscdevice *misc = dev_get_drvdata(dev);
	struct npk_dev *nd = container_of(misc, struct npk_dev, misc);

	return sysfs_emit(buf, "%d\n", atomic_read(&nd->bo_live));
}
static DEVICE_ATTR_RO(buffers);

/* /sys/class/misc/npuN/jobs: jobs the device started since probe (NPUKIT_IOCTL_SUBMIT) */
static ssize_t jobs_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct miscdevice *misc = dev_get_drvdata(dev);
	struct npk_dev *nd = container_of(misc, struct npk_dev, misc);

	return sysfs_emit(buf, "%llu\n", READ_ONCE(nd->jobs));
}
static DEVICE_ATTR_RO(jobs);

static struct attribute *npk_attrs[] = {
	&dev_attr_buffers.attr,
	&dev_attr_jobs.attr,
	NULL,
};
ATTRIBUTE_GROUPS(npk);

static const struct file_operations npk_fops = {
	.owner = THIS_MODULE,
	.open = npk_open,
	.release = npk_release,
	.unlocked_ioctl = npk_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = npk_mmap,
	.llseek = noop_llseek,
};

/* ---- PCI ------------------------------------------------------------------ */

static int npk_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	const struct npk_kind *k = &npk_kinds[id->driver_data];
	struct npk_dev *nd;
	u32 khz = 0;
	int ret;

	nd = devm_kzalloc(&pdev->dev, sizeof(*nd), GFP_KERNEL);
	if (!nd)
		return -ENOMEM;
	nd->pdev = pdev;
	nd->kind = k;
	mutex_init(&nd->lock);
	spin_lock_init(&nd->irq_lock);
	init_waitqueue_head(&nd->wq);

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	if (!(pci_resource_flags(pdev, 0) & IORESOURCE_MEM) || pci_resource_len(pdev, 0) < 0x100) {
		dev_err(&pdev->dev, "BAR 0 is not a memory window of at least 256 bytes\n");
		return -ENODEV;
	}
	ret = pcim_iomap_regions(pdev, BIT(0), KBUILD_MODNAME);
	if (ret)
		return ret;
	nd->regs = pcim_iomap_table(pdev)[0];
	nd->mmio_size = pci_resource_len(pdev, 0);
	/* BAR 2, when it is a virtual platform's clock window: the device's own clock */
	if ((pci_resource_flags(pdev, 2) & IORESOURCE_MEM) &&
	    pci_resource_len(pdev, 2) >= CLK_WINDOW &&
	    !pcim_iomap_regions(pdev, BIT(2), KBUILD_MODNAME)) {
		nd->clk = pcim_iomap_table(pdev)[2];
		if (ioread32(nd->clk + CLK_ID) == CLK_ID_VALUE) {
			clk_set_mode(nd, false);
		} else {
			pcim_iounmap_regions(pdev, BIT(2));
			nd->clk = NULL;
		}
	}
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(k->dma_bits));
	if (ret) {
		dev_err(&pdev->dev, "no usable %u-bit DMA\n", k->dma_bits);
		return ret;
	}
	if (k->id_reg != ~0U) {
		u32 v = rd(nd, k->id_reg);

		if ((k->kind == NPUKIT_KIND_V0 && v != V0_ID_VALUE) ||
		    (k->kind == NPUKIT_KIND_PCCX && v != PX_ID_VALUE)) {
			dev_err(&pdev->dev, "%s ID register reads 0x%08x\n", k->name, v);
			return -ENODEV;
		}
	}
	pci_read_config_dword(pdev, 0x40, &khz);
	nd->clock_hz = khz && khz != U32_MAX ? (u64)khz * 1000 : k->hz;

	nd->use_irq = irq && pdev->irq;
	if (nd->use_irq) {
		ret = devm_request_irq(&pdev->dev, pdev->irq, npk_irq, IRQF_SHARED,
				       KBUILD_MODNAME, nd);
		if (ret)
			return ret;
	}
	nd->kind->reset(nd);

	nd->minor_id = ida_alloc(&npk_ida, GFP_KERNEL);
	if (nd->minor_id < 0)
		return nd->minor_id;
	snprintf(nd->name, sizeof(nd->name), "npu%d", nd->minor_id);
	nd->misc.minor = MISC_DYNAMIC_MINOR;
	nd->misc.name = nd->name;
	nd->misc.fops = &npk_fops;
	nd->misc.parent = &pdev->dev;
	nd->misc.mode = 0600;
	nd->misc.groups = npk_groups;
	ret = misc_register(&nd->misc);
	if (ret) {
		ida_free(&npk_ida, nd->minor_id);
		return ret;
	}
	pci_set_drvdata(pdev, nd);
	dev_info(&pdev->dev, "%s at /dev/%s, %s completion, %llu Hz\n", k->name, nd->name,
		 nd->use_irq ? "interrupt" : "polled", nd->clock_hz);
	return 0;
}

static void npk_remove(struct pci_dev *pdev)
{
	struct npk_dev *nd = pci_get_drvdata(pdev);

	/*
	 * No new opens after misc_deregister. An open file (and its mappings)
	 * still uses the registers and the buffers: an unbind through sysfs
	 * waits for its close (module unload cannot happen while one is open).
	 */
	misc_deregister(&nd->misc);
	wait_event(nd->wq, !READ_ONCE(nd->opened));
	nd->kind->reset(nd);
	ida_free(&npk_ida, nd->minor_id);
}

static const struct pci_device_id npk_ids[] = {
	{ PCI_DEVICE(NPUKIT_PCI_VENDOR, NPUKIT_PCI_DEVICE_E1), .driver_data = NPUKIT_KIND_E1 },
	{ PCI_DEVICE(NPUKIT_PCI_VENDOR, NPUKIT_PCI_DEVICE_V0), .driver_data = NPUKIT_KIND_V0 },
	{ PCI_DEVICE(NPUKIT_PCI_VENDOR, NPUKIT_PCI_DEVICE_SHELL),
	  .driver_data = NPUKIT_KIND_SHELL },
	{ PCI_DEVICE(NPUKIT_PCI_VENDOR, NPUKIT_PCI_DEVICE_PCCX), .driver_data = NPUKIT_KIND_PCCX },
	{ }
};
MODULE_DEVICE_TABLE(pci, npk_ids);

static struct pci_driver npk_driver = {
	.name = KBUILD_MODNAME,
	.id_table = npk_ids,
	.probe = npk_probe,
	.remove = npk_remove,
};

static int __init npk_init(void)
{
	/* the carve-out must be RAM the kernel does not manage (above mem=, or reserved) */
	if (carveout_size && (!PAGE_ALIGNED(carveout_base) || !PAGE_ALIGNED(carveout_size) ||
			      carveout_base + carveout_size < carveout_base ||
			      region_intersects(carveout_base, carveout_size, IORESOURCE_SYSTEM_RAM,
						IORES_DESC_NONE) != REGION_DISJOINT ||
			      region_intersects(carveout_base, carveout_size, IORESOURCE_MEM,
						IORES_DESC_RESERVED) != REGION_DISJOINT)) {
		pr_err("carveout 0x%lx+0x%lx: not page aligned, or overlaps the kernel's RAM or a reserved range\n",
		       carveout_base, carveout_size);
		return -EINVAL;
	}
	return pci_register_driver(&npk_driver);
}
module_init(npk_init);

static void __exit npk_exit(void)
{
	pci_unregister_driver(&npk_driver);
}
module_exit(npk_exit);

MODULE_DESCRIPTION("npukit NPU devices (e1, v0, shell, pccx) as PCI functions");
MODULE_AUTHOR("npukit");
MODULE_LICENSE("Dual MIT/GPL");
