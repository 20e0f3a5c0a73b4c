/* pathutil.c - see pathutil.h. */
#include "pathutil.h"

#include <string.h>

bool path_is_inside(const char *child, const char *parent)
{
	size_t n = strlen(parent);
	if (strcmp(parent, "/") == 0)
		return child[0] == '/' && child[1] != '\0';
	return strncmp(child, parent, n) == 0 && child[n] == '/' && child[n + 1] != '\0';
}
