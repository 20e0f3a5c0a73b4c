/* test_sigv4.c - AWS SigV4 against AWS's published test suite
 * (aws-sig-v4-test-suite: get-vanilla, post-vanilla, get-vanilla-query-
 * order-key-case, get-vanilla-utf8-query, get-unreserved, get-header-value-
 * trim, post-header-key-sort, post-x-www-form-urlencoded, post-sts-header-
 * before), all with the documented example credentials AKIDEXAMPLE, region
 * us-east-1, service "service", 20150830T123600Z; then what a proxy adds:
 * a path sent percent-encoded, S3's single encoding, region from host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sigv4.h"

#define DATE "20150830T123600Z"
#define EMPTY_HASH "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static const struct sigv4_keys suite_keys = { "AKIDEXAMPLE",
					      "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };

#define H(n, v)                                                                                    \
	{                                                                                          \
		n, v, sizeof(n) - 1, sizeof(v) - 1                                                 \
	}

struct vector {
	const char *name, *method, *path, *query, *body;
	struct sigv4_header headers[4];
	size_t n_headers;
	const char *signed_headers, *signature;
};

static const struct vector suite[] = {
	{ "get-vanilla",
	  "GET",
	  "/",
	  "",
	  "",
	  { H("Host", "example.amazonaws.com"), H("X-Amz-Date", DATE) },
	  2,
	  "host;x-amz-date",
	  "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
	{ "post-vanilla",
	  "POST",
	  "/",
	  "",
	  "",
	  { H("Host", "example.amazonaws.com"), H("X-Amz-Date", DATE) },
	  2,
	  "host;x-amz-date",
	  "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" },
	{ "get-vanilla-query-order-key-case",
	  "GET",
	  "/",
	  "Param2=value2&Param1=value1",
	  "",
	  { H("Host", "example.amazonaws.com"), H("X-Amz-Date", DATE) },
	  2,
	  "host;x-amz-date",
	  "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
	{ "get-vanilla-utf8-query",
	  "GET",
	  "/",
	  "%E1%88%B4=bar",
	  "",
	  { H("Host", "example.amazonaws.com"), H("X-Amz-Date", DATE) },
	  2,
	  "host;x-amz-date",
	  "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04" },
	{ "get-unreserved",
	  "GET",
	  "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
	  "",
	  "",
	  { H("Host", "example.amazonaws.com"), H("X-Amz-Date", DATE) },
	  2,
	  "host;x-amz-date",
	  "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f" },
	{ "get-header-value-trim",
	  "GET",
	  "/",
	  "",
	  "",
	  { H("Host", "example.amazonaws.com"), H("My-Header1", " value1"),
	    H("My-Header2", " \"a   b   c\""), H("X-Amz-Date", DATE) },
	  4,
	  "host;my-header1;my-header2;x-amz-date",
	  "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736" },
	{ "post-header-key-sort",
	  "POST",
	  "/",
	  "",
	  "",
	  { H("Host", "example.amazonaws.com"), H("My-Header1", "value1"), H("X-Amz-Date", DATE) },
	  3,
	  "host;my-header1;x-amz-date",
	  "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c" },
	{ "post-x-www-form-urlencoded",
	  "POST",
	  "/",
	  "",
	  "Param1=value1",
	  { H("Content-Type", "application/x-www-form-urlencoded"),
	    H("Host", "example.amazonaws.com"), H("X-Amz-Date", DATE) },
	  3,
	  "content-type;host;x-amz-date",
	  "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a" },
	{ "post-sts-header-before",
	  "POST",
	  "/",
	  "",
	  "",
	  { H("Host", "example.amazonaws.com"), H("X-Amz-Date", DATE),
	    H("X-Amz-Security-Token",
	      "AQoDYXdzEPT//////////"
	      "wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfK"
	      "D"
	      "8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq"
	      "5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKm"
	      "lzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==") },
	  3,
	  "host;x-amz-date;x-amz-security-token",
	  "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead" },
};

static void request_of(const struct vector *v, char *hash, struct sigv4_request *r)
{
	sigv4_sha256_hex(v->body, strlen(v->body), hash);
	*r = (struct sigv4_request){ .method = v->method,
				     .path = v->path,
				     .path_len = strlen(v->path),
				     .query = v->query,
				     .query_len = strlen(v->query),
				     .headers = v->headers,
				     .n_headers = v->n_headers,
				     .payload_hash = hash,
				     .amz_date = DATE,
				     .region = "us-east-1",
				     .service = "service" };
}

static void the_aws_test_suite(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof suite / sizeof suite[0]; i++) {
		const struct vector *v = &suite[i];
		char hash[SIGV4_HASH_HEX + 1], want[512];
		struct sigv4_request r;
		request_of(v, hash, &r);
		struct buf out;
		buf_init(&out, 4096);
		os_error err = { 0 };
		assert_int_equal(sigv4_authorization(&r, &suite_keys, &out, &err), 0);
		snprintf(want, sizeof want,
			 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
			 "aws4_request, SignedHeaders=%s, Signature=%s",
			 v->signed_headers, v->signature);
		if (strcmp(out.data, want) != 0)
			fail_msg("%s:\n got  %s\n want %s", v->name, out.data, want);
		buf_free(&out);
	}
}

static void canonical(const struct sigv4_request *r, const char *want)
{
	struct buf out;
	buf_init(&out, 1 << 16);
	os_error err = { 0 };
	assert_int_equal(sigv4_canonical_request(r, &out, &err), 0);
	if (strcmp(out.data, want) != 0)
		fail_msg("canonical request:\n got  %s\n want %s", out.data, want);
	buf_free(&out);
}

static void the_canonical_request_of_get_vanilla(void **state)
{
	(void)state;
	char hash[SIGV4_HASH_HEX + 1];
	struct sigv4_request r;
	request_of(&suite[0], hash, &r);
	canonical(&r, "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:" DATE
		      "\n\nhost;x-amz-date\n" EMPTY_HASH);
}

/* The proxy signs the target as it forwards it: already percent-encoded.
 * Every service but S3 encodes it once more (as the AWS SDKs do); S3 signs
 * it as sent. A query is normalised: `+` and `/` are data, escaped. */
static void encoding_as_forwarded(void **state)
{
	(void)state;
	struct sigv4_header h[] = { H("host", "h") };
	struct sigv4_request r = { .method = "GET",
				   .path = "/a%20b/c d",
				   .path_len = 10,
				   .query = "b=x/y+z&a&c=%7e",
				   .query_len = 15,
				   .headers = h,
				   .n_headers = 1,
				   .payload_hash = SIGV4_UNSIGNED_PAYLOAD,
				   .amz_date = DATE,
				   .region = "r",
				   .service = "s" };
	canonical(&r, "GET\n/a%2520b/c%20d\na=&b=x%2Fy%2Bz&c=~\nhost:h\n\nhost\nUNSIGNED-PAYLOAD");
	r.single_encode = true;
	canonical(&r, "GET\n/a%20b/c%20d\na=&b=x%2Fy%2Bz&c=~\nhost:h\n\nhost\nUNSIGNED-PAYLOAD");
	r.path_len = 0;
	canonical(&r, "GET\n/\na=&b=x%2Fy%2Bz&c=~\nhost:h\n\nhost\nUNSIGNED-PAYLOAD");
}

/* Same-named headers are joined in order; a malformed escape is data. */
static void repeated_headers_and_bad_escapes(void **state)
{
	(void)state;
	struct sigv4_header h[] = { H("X-A", " 1 "), H("host", "h"), H("x-a", "2") };
	struct sigv4_request r = { .method = "PUT",
				   .path = "/",
				   .path_len = 1,
				   .query = "k=%zz&k=%4",
				   .query_len = 10,
				   .headers = h,
				   .n_headers = 3,
				   .payload_hash = EMPTY_HASH,
				   .amz_date = DATE,
				   .region = "r",
				   .service = "s" };
	canonical(&r, "PUT\n/\nk=%254&k=%25zz\nhost:h\nx-a:1,2\n\nhost;x-a\n" EMPTY_HASH);
}

static void region(const char *host, const char *want)
{
	char out[32];
	bool ok = sigv4_region_from_host(host, out, sizeof out);
	if (!want && ok)
		fail_msg("%s: found region %s, want none", host, out);
	if (want && (!ok || strcmp(out, want) != 0))
		fail_msg("%s: got %s, want %s", host, ok ? out : "(none)", want);
}

static void regions_from_host_names(void **state)
{
	(void)state;
	region("bedrock-runtime.us-east-2.amazonaws.com", "us-east-2");
	region("sts.us-east-1.amazonaws.com", "us-east-1");
	region("my-bucket-1.s3.eu-west-1.amazonaws.com", "eu-west-1");
	region("my-bucket-1.s3.dualstack.ap-southeast-3.amazonaws.com", "ap-southeast-3");
	region("bedrock-runtime-fips.us-gov-west-1.amazonaws.com", "us-gov-west-1");
	region("s3.cn-north-1.amazonaws.com.cn", "cn-north-1");
	region("*.s3.us-east-1.amazonaws.com", "us-east-1");
	region("s3.amazonaws.com", NULL); /* global: signing_region is needed */
	region("us-east-1.example.com", NULL);
	region("api.anthropic.com", NULL);
	region("amazonaws.com", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_aws_test_suite),
		cmocka_unit_test(the_canonical_request_of_get_vanilla),
		cmocka_unit_test(encoding_as_forwarded),
		cmocka_unit_test(repeated_headers_and_bad_escapes),
		cmocka_unit_test(regions_from_host_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
