/* sigv4.h - AWS Signature Version 4 (AWS4-HMAC-SHA256) over one request, as
 * the proxy forwards it: the canonical request, the string to sign, the
 * derived key and the Authorization value. Pure functions (no clock, no
 * I/O), so the published AWS test-suite vectors pin them exactly. */
#ifndef OS_SUPERVISOR_SIGV4_H
#define OS_SUPERVISOR_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "buf.h"
#include "error.h"

#define SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define SIGV4_STREAMING_UNSIGNED_TRAILER "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#define SIGV4_HEADERS_MAX 16
#define SIGV4_DATE_LEN 16 /* YYYYMMDDTHHMMSSZ */
#define SIGV4_HASH_HEX 64

struct sigv4_header {
	const char *name, *value;
	size_t name_len, value_len;
};

struct sigv4_request {
	const char *method;
	/* The target as sent: path percent-encoded, query without its '?'. */
	const char *path, *query;
	size_t path_len, query_len;
	/* The headers to sign, any case and order; same-named ones are joined. */
	const struct sigv4_header *headers;
	size_t n_headers;
	const char *payload_hash; /* 64 lower-case hex digits, or a named mode */
	const char *amz_date; /* SIGV4_DATE_LEN characters */
	const char *region, *service;
	/* S3 signs the path as sent; every other service encodes it again. */
	bool single_encode;
};

struct sigv4_keys {
	const char *access_key, *secret_key;
};

/* The canonical request (AWS's step 1), appended to out. */
int sigv4_canonical_request(const struct sigv4_request *r, struct buf *out, os_error *err);
/* The Authorization header value, appended to out. */
int sigv4_authorization(const struct sigv4_request *r, const struct sigv4_keys *k, struct buf *out,
			os_error *err);

/* t as x-amz-date (UTC): out holds SIGV4_DATE_LEN + 1 bytes. */
void sigv4_amz_date(time_t t, char *out);
/* Lower-case hex SHA-256 of data: out holds SIGV4_HASH_HEX + 1 bytes. */
void sigv4_sha256_hex(const void *data, size_t len, char *out);
/* The region an AWS host name carries (bedrock-runtime.us-east-1.amazonaws.com,
 * bucket.s3.dualstack.eu-west-1.amazonaws.com, sts.cn-north-1.amazonaws.com.cn,
 * a `*` label allowed), or false. */
bool sigv4_region_from_host(const char *host, char *out, size_t cap);

#endif
