/*
 * A string-keyed hash map with separate chaining and FNV-1a hashing; it
 * doubles its bucket array when the load passes 1. See strmap.h.
 */
#include "strmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct strmap_item {
        struct strmap_item *next;
        uint64_t hash;
        void *value;
        char key[]; /* NUL-terminated copy */
};

struct strmap {
        struct strmap_item **buckets;
        size_t n_buckets; /* a power of two */
        size_t size;
};

static uint64_t hash_str(const char *s)
{
        uint64_t h = 1469598103934665603ULL;

        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= 1099511628211ULL;
        }
        return h;
}

int strmap_new(struct strmap **ret_map)
{
        struct strmap *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->n_buckets = 64;
        m->buckets = calloc(m->n_buckets, sizeof(*m->buckets));
        if (!m->buckets) {
                free(m);
                return -ENOMEM;
        }
        *ret_map = m;
        return 0;
}

void strmap_free(struct strmap *m)
{
        strmap_free_with(m, NULL);
}

void strmap_free_with(struct strmap *m, void (*free_value)(void *))
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n_buckets; i++) {
                struct strmap_item *it = m->buckets[i];

                while (it) {
                        struct strmap_item *next = it->next;

                        if (free_value)
                                free_value(it->value);
                        free(it);
                        it = next;
                }
        }
        free(m->buckets);
        free(m);
}

static struct strmap_item **find_slot(const struct strmap *m, const char *key, uint64_t h)
{
        struct strmap_item **p = &m->buckets[h & (m->n_buckets - 1)];

        for (; *p; p = &(*p)->next)
                if ((*p)->hash == h && strcmp((*p)->key, key) == 0)
                        break;
        return p;
}

static int grow(struct strmap *m)
{
        size_t n = m->n_buckets * 2;
        struct strmap_item **b = calloc(n, sizeof(*b));

        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_buckets; i++) {
                struct strmap_item *it = m->buckets[i];

                while (it) {
                        struct strmap_item *next = it->next;

                        it->next = b[it->hash & (n - 1)];
                        b[it->hash & (n - 1)] = it;
                        it = next;
                }
        }
        free(m->buckets);
        m->buckets = b;
        m->n_buckets = n;
        return 0;
}

int strmap_put(struct strmap *m, const char *key, void *value)
{
        uint64_t h = hash_str(key);
        struct strmap_item **p = find_slot(m, key, h);
        size_t len;

        if (*p) {
                (*p)->value = value;
                return 0;
        }
        if (m->size >= m->n_buckets && grow(m) == 0)
                p = find_slot(m, key, h);
        len = strlen(key);
        *p = malloc(sizeof(**p) + len + 1);
        if (!*p)
                return -ENOMEM;
        (*p)->next = NULL;
        (*p)->hash = h;
        (*p)->value = value;
        memcpy((*p)->key, key, len + 1);
        m->size++;
        return 0;
}

void *strmap_get(const struct strmap *m, const char *key)
{
        struct strmap_item *it = *find_slot(m, key, hash_str(key));

        return it ? it->value : NULL;
}

void *strmap_remove(struct strmap *m, const char *key)
{
        struct strmap_item **p = find_slot(m, key, hash_str(key));
        struct strmap_item *it = *p;
        void *v;

        if (!it)
                return NULL;
        *p = it->next;
        v = it->value;
        free(it);
        m->size--;
        return v;
}

size_t strmap_size(const struct strmap *m)
{
        return m->size;
}
