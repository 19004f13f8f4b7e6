/*
 * driver.c - a bounded fuzz run without libFuzzer, for compilers that have none (gcc): the harness's
 * LLVMFuzzerTestOneInput gets every seed of its corpus folder, then a fixed number of inputs mutated
 * from them with a fixed random sequence (bit flips, byte sets, splices, inserts and cuts of bytes
 * the harness cares about), so a run is the same on every machine and ends by itself. With clang the
 * same harness links against libFuzzer instead (tests/fuzz/meson.build).
 *
 *   fuzz-NAME CORPUS_DIR [RUNS]
 *
 * Prints TAP: one line per phase; a crash or a sanitizer report ends the process (and fails the test).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT 8192

struct seed {
	uint8_t *data;
	size_t len;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t load(const char *dir, struct seed **out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	*out = NULL;
	while (d && (e = readdir(d))) {
		char path[4096];
		FILE *f;
		uint8_t *buf;
		size_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!(f = fopen(path, "rb")))
			continue;
		buf = malloc(FUZZ_MAX_INPUT);
		len = fread(buf, 1, FUZZ_MAX_INPUT, f);
		fclose(f);
		*out = realloc(*out, (n + 1) * sizeof(**out));
		(*out)[n].data = buf;
		(*out)[n].len = len;
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* Bytes that mean something to our parsers: separators, digits, escapes, UTF-8 lead bytes. */
static const char interesting[] = "/%&=-.,:;\\\\\"' \t\r\n0123456789abcdefXYZ*?+\x00\x7f\x80\xc0\xe2\xed\xf0\xff";

static size_t mutate(uint8_t *buf, size_t len, const struct seed *seeds, size_t nseeds)
{
	int rounds = 1 + (int)(next() % 4);

	for (int r = 0; r < rounds; r++) {
		size_t pos = len ? (size_t)(next() % len) : 0;
		switch (next() % 6) {
		case 0: /* flip a bit */
			if (len)
				buf[pos] ^= (uint8_t)(1u << (next() % 8));
			break;
		case 1: /* set an interesting byte */
			if (len)
				buf[pos] = (uint8_t)interesting[next() % (sizeof(interesting) - 1)];
			break;
		case 2: /* insert one */
			if (len < FUZZ_MAX_INPUT) {
				memmove(buf + pos + 1, buf + pos, len - pos);
				buf[pos] = (uint8_t)interesting[next() % (sizeof(interesting) - 1)];
				len++;
			}
			break;
		case 3: /* cut a stretch */
			if (len) {
				size_t n = 1 + (size_t)(next() % (len - pos));
				memmove(buf + pos, buf + pos + n, len - pos - n);
				len -= n;
			}
			break;
		case 4: { /* splice in part of another seed */
			const struct seed *s = &seeds[next() % nseeds];
			size_t n = s->len ? 1 + (size_t)(next() % s->len) : 0;
			if (n > FUZZ_MAX_INPUT - pos)
				n = FUZZ_MAX_INPUT - pos;
			memcpy(buf + pos, s->data, n);
			if (pos + n > len)
				len = pos + n;
			break;
		}
		default: /* repeat a stretch (long inputs) */
			if (len && len * 2 <= FUZZ_MAX_INPUT) {
				memcpy(buf + len, buf, len);
				len *= 2;
			}
			break;
		}
	}
	return len;
}

int main(int argc, char **argv)
{
	struct seed *seeds;
	size_t nseeds, runs = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000;
	uint8_t *buf = malloc(FUZZ_MAX_INPUT);

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR [RUNS]\n", argv[0]);
		return 2;
	}
	nseeds = load(argv[1], &seeds);
	if (!nseeds) {
		printf("Bail out! no seeds in %s\n", argv[1]);
		return 1;
	}
	for (size_t i = 0; i < nseeds; i++)
		LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].len);
	printf("ok 1 - %zu seeds\n", nseeds);
	for (size_t i = 0; i < runs; i++) {
		const struct seed *s = &seeds[next() % nseeds];
		size_t len;
		memcpy(buf, s->data, s->len);
		len = mutate(buf, s->len, seeds, nseeds);
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("ok 2 - %zu mutated inputs\n1..2\n", runs);
	for (size_t i = 0; i < nseeds; i++)
		free(seeds[i].data);
	free(seeds);
	free(buf);
	return 0;
}
