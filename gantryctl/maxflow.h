/*
 * Maximum flow (Dinic's algorithm) over a small directed graph with real
 * capacities, for the simulator's upper bound: storage backends -> leaves
 * -> spine -> leaves -> node NICs -> the running jobs.
 *
 * The graph is built edge by edge, solved once, and the flow on any edge can
 * be read back. A capacity of INFINITY is allowed on inner edges.
 */
#pragma once

#include <stddef.h>

struct gantry_maxflow;

/* A graph of @n_vertices vertices (0..n-1) and no edges. Returns 0 or -ENOMEM. */
int gantry_maxflow_new(size_t n_vertices, struct gantry_maxflow **ret);
void gantry_maxflow_free(struct gantry_maxflow *g);

/*
 * Adds the edge @from -> @to with capacity @cap (>= 0; may be INFINITY).
 * Returns the edge's id (>= 0) for gantry_maxflow_edge_flow(), or -EINVAL
 * (vertex out of range, bad capacity) or -ENOMEM.
 */
int gantry_maxflow_add_edge(struct gantry_maxflow *g, size_t from, size_t to, double cap);

/*
 * Solves for the maximum flow from @source to @sink and returns its value.
 * Flows from an earlier solve are kept and augmented (solve once per graph).
 */
double gantry_maxflow_solve(struct gantry_maxflow *g, size_t source, size_t sink);

/* The flow on edge @id after a solve. */
double gantry_maxflow_edge_flow(const struct gantry_maxflow *g, int id);
