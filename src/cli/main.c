/* main.c - `openshell`: global options, then one command family per file
 * (cmd_*.c). Help, --version, completion and bad flags are answered from the
 * command table (commands.c) before anything contacts a gateway; every error
 * line says what to do. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static int output_format(struct cli *cli, const char *v)
{
	if (!v || (strcmp(v, "json") != 0 && strcmp(v, "yaml") != 0))
		return cli_usage("-o %s: expected json or yaml", v ? v : "(missing)");
	cli->json = true;
	cli->yaml = !strcmp(v, "yaml");
	return 0;
}

static bool is_help(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help");
}

/* Global options before the command; the index of the command word, or < 0
 * with *rc set when main is done (help, version, a bad option). */
static int global_options(struct cli *cli, int argc, char **argv, int *rc)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (is_help(a)) {
			commands_usage(stdout, NULL, NULL);
			return *rc = CLI_OK, -1;
		}
		if (!strcmp(a, "--version")) {
			printf("openshell %s\n", OPENSHELL_VERSION);
			return *rc = CLI_OK, -1;
		}
		if (!strcmp(a, "-o")) {
			if ((*rc = output_format(cli, v)) != 0)
				return -1;
			i++;
		} else if (!strcmp(a, "--gateway") && v) {
			cli->gateway = v;
			i++;
		} else {
			*rc = cli_usage("unknown option %s%s", a,
					!strcmp(a, "--gateway") ? " (needs a URL)" : "");
			return -1;
		}
	}
	return i;
}

/* -o FORMAT among the command's own arguments (it may follow the command
 * words); removed from argv. */
static int trailing_output(struct cli *cli, const struct cli_command *c, int skip, int *argc,
			   char **argv)
{
	int own = skip + commands_own_args(c, *argc - skip, argv + skip);
	for (int j = skip; j < own; j++) {
		if (strcmp(argv[j], "-o") != 0)
			continue;
		int rc = output_format(cli, j + 1 < own ? argv[j + 1] : NULL);
		if (rc)
			return rc;
		memmove(argv + j, argv + j + 2, (size_t)(*argc - j - 2) * sizeof(char *));
		*argc -= 2;
		return 0;
	}
	return 0;
}

static int dispatch(struct cli *cli, const char *cmd, int argc, char **argv)
{
	if (!strcmp(cmd, "policy") && argc > 0 && !strcmp(argv[0], "validate"))
		return cmd_policy(cli, argc, argv); /* offline: no gateway */
	os_error err = { 0 };
	if (client_init(&cli->client, cli->gateway, &err) < 0)
		return cli_fail("%s", err.msg);
	if (!strcmp(cmd, "sandbox"))
		return cmd_sandbox(cli, argc, argv);
	if (!strcmp(cmd, "policy"))
		return cmd_policy(cli, argc, argv);
	if (!strcmp(cmd, "provider"))
		return cmd_provider(cli, argc, argv);
	if (!strcmp(cmd, "inference"))
		return cmd_inference(cli, argc, argv);
	return cmd_gateway(cli, argc, argv);
}

int main(int argc, char **argv)
{
	struct cli cli = { 0 };
	int rc = 0, i = global_options(&cli, argc, argv, &rc), words = 0;
	if (i < 0)
		return rc;
	if (i >= argc) {
		commands_usage(stderr, NULL, NULL);
		return CLI_USAGE;
	}
	const char *cmd = argv[i];
	if (!commands_family(cmd))
		return cli_usage("unknown command \"%s\"", cmd);
	const struct cli_command *c = commands_find(argc - i, argv + i, &words);
	if (!c) {
		bool help = false;
		for (int j = i + 1; j < argc; j++)
			help |= is_help(argv[j]);
		commands_usage(help ? stdout : stderr, cmd, NULL);
		if (help)
			return CLI_OK;
		return i + 1 < argc ? cli_usage("unknown %s command \"%s\"", cmd, argv[i + 1])
				    : cli_usage("%s: which command?", cmd);
	}
	int sub_argc = argc - i - 1;
	char **sub_argv = argv + i + 1;
	int own = commands_own_args(c, sub_argc - (words - 1), sub_argv + (words - 1));
	for (int j = words - 1; j < words - 1 + own; j++)
		if (is_help(sub_argv[j])) {
			commands_usage(stdout, NULL, c);
			return CLI_OK;
		}
	if ((rc = trailing_output(&cli, c, words - 1, &sub_argc, sub_argv)) != 0 ||
	    (rc = commands_check_flags(c, sub_argc - (words - 1), sub_argv + (words - 1))) != 0)
		return rc;
	if (!strcmp(cmd, "completion"))
		return sub_argc == 1 ? commands_completion(sub_argv[0]) : commands_completion(NULL);
	return dispatch(&cli, cmd, sub_argc, sub_argv);
}
