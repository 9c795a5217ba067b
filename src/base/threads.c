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
 * or the next one with a stale view. The caller waits for the tasks, not for
 * the workers: it returns once every task is done, and the job's fields stay
 * in their slot until every worker that joined has left (see `slot`).
 *
 * Why it adapts (session 11, pooldyn): on the 2-core KVM host of issue 26 one
 * virtual CPU is at times slow or taken away (a neighbour on the host: a
 * pinned FMA loop at a third to a half of the other's rate, for seconds), and
 * a pool that dealt every job in two equal halves then ran ppocr-v4-det at 2
 * threads slower than at 1 (the caller waiting for a worker's started task
 * that its CPU did not run). The pool measures each worker's rate and what
 * each job saved, deals by the rates, and runs the jobs alone while the
 * workers cost more than they give (`deal`, `measure`). */
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

/* How the tasks are dealt: by the rate of each joining slot (the caller is slot 0, a worker
 * the slot of its join order) relative to the caller's, a running average over the jobs
 * (measure()).
 * Whether the pool is used at all: `saved`, a running sum (decayed by SAVED_DECAY a job) of
 * the time each job saved, the caller's time per task times the tasks less the job's wall
 * time; below zero (a worker that loses its CPU in the middle of its tasks costs the caller
 * more waiting than it gives), the jobs run on the caller alone, the pool untouched, but one
 * every PROBE_NS (of PROBE_TASKS tasks or more: the probe's task is a small part of it; once
 * more at once when the workers slept through it), which deals a worker the last task to
 * measure it again: at RATE_MIN or more, `saved` starts again from zero and the next jobs
 * decide (at RATE_EQUAL, a worker at 0.8 of the caller's rate in a probe's one task stayed
 * shut out: ppocr-v4-det after ppocr-cls-mobile-v2 in `npu bench` then ran on one thread). (Probing every 4 ms, and again after every probe the workers slept through, cost
 * 6-8 probes per ppocr-v4-det run with a worker off its CPU every 10 us of 20, one of them
 * waiting 240 us for the probe's task.) (A cost per job for what
 * the next nodes pay to read what another core wrote, 5-10 us, sent ppocr-cls-mobile-v2,
 * whose 11 jobs a run save ~5 us each, to one thread: tried and dropped.) */
#define RATE_STEP 0.25
#define RATE_MIN 0.5
#define RATE_EQUAL 0.8
#define WORKER_BIAS 0.25
#define PROBE_STEP 0.5
#define RATE_MAX 4.0
#define SAVED_DECAY 0.875
#define PROBE_NS 8000000
#define PROBE_TASKS 4

/* One block of tasks, [front, back) packed in one word: its owner takes the front, a thief
 * the back; with the owner's running figures (its slot: written by the one thread that joined
 * as this slot, read by the caller once every task is done). */
typedef struct block {
    atomic_uint_fast64_t fb; /* (front << 32) | back */
    int64_t start_ns, end_ns; /* when the owner joined, and finished its last task */
    int cnt;                  /* tasks the owner ran */
    char pad[64 - sizeof(atomic_uint_fast64_t) - 2 * sizeof(int64_t) - sizeof(int)];
} block;

/* A job's fields. Two slots, used by turns (generation & 1): the caller returns once every
 * task is done, and fills a slot again only once every worker that joined its job two
 * generations before has left it, so a worker that lost its CPU inside a job (after its last
 * task, or before its first) never makes the caller wait; when one has not left yet, the
 * caller runs the job alone. */
typedef struct slot {
    _Atomic(npk_task_fn) fn;
    _Atomic(void *) ctx;
    atomic_int maxw;   /* workers that may join (threads - 1) */
    atomic_int nb;     /* blocks (the caller's and one per worker that may join) */
    atomic_int ntasks;
    atomic_int done;   /* tasks done */
    atomic_int left;   /* joined workers that have left */
    int joined;        /* workers that joined (the caller's, once it has closed the job) */
    int woke;          /* 1: a worker slept when the job opened (a job it missed teaches nothing) */
    int64_t t0_ns;     /* when the job opened */
    block blocks[NPK_THREADS_MAX];
} slot;

static atomic_uint_fast64_t word;  /* (generation << 32) | joined workers (| CLOSED) */
static slot slots[2];
static atomic_int caller_waits;    /* the caller sleeps on cv_done */
static atomic_int sleepers;        /* workers asleep on cv_work (or about to be) */
/* the dealing's state (the caller's, under `use`) */
static double rate[NPK_THREADS_MAX]; /* slot b's tasks per second / the caller's; 0: not measured */
static double saved;                  /* nanoseconds the pool saved, decayed */
static int64_t last_pub;              /* when a job last opened */
static int reprobe;                   /* this probe repeats one the workers slept through */
/* for npk_threads_now (read without `use`): 1 while the jobs run alone, and last_pub */
static atomic_int alone;
static atomic_int_fast64_t last_pub_at;

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

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The next task of block b from its front (own) or back (a thief's), or -1 when it has none. */
static int take(block *b, int own) {
    uint64_t v = atomic_load_explicit(&b->fb, memory_order_relaxed);
    for (;;) {
        uint32_t f = (uint32_t)(v >> 32), e = (uint32_t)v;
        if (f >= e) return -1;
        uint64_t nv = own ? v + ((uint64_t)1 << 32) : v - 1;
        if (atomic_compare_exchange_weak_explicit(&b->fb, &v, nv, memory_order_acq_rel, memory_order_relaxed))
            return (int)(own ? f : e - 1);
    }
}

/* Slot `self`'s block from its front, then the others' from their backs; one task done is
 * counted after its figures (the caller reads them once `done` reaches the task count).
 * Returns the tasks this thread ran. */
static int run_tasks(slot *s, npk_task_fn fn, void *ctx, int self) {
    int nb = atomic_load_explicit(&s->nb, memory_order_relaxed), n = atomic_load_explicit(&s->ntasks, memory_order_relaxed);
    int cnt = 0;
    for (int k = 0; k < nb; k++) {
        block *b = &s->blocks[(self + k) % nb];
        int t;
        while ((t = take(b, k == 0)) >= 0) {
            fn(ctx, t);
            cnt++;
            if (self) { /* a worker: its figures, for the caller's dealing */
                s->blocks[self].cnt = cnt;
                s->blocks[self].end_ns = now_ns();
            }
            if (atomic_fetch_add(&s->done, 1) + 1 == n && self && atomic_load(&caller_waits)) {
                pthread_mutex_lock(&mu);
                pthread_cond_broadcast(&cv_done);
                pthread_mutex_unlock(&mu);
            }
        }
    }
    return cnt;
}

/* A polling loop's clock: 0 while polling should go on, 1 once `limit_us` have passed
 * since the first call or the thread was off its CPU (two readings PREEMPT_US apart: on a
 * busy machine a poller only takes the CPU from the threads it waits for). */
typedef struct poll_clock {
    int64_t start, last;
} poll_clock;
#define PREEMPT_US 30

static int poll_done(poll_clock *c, int64_t limit_us) {
    int64_t t = now_ns() / 1000;
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
        slot *s = &slots[seen & 1];
        /* join this generation unless it is closed or has its helpers */
        for (;;) {
            uint32_t joined = (uint32_t)w;
            if (joined & CLOSED || (int)joined >= atomic_load_explicit(&s->maxw, memory_order_relaxed)) break;
            if (atomic_compare_exchange_weak(&word, &w, w + 1)) {
                int self = (int)joined + 1;
                s->blocks[self].start_ns = now_ns();
                run_tasks(s, atomic_load_explicit(&s->fn, memory_order_relaxed),
                          atomic_load_explicit(&s->ctx, memory_order_relaxed), self);
                atomic_fetch_add(&s->left, 1);
                break;
            }
            if ((uint32_t)(w >> 32) != seen) break; /* the job closed and the next opened */
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
    for (int i = 0; i < 2; i++) slots[i].joined = 0, atomic_store(&slots[i].left, 0);
    for (int b = 0; b < NPK_THREADS_MAX; b++) rate[b] = 0;
    saved = 0, last_pub = 0, reprobe = 0;
    atomic_store(&alone, 0);
    atomic_store(&last_pub_at, 0);
    atomic_store(&word, atomic_load(&word) | CLOSED);
}
static void init_once(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Deal ntasks over `threads` blocks by the slots' rates, block b [cut[b], cut[b + 1]): equal
 * blocks for the workers at RATE_EQUAL and above (the same split node after node: each
 * thread keeps its part of the map), none for those below RATE_MIN (their tasks would make
 * the caller wait more than they save), and in between each slot its share rounded down,
 * then each task left to the slot that would finish it first (such a worker's finish taken
 * WORKER_BIAS later, the cost of sharing the job; ties to the lower slot), so that two tasks
 * and a worker at 0.6 of the caller's rate run on the caller alone. A probe gives the last
 * worker the last task. Returns 0 when no worker gets a task. */
static int deal(int ntasks, int threads, int probe, int *cut) {
    double w[NPK_THREADS_MAX], sum = 0;
    int cnt[NPK_THREADS_MAX], given = 0, any = 0;
    for (int b = 0; b < threads; b++) {
        w[b] = b == 0 || rate[b] <= 0 || rate[b] >= RATE_EQUAL ? 1 : rate[b] < RATE_MIN ? 0 : rate[b];
        sum += w[b];
    }
    for (int b = 0; b < threads; b++) given += cnt[b] = (int)(ntasks * w[b] / sum);
    for (; given < ntasks; given++) {
        int best = 0;
        double bt = cnt[0] + 1;
        for (int b = 1; b < threads; b++) {
            double t = w[b] <= 0 ? bt : w[b] < 1 ? (cnt[b] + 1) / w[b] * (1 + WORKER_BIAS) : cnt[b] + 1;
            if (t < bt) best = b, bt = t;
        }
        cnt[best]++;
    }
    if (probe && cnt[0] == ntasks) cnt[0]--, cnt[threads - 1]++;
    cut[0] = 0;
    for (int b = 0; b < threads; b++) {
        cut[b + 1] = cut[b] + cnt[b];
        if (b && cnt[b]) any = 1;
    }
    return any;
}

/* A job's figures into `saved` and the rates: slot b's tasks per nanosecond since it joined
 * over the caller's since the job opened (how late a worker comes is in `saved`, not in its
 * rate); a job moves a rate by RATE_STEP times the worker's tasks / 4 (up to 1), a probe by
 * PROBE_STEP. Returns 0 when the job taught nothing (the workers slept through it). */
static int measure(slot *s, int threads, int ntasks, int ccnt, int64_t cend, int64_t end, int probe) {
    if (s->woke && !s->joined) return 0;
    int64_t cs = cend - s->t0_ns;
    if (ccnt && !probe) saved = saved * SAVED_DECAY + (double)cs * ntasks / ccnt - (double)(end - s->t0_ns);
    for (int b = 1; b <= s->joined && b < threads; b++) {
        block *k = &s->blocks[b];
        double r, step = probe ? PROBE_STEP : RATE_STEP * (k->cnt < 4 ? k->cnt / 4.0 : 1);
        if (!ccnt) r = RATE_MAX, step = RATE_STEP;
        else if (!k->cnt) continue;
        else {
            int64_t ws = k->end_ns - k->start_ns;
            r = ws <= 0 || cs <= 0 ? RATE_MAX : ((double)k->cnt / ws) / ((double)ccnt / cs);
            if (r > RATE_MAX) r = RATE_MAX;
        }
        if (rate[b] <= 0) rate[b] = 1;
        rate[b] += step * (r - rate[b]);
        if (probe && r >= RATE_MIN && saved < 0) saved = 0; /* a worker worth tasks again: the next jobs decide */
    }
    return 1;
}

/* The pool's state for npk_threads_now: alone while `saved` is negative or every worker
 * measured below RATE_MIN. */
static void show_state(int threads) {
    int slow = threads > 1;
    for (int b = 1; b < threads; b++)
        if (rate[b] <= 0 || rate[b] >= RATE_MIN) slow = 0;
    atomic_store_explicit(&alone, saved < 0 || slow, memory_order_relaxed);
    atomic_store_explicit(&last_pub_at, last_pub, memory_order_relaxed);
}

int npk_threads_now(void) {
    int n = npk_threads();
    if (n > 1 && (in_task || (atomic_load_explicit(&alone, memory_order_relaxed) &&
                              now_ns() - atomic_load_explicit(&last_pub_at, memory_order_relaxed) < PROBE_NS)))
        return 1;
    return n;
}

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
    slot *s = &slots[gen & 1];
    int cut[NPK_THREADS_MAX + 1];
    int64_t t0 = now_ns();
    int probe = t0 - last_pub >= PROBE_NS && ntasks >= PROBE_TASKS;
    /* a worker still inside this slot's last job, the pool costing more than it saves, or no
     * worker worth a task: alone */
    if (atomic_load(&s->left) < s->joined || (saved < 0 && !probe) || !deal(ntasks, threads, probe, cut)) {
        saved *= SAVED_DECAY;
        pthread_mutex_unlock(&use);
        for (int t = 0; t < ntasks; t++) fn(ctx, t);
        return;
    }
    last_pub = t0;
    /* the job's fields, then its generation (release: a worker that sees it sees them) */
    atomic_store_explicit(&s->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&s->ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&s->maxw, threads - 1, memory_order_relaxed);
    atomic_store_explicit(&s->nb, threads, memory_order_relaxed);
    atomic_store_explicit(&s->ntasks, ntasks, memory_order_relaxed);
    for (int b = 0; b < threads; b++) {
        atomic_store_explicit(&s->blocks[b].fb, (uint64_t)(uint32_t)cut[b] << 32 | (uint32_t)cut[b + 1],
                              memory_order_relaxed);
        s->blocks[b].cnt = 0;
    }
    atomic_store_explicit(&s->done, 0, memory_order_relaxed);
    atomic_store_explicit(&s->left, 0, memory_order_relaxed);
    s->joined = 0;
    s->woke = atomic_load(&sleepers) > 0;
    s->t0_ns = t0;
    atomic_store(&word, (uint64_t)gen << 32);
    if (s->woke) {
        pthread_mutex_lock(&mu);
        pthread_cond_broadcast(&cv_work);
        pthread_mutex_unlock(&mu);
    }
    in_task = 1;
    int ccnt = run_tasks(s, fn, ctx, 0);
    int64_t cend = now_ns();
    in_task = 0;
    /* no task left to take: close the job to joins, then wait for the tasks others run */
    uint64_t w = atomic_fetch_or(&word, CLOSED);
    s->joined = (int)(uint32_t)(w & ~(uint64_t)CLOSED & 0xffffffffu);
    poll_clock pc = {0, 0};
    for (unsigned i = 0; atomic_load(&s->done) < ntasks; i++) {
        CPU_RELAX();
        if ((i & 31) == 31 && (sched_yield(), poll_done(&pc, WAIT_SPIN_US))) {
            pthread_mutex_lock(&mu);
            atomic_store(&caller_waits, 1);
            while (atomic_load(&s->done) < ntasks) pthread_cond_wait(&cv_done, &mu);
            atomic_store(&caller_waits, 0);
            pthread_mutex_unlock(&mu);
            break;
        }
    }
    if (!measure(s, threads, ntasks, ccnt, cend, now_ns(), probe) && probe && !reprobe)
        last_pub = 0, reprobe = 1; /* the workers slept through it, and are awake now: once more */
    else if (probe)
        reprobe = 0;
    show_state(threads);
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
