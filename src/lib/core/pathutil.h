/* pathutil.h - lexical questions about absolute, normalised paths (the
 * policy loader normalises them). Never touches the filesystem. */
#ifndef OS_PATHUTIL_H
#define OS_PATHUTIL_H

#include <stdbool.h>

/* True when child lies strictly below parent: "/a/b" is inside "/a" and
 * "/", "/ab" is not inside "/a", and no path is inside itself. */
bool path_is_inside(const char *child, const char *parent);

#endif
