/*
 * The SVG line-chart writer; see svg.h.
 *
 * Each chart is a 640x360 panel: a title, a y axis from 0 (or the data's
 * minimum when negative) to a "nice" maximum, an x axis from 0 (or the
 * data's minimum when negative) to the data's maximum, five gridlines with labels, one polyline per series and a legend.
 */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define W 640
#define H 360
#define LEFT 70
#define RIGHT 170
#define TOP 40
#define BOTTOM 50
#define TICKS 5

static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#7f7f7f" };

static void put_escaped(FILE *f, const char *s)
{
        for (; s && *s; s++) {
                switch (*s) {
                case '<': fputs("&lt;", f); break;
                case '>': fputs("&gt;", f); break;
                case '&': fputs("&amp;", f); break;
                case '"': fputs("&quot;", f); break;
                case '\'': fputs("&apos;", f); break;
                default:
                        /* control characters are not allowed in XML 1.0 */
                        fputc((unsigned char)*s < 0x20 && *s != '\t' ? ' ' : *s, f);
                }
        }
}

/* The smallest of 1, 2, 5 x 10^k that is >= @v. */
static double nice_ceil(double v)
{
        double p, m;

        if (!(v > 0))
                return 1;
        p = pow(10, floor(log10(v)));
        m = v / p;
        return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void range(const struct gantry_svg_chart *c, double *xmin, double *xmax, double *ymin,
                  double *ymax)
{
        *xmin = INFINITY;
        *xmax = -INFINITY;
        *ymin = 0;
        *ymax = 0;
        for (size_t s = 0; s < c->n_series; s++)
                for (size_t i = 0; i < c->series[s].n; i++) {
                        double x = c->series[s].x[i], y = c->series[s].y[i];

                        if (!isfinite(x) || !isfinite(y))
                                continue;
                        *xmin = fmin(*xmin, x);
                        *xmax = fmax(*xmax, x);
                        *ymin = fmin(*ymin, y);
                        *ymax = fmax(*ymax, y);
                }
        if (!isfinite(*xmin)) {
                *xmin = 0;
                *xmax = 1;
        }
        if (*xmin > 0) /* counts, times, bandwidths: read them from zero */
                *xmin = 0;
        if (*xmax <= *xmin)
                *xmax = *xmin + 1;
        *ymax = nice_ceil(*ymax);
        if (*ymin < 0)
                *ymin = -nice_ceil(-*ymin);
}

static void chart(FILE *f, const struct gantry_svg_chart *c, int y0)
{
        double xmin, xmax, ymin, ymax;
        double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;

        range(c, &xmin, &xmax, &ymin, &ymax);
#define PX(x) (LEFT + ((x) - xmin) / (xmax - xmin) * pw)
#define PY(y) (y0 + TOP + ph - ((y) - ymin) / (ymax - ymin) * ph)
        fprintf(f, "<g class=\"chart\">\n<text x=\"%d\" y=\"%d\" font-size=\"16\">", LEFT, y0 + 24);
        put_escaped(f, c->title);
        fputs("</text>\n", f);
        for (int t = 0; t <= TICKS; t++) {
                double yv = ymin + (ymax - ymin) * t / TICKS, xv = xmin + (xmax - xmin) * t / TICKS;

                fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                        LEFT, PY(yv), LEFT + pw, PY(yv));
                fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
                        LEFT - 6, PY(yv) + 4, yv);
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%.4g"
                        "</text>\n", PX(xv), y0 + TOP + ph + 16, xv);
        }
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n", LEFT,
                PY(ymin), LEFT + pw, PY(ymin));
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n", LEFT,
                y0 + TOP, LEFT, y0 + TOP + ph);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">",
                LEFT + pw / 2, y0 + H - 10);
        put_escaped(f, c->x_label);
        fprintf(f, "</text>\n<text x=\"14\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
                "transform=\"rotate(-90 14 %.1f)\">", y0 + TOP + ph / 2, y0 + TOP + ph / 2);
        put_escaped(f, c->y_label);
        fputs("</text>\n", f);
        for (size_t s = 0; s < c->n_series; s++) {
                const struct gantry_svg_series *sr = &c->series[s];
                const char *color = colors[s % (sizeof(colors) / sizeof(colors[0]))];

                fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                        "points=\"", color);
                for (size_t i = 0; i < sr->n; i++)
                        if (isfinite(sr->x[i]) && isfinite(sr->y[i]))
                                fprintf(f, "%s%.1f,%.1f", i ? " " : "", PX(sr->x[i]), PY(sr->y[i]));
                fputs("\"/>\n", f);
                fprintf(f, "<rect x=\"%.1f\" y=\"%zu\" width=\"12\" height=\"4\" fill=\"%s\"/>\n",
                        LEFT + pw + 12, y0 + TOP + 8 + s * 18, color);
                fprintf(f, "<text x=\"%.1f\" y=\"%zu\" font-size=\"12\">", LEFT + pw + 30,
                        y0 + TOP + 13 + s * 18);
                put_escaped(f, sr->name);
                fputs("</text>\n", f);
        }
        fputs("</g>\n", f);
#undef PX
#undef PY
}

int gantry_svg_write(FILE *f, const struct gantry_svg_chart *charts, size_t n_charts)
{
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
                "viewBox=\"0 0 %d %zu\" font-family=\"sans-serif\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
                W, H * n_charts, W, H * n_charts);
        for (size_t i = 0; i < n_charts; i++)
                chart(f, &charts[i], (int)(i * H));
        fputs("</svg>\n", f);
        return ferror(f) ? -EIO : 0;
}

int gantry_svg_write_file(const char *path, const struct gantry_svg_chart *charts,
                          size_t n_charts)
{
        FILE *f = fopen(path, "we");
        int r;

        if (!f)
                return -errno;
        r = gantry_svg_write(f, charts, n_charts);
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        return r;
}
