/* commands.h - every `openshell` command with its usage line and flags: the
 * one table that --help, the flag check run before anything else, and
 * `openshell completion` are read from, so they cannot disagree. Nothing
 * here contacts a gateway. */
#ifndef OS_CLI_COMMANDS_H
#define OS_CLI_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

struct cli_flag {
	const char *name; /* "--watch" */
	char short_name; /* 'w', or 0 */
	bool value; /* takes the next argument */
};

struct cli_command {
	const char *family, *sub; /* "sandbox", "list" */
	const char *usage; /* the arguments after the command words */
	const char *help; /* one line on what it does */
	const struct cli_flag *flags; /* ends with { NULL } */
	/* After the first positional (exec's NAME) everything is the command. */
	bool rest_after_positional;
};

/* Where the command's own arguments end: argc, or the index of "--" (or,
 * for rest_after_positional, of the first argument after the positional). */
int commands_own_args(const struct cli_command *c, int argc, char **argv);
/* The command named by the first words of argv (family [sub]); NULL when
 * there is none. *words is how many words it took. */
const struct cli_command *commands_find(int argc, char **argv, int *words);
/* True when a family of this name exists. */
bool commands_family(const char *family);
/* Checks flags of argv (after the command words): unknown ones and missing
 * values are reported as such; 0 or CLI_USAGE. */
int commands_check_flags(const struct cli_command *c, int argc, char **argv);
/* Usage of everything, of one family, or of one command. */
void commands_usage(FILE *f, const char *family, const struct cli_command *only);
/* `openshell completion bash|zsh`: the script on stdout. */
int commands_completion(const char *shell);

#endif
