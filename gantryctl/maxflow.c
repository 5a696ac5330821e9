/*
 * Dinic's maximum flow; see maxflow.h. Edges live in one array as pairs
 * (an edge and its residual twin at id ^ 1); BFS builds the level graph,
 * DFS with a per-vertex cursor pushes blocking flows. Residuals below
 * EPSILON count as zero so real-valued capacities terminate.
 */
#include "maxflow.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define EPSILON 1e-9

struct edge {
        size_t to;
        int next;   /* next edge out of the same vertex, -1 at the end */
        double cap; /* residual capacity */
        double orig;
};

struct gantry_maxflow {
        size_t n;
        int *head, *cursor, *level;
        size_t *queue;
        struct edge *edges;
        size_t n_edges, cap_edges;
};

int gantry_maxflow_new(size_t n_vertices, struct gantry_maxflow **ret)
{
        struct gantry_maxflow *g = calloc(1, sizeof(*g));

        if (!g)
                return -ENOMEM;
        g->n = n_vertices;
        g->head = malloc(n_vertices * sizeof(int));
        g->cursor = malloc(n_vertices * sizeof(int));
        g->level = malloc(n_vertices * sizeof(int));
        g->queue = malloc(n_vertices * sizeof(size_t));
        if (!g->head || !g->cursor || !g->level || !g->queue) {
                gantry_maxflow_free(g);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_vertices; i++)
                g->head[i] = -1;
        *ret = g;
        return 0;
}

void gantry_maxflow_free(struct gantry_maxflow *g)
{
        if (!g)
                return;
        free(g->head);
        free(g->cursor);
        free(g->level);
        free(g->queue);
        free(g->edges);
        free(g);
}

static void push_edge(struct gantry_maxflow *g, size_t from, size_t to, double cap)
{
        struct edge *e = &g->edges[g->n_edges];

        e->to = to;
        e->cap = e->orig = cap;
        e->next = g->head[from];
        g->head[from] = (int)g->n_edges++;
}

int gantry_maxflow_add_edge(struct gantry_maxflow *g, size_t from, size_t to, double cap)
{
        int id;

        if (from >= g->n || to >= g->n || isnan(cap) || cap < 0)
                return -EINVAL;
        if (g->n_edges + 2 > g->cap_edges) {
                size_t nc = g->cap_edges ? 2 * g->cap_edges : 64;
                struct edge *ne = realloc(g->edges, nc * sizeof(*ne));

                if (!ne)
                        return -ENOMEM;
                g->edges = ne;
                g->cap_edges = nc;
        }
        id = (int)g->n_edges;
        push_edge(g, from, to, cap);
        push_edge(g, to, from, 0);
        return id;
}

static int bfs(struct gantry_maxflow *g, size_t s, size_t t)
{
        size_t qh = 0, qt = 0;

        for (size_t i = 0; i < g->n; i++)
                g->level[i] = -1;
        g->level[s] = 0;
        g->queue[qt++] = s;
        while (qh < qt) {
                size_t v = g->queue[qh++];

                for (int e = g->head[v]; e >= 0; e = g->edges[e].next)
                        if (g->edges[e].cap > EPSILON && g->level[g->edges[e].to] < 0) {
                                g->level[g->edges[e].to] = g->level[v] + 1;
                                g->queue[qt++] = g->edges[e].to;
                        }
        }
        return g->level[t] >= 0;
}

static double dfs(struct gantry_maxflow *g, size_t v, size_t t, double pushed)
{
        if (v == t)
                return pushed;
        for (; g->cursor[v] >= 0; g->cursor[v] = g->edges[g->cursor[v]].next) {
                struct edge *e = &g->edges[g->cursor[v]];
                double got;

                if (e->cap <= EPSILON || g->level[e->to] != g->level[v] + 1)
                        continue;
                got = dfs(g, e->to, t, fmin(pushed, e->cap));
                if (got > EPSILON) {
                        e->cap -= got;
                        g->edges[g->cursor[v] ^ 1].cap += got;
                        return got;
                }
        }
        return 0;
}

double gantry_maxflow_solve(struct gantry_maxflow *g, size_t source, size_t sink)
{
        double total = 0, f;

        if (source >= g->n || sink >= g->n || source == sink)
                return 0;
        while (bfs(g, source, sink)) {
                for (size_t i = 0; i < g->n; i++)
                        g->cursor[i] = g->head[i];
                while ((f = dfs(g, source, sink, INFINITY)) > EPSILON)
                        total += f;
        }
        return total;
}

double gantry_maxflow_edge_flow(const struct gantry_maxflow *g, int id)
{
        if (id < 0 || (size_t)id >= g->n_edges)
                return 0;
        return g->edges[id].orig - g->edges[id].cap;
}
