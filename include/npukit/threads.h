/* SPDX-License-Identifier: MIT */
/*
 * npukit base layer: the host threads every parallel kernel shares (issue 26
 * point 3).
 *
 * One pool of worker threads serves the kernels that split their work: the
 * shared GEMMs of gemm.h (the ONNX CPU path's convolutions and matrix
 * products, the v0 and shell models' functional arithmetic) split their output
 * rows or columns; the exact INT4 GEMV (numfmt.h) splits its outputs into
 * blocks of 16; the LLM decoders split matmul rows and attention heads. Each
 * task computes whole output elements with the same code and the same order
 * of operations as a single thread would, so results are
 * byte-identical at every thread count (tests/test_threads.c checks 1, 2 and 3
 * threads at every instruction-set level).
 *
 * The count: the calling thread's own count (npk_threads_set_local: a
 * Python session's intra_op_num_threads), else npk_threads_set(n) (the CLI's
 * --threads N), else the environment variable NPUKIT_THREADS, else every
 * online CPU. 1 runs everything on the
 * calling thread and starts no worker. A call from inside a task (nested), or
 * while another thread uses the pool, runs its tasks on the calling thread.
 * Worker threads are started on first use and survive fork() as nothing: a
 * forked child (npu sweep's processes) starts its own pool when it needs one.
 */
#ifndef NPUKIT_THREADS_H
#define NPUKIT_THREADS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most threads a pool runs (larger requests are capped). */
#define NPK_THREADS_MAX 256

/* The thread count parallel kernels use now (>= 1). */
int npk_threads(void);
/* The count a kernel should split its work for now: npk_threads(), but 1 inside a task
 * and while the pool runs its jobs on the caller alone (its workers slow or busy: see
 * npk_parallel), so that the kernels take their one-thread paths then instead of running
 * a split's tasks one after the other. Kernels decide how to split with it; what they
 * compute must not depend on it. */
int npk_threads_now(void);
/* Set it: n >= 1, or 0 for the default (NPUKIT_THREADS, else every online
 * CPU). 0, or -NPK_EINVAL for n < 0 (message set). */
int npk_threads_set(int n);
/* The calling thread's own count, taking precedence over npk_threads_set's
 * for the parallel kernels this thread calls: n >= 1, or 0 to follow the
 * process-wide count. Returns the previous value (>= 0; restore it after the
 * work), or -NPK_EINVAL for n < 0 (message set). */
int npk_threads_set_local(int n);
/* The online CPUs of this host (>= 1), read once per process. */
int npk_threads_cpus(void);

/* fn(ctx, task) for every task in [0, ntasks), on up to npk_threads()
 * threads (the caller is one of them); returns when all have run. Tasks must
 * write disjoint outputs. The tasks are dealt in one contiguous block per
 * thread, the first block to the caller, sized by each thread's measured rate
 * (equal blocks while the threads are equally fast): a thread runs its own
 * block from the front, then takes the others' remaining tasks from their
 * backs, so that kernels splitting their data the same way in order give each
 * thread the same part every call. While the workers cost more than they save
 * (a slow or busy CPU), the tasks run on the caller alone, the workers given a
 * task now and then to measure them again. Which thread runs a task never
 * changes what it computes. */
typedef void (*npk_task_fn)(void *ctx, int task);
void npk_parallel(int ntasks, npk_task_fn fn, void *ctx);

/* fn(ctx, lo, hi) over consecutive ranges that cover [0, n) once: up to four
 * per thread, each of at least `grain` items (a multiple of `grain` but the
 * last, which takes the remainder), so one range on one thread when n < 2 *
 * grain. For loops whose items are computed independently (the bytes then do
 * not depend on the split); grain is the item count worth a task (~10 us). */
typedef void (*npk_range_fn)(void *ctx, int64_t lo, int64_t hi);
void npk_parallel_range(int64_t n, int64_t grain, npk_range_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
