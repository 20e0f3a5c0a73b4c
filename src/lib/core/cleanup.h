/* cleanup.h - scope-bound ownership: cleanup attributes and ownership moves.
 * A resource variable carries one of these; steal_ptr()/steal_fd() move it out. */
#ifndef OS_CLEANUP_H
#define OS_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}
static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
static inline void cleanup_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(cleanup_fclosep)))

/* Moves ownership out of a cleanup-attributed pointer variable. */
#define steal_ptr(p)                                                                               \
	__extension__({                                                                            \
		__typeof__(p) steal_tmp_ = (p);                                                    \
		(p) = NULL;                                                                        \
		steal_tmp_;                                                                        \
	})

/* Moves ownership out of a cleanup-attributed fd variable. */
#define steal_fd(fd)                                                                               \
	__extension__({                                                                            \
		int steal_tmp_ = (fd);                                                             \
		(fd) = -1;                                                                         \
		steal_tmp_;                                                                        \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
