/* credentials.c - provider secrets and placeholder substitution (see
 * credentials.h). Substitution happens only in what the proxy forwards to
 * an endpoint bound to the provider (header values; text bodies and
 * WebSocket messages where the endpoint asks for it); anywhere else the
 * placeholder stays a harmless literal. */
#include "credentials.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"

#define CRED_FILE_CAP (1u << 20)
#define CRED_MAX 256

struct cred {
	char *provider, *key, *secret;
};

struct credentials {
	struct cred v[CRED_MAX];
	size_t n;
};

void credentials_free(struct credentials *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].provider);
		free(c->v[i].key);
		if (c->v[i].secret) {
			OPENSSL_cleanse(c->v[i].secret, strlen(c->v[i].secret));
			free(c->v[i].secret);
		}
	}
	free(c);
}

static bool key_is_valid(const char *k)
{
	if (!*k || strlen(k) > 128)
		return false;
	for (const char *p = k; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

int credentials_parse(const char *text, size_t len, struct credentials **out, os_error *err)
{
	_cleanup_json_ json_t *root = json_parse_strict(text, len, CRED_FILE_CAP, err);
	if (!root)
		return -1;
	static const char *const top[] = { "providers", NULL };
	if (json_check_keys(root, top, "credentials", err) < 0)
		return -1;
	json_t *providers = json_object_get(root, "providers");
	if (providers && !json_is_object(providers))
		return os_error_set(err, EINVAL, "credentials: providers must be an object");
	struct credentials *c = calloc(1, sizeof *c);
	if (!c)
		return os_error_set(err, ENOMEM, "out of memory");
	const char *pname, *key;
	json_t *secrets, *val;
	json_object_foreach (providers, pname, secrets) {
		if (!json_is_object(secrets)) {
			credentials_free(c);
			return os_error_set(err, EINVAL, "provider %s: expected an object", pname);
		}
		json_object_foreach (secrets, key, val) {
			if (!key_is_valid(key) || !json_is_string(val) || c->n == CRED_MAX ||
			    credentials_lookup(c, key, strlen(key), NULL)) {
				credentials_free(c);
				return os_error_set(err, EINVAL,
						    "provider %s: credential \"%s\" is invalid, "
						    "duplicated or over the limit of %d",
						    pname, key, CRED_MAX);
			}
			struct cred *cr = &c->v[c->n++];
			cr->provider = strdup(pname);
			cr->key = strdup(key);
			cr->secret = strdup(json_string_value(val));
			if (!cr->provider || !cr->key || !cr->secret) {
				credentials_free(c);
				return os_error_set(err, ENOMEM, "out of memory");
			}
		}
	}
	*out = c;
	return 0;
}

int credentials_load(const char *path, struct credentials **out, os_error *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return os_error_errno(err, "credentials file %s", path);
	if (st.st_mode & 077)
		return os_error_set(err, EPERM,
				    "credentials file %s must not be readable by others "
				    "(mode %o)",
				    path, st.st_mode & 0777);
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (file_read_all(path, CRED_FILE_CAP, &text, &len, err) < 0)
		return -1;
	int rc = credentials_parse(text, len, out, err);
	OPENSSL_cleanse(text, len);
	return rc < 0 ? os_error_prefix(err, "%s", path) : 0;
}

int credentials_agent_env(const struct credentials *c, char ***env, size_t *n, os_error *err)
{
	char **v = calloc(c->n + 1, sizeof *v);
	if (!v)
		return os_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < c->n; i++) {
		size_t need = strlen(c->v[i].key) * 2 + sizeof CRED_PLACEHOLDER_PREFIX + 2;
		v[i] = malloc(need);
		if (!v[i]) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return os_error_set(err, ENOMEM, "out of memory");
		}
		snprintf(v[i], need, "%s=%s%s", c->v[i].key, CRED_PLACEHOLDER_PREFIX, c->v[i].key);
	}
	*env = v;
	*n = c->n;
	return 0;
}

const char *credentials_lookup(const struct credentials *c, const char *key, size_t key_len,
			       const char **provider)
{
	for (size_t i = 0; i < c->n; i++)
		if (strlen(c->v[i].key) == key_len && memcmp(c->v[i].key, key, key_len) == 0) {
			if (provider)
				*provider = c->v[i].provider;
			return c->v[i].secret;
		}
	return NULL;
}

/* Replaces every placeholder in s[0..len) into out. */
static enum cred_result substitute(const struct credentials *c, const char *s, size_t len,
				   cred_allowed_fn allowed, void *data, struct buf *out,
				   const char **provider, os_error *err)
{
	const size_t plen = strlen(CRED_PLACEHOLDER_PREFIX);
	enum cred_result res = CRED_NONE;
	size_t i = 0;
	while (i < len) {
		const char *hit = memmem(s + i, len - i, CRED_PLACEHOLDER_PREFIX, plen);
		size_t upto = hit ? (size_t)(hit - s) : len;
		if (buf_append(out, s + i, upto - i, err) < 0)
			return CRED_ERROR;
		if (!hit)
			break;
		size_t k = upto + plen, ke = k;
		while (ke < len &&
		       (s[ke] == '_' || (s[ke] >= 'A' && s[ke] <= 'Z') ||
			(s[ke] >= 'a' && s[ke] <= 'z') || (s[ke] >= '0' && s[ke] <= '9')))
			ke++;
		const char *prov = NULL;
		const char *secret = credentials_lookup(c, s + k, ke - k, &prov);
		if (!secret)
			return CRED_UNKNOWN_KEY;
		if (provider)
			*provider = prov;
		if (!allowed(data, prov))
			return CRED_ENDPOINT_MISMATCH;
		if (buf_append_str(out, secret, err) < 0)
			return CRED_ERROR;
		res = CRED_OK;
		i = ke;
	}
	return res;
}

enum cred_result credentials_rewrite_text(const struct credentials *c, const char *s, size_t len,
					  cred_allowed_fn allowed, void *data, struct buf *out,
					  const char **provider, os_error *err)
{
	return substitute(c, s, len, allowed, data, out, provider, err);
}

static enum cred_result rewrite_basic(const struct credentials *c, const char *b64, size_t len,
				      cred_allowed_fn allowed, void *data, struct buf *out,
				      const char **provider, os_error *err)
{
	unsigned char dec[1024], enc[2048];
	if (len == 0 || len > 1360 || len % 4)
		return CRED_NONE;
	int n = EVP_DecodeBlock(dec, (const unsigned char *)b64, (int)len);
	if (n < 0)
		return CRED_NONE;
	while (n > 0 && len >= 2 && b64[len - 1] == '=' && (len--, 1))
		n--; /* EVP_DecodeBlock counts padding bytes as output */
	if (!memmem(dec, (size_t)n, CRED_PLACEHOLDER_PREFIX, strlen(CRED_PLACEHOLDER_PREFIX)))
		return CRED_NONE;
	_cleanup_buf_ struct buf plain;
	buf_init(&plain, sizeof dec);
	enum cred_result r =
		substitute(c, (const char *)dec, (size_t)n, allowed, data, &plain, provider, err);
	OPENSSL_cleanse(dec, sizeof dec);
	if (r != CRED_OK) {
		if (plain.data)
			OPENSSL_cleanse(plain.data, plain.len);
		return r;
	}
	int m = EVP_EncodeBlock(enc, (const unsigned char *)plain.data, (int)plain.len);
	OPENSSL_cleanse(plain.data, plain.len);
	if (buf_append_str(out, "Basic ", err) < 0 || buf_append(out, enc, (size_t)m, err) < 0)
		return CRED_ERROR;
	return CRED_OK;
}

enum cred_result credentials_rewrite_value(const struct credentials *c, const char *value,
					   size_t len, cred_allowed_fn allowed, void *data,
					   struct buf *out, const char **provider, os_error *err)
{
	if (c && len > 6 && str_ieq(value, 6, "Basic ", 6)) {
		size_t mark = out->len;
		enum cred_result r =
			rewrite_basic(c, value + 6, len - 6, allowed, data, out, provider, err);
		if (r != CRED_NONE)
			return r;
		out->len = mark;
	}
	if (!c) {
		return buf_append(out, value, len, err) < 0 ? CRED_ERROR : CRED_NONE;
	}
	return substitute(c, value, len, allowed, data, out, provider, err);
}

size_t secret_mask_one(const char *secret, char *data, size_t len)
{
	size_t sl = secret ? strlen(secret) : 0, hits = 0;
	char *p = data, *hit;
	size_t left = len;
	while (sl && left >= sl && (hit = memmem(p, left, secret, sl)) != NULL) {
		memset(hit, '*', sl);
		hits++;
		left -= (size_t)(hit + sl - p);
		p = hit + sl;
	}
	return hits;
}

size_t credentials_mask(const struct credentials *c, char *data, size_t len)
{
	size_t hits = 0;
	for (size_t i = 0; c && i < c->n; i++)
		hits += secret_mask_one(c->v[i].secret, data, len);
	return hits;
}

size_t credentials_max_len(const struct credentials *c)
{
	size_t m = 0;
	for (size_t i = 0; c && i < c->n; i++)
		if (strlen(c->v[i].secret) > m)
			m = strlen(c->v[i].secret);
	return m;
}
