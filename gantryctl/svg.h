/*
 * Line charts as plain SVG text, for `gantryctl plan --svg` and
 * `gantryctl sim --svg`.
 *
 * No library: a chart is a few hundred bytes of <line>, <polyline> and <text>
 * elements. Several charts stack vertically in one document. Text is
 * XML-escaped, so a name from an input file cannot break the document.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

struct gantry_svg_series {
        const char *name;
        const double *x, *y; /* n points, x ascending */
        size_t n;
};

struct gantry_svg_chart {
        const char *title;
        const char *x_label, *y_label;
        const struct gantry_svg_series *series;
        size_t n_series;
};

/*
 * Writes one SVG document holding @n_charts charts to @f. Non-finite points
 * are skipped. Returns 0, or -EIO when writing failed.
 */
int gantry_svg_write(FILE *f, const struct gantry_svg_chart *charts, size_t n_charts);

/* Same, to the file at @path (created or truncated). Returns 0 or -errno. */
int gantry_svg_write_file(const char *path, const struct gantry_svg_chart *charts,
                          size_t n_charts);
