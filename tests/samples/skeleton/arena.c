/*
 * arena.c - implementation of the bump allocator declared in arena.h.
 */
#include <stdlib.h>
#include <string.h>
#include "arena.h"

#define BLOCK_HEADER sizeof(arena_block)

arena *arena_global = NULL;

static size_t total_reserved = 0;
static const char *const status_names[] = {"ok", "out of memory", "invalid argument"};

struct free_list {
    struct free_list *next;
    size_t size;
};

/* Allocates a new block large enough for `min_size` bytes. */
static arena_block *new_block(arena *a, size_t min_size)
{
    size_t capacity = a->block_size > min_size ? a->block_size : min_size;
    arena_block *block = a->alloc_fn
        ? a->alloc_fn(BLOCK_HEADER + capacity, a->user)
        : malloc(BLOCK_HEADER + capacity);
    if (block == NULL) {
        return NULL;
    }
    block->next = a->head;
    block->used = 0;
    block->capacity = capacity;
    total_reserved += capacity;
    return block;
}

arena_status arena_init(arena *a, size_t block_size)
{
    if (a == NULL) {
        return ARENA_EINVAL;
    }
    memset(a, 0, sizeof(*a));
    a->block_size = block_size ? block_size : ARENA_DEFAULT_BLOCK;
    return ARENA_OK;
}

void *arena_alloc(arena *a, size_t size, size_t align)
{
    if (a == NULL) {
        a = arena_global;
    }
    size_t offset = a->head ? ARENA_ALIGN_UP(a->head->used, align) : 0;
    if (a->head == NULL || offset + size > a->head->capacity) {
        arena_block *block = new_block(a, size + align);
        if (block == NULL) {
            return NULL;
        }
        a->head = block;
        offset = 0;
    }
    a->head->used = offset + size;
    return a->head->data + offset;
}

char *arena_strdup(arena *a, const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = arena_alloc(a, len, 1);
    if (copy != NULL) {
        memcpy(copy, s, len);
    }
    return copy;
}

void arena_reset(arena *a)
{
    for (arena_block *b = a->head; b != NULL; b = b->next) {
        b->used = 0;
    }
}

void arena_free(arena *a)
{
    arena_block *b = a->head;
    while (b != NULL) {
        arena_block *next = b->next;
        if (a->free_fn) {
            a->free_fn(b, a->user);
        } else {
            free(b);
        }
        b = next;
    }
    a->head = NULL;
}

const char *arena_status_name(arena_status status)
{
    return status_names[status];
}
