/* local_settings.c - checks the local driver's file settings at gateway
 * start (see local_settings.h). The supervisor parses them again for real;
 * this only refuses what it would refuse, earlier and with the setting's
 * name. */
#include "local_settings.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "local_driver.h"
#include "parse.h"
#include "ssrf.h"

#define SECTION "drivers.local"
#define SETTING_FILE_CAP (1u << 20) /* the supervisor's own cap for both files */

static int read_setting(const char *key, const char *path, char **text, os_error *err)
{
	size_t len = 0;
	if (file_read_all(path, SETTING_FILE_CAP, text, &len, err) < 0)
		return os_error_prefix(err, SECTION ".%s", key);
	return 0;
}

/* ADDRESS NAME... lines; # starts a comment. */
static int check_hosts(const char *path, os_error *err)
{
	_cleanup_free_ char *text = NULL;
	if (read_setting("hosts_file", path, &text, err) < 0)
		return -1;
	unsigned lineno = 1;
	for (char *line = text, *nl; *line; line = nl + 1, lineno++) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		size_t skip = strspn(line, " \t"), wl = strcspn(line + skip, " \t");
		if (wl) {
			char addr[64];
			struct ip_addr ip;
			if (wl >= sizeof(addr))
				return os_error_set(err, EINVAL,
						    SECTION ".hosts_file: %s:%u: address too long",
						    path, lineno);
			memcpy(addr, line + skip, wl);
			addr[wl] = '\0';
			if (ip_addr_parse(addr, &ip, err) < 0)
				return os_error_prefix(err, SECTION ".hosts_file: %s:%u", path,
						       lineno);
			if (!line[skip + wl + strspn(line + skip + wl, " \t")])
				return os_error_set(err, EINVAL,
						    SECTION ".hosts_file: %s:%u: %s names no host",
						    path, lineno, addr);
		}
		if (!nl)
			break;
	}
	return 0;
}

/* At least one PEM certificate, and nothing that fails to parse. */
static int check_ca(const char *path, os_error *err)
{
	_cleanup_free_ char *text = NULL;
	if (read_setting("upstream_ca_file", path, &text, err) < 0)
		return -1;
	BIO *bio = BIO_new_mem_buf(text, (int)strlen(text));
	int n = 0;
	X509 *x;
	while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		X509_free(x);
		n++;
	}
	unsigned long e = ERR_peek_last_error();
	bool clean_end = ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
	ERR_clear_error();
	BIO_free(bio);
	if (n == 0 || !clean_end)
		return os_error_set(err, EINVAL, SECTION ".upstream_ca_file: %s: %s", path,
				    n == 0 ? "no PEM certificate in it"
					   : "a certificate in it does not parse");
	return 0;
}

static int check_binary(const char *key, const char *path, os_error *err)
{
	if (path && access(path, X_OK) < 0)
		return os_error_errno(err, SECTION ".%s: %s", key, path);
	return 0;
}

/* The supervisor's --transparent-ports takes the same: checked here so a
 * typo stops the gateway at start, not each sandbox. */
static int check_transparent_ports(const char *v, os_error *err)
{
	uint16_t ports[LOCAL_TRANSPARENT_PORTS_MAX];
	size_t n;
	if (strcmp(v, "off") != 0 &&
	    parse_port_list(v, ports, LOCAL_TRANSPARENT_PORTS_MAX, &n, err) < 0)
		return os_error_prefix(err, "[openshell.drivers.local] transparent_ports (or off)");
	return 0;
}

int local_settings_check(const struct config *cfg, const char *supervisor, const char *sandbox,
			 os_error *err)
{
	const char *hosts = config_get_string(cfg, SECTION, "hosts_file");
	const char *ca = config_get_string(cfg, SECTION, "upstream_ca_file");
	const char *tp = config_get_string(cfg, SECTION, "transparent_ports");
	if (check_binary("supervisor_binary", supervisor, err) < 0 ||
	    check_binary("sandbox_binary", sandbox, err) < 0 ||
	    (hosts && check_hosts(hosts, err) < 0) || (ca && check_ca(ca, err) < 0) ||
	    (tp && check_transparent_ports(tp, err) < 0))
		return -1;
	return 0;
}
