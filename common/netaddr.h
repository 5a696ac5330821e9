/*
 * Parsing of listen addresses shared by the HTTP servers of Gantry's binaries.
 */
#pragma once

#include <stdbool.h>
#include <sys/socket.h>

#include "error.h"

/*
 * Parses "HOST:PORT" (IPv4, "", "0.0.0.0" or "localhost") or "[IPv6]:PORT"
 * into @ss. Returns 0 or -EINVAL.
 */
int gantry_netaddr_parse(const char *addr, struct sockaddr_storage *ss) GANTRY_MUST_CHECK;

/*
 * Whether @a and @b are the same host address (ports aside; IPv4 and IPv6
 * compared within their family): one source for per-source limits.
 */
bool gantry_netaddr_same_host(const struct sockaddr *a, const struct sockaddr *b);
