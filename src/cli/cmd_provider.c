/* cmd_provider.c - `openshell provider create|list|delete` and `openshell
 * inference set|get|delete`. A credential given as KEY alone is read from
 * the CLI's environment, so secrets need not appear on a command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "json.h"
#include "parse.h"

static int add_credential(json_t *creds, const char *spec)
{
	const char *eq = strchr(spec, '=');
	_cleanup_free_ char *key = eq ? str_ndup(spec, (size_t)(eq - spec)) : strdup(spec);
	const char *val = eq ? eq + 1 : getenv(spec);
	if (!key || !*key)
		return cli_usage("--credential %s: expected KEY or KEY=VALUE", spec);
	if (!val || !*val)
		return cli_usage("--credential %s: no value given and $%s is not set", key, key);
	json_object_set_new(creds, key, json_string(val));
	return 0;
}

static int create(struct cli *cli, int argc, char **argv)
{
	_cleanup_json_ json_t *body = json_object(), *out = NULL;
	json_t *creds = json_object(), *eps = json_array();
	json_object_set_new(body, "credentials", creds);
	json_object_set_new(body, "endpoints", eps);
	long status = 0;
	for (int i = 0; i < argc; i += 2) {
		if (i + 1 >= argc)
			return cli_usage("%s: missing value", argv[i]);
		if (!strcmp(argv[i], "--name"))
			json_object_set_new(body, "name", json_string(argv[i + 1]));
		else if (!strcmp(argv[i], "--credential")) {
			if (add_credential(creds, argv[i + 1]))
				return CLI_USAGE;
		} else if (!strcmp(argv[i], "--endpoint"))
			json_array_append_new(eps, json_string(argv[i + 1]));
		else
			return cli_usage("provider create: unknown option %s", argv[i]);
	}
	if (!json_object_get(body, "name") || json_object_size(creds) == 0)
		return cli_usage("usage: openshell provider create --name N --credential "
				 "KEY[=VALUE]... [--endpoint HOST:PORT]...");
	if (!(out = cli_api(cli, "POST", "/v1/providers", body, &status)))
		return CLI_FAIL;
	cli_object(cli, out);
	return CLI_OK;
}

int cmd_provider(struct cli *cli, int argc, char **argv)
{
	static const char *const cols[] = { "name", "credential_keys", "endpoints", NULL };
	const char *sub = argc > 0 ? argv[0] : "";
	long status = 0;
	char seg[256], path[512];
	if (!strcmp(sub, "create"))
		return create(cli, argc - 1, argv + 1);
	if (!strcmp(sub, "list") && argc == 1) {
		_cleanup_json_ json_t *out = cli_api(cli, "GET", "/v1/providers", NULL, &status);
		if (!out)
			return CLI_FAIL;
		cli_table(cli, json_object_get(out, "providers"), cols, "providers");
		return CLI_OK;
	}
	if ((!strcmp(sub, "delete") || !strcmp(sub, "get")) && argc == 2) {
		if (cli_segment(seg, sizeof(seg), argv[1]) < 0)
			return CLI_USAGE;
		snprintf(path, sizeof(path), "/v1/providers/%s", seg);
		_cleanup_json_ json_t *out =
			cli_api(cli, !strcmp(sub, "get") ? "GET" : "DELETE", path, NULL, &status);
		if (!out)
			return CLI_FAIL;
		cli_object(cli, out);
		return CLI_OK;
	}
	return cli_usage("usage: openshell provider create|list|get|delete ...");
}

static int inference_set(struct cli *cli, int argc, char **argv)
{
	_cleanup_json_ json_t *body = json_object(), *out = NULL;
	long status = 0;
	for (int i = 0; i < argc; i += 2) {
		if (i + 1 >= argc)
			return cli_usage("%s: missing value", argv[i]);
		const char *a = argv[i], *v = argv[i + 1];
		if (!strcmp(a, "--provider"))
			json_object_set_new(body, "provider", json_string(v));
		else if (!strcmp(a, "--base-url"))
			json_object_set_new(body, "base_url", json_string(v));
		else if (!strcmp(a, "--model"))
			json_object_set_new(body, "model", json_string(v));
		else if (!strcmp(a, "--api-key-env")) {
			const char *k = getenv(v);
			if (!k || !*k)
				return cli_usage("--api-key-env %s: the variable is not set", v);
			json_object_set_new(body, "api_key", json_string(k));
		} else
			return cli_usage("inference set: unknown option %s", a);
	}
	if (!(out = cli_api(cli, "PUT", "/v1/inference", body, &status)))
		return CLI_FAIL;
	cli_object(cli, out);
	return CLI_OK;
}

int cmd_inference(struct cli *cli, int argc, char **argv)
{
	const char *sub = argc > 0 ? argv[0] : "";
	long status = 0;
	if (!strcmp(sub, "set"))
		return inference_set(cli, argc - 1, argv + 1);
	if ((!strcmp(sub, "get") || !strcmp(sub, "delete")) && argc == 1) {
		_cleanup_json_ json_t *out = cli_api(cli, !strcmp(sub, "get") ? "GET" : "DELETE",
						     "/v1/inference", NULL, &status);
		if (!out)
			return CLI_FAIL;
		cli_object(cli, out);
		return CLI_OK;
	}
	return cli_usage(
		"usage: openshell inference set --provider openai|anthropic --base-url URL "
		"--model M [--api-key-env VAR] | get | delete");
}
