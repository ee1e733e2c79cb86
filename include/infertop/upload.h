#ifndef INFERTOP_UPLOAD_H
#define INFERTOP_UPLOAD_H

/*
 * --upload: files copied to object storage (S3, Cloud Storage, MinIO...)
 * on the one libev loop, as they are written: the result, each snapshot,
 * each rotated request log and the last one, the fleet's merged result.
 * Addresses, keys and headers are s3url.h's; this is the transfers.
 *
 * A file is opened when it is handed over and streamed from that
 * descriptor (never read whole into memory): a request log renamed by its
 * next rotation still goes up with the bytes it had. A failed upload is
 * tried again after 1, 2 and 4 s (UPLOAD_TRIES in all) when the failure
 * may pass (no answer, 5xx, 408, 429); the local file is never touched.
 * Failures are counted, and said on stderr with the store's error code
 * (S3's <Code>), never with a key, a secret or a token.
 */

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define UPLOAD_TRIES 4
#define UPLOAD_BACKOFF_S 1.0            /* doubles after each failed try */
#define UPLOAD_CONNECT_TIMEOUT_S 10L
#define UPLOAD_STALL_S 30L              /* a try that moves no byte for this long ends */
#define UPLOAD_WAIT_MAX_S 600.0         /* the end of a run waits at most this long */

struct uploader;

struct upload_opts {
	const char *url;        /* s3://BUCKET/PREFIX or gs://BUCKET/PREFIX */
	const char *endpoint;   /* NULL: the store's own */
	const char *region;     /* NULL: from the environment, else the default */
	bool quiet;             /* no line per object uploaded */
};

/* Checks the options and reads the keys from the environment; NULL with
 * why in err (naming the option or the variable, never a value). */
struct uploader *uploader_new(struct ev_loop *loop, const struct upload_opts *o, char *err, size_t errcap);
/* Pending uploads are abandoned (uploader_wait first to finish them). */
void uploader_free(struct uploader *u);
/* The only check the command line needs: 0, or -1 with why in err. */
int uploader_check(const struct upload_opts *o, char *err, size_t errcap);

/* Uploads path as PREFIX + its base name (name, when not NULL, instead
 * of the base name). 0 once queued; -1 when it cannot even start (the
 * file does not open): counted as failed and said. */
int uploader_put(struct uploader *u, const char *path, const char *name);

/* Uploads not finished yet (trying or waiting to try again). */
size_t uploader_pending(const struct uploader *u);
/* Uploads that failed for good, and the ones that went up. */
unsigned long uploader_failed(const struct uploader *u);
unsigned long uploader_done(const struct uploader *u);
/* What must never be shown (the secret, the session token), for
 * redact_secrets; NULL-terminated. */
const char *const *uploader_secrets(const struct uploader *u);

/* The end of a command-line run: runs the loop until every upload has
 * finished, a progress line on log each second, at most max_s. Ctrl-C
 * (SIGINT or SIGTERM) ends the wait. Whatever is still pending then is
 * abandoned and named on log. 0 when nothing was left. */
int uploader_wait(struct uploader *u, double max_s, FILE *log);

#endif
