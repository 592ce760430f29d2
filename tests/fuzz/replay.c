/*
 * replay.c - a main() for the fuzz targets without libFuzzer: feeds every
 * file of the directories (or files) named on the command line to
 * LLVMFuzzerTestOneInput once, in name order. Built for every target when
 * the tree is built without -DJS_FUZZ (tests/tests.cmake), so the quick and
 * asan tiers replay each seed corpus, the regression seeds of past findings
 * included, with gcc and its sanitizers; a finding aborts, and the test
 * fails.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/common.h"
#include "base/file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest seed replayed: the fuzzers' -max_len is far below it. */
#define REPLAY_MAX (1u << 20)

static int one(const char *path)
{
	char *data = NULL;
	size_t len = 0;
	int r = js_file_read(path, REPLAY_MAX, &data, &len);
	if (r < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, js_strerror(r));
		return -1;
	}
	/* An exact-size copy, so ASan sees a read past the input. */
	uint8_t *copy = js_xmalloc(len ? len : 1);
	memcpy(copy, data, len);
	free(data);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
	return 0;
}

int main(int argc, char **argv)
{
	size_t n = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (one(argv[i]) < 0)
				return 1;
			n++;
			continue;
		}
		struct dirent **ents = NULL;
		int k = scandir(argv[i], &ents, NULL, alphasort);
		if (k < 0) {
			perror(argv[i]);
			return 1;
		}
		for (int j = 0; j < k; j++) {
			if (ents[j]->d_name[0] != '.') {
				char *p = js_buf_format("%s/%s", argv[i], ents[j]->d_name);
				if (one(p) < 0)
					return 1;
				free(p);
				n++;
			}
			free(ents[j]);
		}
		free(ents);
	}
	printf("replay: %zu inputs, no finding\n", n);
	return n ? 0 : 1;
}
