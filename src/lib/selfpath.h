/* selfpath.h - finding the project's other programs next to the running
 * one: installed side by side, or in the build tree's sibling folder. Never
 * searches PATH (a caller-controlled PATH must not pick the supervisor). */
#ifndef OS_SELFPATH_H
#define OS_SELFPATH_H

#include <stddef.h>

/* Writes DIR/BUILD_REL/NAME (build tree) or DIR/NAME (installed), where DIR
 * is the running executable's directory, whichever is executable first.
 * 0 on success, -1 when neither exists. */
int exe_sibling(const char *build_rel, const char *name, char *out, size_t cap);

#endif
