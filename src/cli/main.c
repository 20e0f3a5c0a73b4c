/* main.c - `openshell`: global options, then one command family per file
 * (cmd_*.c). Prints usage on --help; every error line says what to do. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int usage(FILE *f)
{
	fprintf(f,
		"usage: openshell [-o json] [--gateway URL] COMMAND ...\n"
		"  sandbox create [--name N] [--policy F] [--provider P]... [--env K=V]...\n"
		"                 [--label K=V]... [--runtime-class C] [--image I] [--detach]\n"
		"                 [-- CMD...]\n"
		"  sandbox list [--watch] | get NAME | stop NAME | start NAME | delete NAME\n"
		"  sandbox logs NAME [--follow]\n"
		"  sandbox exec [--tty] NAME -- CMD [ARG...]   (exits with CMD's status)\n"
		"  sandbox connect NAME                        (an interactive shell)\n"
		"  policy set NAME --policy F [--wait] [--timeout S]   (exit 0 loaded, 1 failed, "
		"124 timeout)\n"
		"  policy get NAME | list NAME | validate FILE...\n"
		"  provider create --name N --credential KEY[=VALUE]... [--endpoint HOST:PORT]...\n"
		"  provider list | get NAME | delete NAME\n"
		"  inference set --provider openai|anthropic --base-url URL --model M "
		"[--api-key-env VAR]\n"
		"  inference get | delete\n"
		"  gateway start | stop | status\n"
		"Environment: OPENSHELL_GATEWAY (http[s]://HOST:PORT or unix:/PATH), "
		"OPENSHELL_TOKEN,\n"
		"OPENSHELL_GATEWAY_STATE_DIR (local gateway, auto-started when none runs),\n"
		"OPENSHELL_TLS_CA, OPENSHELL_TLS_CERT, OPENSHELL_TLS_KEY (https://, mTLS).\n");
	return f == stdout ? CLI_OK : CLI_USAGE;
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return usage(stdout);
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			if (strcmp(argv[++i], "json") != 0)
				return cli_usage("-o %s: only \"json\" is supported", argv[i]);
			cli.json = true;
		} else if (!strcmp(argv[i], "--gateway") && i + 1 < argc)
			cli.gateway = argv[++i];
		else
			return cli_usage("unknown option %s", argv[i]);
	}
	if (i >= argc)
		return usage(stderr);
	const char *cmd = argv[i];
	int sub_argc = argc - i - 1;
	char **sub_argv = argv + i + 1;
	/* -o json may also follow the command words. */
	for (int j = 0; j + 1 < sub_argc; j++)
		if (!strcmp(sub_argv[j], "-o") && !strcmp(sub_argv[j + 1], "json") &&
		    (j == 0 || strcmp(sub_argv[j - 1], "--") != 0)) {
			bool after_dashdash = false;
			for (int k = 0; k < j; k++)
				after_dashdash |= !strcmp(sub_argv[k], "--");
			if (after_dashdash)
				break;
			cli.json = true;
			memmove(sub_argv + j, sub_argv + j + 2,
				(size_t)(sub_argc - j - 2) * sizeof(char *));
			sub_argc -= 2;
			break;
		}
	if (!strcmp(cmd, "policy") && sub_argc > 0 && !strcmp(sub_argv[0], "validate"))
		return cmd_policy(&cli, sub_argc, sub_argv); /* offline: no gateway */
	os_error err = { 0 };
	if (client_init(&cli.client, cli.gateway, &err) < 0)
		return cli_fail("%s", err.msg);
	if (!strcmp(cmd, "sandbox"))
		return cmd_sandbox(&cli, sub_argc, sub_argv);
	if (!strcmp(cmd, "policy"))
		return cmd_policy(&cli, sub_argc, sub_argv);
	if (!strcmp(cmd, "provider"))
		return cmd_provider(&cli, sub_argc, sub_argv);
	if (!strcmp(cmd, "inference"))
		return cmd_inference(&cli, sub_argc, sub_argv);
	if (!strcmp(cmd, "gateway"))
		return cmd_gateway(&cli, sub_argc, sub_argv);
	return cli_usage("unknown command \"%s\"", cmd);
}
