/*
 * A string-keyed hash map (separate chaining) used by the placement library
 * for node, leaf, spine, backend and ledger lookups by name.
 *
 * Keys are copied; values are opaque pointers owned by the caller. Not
 * thread-safe: the cluster's lock guards it.
 */
#pragma once

#include <stddef.h>

struct strmap;

/* A new empty map in *ret_map. Returns 0 or -ENOMEM. */
int strmap_new(struct strmap **ret_map);
/* Frees the map and its copied keys (not the values); NULL is a no-op. */
void strmap_free(struct strmap *m);
/* Same, after calling @free_value (may be NULL) on every value. */
void strmap_free_with(struct strmap *m, void (*free_value)(void *));
/* Sets @key to @value (replacing). Returns 0 or -ENOMEM. */
int strmap_put(struct strmap *m, const char *key, void *value);
/* The value of @key, or NULL. */
void *strmap_get(const struct strmap *m, const char *key);
/* Removes @key; returns its value, or NULL when absent. */
void *strmap_remove(struct strmap *m, const char *key);
size_t strmap_size(const struct strmap *m);
