/* test_xfer.c - the transfer stream (src/lib/core/xfer_*.c) against a
 * hostile peer: a tree round-trips byte for byte with its permission bits
 * (never setuid/setgid), fed one byte at a time as well as whole; names
 * with '/', "." or "..", two roots, a record after the end, a truncated
 * stream and too deep a tree are refused; an existing symbolic link is
 * neither followed nor replaced and a hard link is replaced, not written
 * through. Each refusal sits beside the accepted twin. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "xfer.h"

static int sink_buf(void *user, const void *data, size_t len, os_error *err)
{
	return buf_append(user, data, len, err);
}

static char *tmpdir(void)
{
	char *t = strdup("/tmp/test-xfer-XXXXXX");
	assert_non_null(mkdtemp(t));
	return t;
}

static void rm_rf(const char *p)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s 2>/dev/null; rm -rf %s", p, p);
	assert_int_equal(system(cmd), 0);
}

static void put_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static char *slurp(const char *dir, const char *name)
{
	static char got[4096];
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, got, sizeof got - 1);
	close(fd);
	got[n < 0 ? 0 : n] = '\0';
	return got;
}

static mode_t mode_of(const char *dir, const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode & 07777;
}

/* Encodes src/name into b. */
static void encode(const char *src, const char *name, struct buf *b)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", src, name);
	int fd = open(p, O_RDONLY | O_NONBLOCK);
	assert_true(fd >= 0);
	struct xfer_out o = { .sink = sink_buf, .user = b };
	os_error err = { 0 };
	assert_int_equal(xfer_send(fd, name, p, &o, &err), 0);
	close(fd);
}

/* Decodes data into dir; step: bytes per feed (0: all at once). */
static int decode(const char *dir, const char *as, const void *data, size_t len, size_t step,
		  os_error *err)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY);
	assert_true(dfd >= 0);
	struct xfer_in in;
	xfer_in_init(&in, dfd, as, dir);
	int rc = 0;
	const char *p = data;
	for (size_t off = 0; off < len && rc == 0;) {
		size_t n = step && step < len - off ? step : len - off;
		rc = xfer_in_feed(&in, p + off, n, err);
		off += n;
	}
	if (rc == 0)
		rc = xfer_in_done(&in) ? 1 : os_error_set(err, EPIPE, "ended early");
	xfer_in_free(&in);
	close(dfd);
	return rc;
}

static void tree_round_trips_with_modes(void **state)
{
	(void)state;
	char *src = tmpdir(), *dst = tmpdir(), *dst2 = tmpdir();
	char p[512];
	snprintf(p, sizeof p, "%s/t", src);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/t/sub", src);
	assert_int_equal(mkdir(p, 0700), 0);
	put_file(src, "t/a", "alpha\n", 04755); /* setuid must not travel */
	put_file(src, "t/sub/b", "", 0640);
	snprintf(p, sizeof p, "%s/t/ln", src);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	struct buf b;
	buf_init(&b, 1 << 20);
	encode(src, "t", &b);
	os_error err = { 0 };
	assert_int_equal(decode(dst, NULL, b.data, b.len, 0, &err), 1);
	assert_string_equal(slurp(dst, "t/a"), "alpha\n");
	assert_int_equal(mode_of(dst, "t/a"), 0755);
	assert_int_equal(mode_of(dst, "t/sub"), 0700);
	assert_int_equal(mode_of(dst, "t/sub/b"), 0640);
	assert_null(slurp(dst, "t/ln")); /* links are not sent */
	/* Byte by byte, under another name: the same tree. */
	assert_int_equal(decode(dst2, "renamed", b.data, b.len, 1, &err), 1);
	assert_string_equal(slurp(dst2, "renamed/a"), "alpha\n");
	buf_free(&b);
	rm_rf(src);
	rm_rf(dst);
	rm_rf(dst2);
	free(src);
	free(dst);
	free(dst2);
}

/* A hand-made record: type, mode, mtime 0, name, and a file's size. */
static void rec(struct buf *b, char type, const char *name, uint64_t size)
{
	uint8_t h[32] = { (uint8_t)type, 0, 0, 0x01, 0xa4 }; /* mode 0644 */
	size_t nl = strlen(name);
	h[13] = (uint8_t)(nl >> 8);
	h[14] = (uint8_t)nl;
	buf_append(b, h, 15, NULL);
	buf_append(b, name, nl, NULL);
	if (type == 'f') {
		uint8_t s[8];
		for (int i = 7; i >= 0; i--, size >>= 8)
			s[i] = (uint8_t)size;
		buf_append(b, s, 8, NULL);
	}
}

static int decode_records(const char *dir, struct buf *b, os_error *err)
{
	memset(err, 0, sizeof(*err));
	return decode(dir, NULL, b->data, b->len, 0, err);
}

static void hostile_names_and_shapes_are_refused(void **state)
{
	(void)state;
	char *dst = tmpdir();
	os_error err;
	struct buf b;
	buf_init(&b, 1 << 16);
	/* The accepted twin: one file, then the end. */
	rec(&b, 'f', "ok", 2);
	buf_append(&b, "hi", 2, NULL);
	buf_append(&b, "z", 1, NULL);
	assert_int_equal(decode_records(dst, &b, &err), 1);
	assert_string_equal(slurp(dst, "ok"), "hi");
	const char *bad[] = { "../escape", "a/b", "..", ".", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		buf_reset(&b);
		rec(&b, 'd', "d", 0);
		rec(&b, 'f', bad[i], 1);
		buf_append(&b, "x", 1, NULL);
		buf_append(&b, "uz", 2, NULL);
		assert_int_equal(decode_records(dst, &b, &err), -1);
		assert_int_equal(err.code, EPROTO);
	}
	char p[512];
	snprintf(p, sizeof p, "%s/../escape", dst);
	assert_int_equal(access(p, F_OK), -1);
	/* Two roots, bytes after the end, leaving the root, an early end. */
	buf_reset(&b);
	rec(&b, 'f', "one", 0);
	rec(&b, 'f', "two", 0);
	buf_append(&b, "z", 1, NULL);
	assert_int_equal(decode_records(dst, &b, &err), -1);
	buf_reset(&b);
	rec(&b, 'f', "one", 0);
	buf_append(&b, "zz", 2, NULL);
	assert_int_equal(decode_records(dst, &b, &err), -1);
	buf_reset(&b);
	buf_append(&b, "u", 1, NULL);
	assert_int_equal(decode_records(dst, &b, &err), -1);
	buf_reset(&b);
	rec(&b, 'f', "cut", 10);
	buf_append(&b, "abc", 3, NULL);
	assert_int_equal(decode_records(dst, &b, &err), -1);
	assert_null(slurp(dst, "cut")); /* the partial file never appears */
	/* Too deep a tree. */
	buf_reset(&b);
	for (int i = 0; i <= XFER_DEPTH_MAX; i++)
		rec(&b, 'd', "d", 0);
	assert_int_equal(decode_records(dst, &b, &err), -1);
	assert_int_equal(err.code, ELOOP);
	buf_free(&b);
	rm_rf(dst);
	free(dst);
}

static void links_at_the_destination_are_never_written_through(void **state)
{
	(void)state;
	char *dst = tmpdir(), *outside = tmpdir();
	char p[512], q[512];
	os_error err;
	struct buf b;
	buf_init(&b, 1 << 16);
	put_file(outside, "victim", "original", 0644);
	/* A directory link: entering it is refused. */
	snprintf(p, sizeof p, "%s/dirlink", dst);
	assert_int_equal(symlink(outside, p), 0);
	rec(&b, 'd', "dirlink", 0);
	rec(&b, 'f', "victim", 3);
	buf_append(&b, "bad", 3, NULL);
	buf_append(&b, "uz", 2, NULL);
	assert_int_equal(decode_records(dst, &b, &err), -1);
	assert_int_equal(err.code, ELOOP);
	assert_non_null(strstr(err.msg, "dirlink"));
	/* A file link: not replaced, not followed. */
	snprintf(p, sizeof p, "%s/filelink", dst);
	snprintf(q, sizeof q, "%s/victim", outside);
	assert_int_equal(symlink(q, p), 0);
	buf_reset(&b);
	rec(&b, 'f', "filelink", 3);
	buf_append(&b, "bad", 3, NULL);
	buf_append(&b, "z", 1, NULL);
	assert_int_equal(decode_records(dst, &b, &err), -1);
	assert_int_equal(err.code, ELOOP);
	assert_string_equal(slurp(outside, "victim"), "original");
	/* A hard link to the victim: replaced by the new file, the victim kept. */
	snprintf(p, sizeof p, "%s/hard", dst);
	assert_int_equal(link(q, p), 0);
	buf_reset(&b);
	rec(&b, 'f', "hard", 3);
	buf_append(&b, "new", 3, NULL);
	buf_append(&b, "z", 1, NULL);
	assert_int_equal(decode_records(dst, &b, &err), 1);
	assert_string_equal(slurp(dst, "hard"), "new");
	assert_string_equal(slurp(outside, "victim"), "original");
	buf_free(&b);
	rm_rf(dst);
	rm_rf(outside);
	free(dst);
	free(outside);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tree_round_trips_with_modes),
		cmocka_unit_test(hostile_names_and_shapes_are_refused),
		cmocka_unit_test(links_at_the_destination_are_never_written_through),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
