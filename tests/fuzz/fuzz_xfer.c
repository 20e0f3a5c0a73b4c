/* fuzz_xfer.c - libFuzzer target for the transfer stream's decoder (bytes a
 * sandbox sends a downloading CLI, or a client sends an uploading launcher:
 * docs/files.md). Each input is decoded into a fresh directory, whole and
 * then split at every 7th byte. Beyond memory safety: nothing is ever
 * created beside that directory (no name escapes it), and no temporary
 * file is left behind whatever the input. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xfer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Directories keep the modes the input gave them (0000 too): open them
 * all up first, then remove depth first. */
static int open_up(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D && S_ISDIR(st->st_mode))
		chmod(path, 0700);
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int no_temporaries(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (strncmp(path + ftw->base, ".openshell-transfer.", 20) == 0)
		abort();
	return 0;
}

/* The base directory holds exactly the one destination, "r". */
static void check_base(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "r"))
			abort();
	if (d)
		closedir(d);
}

static void run(const char *base, const uint8_t *data, size_t size, size_t step)
{
	char r[512];
	snprintf(r, sizeof r, "%s/r", base);
	nftw(r, open_up, 16, FTW_PHYS);
	nftw(r, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (mkdir(r, 0700) < 0)
		abort();
	int fd = open(r, O_PATH | O_DIRECTORY);
	struct xfer_in in;
	xfer_in_init(&in, fd, NULL, r);
	os_error err = { 0 };
	int rc = 0;
	for (size_t at = 0; at < size && rc == 0;) {
		size_t n = step && step < size - at ? step : size - at;
		rc = xfer_in_feed(&in, data + at, n, &err);
		at += n;
	}
	xfer_in_free(&in);
	close(fd);
	nftw(r, open_up, 16, FTW_PHYS);
	nftw(r, no_temporaries, 16, FTW_PHYS);
	check_base(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char base[64];
	if (!base[0]) {
		snprintf(base, sizeof base, "/tmp/fuzz-xfer-XXXXXX");
		if (!mkdtemp(base))
			abort();
	}
	run(base, data, size, 0);
	run(base, data, size, 7);
	return 0;
}
