/* --upload's pure part (s3url.h): s3:// and gs:// parsed, object keys,
 * the host and path each store is sent to, the region, whose keys, the
 * signed headers; and the uploader's refusals before anything is sent. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/s3url.h"
#include "infertop/upload.h"

/* A fake environment: NAME=VALUE pairs. */
static const char *const *fake_env;

static const char *env_of(const char *name)
{
	for (size_t i = 0; fake_env && fake_env[i]; i += 2)
		if (strcmp(fake_env[i], name) == 0)
			return fake_env[i + 1];
	return NULL;
}

static void parse_ok(const char *url, enum s3_store store, const char *bucket, const char *prefix)
{
	struct s3_target t;
	char err[256] = "";
	assert_int_equal(s3url_parse(url, &t, err, sizeof err), 0);
	assert_int_equal(t.store, store);
	assert_string_equal(t.bucket, bucket);
	assert_string_equal(t.prefix, prefix);
}

static void parse_bad(const char *url, const char *says)
{
	struct s3_target t;
	char err[256] = "";
	assert_int_equal(s3url_parse(url, &t, err, sizeof err), -1);
	assert_non_null(strstr(err, says));
}

static void test_parse(void **state)
{
	(void)state;
	parse_ok("s3://bkt/runs/", S3_STORE_S3, "bkt", "runs/");
	parse_ok("s3://bkt", S3_STORE_S3, "bkt", "");
	parse_ok("s3://bkt/", S3_STORE_S3, "bkt", "");
	parse_ok("s3://my.bucket-1/a/b/run-", S3_STORE_S3, "my.bucket-1", "a/b/run-");
	parse_ok("gs://gke_bench/lpg/", S3_STORE_GCS, "gke_bench", "lpg/");
	parse_bad("http://bkt/x", "expected s3://");
	parse_bad("s3:/bkt", "expected s3://");
	parse_bad(NULL, "expected s3://");
	parse_bad("s3://ab/x", "3 to 63");
	parse_bad("s3:///x", "3 to 63");
	parse_bad("s3://Bucket/x", "lower-case");
	parse_bad("s3://-bkt/x", "start and end");
	parse_bad("s3://bkt-/x", "start and end");
	parse_bad("s3://a..b/x", "\"..\"");
	parse_bad("s3://under_score/x", "no '_'");
	parse_bad("s3://bkt//x", "\"//\"");
	parse_bad("s3://bkt/a/../x", "\"..\"");
	parse_bad("s3://bkt/./x", "\"..\"");
	parse_bad("s3://bkt/a\nb", "control");
	char long_bucket[80];
	memset(long_bucket, 'a', sizeof long_bucket);
	memcpy(long_bucket, "s3://", 5);
	long_bucket[5 + 64] = '\0';
	parse_bad(long_bucket, "3 to 63");
}

static void test_key(void **state)
{
	(void)state;
	struct s3_target t;
	char key[600];
	assert_int_equal(s3url_parse("s3://bkt/runs/", &t, NULL, 0), 0);
	assert_int_equal(s3url_key(&t, "/tmp/x/result.json", key, sizeof key), 0);
	assert_string_equal(key, "runs/result.json");
	assert_int_equal(s3url_key(&t, "result.json", key, sizeof key), 0);
	assert_string_equal(key, "runs/result.json");
	assert_int_equal(s3url_key(&t, "/tmp/dir/", key, sizeof key), -1);
	assert_int_equal(s3url_key(&t, "..", key, sizeof key), -1);
	assert_int_equal(s3url_key(&t, "a.json", key, 8), -1);
	/* A prefix without '/' is a name's start. */
	assert_int_equal(s3url_parse("s3://bkt/runs/a-", &t, NULL, 0), 0);
	assert_int_equal(s3url_key(&t, "log.jsonl.3", key, sizeof key), 0);
	assert_string_equal(key, "runs/a-log.jsonl.3");
}

static void url_is(const char *dest, const char *endpoint, const char *region, const char *key, const char *want)
{
	struct s3_target t;
	char out[1024];
	assert_int_equal(s3url_parse(dest, &t, NULL, 0), 0);
	assert_int_equal(s3url_object_url(&t, endpoint, region, key, out, sizeof out), 0);
	assert_string_equal(out, want);
}

static void test_object_url(void **state)
{
	(void)state;
	/* Virtual-hosted S3, path style when the bucket has a dot. */
	url_is("s3://bkt/r/", NULL, "eu-west-3", "r/a.json", "https://bkt.s3.eu-west-3.amazonaws.com/r/a.json");
	url_is("s3://my.bkt/r/", NULL, "us-east-1", "r/a.json", "https://s3.us-east-1.amazonaws.com/my.bkt/r/a.json");
	/* Cloud Storage's XML API: one host, path style, whatever the region. */
	url_is("gs://gke_bench/lpg/", NULL, "auto", "lpg/res.json", "https://storage.googleapis.com/gke_bench/lpg/res.json");
	/* An endpoint: path style, its trailing slashes and path kept apart. */
	url_is("s3://bkt/", "http://127.0.0.1:9000", "us-east-1", "a.json", "http://127.0.0.1:9000/bkt/a.json");
	url_is("s3://bkt/", "http://127.0.0.1:9000//", "us-east-1", "a.json", "http://127.0.0.1:9000/bkt/a.json");
	url_is("gs://bkt/", "https://minio.lan/s3", "auto", "a.json", "https://minio.lan/s3/bkt/a.json");
	/* The key is percent-encoded but for '/': the form SigV4 signs. */
	url_is("s3://bkt/", "http://h", "us-east-1", "r 1/a+b~_.-é.json", "http://h/bkt/r%201/a%2Bb~_.-%C3%A9.json");
	struct s3_target t;
	char out[64];
	assert_int_equal(s3url_parse("s3://bkt/", &t, NULL, 0), 0);
	assert_int_equal(s3url_object_url(&t, NULL, "us-east-1", "a-rather-long-key-name-that-overflows.json", out,
					  sizeof out), -1);
	assert_int_equal(s3url_object_url(&t, "ftp://h", "us-east-1", "a", out, sizeof out), -1);
}

static void endpoint_bad(const char *ep, const char *says)
{
	char err[200] = "";
	assert_int_equal(s3url_endpoint_check(ep, err, sizeof err), -1);
	assert_non_null(strstr(err, says));
	/* Never quoted: it may carry a password. */
	assert_null(strstr(err, "hunter2"));
}

static void test_endpoint(void **state)
{
	(void)state;
	assert_int_equal(s3url_endpoint_check("http://127.0.0.1:9000", NULL, 0), 0);
	assert_int_equal(s3url_endpoint_check("https://s3.example/path/", NULL, 0), 0);
	endpoint_bad("127.0.0.1:9000", "http://");
	endpoint_bad("http://", "http://");
	endpoint_bad("http:///x", "http://");
	endpoint_bad("http://u:hunter2@h", "no user");
	endpoint_bad("http://h/?x=hunter2", "no query");
	endpoint_bad("http://h/a b", "space");
}

static void test_region(void **state)
{
	(void)state;
	struct s3_target s3, gs;
	assert_int_equal(s3url_parse("s3://bkt/", &s3, NULL, 0), 0);
	assert_int_equal(s3url_parse("gs://bkt/", &gs, NULL, 0), 0);
	fake_env = NULL;
	assert_string_equal(s3url_region(&s3, NULL, env_of), "us-east-1");
	assert_string_equal(s3url_region(&gs, NULL, env_of), "auto");
	const char *const e1[] = {"AWS_DEFAULT_REGION", "eu-west-1", NULL};
	fake_env = e1;
	assert_string_equal(s3url_region(&s3, NULL, env_of), "eu-west-1");
	const char *const e2[] = {"AWS_DEFAULT_REGION", "eu-west-1", "AWS_REGION", "ap-south-1", NULL};
	fake_env = e2;
	assert_string_equal(s3url_region(&s3, NULL, env_of), "ap-south-1");
	assert_string_equal(s3url_region(&s3, "us-west-2", env_of), "us-west-2");
	char sig[64];
	assert_int_equal(s3url_sigv4("us-west-2", sig, sizeof sig), 0);
	assert_string_equal(sig, "aws:amz:us-west-2:s3");
	assert_int_equal(s3url_sigv4("auto", sig, sizeof sig), 0);
	assert_string_equal(sig, "aws:amz:auto:s3");
	/* It is spliced into curl's "aws:amz:REGION:s3": no ':' gets in. */
	assert_int_equal(s3url_sigv4("us:east", sig, sizeof sig), -1);
	assert_int_equal(s3url_sigv4("", sig, sizeof sig), -1);
	assert_int_equal(s3url_sigv4("US-EAST-1", sig, sizeof sig), -1);
}

static void test_creds(void **state)
{
	(void)state;
	struct s3_target s3, gs;
	struct s3_creds c;
	char err[300];
	assert_int_equal(s3url_parse("s3://bkt/", &s3, NULL, 0), 0);
	assert_int_equal(s3url_parse("gs://bkt/", &gs, NULL, 0), 0);
	fake_env = NULL;
	assert_int_equal(s3url_creds(&s3, env_of, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"));
	assert_int_equal(s3url_creds(&gs, env_of, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "GOOGLE_HMAC_ACCESS_ID"));

	const char *const aws[] = {"AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY", "sEcReT-aws-42",
				   "AWS_SESSION_TOKEN", "tOkEn-77", NULL};
	fake_env = aws;
	assert_int_equal(s3url_creds(&s3, env_of, &c, err, sizeof err), 0);
	assert_string_equal(c.id, "AKIDEXAMPLE");
	assert_string_equal(c.secret, "sEcReT-aws-42");
	assert_string_equal(c.token, "tOkEn-77");
	/* gs:// without HMAC variables takes the AWS ones. */
	assert_int_equal(s3url_creds(&gs, env_of, &c, err, sizeof err), 0);
	assert_string_equal(c.id, "AKIDEXAMPLE");

	const char *const both[] = {"AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY", "sEcReT-aws-42",
				    "AWS_SESSION_TOKEN", "tOkEn-77", "GOOGLE_HMAC_ACCESS_ID", "GOOG1EXAMPLE",
				    "GOOGLE_HMAC_SECRET", "sEcReT-goog-9", NULL};
	fake_env = both;
	assert_int_equal(s3url_creds(&gs, env_of, &c, err, sizeof err), 0);
	assert_string_equal(c.id, "GOOG1EXAMPLE");
	assert_string_equal(c.secret, "sEcReT-goog-9");
	assert_null(c.token); /* an HMAC key has no session token */
	assert_string_equal(c.id_var, "GOOGLE_HMAC_ACCESS_ID");
	/* s3:// never takes Google's. */
	assert_int_equal(s3url_creds(&s3, env_of, &c, err, sizeof err), 0);
	assert_string_equal(c.id, "AKIDEXAMPLE");

	const char *const half[] = {"AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY", "", NULL};
	fake_env = half;
	assert_int_equal(s3url_creds(&s3, env_of, &c, err, sizeof err), -1);
	const char *const colon[] = {"AWS_ACCESS_KEY_ID", "AK:ID", "AWS_SECRET_ACCESS_KEY", "sEcReT-aws-42", NULL};
	fake_env = colon;
	assert_int_equal(s3url_creds(&s3, env_of, &c, err, sizeof err), -1);
	assert_null(strstr(err, "sEcReT"));
	const char *const nl[] = {"AWS_ACCESS_KEY_ID", "AKID", "AWS_SECRET_ACCESS_KEY", "sEcReT\r\nX: y", NULL};
	fake_env = nl;
	assert_int_equal(s3url_creds(&s3, env_of, &c, err, sizeof err), -1);
	assert_null(strstr(err, "sEcReT"));
	fake_env = NULL;
}

static void test_headers(void **state)
{
	(void)state;
	struct s3_creds c = {.id = "AKID", .secret = "s"};
	char *lines[2] = {NULL, NULL};
	int n = s3url_headers(&c, lines);
	assert_int_equal(n, 1);
	assert_string_equal(lines[0], "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	s3url_headers_free(lines, n);
	assert_null(lines[0]);
	c.token = "tOkEn-77";
	n = s3url_headers(&c, lines);
	assert_int_equal(n, 2);
	assert_string_equal(lines[0], "x-amz-content-sha256: UNSIGNED-PAYLOAD");
	assert_string_equal(lines[1], "x-amz-security-token: tOkEn-77");
	s3url_headers_free(lines, n);
}

/* The whole check the command line runs: each refusal names the option
 * or variable, never a value. */
static void test_check(void **state)
{
	(void)state;
	char err[512];
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "sEcReT-aws-42", 1);
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	struct upload_opts o = {.url = "s3://bkt/runs/"};
	assert_int_equal(uploader_check(&o, err, sizeof err), 0);
	o.endpoint = "http://127.0.0.1:1";
	assert_int_equal(uploader_check(&o, err, sizeof err), 0);
	o.url = "s3:/bkt";
	assert_int_equal(uploader_check(&o, err, sizeof err), -1);
	assert_non_null(strstr(err, "--upload: "));
	o.url = "s3://bkt/";
	o.endpoint = "minio:9000";
	assert_int_equal(uploader_check(&o, err, sizeof err), -1);
	assert_non_null(strstr(err, "--upload-endpoint: "));
	o.endpoint = NULL;
	o.region = "us_east";
	assert_int_equal(uploader_check(&o, err, sizeof err), -1);
	assert_non_null(strstr(err, "--upload-region"));
	o.region = NULL;
	setenv("AWS_REGION", "Bad:Region", 1);
	assert_int_equal(uploader_check(&o, err, sizeof err), -1);
	assert_non_null(strstr(err, "AWS_REGION"));
	unsetenv("AWS_REGION");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	assert_int_equal(uploader_check(&o, err, sizeof err), -1);
	assert_non_null(strstr(err, "AWS_SECRET_ACCESS_KEY"));
	assert_null(strstr(err, "AKIDEXAMPLE"));
	unsetenv("AWS_ACCESS_KEY_ID");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_object_url),
		cmocka_unit_test(test_endpoint),
		cmocka_unit_test(test_region),
		cmocka_unit_test(test_creds),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
