/*
 * Prints what the node plugin's sampler reads of a cgroup for one device
 * (node/qos/io_usage.c), for bench_qos_guest.sh: the benchmark measures
 * rates with the same parser the metrics use.
 *
 *   qos_io_read CGROUP_DIR MAJ:MIN    ->  "rbytes wbytes rios wios some_us"
 */
#include <stdio.h>

#include "io_usage.h"

int main(int argc, char **argv)
{
        struct gantry_error err = { 0 };
        struct gantry_io_usage u;
        unsigned maj, min;

        if (argc != 3 || sscanf(argv[2], "%u:%u", &maj, &min) != 2) {
                fprintf(stderr, "usage: qos_io_read CGROUP_DIR MAJ:MIN\n");
                return 2;
        }
        if (gantry_io_usage_read(argv[1], maj, min, &u, &err) < 0) {
                fprintf(stderr, "qos_io_read: %s\n", err.msg);
                return 1;
        }
        printf("%llu %llu %llu %llu %llu\n", (unsigned long long)u.stat.rbytes,
               (unsigned long long)u.stat.wbytes, (unsigned long long)u.stat.rios,
               (unsigned long long)u.stat.wios, (unsigned long long)u.pressure.some_us);
        return 0;
}
