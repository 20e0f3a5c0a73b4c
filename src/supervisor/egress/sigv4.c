/* sigv4.c - AWS Signature Version 4 (see sigv4.h), after AWS's published
 * algorithm: canonical request = method, canonical URI, canonical query,
 * canonical headers, signed header names, payload hash; string to sign =
 * algorithm, date, scope, hash of the canonical request; key = the HMAC
 * chain "AWS4"+secret -> date -> region -> service -> "aws4_request". */
#include "sigv4.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"

static bool unreserved(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

static int put_escaped(struct buf *out, unsigned char ch, os_error *err)
{
	static const char hexd[] = "0123456789ABCDEF";
	char e[3] = { '%', hexd[ch >> 4], hexd[ch & 15] };
	return buf_append(out, e, 3, err);
}

/* Every byte but the unreserved ones (and keep) percent-encoded. */
static int encode(struct buf *out, const char *s, size_t n, const char *keep, os_error *err)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		int rc = unreserved(ch) || (ch && strchr(keep, ch)) ? buf_append(out, s + i, 1, err)
								    : put_escaped(out, ch, err);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int canonical_uri(const struct sigv4_request *r, struct buf *out, os_error *err)
{
	if (r->path_len == 0)
		return buf_append_str(out, "/", err);
	return encode(out, r->path, r->path_len, r->single_encode ? "/%" : "/", err);
}

/* One query component decoded (a malformed escape stays literal) then
 * encoded the one way SigV4 accepts. */
static int query_component(struct buf *out, const char *s, size_t n, os_error *err)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		int hi, lo;
		if (ch == '%' && i + 2 < n &&
		    (hi = hex_digit_value((unsigned char)s[i + 1])) >= 0 &&
		    (lo = hex_digit_value((unsigned char)s[i + 2])) >= 0) {
			ch = (unsigned char)(hi << 4 | lo);
			i += 2;
		}
		if ((unreserved(ch) ? buf_append(out, &ch, 1, err) : put_escaped(out, ch, err)) < 0)
			return -1;
	}
	return 0;
}

struct qparam {
	char *kv; /* "key=value", encoded */
	size_t key_len;
};

static int qparam_cmp(const void *a, const void *b)
{
	const struct qparam *x = a, *y = b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->kv, y->kv, n);
	if (c || x->key_len != y->key_len)
		return c ? c : (x->key_len < y->key_len ? -1 : 1);
	return strcmp(x->kv + x->key_len, y->kv + y->key_len);
}

static int canonical_query(const struct sigv4_request *r, struct buf *out, os_error *err)
{
	size_t n = 0, cap = 1;
	for (size_t i = 0; i < r->query_len; i++)
		cap += r->query[i] == '&';
	struct qparam *v = calloc(cap, sizeof *v);
	if (!v)
		return os_error_set(err, ENOMEM, "out of memory");
	int rc = 0;
	const char *p = r->query, *end = r->query + r->query_len;
	while (p < end && rc == 0) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp ? amp : end;
		if (pe > p) {
			const char *eq = memchr(p, '=', (size_t)(pe - p));
			struct buf one;
			buf_init(&one, r->query_len * 3 + 2);
			rc = query_component(&one, p, (size_t)((eq ? eq : pe) - p), err);
			v[n].key_len = one.len;
			if (rc == 0)
				rc = buf_append_str(&one, "=", err);
			if (rc == 0 && eq)
				rc = query_component(&one, eq + 1, (size_t)(pe - eq - 1), err);
			v[n++].kv = buf_steal(&one);
			if (rc == 0 && !v[n - 1].kv)
				rc = os_error_set(err, ENOMEM, "out of memory");
		}
		p = pe + 1;
	}
	if (rc == 0)
		qsort(v, n, sizeof *v, qparam_cmp);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && i)
			rc = buf_append_str(out, "&", err);
		if (rc == 0)
			rc = buf_append_str(out, v[i].kv, err);
		free(v[i].kv);
	}
	free(v);
	return rc;
}

struct chdr {
	char name[64];
	size_t name_len;
	struct buf value; /* trimmed, inner runs of blanks as one space */
};

static int chdr_cmp(const void *a, const void *b)
{
	return strcmp(((const struct chdr *)a)->name, ((const struct chdr *)b)->name);
}

static int append_trimmed(struct buf *out, const char *s, size_t n, os_error *err)
{
	bool blank = false, any = false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ' || s[i] == '\t') {
			blank = any;
			continue;
		}
		if (blank && buf_append_str(out, " ", err) < 0)
			return -1;
		if (buf_append(out, s + i, 1, err) < 0)
			return -1;
		blank = false;
		any = true;
	}
	return 0;
}

/* The headers lower-cased, merged by name and sorted. */
static int collect_headers(const struct sigv4_request *r, struct chdr *h, size_t *nh, os_error *err)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_headers; i++) {
		const struct sigv4_header *in = &r->headers[i];
		if (in->name_len == 0 || in->name_len >= sizeof h[0].name)
			return os_error_set(err, EINVAL, "sigv4: header name of %zu bytes",
					    in->name_len);
		char lower[64];
		for (size_t k = 0; k < in->name_len; k++)
			lower[k] =
				(char)(in->name[k] >= 'A' && in->name[k] <= 'Z' ? in->name[k] + 32
										: in->name[k]);
		lower[in->name_len] = '\0';
		size_t j = 0;
		while (j < n && strcmp(h[j].name, lower) != 0)
			j++;
		if (j == n) {
			if (n == SIGV4_HEADERS_MAX)
				return os_error_set(err, EINVAL,
						    "sigv4: more than %d signed headers",
						    SIGV4_HEADERS_MAX);
			memcpy(h[n].name, lower, in->name_len + 1);
			h[n].name_len = in->name_len;
			buf_init(&h[n].value, 16384);
			n++;
		} else if (buf_append_str(&h[j].value, ",", err) < 0) {
			*nh = n;
			return -1;
		}
		if (append_trimmed(&h[j].value, in->value, in->value_len, err) < 0) {
			*nh = n;
			return -1;
		}
	}
	qsort(h, n, sizeof *h, chdr_cmp);
	*nh = n;
	return 0;
}

static int signed_names(const struct chdr *h, size_t n, struct buf *out, os_error *err)
{
	for (size_t i = 0; i < n; i++)
		if ((i && buf_append_str(out, ";", err) < 0) ||
		    buf_append(out, h[i].name, h[i].name_len, err) < 0)
			return -1;
	return 0;
}

static int canonical(const struct sigv4_request *r, struct buf *out, struct buf *names,
		     os_error *err)
{
	struct chdr h[SIGV4_HEADERS_MAX];
	size_t nh = 0;
	int rc = collect_headers(r, h, &nh, err);
	if (rc == 0)
		rc = buf_printf(out, err, "%s\n", r->method);
	if (rc == 0)
		rc = canonical_uri(r, out, err);
	if (rc == 0)
		rc = buf_append_str(out, "\n", err);
	if (rc == 0)
		rc = canonical_query(r, out, err);
	if (rc == 0)
		rc = buf_append_str(out, "\n", err);
	for (size_t i = 0; i < nh && rc == 0; i++)
		rc = buf_printf(out, err, "%s:%s\n", h[i].name,
				h[i].value.data ? h[i].value.data : "");
	if (rc == 0)
		rc = buf_append_str(out, "\n", err);
	if (rc == 0)
		rc = signed_names(h, nh, out, err);
	if (rc == 0)
		rc = buf_printf(out, err, "\n%s", r->payload_hash);
	if (rc == 0 && names)
		rc = signed_names(h, nh, names, err);
	for (size_t i = 0; i < nh; i++)
		buf_free(&h[i].value);
	return rc;
}

int sigv4_canonical_request(const struct sigv4_request *r, struct buf *out, os_error *err)
{
	return canonical(r, out, NULL, err);
}

static void to_hex(const unsigned char *d, size_t n, char *out)
{
	static const char hexd[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexd[d[i] >> 4];
		out[2 * i + 1] = hexd[d[i] & 15];
	}
	out[2 * n] = '\0';
}

void sigv4_sha256_hex(const void *data, size_t len, char *out)
{
	unsigned char md[32];
	unsigned int n = 0;
	EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
	to_hex(md, 32, out);
}

static void mac(const unsigned char *key, size_t key_len, const char *msg, unsigned char out[32])
{
	unsigned int n = 32;
	HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg, strlen(msg), out, &n);
}

int sigv4_authorization(const struct sigv4_request *r, const struct sigv4_keys *k, struct buf *out,
			os_error *err)
{
	if (!r->amz_date || strlen(r->amz_date) != SIGV4_DATE_LEN)
		return os_error_set(err, EINVAL, "sigv4: x-amz-date must be YYYYMMDDTHHMMSSZ");
	char day[9];
	memcpy(day, r->amz_date, 8);
	day[8] = '\0';
	_cleanup_buf_ struct buf creq, names, sts;
	buf_init(&creq, 1 << 20);
	buf_init(&names, 4096);
	buf_init(&sts, 4096);
	char creq_hash[SIGV4_HASH_HEX + 1];
	if (canonical(r, &creq, &names, err) < 0)
		return -1;
	sigv4_sha256_hex(creq.data, creq.len, creq_hash);
	if (buf_printf(&sts, err, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", r->amz_date,
		       day, r->region, r->service, creq_hash) < 0)
		return -1;
	/* The derived key chain; every intermediate is cleansed. */
	size_t sl = strlen(k->secret_key);
	unsigned char *seed = malloc(sl + 4);
	if (!seed)
		return os_error_set(err, ENOMEM, "out of memory");
	memcpy(seed, "AWS4", 4);
	memcpy(seed + 4, k->secret_key, sl);
	unsigned char a[32], b[32], sig[32];
	mac(seed, sl + 4, day, a);
	OPENSSL_cleanse(seed, sl + 4);
	free(seed);
	mac(a, 32, r->region, b);
	mac(b, 32, r->service, a);
	mac(a, 32, "aws4_request", b);
	mac(b, 32, sts.data, sig);
	OPENSSL_cleanse(a, sizeof a);
	OPENSSL_cleanse(b, sizeof b);
	char sig_hex[65];
	to_hex(sig, 32, sig_hex);
	return buf_printf(out, err,
			  "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
			  "Signature=%s",
			  k->access_key, day, r->region, r->service, names.data, sig_hex);
}

void sigv4_amz_date(time_t t, char *out)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, SIGV4_DATE_LEN + 1, "%Y%m%dT%H%M%SZ", &tm);
}

/* aa-bbbb-N or aa-gov-bbbb-N (us-east-1, eu-central-2, us-gov-west-1,
 * cn-north-1, ap-southeast-3). */
static bool region_like(const char *s, size_t n)
{
	size_t i = 0, parts = 0, part_len = 0;
	for (; i <= n; i++) {
		if (i == n || s[i] == '-') {
			if (part_len == 0)
				return false;
			parts++;
			part_len = 0;
			continue;
		}
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
		part_len++;
	}
	if (parts < 3 || parts > 4 || n < 2 || s[2] != '-')
		return false;
	for (size_t k = n; k > 0 && s[k - 1] != '-'; k--)
		if (s[k - 1] < '0' || s[k - 1] > '9')
			return false;
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

bool sigv4_region_from_host(const char *host, char *out, size_t cap)
{
	size_t n = strlen(host);
	if (ends_with(host, n, ".amazonaws.com"))
		n -= strlen(".amazonaws.com");
	else if (ends_with(host, n, ".amazonaws.com.cn"))
		n -= strlen(".amazonaws.com.cn");
	else
		return false;
	/* The label nearest the suffix that looks like a region. */
	size_t end = n;
	while (end > 0) {
		size_t start = end;
		while (start > 0 && host[start - 1] != '.')
			start--;
		if (region_like(host + start, end - start)) {
			if (end - start >= cap)
				return false;
			memcpy(out, host + start, end - start);
			out[end - start] = '\0';
			return true;
		}
		if (start == 0)
			break;
		end = start - 1;
	}
	return false;
}
