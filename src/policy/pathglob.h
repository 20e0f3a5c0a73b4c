/* pathglob.h - glob matching of absolute paths, for policy binaries and L7
 * request paths: `*` stays within one path component, `**` crosses
 * components (and matches zero or more of them). No other metacharacters. */
#ifndef OS_POLICY_PATHGLOB_H
#define OS_POLICY_PATHGLOB_H

#include <stdbool.h>

bool path_glob_match(const char *pattern, const char *path);
/* True when the pattern contains no `*`: it matches only itself, so it can be
 * used as an exact-match key. */
bool path_glob_is_literal(const char *pattern);

/* `*` matches any run of bytes (`/` included); everything else literally. */
bool glob_star_match(const char *pat, const char *s);

#endif
