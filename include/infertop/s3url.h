#ifndef INFERTOP_S3URL_H
#define INFERTOP_S3URL_H

#include <stdbool.h>
#include <stddef.h>

/* --upload's pure part: where an object goes, with whose keys, signed how.
 * No I/O, no clock, no globals (the environment is read through a function
 * the caller hands in); src/net/upload.c does the transfers.
 *
 *   s3://BUCKET[/PREFIX]   Amazon S3: https://BUCKET.s3.REGION.amazonaws.com
 *                          (path style, https://s3.REGION.amazonaws.com/BUCKET,
 *                          when the bucket has a dot: TLS wildcards cover
 *                          one label)
 *   gs://BUCKET[/PREFIX]   Google Cloud Storage's S3-interoperable XML API,
 *                          https://storage.googleapis.com/BUCKET, HMAC keys
 *   with an endpoint       ENDPOINT/BUCKET (path style: MinIO, s3rver,
 *                          Ceph and most S3-compatible stores want it)
 *
 * An object's key is PREFIX followed by the local file's base name; a
 * prefix not ending in '/' is used as written ("runs/a-" gives
 * "runs/a-result.json"). Requests are signed SigV4 by libcurl
 * (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3"), with
 * "x-amz-content-sha256: UNSIGNED-PAYLOAD" (S3 requires the header, and the
 * file is streamed, not hashed first). */

enum s3_store { S3_STORE_S3, S3_STORE_GCS };

#define S3URL_BUCKET_MAX 63
#define S3URL_PREFIX_MAX 512

struct s3_target {
	enum s3_store store;
	char bucket[S3URL_BUCKET_MAX + 1];
	char prefix[S3URL_PREFIX_MAX + 1];   /* "" or "runs/" ... */
};

/* s3://BUCKET/PREFIX or gs://BUCKET/PREFIX. The bucket: 3 to 63 lower-case
 * letters, digits, '.', '-' and '_' (GCS), starting and ending with a letter
 * or digit; the prefix: printable ASCII or UTF-8, no control characters, no
 * "//", no "." or ".." segment. 0, or -1 with why in err (which quotes
 * nothing of the URL but the bucket). */
int s3url_parse(const char *url, struct s3_target *t, char *err, size_t errcap);

/* The object key of a local file: prefix + base name of path. 0, or -1
 * when path has no base name or it does not fit. */
int s3url_key(const struct s3_target *t, const char *path, char *key, size_t cap);

/* The PUT URL of key: endpoint (NULL: the store's own, see above) with
 * the key percent-encoded but for its '/' (the form SigV4 signs). 0, or
 * -1 when it does not fit or endpoint is not an http(s) URL. */
int s3url_object_url(const struct s3_target *t, const char *endpoint, const char *region, const char *key,
		     char *out, size_t cap);

/* --upload-endpoint: an http or https URL with a host and no user, query
 * or fragment. 0, or -1 with why in err. */
int s3url_endpoint_check(const char *endpoint, char *err, size_t errcap);

/* The region signed for: --upload-region, else AWS_REGION, else
 * AWS_DEFAULT_REGION, else "us-east-1" for S3 and "auto" for GCS (which
 * takes either). env is getenv or a test's own. */
typedef const char *(*s3_env_fn)(const char *name);
const char *s3url_region(const struct s3_target *t, const char *option, s3_env_fn env);

/* Whose keys: for gs://, GOOGLE_HMAC_ACCESS_ID and GOOGLE_HMAC_SECRET when
 * both are set, else the AWS ones; AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
 * and (optional) AWS_SESSION_TOKEN. Pointers into env's strings. */
struct s3_creds {
	const char *id, *secret, *token;   /* token NULL when none */
	const char *id_var, *secret_var;   /* the variables they came from */
};
/* 0, or -1 with the variables wanted in err (never a value). */
int s3url_creds(const struct s3_target *t, s3_env_fn env, struct s3_creds *c, char *err, size_t errcap);

/* The SigV4 provider string for CURLOPT_AWS_SIGV4. */
int s3url_sigv4(const char *region, char *out, size_t cap);

/* The request's extra header lines, in order, into lines[] (each a
 * malloc'd string; returns how many, at most 2, or -1 when out of
 * memory): the content hash line and, with a session token,
 * "x-amz-security-token: TOKEN". Free with s3url_headers_free. */
int s3url_headers(const struct s3_creds *c, char *lines[2]);
void s3url_headers_free(char *lines[2], int n);

#endif
