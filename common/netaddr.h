/*
 * Parsing of listen addresses shared by the HTTP servers of Gantry's binaries.
 */
#pragma once

#include <sys/socket.h>

#include "error.h"

/*
 * Parses "HOST:PORT" (IPv4, "", "0.0.0.0" or "localhost") or "[IPv6]:PORT"
 * into @ss. Returns 0 or -EINVAL.
 */
int gantry_netaddr_parse(const char *addr, struct sockaddr_storage *ss) GANTRY_MUST_CHECK;
