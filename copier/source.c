/*
 * The ops-table plumbing shared by every copy source and destination
 * (source.h); the implementations live in source_file.c and source_rbd.c.
 */
#include <stdlib.h>

#include "source.h"

void gantry_copier_source_free(struct gantry_copier_source *s)
{
        if (!s)
                return;
        s->ops->free(s);
        free(s);
}

void gantry_copier_dest_free(struct gantry_copier_dest *d)
{
        if (!d)
                return;
        d->ops->free(d);
        free(d);
}
