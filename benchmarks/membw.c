// membw: streaming-read bandwidth probe for benchmarks/RESULTS.md.
//
// Allocates one anonymous buffer (2 MiB aligned), optionally asks for
// transparent huge pages with madvise(MADV_HUGEPAGE) (otherwise it asks for
// none with MADV_NOHUGEPAGE, so the two cases differ whatever the system
// default is), touches every page by writing it, then times full read passes
// over it with N threads, each thread summing its own contiguous slice. The
// best pass of --runs is reported, in GB/s (1e9 bytes per second), as one JSON
// object on stdout.
//
//   cc -O3 -march=native -pthread -o membw membw.c
//   ./membw --mib 1024 --threads 2 --hugepage 1 --runs 7
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define ALIGN (2u << 20)

typedef struct {
    const uint64_t *base;
    size_t words;          // this thread's slice, in 8-byte words
    pthread_barrier_t *start;
    pthread_barrier_t *done;
    int passes;
    volatile uint64_t sink;
} worker_t;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Eight independent accumulators so the loop is bound by loads, not by the
// add chain; -O3 -march=native turns it into wide vector loads.
static uint64_t read_slice(const uint64_t *p, size_t n) {
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        a0 += p[i + 0]; a1 += p[i + 1]; a2 += p[i + 2]; a3 += p[i + 3];
        a4 += p[i + 4]; a5 += p[i + 5]; a6 += p[i + 6]; a7 += p[i + 7];
    }
    for (; i < n; i++) a0 += p[i];
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

static void *worker(void *arg) {
    worker_t *w = arg;
    for (int k = 0; k < w->passes; k++) {
        pthread_barrier_wait(w->start);
        w->sink += read_slice(w->base, w->words);
        pthread_barrier_wait(w->done);
    }
    return NULL;
}

static void usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--mib N (>=1024)] [--threads N] [--hugepage 0|1] [--runs N]\n", argv0);
    exit(2);
}

static long anon_huge_kib(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) break;
    }
    fclose(f);
    return kib;
}

int main(int argc, char **argv) {
    size_t mib = 1024;
    int threads = 1, huge = 0, runs = 7;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage(argv[0]);
        if (!strcmp(argv[i], "--mib")) mib = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hugepage")) huge = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[++i]);
        else usage(argv[0]);
    }
    if (threads < 1 || runs < 1 || mib < 1) usage(argv[0]);

    size_t bytes = mib << 20;
    size_t map_bytes = bytes + ALIGN;
    uint8_t *raw = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) { perror("mmap"); return 1; }
    uint8_t *buf = (uint8_t *)(((uintptr_t)raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    int madv_rc = madvise(buf, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    int madv_errno = madv_rc ? errno : 0;

    // First touch: write every byte (a non-zero pattern, so no page stays the
    // shared zero page and the read loop sees real data).
    uint64_t *w64 = (uint64_t *)buf;
    size_t words = bytes / 8;
    for (size_t i = 0; i < words; i++) w64[i] = i * 0x9E3779B97F4A7C15ull;
    long huge_kib = anon_huge_kib();

    pthread_barrier_t start, done;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    worker_t *ws = calloc((size_t)threads, sizeof *ws);
    size_t per = (words / (size_t)threads) & ~(size_t)7;
    for (int t = 0; t < threads; t++) {
        ws[t].base = w64 + (size_t)t * per;
        ws[t].words = (t == threads - 1) ? words - (size_t)t * per : per;
        ws[t].start = &start;
        ws[t].done = &done;
        ws[t].passes = runs + 1;  // one untimed warm-up pass
        pthread_create(&tid[t], NULL, worker, &ws[t]);
    }

    double best = 0.0, sum = 0.0;
    double *gbs = calloc((size_t)runs, sizeof *gbs);
    for (int k = 0; k < runs + 1; k++) {
        pthread_barrier_wait(&start);
        double t0 = now_s();
        pthread_barrier_wait(&done);
        double dt = now_s() - t0;
        if (k == 0) continue;
        double g = (double)bytes / dt / 1e9;
        gbs[k - 1] = g;
        sum += g;
        if (g > best) best = g;
    }
    uint64_t sink = 0;
    for (int t = 0; t < threads; t++) { pthread_join(tid[t], NULL); sink += ws[t].sink; }

    printf("{\"bytes\": %zu, \"threads\": %d, \"hugepage\": %s, \"madvise_ok\": %s, \"madvise_errno\": %d, "
           "\"anon_huge_kib\": %ld, \"runs\": %d, \"best_gb_s\": %.3f, \"mean_gb_s\": %.3f, \"samples_gb_s\": [",
           bytes, threads, huge ? "true" : "false", madv_rc ? "false" : "true", madv_errno,
           huge_kib, runs, best, sum / runs);
    for (int k = 0; k < runs; k++) printf("%s%.3f", k ? ", " : "", gbs[k]);
    printf("], \"checksum\": %llu}\n", (unsigned long long)sink);
    munmap(raw, map_bytes);
    free(gbs); free(ws); free(tid);
    return 0;
}
