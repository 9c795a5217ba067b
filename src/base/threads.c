/* SPDX-License-Identifier: MIT */
/* The shared worker pool of include/npukit/threads.h.
 *
 * Why it spins: waking a sleeping thread costs tens of microseconds here (a
 * futex wake, and on a virtual machine the wake of an idle virtual CPU):
 * measured 70 us from npk_parallel to a sleeping worker's first task on the
 * 2-core KVM host of issue 26, more than many of the parallel regions of an
 * ONNX model take (ppocr-v4-det has ~80 per run, most 20-200 us), so a pool
 * that slept between them gave no speed-up at all. A worker now polls for the
 * next job for SPIN_US after its last one before it sleeps, and the caller
 * polls for the workers' last tasks before it sleeps; both sleep on a
 * condition variable after that, so an idle pool costs no CPU.
 *
 * One job at a time (the `use` lock), in static storage: `word` holds the
 * job's generation (high 32 bits) and the count of workers that joined it
 * (low bits; CLOSED once the caller has run out of tasks). A worker joins by
 * a compare-and-swap on the whole word, so it can never join a finished job
 * or the next one with a stale view; the caller waits until every worker that
 * joined has left, so no worker touches a job's fields after it returns. */
#include "npukit/threads.h"

#include "npukit/error.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long an idle worker polls for the next job, and the caller for the
 * workers' last tasks, before sleeping (microseconds). */
#define SPIN_US 300
#define WAIT_SPIN_US 100
#define CLOSED 0x80000000u

static atomic_uint_fast64_t word;  /* (generation << 32) | joined workers (| CLOSED) */
static _Atomic(npk_task_fn) job_fn; /* the open job (valid for the generation in word) */
static _Atomic(void *) job_ctx;
static atomic_int job_maxw;             /* workers that may join (threads - 1) */
/* The tasks in one block per thread, in order (block b = [start[b], start[b + 1])): thread b
 * (the caller 0, the workers in the order they joined) runs its own block first, then takes
 * what is left of the others. So a split into the same ranges from node to node gives each
 * thread the same part of the data every time (the part it wrote, in its own cache: reading
 * what the other core just wrote cost 3x on the 2-core KVM host of issue 26), and a thread
 * that comes late or not at all only leaves its block to the others. */
typedef struct block {
    atomic_int next; /* the next task of this block to take */
    int end;
    char pad[64 - sizeof(atomic_int) - sizeof(int)];
} block;
static block blocks[NPK_THREADS_MAX];
static atomic_int nblocks;
static atomic_int left;                 /* joined workers that have left the job */
static atomic_int caller_waits;         /* the caller sleeps on cv_done */
static atomic_int sleepers;             /* workers asleep on cv_work (or about to be) */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER, cv_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t use = PTHREAD_MUTEX_INITIALIZER; /* one npk_parallel at a time uses the pool */
static int nworkers;                                    /* started (under use) */
static atomic_int want;                                 /* npk_threads_set's count; 0 = default */
static _Thread_local int want_local;                    /* npk_threads_set_local's count; 0 = want's */
static _Thread_local int in_task;                       /* this thread runs tasks: nested calls are serial */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* sysconf reads /sys on every call (an open, a read and a close: 2-3 us), and
 * the kernels ask for the count on every call: it is read once. */
static atomic_int ncpus; /* 0 = not read yet */

int npk_threads_cpus(void) {
    int c = atomic_load_explicit(&ncpus, memory_order_relaxed);
    if (c) return c;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c = n < 1 ? 1 : n > NPK_THREADS_MAX ? NPK_THREADS_MAX : (int)n;
    atomic_store_explicit(&ncpus, c, memory_order_relaxed);
    return c;
}

static int default_threads(void) {
    const char *e = getenv("NPUKIT_THREADS");
    if (e && *e) {
        char *end;
        long n = strtol(e, &end, 10);
        if (!*end && n >= 1) return n > NPK_THREADS_MAX ? NPK_THREADS_MAX : (int)n;
    }
    return npk_threads_cpus();
}

int npk_threads(void) {
    if (want_local > 0) return want_local;
    int n = atomic_load(&want);
    return n > 0 ? n : default_threads();
}

int npk_threads_set(int n) {
    if (n < 0) return npk_err(NPK_EINVAL, "thread count %d (1..%d, or 0 for every core)", n, NPK_THREADS_MAX);
    atomic_store(&want, n > NPK_THREADS_MAX ? NPK_THREADS_MAX : n);
    return 0;
}

int npk_threads_set_local(int n) {
    if (n < 0) return npk_err(NPK_EINVAL, "thread count %d (1..%d, or 0 for the process-wide count)", n, NPK_THREADS_MAX);
    int prev = want_local;
    want_local = n > NPK_THREADS_MAX ? NPK_THREADS_MAX : n;
    return prev;
}

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Thread `self`'s block, then the others' remaining tasks. */
static void run_tasks(npk_task_fn fn, void *ctx, int self) {
    int nb = atomic_load_explicit(&nblocks, memory_order_relaxed);
    for (int k = 0; k < nb; k++) {
        block *b = &blocks[(self + k) % nb];
        int t;
        while ((t = atomic_fetch_add(&b->next, 1)) < b->end) fn(ctx, t);
    }
}

/* A polling loop's clock: 0 while polling should go on, 1 once `limit_us` have passed
 * since the first call or the thread was off its CPU (two readings PREEMPT_US apart: on a
 * busy machine a poller only takes the CPU from the threads it waits for). */
typedef struct poll_clock {
    int64_t start, last;
} poll_clock;
#define PREEMPT_US 30

static int poll_done(poll_clock *c, int64_t limit_us) {
    int64_t t = now_us();
    if (!c->start) c->start = c->last = t;
    int off = t - c->last > PREEMPT_US;
    c->last = t;
    return off || t - c->start >= limit_us;
}

/* Wait for a generation other than seen: poll SPIN_US, then sleep. Returns the word. */
static uint64_t wait_job(uint32_t seen) {
    uint64_t w;
    poll_clock pc = {0, 0};
    for (unsigned i = 0;; i++) {
        w = atomic_load_explicit(&word, memory_order_acquire);
        if ((uint32_t)(w >> 32) != seen) return w;
        CPU_RELAX();
        if ((i & 31) == 31) { /* every 32 polls: the clock, and the CPU to any thread that waits for it */
            if (poll_done(&pc, SPIN_US)) break;
            sched_yield();
        }
    }
    pthread_mutex_lock(&mu);
    atomic_fetch_add(&sleepers, 1);
    while ((uint32_t)((w = atomic_load(&word)) >> 32) == seen) pthread_cond_wait(&cv_work, &mu);
    atomic_fetch_sub(&sleepers, 1);
    pthread_mutex_unlock(&mu);
    return w;
}

static void *worker(void *arg) {
    uint32_t seen = (uint32_t)(uintptr_t)arg; /* the generation current when this worker started */
    in_task = 1;
    for (;;) {
        uint64_t w = wait_job(seen);
        seen = (uint32_t)(w >> 32);
        /* join this generation unless it is closed or has its helpers */
        for (;;) {
            uint32_t joined = (uint32_t)w;
            if (joined & CLOSED || (int)joined >= atomic_load_explicit(&job_maxw, memory_order_relaxed)) break;
            if (atomic_compare_exchange_weak(&word, &w, w + 1)) {
                run_tasks(atomic_load_explicit(&job_fn, memory_order_relaxed),
                          atomic_load_explicit(&job_ctx, memory_order_relaxed), (int)joined + 1);
                atomic_fetch_add(&left, 1);
                if (atomic_load(&caller_waits)) {
                    pthread_mutex_lock(&mu);
                    pthread_cond_broadcast(&cv_done);
                    pthread_mutex_unlock(&mu);
                }
                break;
            }
            if ((uint32_t)(w >> 32) != seen) break; /* (cannot happen while a task is unclaimed) */
        }
    }
    return NULL;
}

/* A forked child has no workers: start afresh (npu sweep forks its points). */
static void after_fork_child(void) {
    pthread_mutex_init(&mu, NULL);
    pthread_mutex_init(&use, NULL);
    pthread_cond_init(&cv_work, NULL);
    pthread_cond_init(&cv_done, NULL);
    nworkers = 0;
    atomic_store(&sleepers, 0);
    atomic_store(&caller_waits, 0);
    atomic_store(&word, atomic_load(&word) | CLOSED);
}
static void init_once(void) { pthread_atfork(NULL, NULL, after_fork_child); }

void npk_parallel(int ntasks, npk_task_fn fn, void *ctx) {
    if (ntasks <= 0) return;
    int threads = npk_threads();
    if (threads > ntasks) threads = ntasks;
    if (threads <= 1 || in_task || pthread_mutex_trylock(&use)) {
        for (int t = 0; t < ntasks; t++) fn(ctx, t);
        return;
    }
    pthread_once(&once, init_once);
    uint32_t gen = (uint32_t)(atomic_load(&word) >> 32) + 1;
    while (nworkers < threads - 1) { /* start the missing workers (they live until exit) */
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&th, &at, worker, (void *)(uintptr_t)(gen - 1));
        pthread_attr_destroy(&at);
        if (rc) break; /* fewer helpers: the caller runs what they do not */
        nworkers++;
    }
    /* the job's fields, then its generation (release: a worker that sees it sees them) */
    atomic_store_explicit(&job_fn, fn, memory_order_relaxed);
    atomic_store_explicit(&job_ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&job_maxw, threads - 1, memory_order_relaxed);
    for (int b = 0; b < threads; b++) { /* block b: tasks [b * ntasks / threads, (b + 1) * ntasks / threads) */
        atomic_store_explicit(&blocks[b].next, (int)((int64_t)b * ntasks / threads), memory_order_relaxed);
        blocks[b].end = (int)((int64_t)(b + 1) * ntasks / threads);
    }
    atomic_store_explicit(&nblocks, threads, memory_order_relaxed);
    atomic_store_explicit(&left, 0, memory_order_relaxed);
    atomic_store(&word, (uint64_t)gen << 32);
    if (atomic_load(&sleepers)) {
        pthread_mutex_lock(&mu);
        pthread_cond_broadcast(&cv_work);
        pthread_mutex_unlock(&mu);
    }
    in_task = 1;
    run_tasks(fn, ctx, 0);
    in_task = 0;
    /* no task left: close the job to joins, then wait for the workers inside it */
    uint64_t w = atomic_fetch_or(&word, CLOSED);
    int joined = (int)(uint32_t)(w & ~(uint64_t)CLOSED & 0xffffffffu);
    poll_clock pc = {0, 0};
    for (unsigned i = 0; atomic_load(&left) < joined; i++) {
        CPU_RELAX();
        if ((i & 31) == 31 && (sched_yield(), poll_done(&pc, WAIT_SPIN_US))) {
            pthread_mutex_lock(&mu);
            atomic_store(&caller_waits, 1);
            while (atomic_load(&left) < joined) pthread_cond_wait(&cv_done, &mu);
            atomic_store(&caller_waits, 0);
            pthread_mutex_unlock(&mu);
            break;
        }
    }
    pthread_mutex_unlock(&use);
}

typedef struct range_job {
    npk_range_fn fn;
    void *ctx;
    int64_t n, chunk;
    int ntasks;
} range_job;

static void range_task(void *ctx, int t) {
    const range_job *j = ctx;
    int64_t lo = t * j->chunk;
    j->fn(j->ctx, lo, t == j->ntasks - 1 ? j->n : lo + j->chunk);
}

void npk_parallel_range(int64_t n, int64_t grain, npk_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t units = n / grain, th = npk_threads();
    if (th < 2 || units < 2 || in_task) {
        fn(ctx, 0, n);
        return;
    }
    int64_t k = units < th * 4 ? units : th * 4;
    range_job j = {fn, ctx, n, units / k * grain, 0};
    j.ntasks = (int)(n / j.chunk);
    npk_parallel(j.ntasks, range_task, &j);
}
