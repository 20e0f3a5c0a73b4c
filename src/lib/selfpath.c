/* selfpath.c - sibling programs of the running executable (see selfpath.h). */
#include "selfpath.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

int exe_sibling(const char *build_rel, const char *name, char *out, size_t cap)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (str_format(out, cap, NULL, "%s/%s/%s", self, build_rel, name) == 0 &&
	    access(out, X_OK) == 0)
		return 0;
	if (str_format(out, cap, NULL, "%s/%s", self, name) == 0 && access(out, X_OK) == 0)
		return 0;
	return -1;
}
