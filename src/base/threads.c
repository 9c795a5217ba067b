/* SPDX-License-Identifier: MIT */
/* The shared worker pool of include/npukit/threads.h. */
#include "npukit/threads.h"

#include "npukit/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* One call of npk_parallel: on the caller's stack; workers join it while it is
 * open and the caller waits until every worker that joined has left. */
typedef struct job {
    npk_task_fn fn;
    void *ctx;
    int ntasks;
    atomic_int next; /* the next task to take */
    int open;        /* workers may still join (under mu) */
    int refs;        /* workers inside (under mu) */
    int max_workers; /* threads - 1 */
} job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER, cv_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t use = PTHREAD_MUTEX_INITIALIZER; /* one npk_parallel at a time uses the pool */
static job *cur;                                        /* the open job, or NULL (under mu) */
static unsigned long cur_gen;                           /* counts jobs (under mu) */
static int nworkers;                                    /* started (under mu) */
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

static void run_tasks(job *j) {
    int t;
    while ((t = atomic_fetch_add(&j->next, 1)) < j->ntasks) j->fn(j->ctx, t);
}

static void *worker(void *arg) {
    (void)arg;
    in_task = 1;
    unsigned long seen = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!cur || !cur->open || cur_gen == seen || cur->refs >= cur->max_workers) {
            if (cur && cur_gen != seen && cur->refs >= cur->max_workers) seen = cur_gen; /* enough help there */
            pthread_cond_wait(&cv_work, &mu);
        }
        job *j = cur;
        seen = cur_gen;
        j->refs++;
        pthread_mutex_unlock(&mu);
        run_tasks(j);
        pthread_mutex_lock(&mu);
        if (--j->refs == 0) pthread_cond_broadcast(&cv_done);
    }
    return NULL;
}

/* A forked child has no workers: start afresh (npu sweep forks its points). */
static void after_fork_child(void) {
    pthread_mutex_init(&mu, NULL);
    pthread_mutex_init(&use, NULL);
    pthread_cond_init(&cv_work, NULL);
    pthread_cond_init(&cv_done, NULL);
    cur = NULL;
    nworkers = 0;
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
    job j = {.fn = fn, .ctx = ctx, .ntasks = ntasks, .open = 1, .refs = 0, .max_workers = threads - 1};
    atomic_init(&j.next, 0);
    pthread_mutex_lock(&mu);
    while (nworkers < threads - 1) { /* start the missing workers (they live until exit) */
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&th, &at, worker, NULL);
        pthread_attr_destroy(&at);
        if (rc) break; /* fewer helpers: the caller runs what they do not */
        nworkers++;
    }
    cur = &j;
    cur_gen++;
    pthread_cond_broadcast(&cv_work);
    pthread_mutex_unlock(&mu);
    in_task = 1;
    run_tasks(&j);
    in_task = 0;
    pthread_mutex_lock(&mu);
    j.open = 0;
    cur = NULL;
    while (j.refs > 0) pthread_cond_wait(&cv_done, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&use);
}
