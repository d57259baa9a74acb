/* The runner's hot path in C: recording, submitting, mapping and waiting for a small call,
 * straight to wgpu-native, with no Python between the calls.
 *
 * Plain C with no Python headers: setup.py compiles it into the package when the package is
 * built (``_hot.so``), and runtime/hot.py loads it from there with cffi's ``dlopen`` (nothing
 * is compiled at run time); wgpu-native's functions come in as
 * pointers (``DmlFns``, filled from the ``lib`` wgpu-py exports), so nothing here links
 * against wgpu-native or depends on where it lives. The few structs passed by value mirror
 * webgpu.h of the wgpu-native versions in ``runtime.native.NATIVE_WGPU``; ``dml_layout`` reports
 * their sizes so that the runner checks them against wgpu-py's own definitions at load time.
 *
 * Map states: wgpu-native calls ``on_mapped`` from whichever thread polls the device, so a
 * map's outcome is written into a ``DmlState`` allocated here, which outlives the Python
 * object that started the map: an owner that goes away while a map is pending marks the
 * state orphaned and the callback frees it when it fires.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
/* (POSIX only: setup.py does not build it on Windows, where the public path is used) */
#define DML_EXPORT __attribute__((visibility("default")))
static void dml_yield(void) { sched_yield(); }
static void dml_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
/* Sleep ``seconds`` (a poller's nap between polls that do not block: ``dml_wait``). */
static void dml_nap(double seconds) {
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&t, NULL);
}
static double dml_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef void *H; /* any wgpu-native handle */
typedef struct { const char *data; size_t length; } StringView;
typedef struct { uint64_t id; } Future;
typedef void (*MapCallback)(uint32_t status, StringView message, void *userdata1, void *userdata2);
typedef struct { void *next_in_chain; uint32_t mode; MapCallback callback; void *userdata1; void *userdata2; } MapInfo;

/* One device's poller: the threads waiting for maps on that device take turns polling it, one
 * at a time (``busy``), and the others wait for their own map to land, spinning, then asleep
 * until it lands or the poller leaves (``polled``). A blocking wgpuDevicePoll holds the device while
 * it waits; several threads polling at once took turns inside wgpu-native anyway, and did
 * several times fewer calls (benchmarks/LOG.md, "The settings' measurements": one poller).
 * No poll starts while a batch of calls is recorded and submitted, nor while any submit is
 * under way (``submitting``): a poll takes the device's locks that recording and submitting
 * need (beside a spinning poller a batch's recording and submit took several times their
 * CPU time: the same table). */
typedef struct {
    _Atomic int busy, sleepers, submitting;
    _Atomic int landed; /* a map landed while a thread polled: it wakes the sleepers after its poll */
    pthread_mutex_t mu;
    pthread_cond_t polled;
} DmlPoller;

/* Wake the threads asleep on ``p`` (they look whether their own map has landed). */
static void wake_sleepers(DmlPoller *p) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->polled);
    pthread_mutex_unlock(&p->mu);
}

typedef struct {
    H (*create_encoder)(H device, const void *descriptor);
    H (*begin_compute_pass)(H encoder, const void *descriptor);
    void (*set_pipeline)(H pass, H pipeline);
    void (*set_bind_group)(H pass, uint32_t index, H group, size_t offsets, const uint32_t *offset);
    void (*dispatch)(H pass, uint32_t x, uint32_t y, uint32_t z);
    void (*end_pass)(H pass);
    void (*release_pass)(H pass);
    void (*clear_buffer)(H encoder, H buffer, uint64_t offset, uint64_t size);
    void (*copy_buffer)(H encoder, H src, uint64_t src_offset, H dst, uint64_t dst_offset, uint64_t size);
    H (*finish)(H encoder, const void *descriptor);
    void (*release_encoder)(H encoder);
    uint64_t (*submit_for_index)(H queue, size_t count, const H *command_buffers);
    void (*release_command_buffer)(H command_buffer);
    Future (*map_async)(H buffer, uint64_t mode, size_t offset, size_t size, MapInfo info);
    uint32_t (*poll)(H device, uint32_t wait, const uint64_t *submission);
    void *(*mapped_range)(H buffer, size_t offset, size_t size);
    void (*unmap)(H buffer);
    /* constants of webgpu.h, from wgpu-py's lib */
    uint32_t callback_mode;  /* WGPUCallbackMode_AllowProcessEvents */
    uint32_t map_success;    /* WGPUMapAsyncStatus_Success */
    uint64_t map_read, map_write;
    /* descriptors wgpu-py's ffi made (all default: NULL chain, empty label) */
    const void *encoder_descriptor, *pass_descriptor, *buffer_descriptor;
    DmlPoller *poller; /* the device's: a map that lands wakes the threads asleep on it */
} DmlFns;

enum { PENDING = 0, LANDED = 1, FAILED = 2, ORPHANED = 3 };
typedef struct { _Atomic int word; } DmlState;

typedef struct { H pipeline, group; uint32_t x, y, z; } DmlStep;

/* One small call: an optional upload (copied from the mapped MAP_WRITE buffer ``wstaging``
 * into ``input``), an optional clear, the passes, and the read-back of ``out_size`` bytes of
 * ``output`` into the MAP_READ buffer ``rstaging``. A staging buffer that is the input (or
 * the output) itself, which the passes bind, needs no copy. */
typedef struct {
    H wstaging; DmlState *wstate; H input; uint64_t in_size;
    H clear; uint64_t clear_size;
    const DmlStep *steps; size_t n_steps;
    H output; uint64_t out_offset; H rstaging; DmlState *rstate; uint64_t out_size;
    uint64_t ticket; /* out: the submission to wait for */
} DmlCall;

DML_EXPORT size_t dml_layout(int which) {
    switch (which) {
        case 0: return sizeof(MapInfo);
        case 1: return offsetof(MapInfo, callback);
        case 2: return sizeof(StringView);
        case 3: return sizeof(Future);
        case 4: return sizeof(DmlCall);
        case 5: return sizeof(DmlFns);
        default: return 0;
    }
}

static void on_mapped(uint32_t status, StringView message, void *userdata1, void *userdata2) {
    (void)message;
    DmlState *s = (DmlState *)userdata1;
    const DmlFns *f = (const DmlFns *)userdata2;
    int expected = PENDING;
    int outcome = status == f->map_success ? LANDED : FAILED;
    if (!atomic_compare_exchange_strong(&s->word, &expected, outcome)) {
        free(s); /* orphaned */
        return;
    }
    DmlPoller *p = f->poller;
    if (p && atomic_load(&p->sleepers)) { /* (its waiter may be asleep: wake the sleepers) */
        /* Once for all the maps one poll lands, by the thread polling after it returns (the
         * calls of a batch land together: a wake for each map woke every sleeper up to as many
         * times as there were maps), or now if no thread polls. */
        if (atomic_load(&p->busy)) atomic_store(&p->landed, 1);
        else wake_sleepers(p);
    }
}

DML_EXPORT DmlState *dml_state_new(int landed) {
    DmlState *s = (DmlState *)malloc(sizeof(DmlState));
    if (s) atomic_init(&s->word, landed ? LANDED : PENDING);
    return s;
}

DML_EXPORT int dml_state(const DmlState *s) { return atomic_load((_Atomic int *)&s->word); }

/* The owner is gone: free now, or let a pending map's callback free it. */
DML_EXPORT void dml_state_drop(DmlState *s) {
    int expected = PENDING;
    if (!atomic_compare_exchange_strong(&s->word, &expected, ORPHANED)) free(s);
}

DML_EXPORT void dml_map(const DmlFns *f, H buffer, int write, size_t size, DmlState *s) {
    MapInfo info = {NULL, f->callback_mode, on_mapped, s, (void *)f};
    atomic_store(&s->word, PENDING);
    f->map_async(buffer, write ? f->map_write : f->map_read, 0, size, info);
}

DML_EXPORT DmlPoller *dml_poller_new(void) {
    DmlPoller *p = (DmlPoller *)calloc(1, sizeof(DmlPoller));
    if (!p) return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->polled, NULL);
    return p;
}

DML_EXPORT void dml_poller_free(DmlPoller *p) {
    if (!p) return;
    pthread_cond_destroy(&p->polled);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Sleep until ``s`` lands or the poller leaves (at most ``seconds``), unless nobody polls now
 * or ``s`` has landed. (A sleeper is counted before it looks, and the poller looks at the count
 * after it lets go, so a poller that leaves meanwhile always wakes it.) */
static void sleep_until_polled(DmlPoller *p, const DmlState *s, double seconds) {
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    if (atomic_load(&p->busy) && dml_state(s) == PENDING) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long ns = until.tv_nsec + (long)(seconds * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&p->polled, &p->mu, &until);
    }
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
}

/* This thread polls no more (its map landed, or it gives up): one of the sleepers takes over. */
static void done_polling(DmlPoller *p) {
    atomic_store(&p->busy, 0);
    atomic_store(&p->landed, 0);
    if (atomic_load(&p->sleepers)) wake_sleepers(p);
}

/* A thread that is not polling spins this long for its map before it sleeps (woken when a map
 * lands or the poller stops): long enough for the poll under way to end, short enough that
 * threads waiting at once do not keep the cores from the threads that have work. */
#define DML_SPIN_NOT_POLLING_S 20e-6

/* Wait until ``s`` has landed, polling the device when no other thread does (one at a time:
 * the device's poller, ``f->poller``; NULL: this thread polls alone). For the first ``spin_s``
 * seconds the polls do not block (a small call ends within them). After that, with ``nap_s``
 * 0, the poller blocks on ``ticket`` (or all work when NULL); with ``nap_s`` > 0 (a large
 * transfer's wait: a staging buffer of its ring, a chunk's result) it naps ``nap_s`` between
 * polls that still do not block: a blocking wgpuDevicePoll holds wgpu-core's fence lock until
 * the GPU reaches its ticket (wgpu 29, gfx-rs/wgpu#9470), and every other thread's submit waits
 * for that lock, so a thread waiting for one chunk's result kept the next chunk's copies off
 * the queue, and the maps of its staging waited for the same poll (benchmarks/LOG.md,
 * 2026-11-28, issue 49). A thread that is not polling spins briefly, then sleeps until a map
 * lands or the poller stops. When the queue is idle and the map has not landed for
 * ``idle_timeout_s``, the device is taken as lost. 1: landed, 2: the map failed, -1: timed
 * out. */
DML_EXPORT int dml_wait(const DmlFns *f, H device, const DmlState *s, double spin_s, double nap_s,
                        double idle_timeout_s, const uint64_t *ticket) {
    DmlPoller *p = f->poller;
    int state = dml_state(s);
    if (state != PENDING) return state;
    double start = dml_now();
    double give_up = spin_s > 0 ? start + spin_s : 0;
    double idle_since = -1;
    int polling = 0; /* this thread holds the poller's turn */
    while ((state = dml_state(s)) == PENDING) {
        double now = dml_now();
        int spinning = give_up > 0 && now < give_up;
        int free_now = 0;
        if (p && !polling) {
            if (!atomic_compare_exchange_strong(&p->busy, &free_now, 1)) {
                if (spinning && now - start < DML_SPIN_NOT_POLLING_S) dml_pause();
                else sleep_until_polled(p, s, 1e-3);
                continue;
            }
            polling = 1;
        }
        if (p && atomic_load(&p->submitting) > 0) { /* let the submit in */
            dml_pause();
            continue;
        }
        int block = !spinning && nap_s <= 0;
        uint32_t idle = f->poll(device, block, block ? ticket : NULL);
        if (p && atomic_exchange(&p->landed, 0)) wake_sleepers(p);
        if (spinning || (state = dml_state(s)) != PENDING) continue;
        if (!block) dml_nap(nap_s); /* (holding the turn: the others' maps land in these polls) */
        if (!idle) continue;
        ticket = NULL;
        now = dml_now();
        if (idle_since < 0) idle_since = now;
        if (now - idle_since > idle_timeout_s) break;
        if (block) dml_yield();
    }
    if (polling) done_polling(p);
    return state == PENDING ? -1 : state;
}

/* Record a clear (``clear``: NULL for none) and the passes into ``encoder`` (NULL: a new one). */
DML_EXPORT H dml_record(const DmlFns *f, H device, H encoder, H clear, uint64_t clear_size, const DmlStep *steps,
                        size_t n_steps) {
    if (!encoder) encoder = f->create_encoder(device, f->encoder_descriptor);
    if (clear) f->clear_buffer(encoder, clear, 0, clear_size);
    for (size_t i = 0; i < n_steps; i++) {
        H pass = f->begin_compute_pass(encoder, f->pass_descriptor);
        f->set_pipeline(pass, steps[i].pipeline);
        f->set_bind_group(pass, 0, steps[i].group, 0, NULL);
        f->dispatch(pass, steps[i].x, steps[i].y, steps[i].z);
        f->end_pass(pass);
        f->release_pass(pass);
    }
    return encoder;
}

/* Finish the encoders into command buffers, in place; the encoders are released. The
 * caller checks for errors before it submits them: wgpu-native aborts the process on a
 * submit that fails (a command buffer of a failed finish, a lost device), where a failed
 * finish is reported to the error handler and can be raised. */
static void dml_finish(const DmlFns *f, H *encoders, size_t count) {
    for (size_t i = 0; i < count; i++) {
        H encoder = encoders[i];
        encoders[i] = f->finish(encoder, f->buffer_descriptor);
        f->release_encoder(encoder);
    }
}

/* Command buffers given up (not submitted). */
DML_EXPORT void dml_release(const DmlFns *f, H *buffers, size_t count) {
    for (size_t i = 0; i < count; i++) f->release_command_buffer(buffers[i]);
}

/* Submit the command buffers in one submission and release them; the submission's index. */
static uint64_t dml_submit(const DmlFns *f, H queue, H *buffers, size_t count) {
    DmlPoller *p = f->poller;
    if (p) atomic_fetch_add(&p->submitting, 1);
    uint64_t index = f->submit_for_index(queue, count, buffers);
    if (p) atomic_fetch_sub(&p->submitting, 1);
    dml_release(f, buffers, count);
    return index;
}

/* Copies into mapped staging on several cores. Mapped upload staging is write-combined
 * (memory of the GPU's behind the PCIe bar, on a discrete GPU): one core writes it at about
 * 15 GB/s, a few cores together about twice as fast (the same table: copy helpers). ``DmlCopier``'s helper
 * threads spin for ``spin_s`` after their last copy (so that a call that follows soon finds
 * them awake), then sleep until the next. A copy is cut into chunks that whoever comes first
 * claims, the caller included, so a copy never waits for a helper to wake up: at worst the
 * caller copies every chunk itself. One copy uses the helpers at a time (others copy alone),
 * and in a child forked after the helpers started (they are not there) the caller copies
 * alone; ``dml_copier_stop`` ends them. */
#define DML_MAX_HELPERS 16
typedef struct {
    /* the current copy's generation (high 32 bits), chunks (16) and next chunk to claim (16) */
    _Atomic uint64_t claim;
    _Atomic int done, sleeping, busy, stop;
    char *dst; const char *src; size_t nbytes, chunk;
    double spin_s;
    unsigned forks; /* dml_forks when the helpers started */
    int helpers;
    pthread_mutex_t mu; pthread_cond_t wake;
    pthread_t threads[DML_MAX_HELPERS];
} DmlCopier;

static _Atomic unsigned dml_forks;
static void dml_forked(void) { atomic_fetch_add(&dml_forks, 1); }

static uint32_t claim_gen(uint64_t c) { return (uint32_t)(c >> 32); }

/* Copy the chunks of copy ``gen`` that are still unclaimed, one at a time. */
static void copy_chunks(DmlCopier *p, uint32_t gen) {
    uint64_t c = atomic_load(&p->claim);
    for (;;) {
        uint32_t chunks = (uint32_t)(c >> 16) & 0xFFFF, next = (uint32_t)c & 0xFFFF;
        if (claim_gen(c) != gen || next >= chunks) return;
        if (!atomic_compare_exchange_weak(&p->claim, &c, c + 1)) continue;
        /* claimed: the copy cannot end (and its fields change) before this chunk is done */
        size_t first = (size_t)next * p->chunk;
        size_t len = p->nbytes - first < p->chunk ? p->nbytes - first : p->chunk;
        memcpy(p->dst + first, p->src + first, len);
        atomic_fetch_add(&p->done, 1);
        c = atomic_load(&p->claim);
    }
}

static void *helper(void *arg) {
    DmlCopier *p = (DmlCopier *)arg;
#ifdef __linux__
    prctl(PR_SET_NAME, "dmlgpu-copy", 0, 0, 0);
#endif
    uint32_t seen = claim_gen(atomic_load(&p->claim));
    while (!atomic_load(&p->stop)) {
        double until = dml_now() + p->spin_s;
        unsigned spins = 0;
        while (claim_gen(atomic_load(&p->claim)) == seen && !atomic_load(&p->stop)) {
            if ((++spins & 255) == 0 && dml_now() > until) {
                pthread_mutex_lock(&p->mu);
                atomic_fetch_add(&p->sleeping, 1);
                while (claim_gen(atomic_load(&p->claim)) == seen && !atomic_load(&p->stop))
                    pthread_cond_wait(&p->wake, &p->mu);
                atomic_fetch_sub(&p->sleeping, 1);
                pthread_mutex_unlock(&p->mu);
            }
            dml_pause();
        }
        seen = claim_gen(atomic_load(&p->claim));
        copy_chunks(p, seen);
    }
    return NULL;
}

static pthread_once_t dml_fork_hook = PTHREAD_ONCE_INIT;
static void dml_hook_forks(void) { pthread_atfork(NULL, NULL, dml_forked); }

/* A copier with ``helpers`` threads (at most DML_MAX_HELPERS); NULL if none could start. */
DML_EXPORT DmlCopier *dml_copier_start(int helpers, double spin_s) {
    if (helpers < 1) return NULL;
    if (helpers > DML_MAX_HELPERS) helpers = DML_MAX_HELPERS;
    DmlCopier *p = (DmlCopier *)calloc(1, sizeof(DmlCopier));
    if (!p) return NULL;
    pthread_once(&dml_fork_hook, dml_hook_forks);
    p->spin_s = spin_s;
    p->forks = atomic_load(&dml_forks);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    while (p->helpers < helpers && pthread_create(&p->threads[p->helpers], NULL, helper, p) == 0) p->helpers++;
    if (!p->helpers) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

/* How many helpers ``p`` has running (0 in a forked child). */
DML_EXPORT int dml_copier_helpers(const DmlCopier *p) {
    return p->forks == atomic_load(&dml_forks) ? p->helpers : 0;
}

/* End the helpers (they finish any chunk they hold) and free ``p``. In a forked child the
 * helpers are not there, and their lock may have been copied held: ``p`` is left as it is. */
DML_EXPORT void dml_copier_stop(DmlCopier *p) {
    if (!p || !dml_copier_helpers(p)) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->helpers; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* dst[:n] = src[:n], on the helpers of ``p`` as well when they are free and ``n`` is at
 * least ``parallel_above`` (``p`` NULL: on this thread). */
static void dml_copy(DmlCopier *p, void *dst, const void *src, size_t n, size_t parallel_above) {
    int free_now = 0;
    if (!p || n < parallel_above || !dml_copier_helpers(p) ||
        !atomic_compare_exchange_strong(&p->busy, &free_now, 1)) {
        memcpy(dst, src, n);
        return;
    }
    size_t parts = (size_t)p->helpers + 1;
    p->dst = (char *)dst;
    p->src = (const char *)src;
    p->nbytes = n;
    p->chunk = ((n + parts - 1) / parts + 63) & ~(size_t)63;
    uint64_t chunks = (n + p->chunk - 1) / p->chunk;
    atomic_store(&p->done, 0);
    uint32_t gen = claim_gen(atomic_load(&p->claim)) + 1;
    atomic_store(&p->claim, ((uint64_t)gen << 32) | (chunks << 16)); /* published: helpers may claim */
    if (atomic_load(&p->sleeping)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    copy_chunks(p, gen);
    while ((uint64_t)atomic_load(&p->done) < chunks) dml_pause();
    atomic_store(&p->busy, 0);
}

/* A write's start: wait until ``s`` has landed (``dml_wait``: the map of the staging buffer
 * ``buffer``, mapped again once the GPU has copied out of it), then copy ``nbytes`` from
 * ``data`` into it (zeros up to ``size``; on the copier ``p``'s helpers too, see ``dml_copy``)
 * and unmap it, in one call. As ``dml_read``: 1: done, 2: the map failed, -1: timed out, -2:
 * the buffer has no mapped memory (a lost device). */
DML_EXPORT int dml_fill(const DmlFns *f, H device, const DmlState *s, double spin_s, double idle_timeout_s,
                        DmlCopier *p, size_t parallel_above, H buffer, size_t size, const void *data, size_t nbytes) {
    int landed = dml_wait(f, device, s, spin_s, 0, idle_timeout_s, NULL); /* (a small write's: it blocks) */
    if (landed != 1) return landed;
    unsigned char *memory = (unsigned char *)f->mapped_range(buffer, 0, size);
    if (!memory) return -2;
    dml_copy(p, memory, data, nbytes, parallel_above);
    if (size > nbytes) memset(memory + nbytes, 0, size - nbytes);
    f->unmap(buffer);
    return 1;
}

/* A read's end: wait until ``s`` has landed (``dml_wait``; ``nap_s`` > 0: a large transfer's
 * wait), then copy the first ``nbytes`` of the mapped buffer ``buffer`` (mapped for ``size``)
 * to ``out`` and unmap it, in one call. 1: done, 2: the map failed, -1: timed out, -2: the
 * buffer has no mapped memory (a lost device). */
DML_EXPORT int dml_read(const DmlFns *f, H device, const DmlState *s, double spin_s, double nap_s,
                        double idle_timeout_s, const uint64_t *ticket, H buffer, size_t size, void *out, size_t nbytes) {
    int landed = dml_wait(f, device, s, spin_s, nap_s, idle_timeout_s, ticket);
    if (landed != 1) return landed;
    const void *memory = f->mapped_range(buffer, 0, size);
    if (!memory) return -2;
    memcpy(out, memory, nbytes);
    f->unmap(buffer);
    return 1;
}

/* Polls may start again: the batch ``dml_record_calls`` began is submitted, or given up. */
DML_EXPORT void dml_resume_polls(const DmlFns *f) {
    if (f->poller) atomic_fetch_sub(&f->poller->submitting, 1);
}

/* Record the calls into one encoder, after the ``n_pending`` encoders ``pending`` (``pending``
 * has room for one more), and finish them all into command buffers in place (``dml_finish``);
 * their count. First every upload's copy (where a call's staging is not its input), then
 * every call's clear and dispatches in order, the dispatches in one compute pass that only a
 * clear ends (WebGPU orders the dispatches of a pass, and makes each one's writes visible to
 * the next), then every read-back's copy (where a call's read staging is not its output).
 * Moving the copies is safe because a call's staging buffers and a kit's input are its own,
 * and an output being read is no other call's. What threads commit at once goes to the GPU
 * this way: one encoder, one pass, one finish, one submit. */
DML_EXPORT size_t dml_record_calls(const DmlFns *f, H device, DmlCall *const *calls, size_t n, H *pending,
                                   size_t n_pending) {
    if (f->poller) atomic_fetch_add(&f->poller->submitting, 1); /* (until dml_submit_calls, or dml_resume_polls) */
    H encoder = f->create_encoder(device, f->encoder_descriptor);
    for (size_t i = 0; i < n; i++) {
        const DmlCall *c = calls[i];
        if (c->wstaging && c->wstaging != c->input) f->copy_buffer(encoder, c->wstaging, 0, c->input, 0, c->in_size);
    }
    H pass = NULL;
    for (size_t i = 0; i < n; i++) {
        const DmlCall *c = calls[i];
        if (c->clear) {
            if (pass) { f->end_pass(pass); f->release_pass(pass); pass = NULL; }
            f->clear_buffer(encoder, c->clear, 0, c->clear_size);
        }
        for (size_t k = 0; k < c->n_steps; k++) {
            if (!pass) pass = f->begin_compute_pass(encoder, f->pass_descriptor);
            f->set_pipeline(pass, c->steps[k].pipeline);
            f->set_bind_group(pass, 0, c->steps[k].group, 0, NULL);
            f->dispatch(pass, c->steps[k].x, c->steps[k].y, c->steps[k].z);
        }
    }
    if (pass) { f->end_pass(pass); f->release_pass(pass); }
    for (size_t i = 0; i < n; i++) {
        const DmlCall *c = calls[i];
        if (c->rstaging && c->rstaging != c->output)
            f->copy_buffer(encoder, c->output, c->out_offset, c->rstaging, 0, c->out_size);
    }
    pending[n_pending++] = encoder;
    dml_finish(f, pending, n_pending);
    return n_pending;
}

/* Submit the command buffers (``dml_record_calls``) in one submission and start every call's
 * maps: its read-back's, and its upload staging's again; each call's ticket, and the return
 * value, is the submission's index. */
DML_EXPORT uint64_t dml_submit_calls(const DmlFns *f, H queue, DmlCall *const *calls, size_t n, H *buffers,
                                     size_t count) {
    uint64_t ticket = dml_submit(f, queue, buffers, count);
    for (size_t i = 0; i < n; i++) {
        DmlCall *c = calls[i];
        c->ticket = ticket;
        if (c->rstaging) dml_map(f, c->rstaging, 0, c->out_size, c->rstate);
        if (c->wstaging) dml_map(f, c->wstaging, 1, c->in_size, c->wstate);
    }
    dml_resume_polls(f);
    return ticket;
}
