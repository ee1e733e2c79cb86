/* s3url_parse() and the URLs built from what it accepts, on arbitrary
 * bytes (an --upload destination, a config file's line): never a crash or
 * a read past the string; an accepted destination has a 3-63 byte bucket
 * of its allowed characters and a prefix with no "//", no control byte,
 * and every object URL built from it is printable ASCII with no space (the
 * key percent-encoded), under the store's host or the endpoint. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/s3url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	struct s3_target t;
	char err[256], key[S3URL_PREFIX_MAX + 64], url[4096];
	/* The same bytes as an endpoint, a region and a file name too. */
	bool ep_ok = s3url_endpoint_check(s, err, sizeof err) == 0;
	(void)s3url_sigv4(s, url, sizeof url);
	if (s3url_parse(s, &t, err, sizeof err) == 0) {
		size_t b = strlen(t.bucket);
		if (b < 3 || b > S3URL_BUCKET_MAX || strspn(t.bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != b)
			abort();
		if (strstr(t.prefix, "//") || t.prefix[0] == '/')
			abort();
		for (const char *p = t.prefix; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
		const char *name = strrchr(s, '/') ? strrchr(s, '/') + 1 : s;
		if (s3url_key(&t, "run.json", key, sizeof key) != 0)
			abort();
		if (s3url_object_url(&t, NULL, "us-east-1", key, url, sizeof url) != 0)
			abort();
		printable(url);
		if (strncmp(url, "https://", 8) != 0)
			abort();
		if (s3url_key(&t, name, key, sizeof key) == 0 &&
		    s3url_object_url(&t, "http://127.0.0.1:9000/", "auto", key, url, sizeof url) == 0) {
			printable(url);
			if (strncmp(url, "http://127.0.0.1:9000/", 22) != 0 || strncmp(url + 22, t.bucket, b) != 0)
				abort();
		}
		if (ep_ok && s3url_key(&t, "r.json", key, sizeof key) == 0 &&
		    s3url_object_url(&t, s, "us-east-1", key, url, sizeof url) == 0)
			abort(); /* s3:// and gs:// are not http(s) endpoints */
	}
	free(s);
	return 0;
}
