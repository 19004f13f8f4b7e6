/*
 * fuzz-search.c - what users type into search: a query is refused with a reason or runs; it never
 * reaches SQLite as syntax (an FTS5 syntax error would come back as HM_ERR_SQLITE) and never runs
 * past its time budget by more than a tick.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "catalog/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ud, const struct catalog_repo *r)
{
	(void)r;
	(*(int *)ud)++;
	return 0;
}

static struct catalog *open_catalog(void)
{
	char dir[] = "/tmp/fuzz-search-XXXXXX", *path;
	struct catalog *c = NULL;
	static const char *const names[] = { "qwen/Qwen2.5-7B", "meta/llama-3", "acme/bert-tiny", "x/y-z" };

	if (!mkdtemp(dir))
		abort();
	path = malloc(strlen(dir) + 16);
	snprintf(path, strlen(dir) + 16, "%s/catalog.db", dir);
	if (catalog_open(path, &c, NULL))
		abort();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		catalog_repo_add(c, "hf", "model", names[i], "main", NULL, NULL, NULL, NULL);
	unlink(path);  /* the open connection keeps it; nothing is left behind */
	rmdir(dir);
	free(path);
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct catalog *c;
	struct catalog_search s = { 0 };
	char *q = malloc(size + 1);
	int n = 0, r;

	if (!c)
		c = open_catalog();
	memcpy(q, data, size);
	q[size] = '\0';
	s.q = q;
	s.gated = -1;
	s.min_size = s.max_size = -1;
	s.limit = 5;
	s.budget_ms = 50;
	r = catalog_search(c, &s, count, &n, NULL);
	if (r == HM_ERR_SQLITE || (r == HM_ERR_USAGE && !catalog_search_refusal(&s)))
		abort();
	if (r == 0 && n > 5)
		abort();
	free(q);
	return 0;
}
