#ifndef INFERTOP_HTML_H
#define INFERTOP_HTML_H

/*
 * The HTML report (src/result/html.c): one self-contained page, inline CSS
 * and SVG (svg.h), nothing fetched, no script, so it opens offline and
 * under `Content-Security-Policy: default-src 'none'; style-src
 * 'unsafe-inline'; img-src data:` (the page says so itself in a <meta>).
 * `report --format html`, `compare --format html` (result.h's
 * RESULT_FORMATS) and `--html FILE` at the end of a run.
 */

#include <stddef.h>

struct snapshot;

/* The points a time series is reduced to (min/max kept): a 24-hour run's
 * page stays well under 2 MB. */
#define HTML_SERIES_POINTS 480

/* s's report page into path (written atomically, as the JSON result):
 * 0, or -1 with the reason in err. file names the run on the page. */
int html_write_file(const struct snapshot *s, const char *file, const char *path, char *err, size_t errcap);

#endif
