/* commands.c - the table of `openshell` commands (see commands.h). A flag
 * the table does not know is a bad flag, said as such, before any gateway
 * is contacted; --help is answered from here and never reaches the API. */
#include "commands.h"

#include <string.h>

#include "cli.h"

#define FLAGS(...)                                                                                 \
	(const struct cli_flag[])                                                                  \
	{                                                                                          \
		__VA_ARGS__,                                                                       \
		{                                                                                  \
			NULL, 0, false                                                             \
		}                                                                                  \
	}
#define NOFLAGS                                                                                    \
	(const struct cli_flag[])                                                                  \
	{                                                                                          \
		{                                                                                  \
			NULL, 0, false                                                             \
		}                                                                                  \
	}

static const struct cli_command commands[] = {
	{ "sandbox", "create",
	  "[--name N] [--policy F] [--provider P]... [--env K=V]... [--label K=V]... "
	  "[--runtime-class C] [--image I] [--detach | --rm] [-i] [-t] [-v] [-- CMD...]",
	  "create a sandbox and run its agent in the foreground: its stdout on stdout, its "
	  "stderr on stderr, stdin forwarded (-t: a terminal), its exit code ours, Ctrl-C "
	  "stops it; --detach leaves it running, --rm deletes it when the agent ends, -v "
	  "shows the supervisor's messages (shown anyway on failure)",
	  FLAGS({ "--name", 0, true }, { "--policy", 0, true }, { "--provider", 0, true },
		{ "--env", 0, true }, { "--label", 0, true }, { "--runtime-class", 0, true },
		{ "--image", 0, true }, { "--detach", 'd', false }, { "--rm", 0, false },
		{ "--verbose", 'v', false }, { "--tty", 't', false },
		{ "--interactive", 'i', false }),
	  false },
	{ "sandbox", "list", "[--watch]", "the sandboxes; --watch: changes as they happen",
	  FLAGS({ "--watch", 'w', false }), false },
	{ "sandbox", "get", "NAME", "one sandbox, with the driver's view", NOFLAGS, false },
	{ "sandbox", "stop", "NAME", "stop it (the workspace is kept)", NOFLAGS, false },
	{ "sandbox", "start", "NAME", "start a stopped or finished sandbox again", NOFLAGS, false },
	{ "sandbox", "delete", "NAME", "delete it and its workspace", NOFLAGS, false },
	{ "sandbox", "logs", "NAME [--follow] [--since DURATION|TIME] [--audit]",
	  "the supervisor's and the agent's output; --audit: the supervisor's decision records "
	  "(a table; -o json: the JSON lines); --since 10m or 2026-12-02T01:30:00Z: only newer",
	  FLAGS({ "--follow", 'f', false }, { "--since", 0, true }, { "--audit", 0, false }),
	  false },
	{ "sandbox", "exec", "[-i] [-t] NAME [--] CMD [ARG...]",
	  "run CMD inside, confined like the agent (exits with CMD's status); stdin is "
	  "forwarded, -t gives it a terminal",
	  FLAGS({ "--tty", 't', false }, { "--interactive", 'i', false }), true },
	{ "sandbox", "connect", "NAME", "an interactive shell in it", NOFLAGS, false },
	{ "sandbox", "upload", "NAME LOCAL [REMOTE]",
	  "copy a file or directory into the workspace (REMOTE: relative to /sandbox, default "
	  "the workspace itself), written as the agent could",
	  NOFLAGS, false },
	{ "sandbox", "download", "NAME REMOTE [LOCAL]",
	  "copy a workspace file or directory out (LOCAL: default the current directory)", NOFLAGS,
	  false },
	{ "sandbox", "port-forward", "NAME LOCAL:REMOTE",
	  "serve 127.0.0.1:LOCAL here, each connection carried to 127.0.0.1:REMOTE inside the "
	  "sandbox; Ctrl-C stops it",
	  NOFLAGS, false },
	{ "policy", "set", "NAME --policy F [--wait] [--timeout S]",
	  "a new policy revision (exit 0 loaded, 1 failed, 124 timeout with --wait)",
	  FLAGS({ "--policy", 0, true }, { "--wait", 0, false }, { "--timeout", 0, true }), false },
	{ "policy", "get", "NAME", "the policy revision in force", NOFLAGS, false },
	{ "policy", "list", "NAME", "every revision with its status", NOFLAGS, false },
	{ "policy", "propose", "NAME [--apply]",
	  "the smallest policy change that allows the sandbox's denials (YAML, each rule "
	  "commented with the denials it covers); --apply shows the diff and loads it",
	  FLAGS({ "--apply", 0, false }), false },
	{ "policy", "validate", "[--strict] FILE...", "check policy files (offline)",
	  FLAGS({ "--strict", 0, false }), false },
	{ "provider", "create", "--name N --credential KEY[=VALUE]... [--endpoint HOST:PORT]...",
	  "store credentials (a bare KEY reads $KEY)",
	  FLAGS({ "--name", 0, true }, { "--credential", 0, true }, { "--endpoint", 0, true }),
	  false },
	{ "provider", "list", "", "the providers (never their secrets)", NOFLAGS, false },
	{ "provider", "get", "NAME", "one provider", NOFLAGS, false },
	{ "provider", "delete", "NAME", "delete it", NOFLAGS, false },
	{ "inference", "set",
	  "--provider openai|anthropic --base-url URL --model M [--api-key-env VAR]",
	  "the route behind inference.local",
	  FLAGS({ "--provider", 0, true }, { "--base-url", 0, true }, { "--model", 0, true },
		{ "--api-key-env", 0, true }),
	  false },
	{ "inference", "get", "", "the inference route", NOFLAGS, false },
	{ "inference", "delete", "", "remove it", NOFLAGS, false },
	{ "gateway", "start", "", "start the local gateway of the state directory", NOFLAGS,
	  false },
	{ "gateway", "stop", "", "stop it (sandboxes keep running)", NOFLAGS, false },
	{ "gateway", "status", "", "whether it runs, and what it serves", NOFLAGS, false },
	{ "completion", NULL, "bash|zsh", "the shell completion script", NOFLAGS, false },
};

static size_t n_commands(void)
{
	return sizeof(commands) / sizeof(commands[0]);
}

bool commands_family(const char *family)
{
	for (size_t i = 0; i < n_commands(); i++)
		if (!strcmp(commands[i].family, family))
			return true;
	return false;
}

const struct cli_command *commands_find(int argc, char **argv, int *words)
{
	for (size_t i = 0; argc > 0 && i < n_commands(); i++) {
		const struct cli_command *c = &commands[i];
		if (strcmp(c->family, argv[0]) != 0)
			continue;
		if (!c->sub) {
			*words = 1;
			return c;
		}
		if (argc > 1 && !strcmp(c->sub, argv[1])) {
			*words = 2;
			return c;
		}
	}
	return NULL;
}

static const struct cli_flag *flag_named(const struct cli_command *c, const char *a)
{
	for (const struct cli_flag *f = c->flags; f->name; f++)
		if (!strcmp(f->name, a) ||
		    (f->short_name && a[0] == '-' && a[1] == f->short_name && !a[2]))
			return f;
	return NULL;
}

/* "-it": every letter a short flag that takes no value. */
static bool short_cluster(const struct cli_command *c, const char *a)
{
	if (a[0] != '-' || a[1] == '-' || !a[1] || !a[2])
		return false;
	for (const char *p = a + 1; *p; p++) {
		const struct cli_flag *f = c->flags;
		while (f->name && (f->short_name != *p || f->value))
			f++;
		if (!f->name)
			return false;
	}
	return true;
}

int commands_own_args(const struct cli_command *c, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		const struct cli_flag *f = flag_named(c, argv[i]);
		if (!strcmp(argv[i], "--"))
			return i;
		if (f && f->value)
			i++;
		else if (!f && argv[i][0] != '-' && c->rest_after_positional)
			return i + 1;
	}
	return argc;
}

/* The known flag closest to a (longest common prefix), for "did you mean". */
static const char *nearest(const struct cli_command *c, const char *a)
{
	const char *best = NULL;
	size_t best_n = 2; /* more than the "--" every long flag shares */
	for (const struct cli_flag *f = c->flags; f->name; f++) {
		size_t n = 0;
		while (f->name[n] && f->name[n] == a[n])
			n++;
		if (n > best_n) {
			best_n = n;
			best = f->name;
		}
	}
	return best;
}

static const char *words(const struct cli_command *c, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s", c->family, c->sub ? " " : "", c->sub ? c->sub : "");
	return buf;
}

int commands_check_flags(const struct cli_command *c, int argc, char **argv)
{
	char w[64];
	int own = commands_own_args(c, argc, argv);
	for (int i = 0; i < own; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || !strcmp(a, "-") || !strcmp(a, "--"))
			continue;
		const struct cli_flag *f = flag_named(c, a);
		if (!f && short_cluster(c, a))
			continue;
		if (!f) {
			const char *near = nearest(c, a);
			return cli_usage("openshell %s: unknown flag %s%s%s%s",
					 words(c, w, sizeof w), a, near ? " (did you mean " : "",
					 near ? near : "", near ? "?)" : "");
		}
		if (f->value && (i + 1 >= own))
			return cli_usage("openshell %s: %s needs a value", words(c, w, sizeof w),
					 a);
		if (f->value)
			i++;
	}
	return 0;
}

static void usage_line(FILE *f, const struct cli_command *c, bool with_help)
{
	char w[64];
	fprintf(f, "  %s%s%s\n", words(c, w, sizeof w), *c->usage ? " " : "", c->usage);
	if (with_help)
		fprintf(f, "      %s\n", c->help);
}

void commands_usage(FILE *f, const char *family, const struct cli_command *only)
{
	fprintf(f, "usage: openshell [-o json|yaml] [--gateway URL] COMMAND ...\n");
	for (size_t i = 0; i < n_commands(); i++)
		if (only ? &commands[i] == only : !family || !strcmp(commands[i].family, family))
			usage_line(f, &commands[i], only != NULL || family != NULL);
	if (only || family)
		return;
	fprintf(f, "Options: -o json|yaml (read commands print JSON or YAML), --gateway URL,\n"
		   "  --help (anywhere before \"--\": help, nothing else is done), --version.\n"
		   "Exit codes: 0 done; 1 failed (the message says why); 2 bad usage (unknown\n"
		   "  command or flag, missing value); 124 timed out (policy set --wait);\n"
		   "  130 interrupted (Ctrl-C stopped a foreground sandbox create);\n"
		   "  sandbox create (foreground) and exec: the agent's or command's own code.\n"
		   "Environment: OPENSHELL_GATEWAY (http[s]://HOST:PORT or unix:/PATH), "
		   "OPENSHELL_TOKEN,\n"
		   "  OPENSHELL_GATEWAY_STATE_DIR (local gateway, auto-started when none runs),\n"
		   "  OPENSHELL_TLS_CA, OPENSHELL_TLS_CERT, OPENSHELL_TLS_KEY (https://, mTLS).\n");
}

static void print_words(const char *family, bool flags_of_sub, const char *sub)
{
	const char *last = "";
	for (size_t i = 0; i < n_commands(); i++) {
		const struct cli_command *c = &commands[i];
		if (!family && strcmp(c->family, last) != 0)
			printf(" %s", c->family);
		else if (family && !flags_of_sub && !strcmp(c->family, family) && c->sub)
			printf(" %s", c->sub);
		else if (family && flags_of_sub && !strcmp(c->family, family) && c->sub &&
			 !strcmp(c->sub, sub))
			for (const struct cli_flag *f = c->flags; f->name; f++)
				printf(" %s", f->name);
		last = c->family;
	}
}

/* One shell function, the same for both shells (zsh loads it through
 * bashcompinit): the words of the table at each position. */
static void completion_function(void)
{
	printf("_openshell() {\n"
	       "  local cur=${COMP_WORDS[COMP_CWORD]} fam=${COMP_WORDS[1]} "
	       "sub=${COMP_WORDS[2]} w=\n"
	       "  if [ \"$COMP_CWORD\" -eq 1 ]; then w=\"");
	print_words(NULL, false, NULL);
	printf(" --help --version\"\n  elif [ \"$COMP_CWORD\" -eq 2 ]; then\n    case $fam in\n");
	const char *last = "";
	for (size_t i = 0; i < n_commands(); i++) {
		if (!strcmp(commands[i].family, last))
			continue;
		last = commands[i].family;
		printf("    %s) w=\"", last);
		if (commands[i].sub)
			print_words(last, false, NULL);
		else
			printf(" bash zsh");
		printf("\" ;;\n");
	}
	printf("    esac\n  else\n    case \"$fam $sub\" in\n");
	for (size_t i = 0; i < n_commands(); i++) {
		if (!commands[i].sub || !commands[i].flags->name)
			continue;
		printf("    \"%s %s\") w=\"", commands[i].family, commands[i].sub);
		print_words(commands[i].family, true, commands[i].sub);
		printf(" --help\" ;;\n");
	}
	printf("    esac\n  fi\n"
	       "  COMPREPLY=($(compgen -W \"$w\" -- \"$cur\"))\n"
	       "}\n"
	       "complete -o default -F _openshell openshell\n");
}

int commands_completion(const char *shell)
{
	if (shell && !strcmp(shell, "bash")) {
		printf("# openshell completion for bash: eval \"$(openshell completion bash)\"\n");
		completion_function();
		return CLI_OK;
	}
	if (shell && !strcmp(shell, "zsh")) {
		printf("# openshell completion for zsh: eval \"$(openshell completion zsh)\"\n"
		       "autoload -U +X bashcompinit && bashcompinit\n");
		completion_function();
		return CLI_OK;
	}
	return cli_usage("openshell completion: %s%s%s: expected bash or zsh", shell ? "\"" : "",
			 shell ? shell : "a shell", shell ? "\"" : "");
}
