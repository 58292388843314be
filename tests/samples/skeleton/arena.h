/**
 * arena.h - a bump allocator for short-lived parse trees.
 *
 * All allocations are freed at once with arena_reset() or arena_free().
 */
#ifndef ARENA_H
#define ARENA_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"

#define ARENA_DEFAULT_BLOCK (64 * 1024)
#define ARENA_ALIGN_UP(n, a) (((n) + ((a) - 1)) & ~((a) - 1))

#ifdef __cplusplus
extern "C" {
#endif

/** One contiguous block of memory owned by an arena. */
typedef struct arena_block {
    struct arena_block *next;
    size_t used;
    size_t capacity;
    unsigned char data[];
} arena_block;

/** Allocation statistics, filled by arena_stats(). */
struct arena_stats {
    size_t blocks;
    size_t bytes_used;
    size_t bytes_reserved;
};

typedef enum {
    ARENA_OK = 0,
    ARENA_ENOMEM,
    ARENA_EINVAL,
} arena_status;

typedef struct {
    arena_block *head;
    size_t block_size;
    void *(*alloc_fn)(size_t size, void *user);
    void (*free_fn)(void *ptr, void *user);
    void *user;
} arena;

/* Global fallback arena used when callers pass NULL. */
extern arena *arena_global;

/** Initialises an arena with the given block size (0 for the default). */
arena_status arena_init(arena *a, size_t block_size);

/** Allocates `size` bytes aligned to `align`; returns NULL when out of memory. */
void *arena_alloc(arena *a, size_t size, size_t align);

char *arena_strdup(arena *a, const char *s);

void arena_reset(arena *a);
void arena_free(arena *a);
void arena_stats(const arena *a, struct arena_stats *out);

static inline size_t arena_remaining(const arena_block *b)
{
    return b->capacity - b->used;
}

#ifdef __cplusplus
}
#endif

#endif /* ARENA_H */
