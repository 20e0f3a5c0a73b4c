/* cli_common.c - API calls with uniform error output, tables and JSON
 * output for the `openshell` commands (see cli.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "fdutil.h"
#include "json.h"

int cli_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("openshell: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return CLI_FAIL;
}

int cli_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("openshell: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\n(run `openshell --help` for usage)\n", stderr);
	va_end(ap);
	return CLI_USAGE;
}

json_t *cli_api(struct cli *cli, const char *method, const char *path, const json_t *body,
		long *status)
{
	os_error err = { 0 };
	json_t *out = NULL;
	*status = 0;
	if (client_ensure(&cli->client, &err) < 0 ||
	    client_call(&cli->client, method, path, body, status, &out, &err) < 0) {
		cli_fail("%s", err.msg);
		return NULL;
	}
	if (*status >= 200 && *status < 300)
		return out ? out : json_object();
	const char *msg = json_string_value(json_object_get(out, "message"));
	cli_fail("%s (HTTP %ld)", msg ? msg : "the gateway refused the request", *status);
	json_decref(out);
	return NULL;
}

static char *cell(const json_t *v)
{
	if (!v || json_is_null(v))
		return strdup("-");
	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_array(v)) {
		char *s = NULL;
		size_t len = 0, i;
		json_t *e;
		FILE *f = open_memstream(&s, &len);
		json_array_foreach (v, i, e)
			fprintf(f, "%s%s", i ? "," : "",
				json_is_string(e) ? json_string_value(e) : "?");
		fclose(f);
		return s && *s ? s : (free(s), strdup("-"));
	}
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

void cli_table(struct cli *cli, const json_t *rows, const char *const cols[], const char *key)
{
	if (cli->json) {
		_cleanup_json_ json_t *o = json_pack("{s:O}", key, rows);
		cli_object(cli, o);
		return;
	}
	size_t ncol = 0, w[16] = { 0 }, i, c;
	json_t *r;
	while (cols[ncol] && ncol < 16)
		ncol++;
	for (c = 0; c < ncol; c++)
		w[c] = strlen(cols[c]);
	json_array_foreach (rows, i, r)
		for (c = 0; c < ncol; c++) {
			_cleanup_free_ char *s = cell(json_object_get(r, cols[c]));
			if (s && strlen(s) > w[c])
				w[c] = strlen(s) > 60 ? 60 : strlen(s);
		}
	for (c = 0; c < ncol; c++) {
		for (const char *p = cols[c]; *p; p++)
			putchar(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		printf("%*s", c + 1 < ncol ? (int)(w[c] - strlen(cols[c]) + 2) : 0, "");
	}
	putchar('\n');
	json_array_foreach (rows, i, r) {
		for (c = 0; c < ncol; c++) {
			_cleanup_free_ char *s = cell(json_object_get(r, cols[c]));
			printf(c + 1 < ncol ? "%-*.*s  " : "%-*.*s", c + 1 < ncol ? (int)w[c] : 0,
			       c + 1 < ncol ? (int)w[c] : 1000, s ? s : "-");
		}
		putchar('\n');
	}
}

void cli_object(struct cli *cli, const json_t *obj)
{
	if (cli->yaml) {
		if (cli_yaml_dump(obj, stdout) < 0)
			cli_fail("writing YAML failed");
		return;
	}
	if (cli->json) {
		json_dumpf(obj, stdout, JSON_INDENT(2));
		putchar('\n');
		return;
	}
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)obj, k, v) {
		_cleanup_free_ char *s = cell(v);
		printf("%-17s %s\n", k, s ? s : "-");
	}
}

char *cli_read_file(const char *path)
{
	char *data = NULL;
	size_t len = 0;
	os_error err = { 0 };
	if (file_read_all(path, 1u << 20, &data, &len, &err) < 0) {
		cli_fail("reading %s: %s", path, err.msg);
		return NULL;
	}
	return data;
}

int cli_segment(char *out, size_t cap, const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= cap || strpbrk(name, "/?#% ") != NULL)
		return cli_usage("\"%s\" is not a valid name", name), -1;
	memcpy(out, name, n + 1);
	return 0;
}
