/*
 * fuzz-lfsbatch.c - hub/hfwrite.c's reader of a Git LFS batch request (the input: a body as git-lfs,
 * huggingface_hub and @huggingface/hub send it to POST .../info/lfs/objects/batch):
 *  - a refused body says why (and is -EINVAL, or -E2BIG past the bound of objects);
 *  - an accepted one asks about at most the bound, each object ok only with a sha256 (64 lowercase
 *    hex) and a size of 0 or more, and what it shows of a malformed one is a string of at most 64
 *    bytes; its operation is upload, download or none;
 *  - written again as a client writes it, it reads back the same, object for object.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/hex.h"
#include "hub/hfwrite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OBJECTS 16

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-lfsbatch: %s\n", what);
	abort();
}

static char *write_batch(const struct hf_lfs_batch *b)
{
	json_t *objs = json_array(), *o;
	char *text;

	for (size_t i = 0; i < b->nobjects; i++)
		if (b->objects[i].ok)
			json_array_append_new(objs, json_pack("{s:s, s:I}", "oid", b->objects[i].oid, "size",
							      (json_int_t)b->objects[i].size));
		else /* (a malformed one stays malformed: no size) */
			json_array_append_new(objs, json_pack("{s:s}", "oid", b->objects[i].oid));
	o = json_pack("{s:s, s:o, s:o}", "operation", b->operation[0] ? b->operation : "verify", "objects", objs,
		      "transfers",
		      b->multipart ? json_pack("[s, s]", "basic", "multipart") : json_pack("[s]", "basic"));
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hf_lfs_batch b, again;
	const char *why = NULL;
	char *text;
	int r = hf_lfs_batch_parse((const char *)data, size, MAX_OBJECTS, &b, &why);

	if (r) {
		if ((r != -EINVAL && r != -E2BIG) || !why || b.objects || b.nobjects)
			fail("a refused body says nothing, or hands something back");
		return 0;
	}
	if (b.nobjects > MAX_OBJECTS)
		fail("more objects than the bound");
	if (b.operation[0] && strcmp(b.operation, "upload") && strcmp(b.operation, "download"))
		fail("an operation that is neither upload nor download");
	for (size_t i = 0; i < b.nobjects; i++) {
		const struct hf_lfs_object *o = &b.objects[i];
		if (strlen(o->oid) > 64 ||
		    (o->ok && (strlen(o->oid) != 64 || !hex_is_lower(o->oid, 64) || o->size < 0)))
			fail("an object ok without a sha256 and a size, or shown at more than 64 bytes");
	}
	text = write_batch(&b);
	if (hf_lfs_batch_parse(text, strlen(text), MAX_OBJECTS, &again, &why))
		fail("an accepted body, written again, is refused");
	if (again.nobjects != b.nobjects || again.multipart != b.multipart || strcmp(again.operation, b.operation))
		fail("an accepted body, written again, reads as another");
	for (size_t i = 0; i < b.nobjects; i++)
		if (again.objects[i].ok != b.objects[i].ok || strcmp(again.objects[i].oid, b.objects[i].oid) ||
		    (b.objects[i].ok && again.objects[i].size != b.objects[i].size))
			fail("an object, written again, reads as another");
	free(text);
	hf_lfs_batch_release(&again);
	hf_lfs_batch_release(&b);
	return 0;
}
