/* xfer.h - the byte stream of `sandbox upload` / `download` (docs/files.md):
 * one file or directory tree as records, encoded from an open fd and decoded
 * into an open directory fd. Both ends treat the other as hostile: every
 * record names one path component (no '/', no "..", no NUL), entries are
 * opened relative to a directory fd held by the walk and never through a
 * symbolic link, files are written to a fresh temporary name and renamed
 * into place, and only permission bits travel (never setuid, setgid or
 * sticky). libc only: the static launcher links it.
 *
 * Records (integers big-endian):
 *   'd' mode:u32 mtime:i64 len:u16 name    enter a directory (created 0700)
 *   'f' mode:u32 mtime:i64 len:u16 name size:u64 bytes
 *   'u'                                    leave it: its mode and mtime now
 *   'z'                                    the end of the transfer
 * The first record is the root entry, its name the root's name. */
#ifndef OS_XFER_H
#define OS_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define XFER_DEPTH_MAX 64 /* directory levels (one fd each on the decoding side) */
#define XFER_NAME_MAX 255
#define XFER_PATH_MAX 4096 /* for messages only */
#define XFER_MODE_MASK 0777

/* A name that may travel: 1..255 bytes, no '/', not "." or "..". */
bool xfer_name_ok(const char *name, size_t len);

/* Where encoded bytes go; < 0 (err set) stops the encoder. */
typedef int (*xfer_sink_fn)(void *user, const void *data, size_t len, os_error *err);
/* Entries that cannot travel (symbolic links, devices, sockets) are skipped
 * and reported here with their path. */
typedef void (*xfer_warn_fn)(void *user, const char *msg);

struct xfer_out {
	xfer_sink_fn sink;
	xfer_warn_fn warn;
	void *user;
	uint64_t files, bytes; /* counted as sent */
};

/* Sends the entry open at fd (a regular file or a directory; the caller
 * opened it without following a link) under the name as_name, then the end
 * record. label is its path in messages. fd stays the caller's. */
int xfer_send(int fd, const char *as_name, const char *label, struct xfer_out *o, os_error *err);

struct xfer_level {
	int fd;
	uint32_t mode;
	int64_t mtime;
	size_t path_len; /* of path[] at this level */
};

struct xfer_in {
	/* set by the caller */
	int dest_dir; /* where the root entry is created (the caller's fd) */
	const char *dest_name; /* the root's name there; NULL: the sender's */
	const char *label; /* dest_dir's path, for messages */
	/* decoder state */
	int state;
	uint8_t head[1 + 4 + 8 + 2 + XFER_NAME_MAX + 8];
	size_t head_len, head_want;
	struct xfer_level stack[XFER_DEPTH_MAX];
	size_t depth;
	bool root_seen;
	int file_fd; /* the temporary file being written, or -1 */
	char tmp_name[64];
	char file_name[XFER_NAME_MAX + 1];
	uint32_t file_mode;
	int64_t file_mtime;
	uint64_t file_left;
	char path[XFER_PATH_MAX]; /* of the entry being written, for messages */
	uint64_t files, bytes; /* counted as written */
};

void xfer_in_init(struct xfer_in *in, int dest_dir, const char *dest_name, const char *label);
/* Feeds stream bytes. 0: more wanted; 1: the end record arrived (bytes
 * after it are refused); < 0 (err set, naming the path): stop. */
int xfer_in_feed(struct xfer_in *in, const void *data, size_t len, os_error *err);
/* The end record arrived. */
bool xfer_in_done(const struct xfer_in *in);
/* Drops what an unfinished transfer left open (its temporary file too). */
void xfer_in_free(struct xfer_in *in);

#endif
