/*
 * Listen addresses ("HOST:PORT", "[::1]:PORT") for the HTTP servers of
 * Gantry's binaries (metrics, gantry-target); see netaddr.h.
 */
#include "netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int gantry_netaddr_parse(const char *addr, struct sockaddr_storage *ss)
{
        char host[128];
        const char *colon = strrchr(addr, ':');
        char *end;
        long port;

        if (!colon || (size_t)(colon - addr) >= sizeof(host))
                return -EINVAL;
        port = strtol(colon + 1, &end, 10);
        if (*end || colon[1] == '\0' || port < 0 || port > 65535)
                return -EINVAL;
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = '\0';
        memset(ss, 0, sizeof(*ss));
        if (host[0] == '[') {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
                size_t n = strlen(host);
                if (n < 2 || host[n - 1] != ']')
                        return -EINVAL;
                host[n - 1] = '\0';
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((uint16_t)port);
                return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1 ? 0 : -EINVAL;
        }
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (strcmp(host, "") == 0 || strcmp(host, "0.0.0.0") == 0) {
                s4->sin_addr.s_addr = htonl(INADDR_ANY);
                return 0;
        }
        if (strcmp(host, "localhost") == 0)
                strcpy(host, "127.0.0.1");
        return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -EINVAL;
}

bool gantry_netaddr_same_host(const struct sockaddr *a, const struct sockaddr *b)
{
        if (a->sa_family != b->sa_family)
                return false;
        if (a->sa_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        if (a->sa_family == AF_INET6)
                return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                               &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
        return true;
}
