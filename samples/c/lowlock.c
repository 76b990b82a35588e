/* lowlock: the multi-producer, multi-consumer queue from the CppCon 2014 timeline study.
 *
 * A linked list with one lock for producers (the tail) and one for consumers (the head). It has
 * the study's two flaws:
 *   - consumers copy the (large) item while holding the consumer lock, so they serialize on it;
 *   - producers free the nodes consumers are done with while holding the producer lock.
 * `--fixed` moves both out of the locks. The program measures items per second for 1 to 4
 * consumers against 2 producers: with the flaws, adding consumers does not help (or hurts).
 *
 * Ground truth (samples/TRUTH.md), only with --truth-sample (the queue runs millions of items):
 * `produce` and `consume` per item, id = item number, each the item's critical section (its
 * lock returned -> its unlock called). The queue hands items over under the two locks alone,
 * with no call that waits or wakes, so the critical sections are where the items show:
 * `scalpel infer --cut-at-locks` makes each one a leaf.
 * Usage: lowlock [--fixed] [--items N] [--consumers K] (K = 0: sweep 1..4) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "truth.h"

#define ITEM_BYTES 2048
#define PRODUCERS 2

struct node {
    /* Written by producers under their lock and read by consumers under theirs: atomic. */
    struct node *_Atomic next;
    /* 2 when the node can be freed: its item was copied out (+1) and a later consume moved the
     * head past it (+1). */
    _Atomic int done;
    int64_t id;
    unsigned char data[ITEM_BYTES];
};

/* head: the last consumed node (a dummy), moved by consumers, read by producers' cleanup;
 * tail: the last produced node; oldest: the first node not yet freed. */
static struct node *_Atomic head;
static struct node *tail, *oldest;
static pthread_mutex_t produce_lock = PTHREAD_MUTEX_INITIALIZER, consume_lock = PTHREAD_MUTEX_INITIALIZER;
static int fixed, record_truth;
static long items_per_producer;
static _Atomic long consumed_total;
static volatile uint64_t sink;

/* Unlinks the nodes every consumer is done with (call with the producer lock held) and returns
 * them as a chain ending where `oldest` now starts. */
static struct node *detach_consumed(struct node **end) {
    struct node *first = oldest;
    while (oldest != head && atomic_load(&oldest->done) == 2) oldest = oldest->next;
    *end = oldest;
    return first;
}

static void free_chain(struct node *n, struct node *end) {
    while (n != end) {
        struct node *next = n->next;
        free(n);
        n = next;
    }
}

/* Frees nodes every consumer is done with, inside the producer lock: the study's flaw. */
static __attribute__((noinline)) void cleanup(void) {
    struct node *end, *first = detach_consumed(&end);
    free_chain(first, end);
}

static __attribute__((noinline)) void produce(int64_t id) {
    struct node *n = malloc(sizeof *n);
    n->next = NULL;
    atomic_store(&n->done, 0);
    n->id = id;
    memset(n->data, (int)(id & 0xff), sizeof n->data);
    struct node *first = NULL, *end = NULL;
    pthread_mutex_lock(&produce_lock);
    uint64_t start = record_truth ? truth_now() : 0;
    tail->next = n;
    tail = n;
    if (fixed) first = detach_consumed(&end); /* only pointer moves inside the lock */
    else cleanup();                              /* flaw: the frees inside the producer lock */
    uint64_t stop = record_truth ? truth_now() : 0;
    pthread_mutex_unlock(&produce_lock);
    if (fixed) free_chain(first, end);
    if (record_truth) truth_task("produce", id, -1, start, stop);
}

/* Leaves the consumer lock when the queue was empty. A function of its own so that this unlock
 * has a stack of its own: the compiler would otherwise merge it with the item's unlock, and a
 * failed attempt's critical section would look like an item's. */
static __attribute__((noinline)) void found_empty(void) {
    pthread_mutex_unlock(&consume_lock);
}

static __attribute__((noinline)) int consume(unsigned char *out) {
    pthread_mutex_lock(&consume_lock);
    uint64_t start = record_truth ? truth_now() : 0;
    struct node *next = head->next;
    if (!next) {
        found_empty();
        return 0;
    }
    struct node *old = head;
    head = next;
    if (!fixed) memcpy(out, next->data, ITEM_BYTES); /* flaw: the copy inside the consumer lock */
    uint64_t stop = record_truth ? truth_now() : 0;
    int64_t id = next->id;
    pthread_mutex_unlock(&consume_lock);
    if (fixed) memcpy(out, next->data, ITEM_BYTES);
    atomic_fetch_add(&next->done, 1); /* copied */
    atomic_fetch_add(&old->done, 1);  /* passed */
    sink += out[0];
    if (record_truth) truth_task("consume", id, -1, start, stop);
    return 1;
}

static void *producer_main(void *arg) {
    int64_t base = (int64_t)(intptr_t)arg * items_per_producer;
    for (long i = 0; i < items_per_producer; i++) produce(base + i);
    return NULL;
}

static void *consumer_main(void *arg) {
    (void)arg;
    unsigned char buf[ITEM_BYTES];
    long target = items_per_producer * PRODUCERS;
    while (atomic_load(&consumed_total) < target) {
        if (consume(buf)) atomic_fetch_add(&consumed_total, 1);
    }
    return NULL;
}

static double run(int consumers) {
    head = tail = oldest = calloc(1, sizeof(struct node));
    atomic_store(&head->done, 1); /* the first dummy holds no item */
    atomic_store(&consumed_total, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t p[PRODUCERS], c[8];
    for (int i = 0; i < PRODUCERS; i++) pthread_create(&p[i], NULL, producer_main, (void *)(intptr_t)i);
    for (int i = 0; i < consumers; i++) pthread_create(&c[i], NULL, consumer_main, NULL);
    for (int i = 0; i < PRODUCERS; i++) pthread_join(p[i], NULL);
    for (int i = 0; i < consumers; i++) pthread_join(c[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    while (oldest) { /* free what is left */
        struct node *n = oldest;
        oldest = n->next;
        free(n);
    }
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    return (double)(items_per_producer * PRODUCERS) / secs;
}

int lowlock_main(int argc, char **argv) {
    int consumers = 0;
    items_per_producer = 200000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fixed") == 0) fixed = 1;
        else if (strcmp(argv[i], "--truth-sample") == 0) record_truth = 1;
        else if (strcmp(argv[i], "--items") == 0 && i + 1 < argc) items_per_producer = atol(argv[++i]) / PRODUCERS;
        else if (strcmp(argv[i], "--consumers") == 0 && i + 1 < argc) consumers = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: lowlock [--fixed] [--items N] [--consumers K] [--truth-sample]\n");
            return 2;
        }
    }
    if (items_per_producer < 1 || consumers < 0 || consumers > 8) {
        fprintf(stderr, "lowlock: items >= 2, consumers 0..8\n");
        return 2;
    }
    if (record_truth) truth_open("lowlock");
    int from = consumers ? consumers : 1, to = consumers ? consumers : 4;
    for (int k = from; k <= to; k++)
        printf("lowlock%s: %d producers, %d consumers: %.0f items/s\n", fixed ? " (fixed)" : "", PRODUCERS, k, run(k));
    return 0;
}
