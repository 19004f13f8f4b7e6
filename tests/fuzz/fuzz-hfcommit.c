/*
 * fuzz-hfcommit.c - hub/hfwrite.c's reader of a commit's NDJSON line (the input: one line as
 * huggingface_hub and @huggingface/hub send it to POST .../commit/REV):
 *  - a refused line says why and hands back nothing;
 *  - an accepted one means one thing: written again in the clients' own form (its key and value,
 *    the content base64-encoded anew), it reads back to the same operation, field for field, byte for
 *    byte;
 *  - a file's content is what its base64 says: as many bytes as the text's length gives (three per
 *    four characters, less the padding), never a byte more, never the white space EVP_DecodeBlock
 *    would skip; a deleted folder's path ends with no '/'; an lfsFile's oid is 64 lowercase hex, or
 *    it names a Xet hash of 64 lowercase hex alone, and its size is -1 or more; a header's summary is
 *    never empty and its parent 40 lowercase hex or none.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/hex.h"
#include "base/xmalloc.h"
#include "hub/hfwrite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-hfcommit: %s\n", what);
	abort();
}

static const char *const keys[] = { "header", "file", "lfsFile", "deletedFile", "deletedFolder" };

/* l written again as a client writes it */
static char *write_line(const struct hf_commit_line *l)
{
	json_t *v = json_object(), *o;
	char *text;

	if (l->key == HF_COMMIT_HEADER) {
		json_object_set_new(v, "summary", json_string(l->summary));
		if (l->description)
			json_object_set_new(v, "description", json_string(l->description));
		if (l->parent[0])
			json_object_set_new(v, "parentCommit", json_string(l->parent));
	} else {
		json_object_set_new(v, "path", json_string(l->path));
	}
	if (l->key == HF_COMMIT_FILE) {
		char *b64 = xmalloc(4 * ((l->content_len + 2) / 3) + 1);
		EVP_EncodeBlock((unsigned char *)b64, l->content, (int)l->content_len);
		json_object_set_new(v, "content", json_string(b64));
		json_object_set_new(v, "encoding", json_string("base64"));
		free(b64);
	} else if (l->key == HF_COMMIT_LFS_FILE && l->xet_hash[0]) {
		json_object_set_new(v, "xetHash", json_string(l->xet_hash));
		if (l->size >= 0)
			json_object_set_new(v, "size", json_integer(l->size));
	} else if (l->key == HF_COMMIT_LFS_FILE) {
		json_object_set_new(v, "algo", json_string("sha256"));
		json_object_set_new(v, "oid", json_string(l->oid));
		if (l->size >= 0)
			json_object_set_new(v, "size", json_integer(l->size));
	}
	o = json_pack("{s:s, s:o}", "key", keys[l->key], "value", v);
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_alone(const struct hf_commit_line *l)
{
	if (l->key == HF_COMMIT_HEADER &&
	    (!l->summary || !*l->summary || (l->parent[0] && !hex_is_lower(l->parent, 40))))
		fail("a header without its summary, or a parent that is not a commit id");
	if (l->key != HF_COMMIT_HEADER && !l->path)
		fail("an operation without its path");
	if (l->key == HF_COMMIT_DELETED_FOLDER && *l->path && l->path[strlen(l->path) - 1] == '/')
		fail("a deleted folder's path ends with '/'");
	if (l->key == HF_COMMIT_LFS_FILE) {
		bool by_xet = l->xet_hash[0] != '\0';
		if (by_xet ? l->oid[0] || strlen(l->xet_hash) != 64 || !hex_is_lower(l->xet_hash, 64)
			   : strlen(l->oid) != 64 || !hex_is_lower(l->oid, 64))
			fail("an lfsFile's oid, or its xetHash alone");
		if (l->size < -1)
			fail("an lfsFile's size");
	}
	if (l->key == HF_COMMIT_FILE && (!l->content || l->content[l->content_len] != '\0'))
		fail("a file's content is not its bytes and a NUL");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hf_commit_line l, again;
	char *why = NULL, *text;

	if (hf_commit_line_parse((const char *)data, size, &l, &why)) {
		if (!why || l.path || l.summary || l.content)
			fail("a refused line says nothing, or hands something back");
		free(why);
		return 0;
	}
	if (why)
		fail("an accepted line says why");
	check_alone(&l);
	if (l.key == HF_COMMIT_FILE) {
		/* the length the text gives: read its content again from the input itself */
		json_t *o = json_loadb((const char *)data, size, 0, NULL);
		const char *c = json_string_value(json_object_get(json_object_get(o, "value"), "content"));
		size_t n = c ? strlen(c) : 0, pad = (n && c[n - 1] == '=') + (n > 1 && c[n - 2] == '=');
		if (!c || n % 4 || l.content_len != n / 4 * 3 - pad)
			fail("a file's bytes are not what its base64 says");
		json_decref(o);
	}
	text = write_line(&l);
	if (hf_commit_line_parse(text, strlen(text), &again, &why))
		fail("an accepted line, written again, is refused");
	if (again.key != l.key || !same_str(again.path, l.path) || !same_str(again.summary, l.summary) ||
	    !same_str(again.description, l.description) || strcmp(again.parent, l.parent) ||
	    strcmp(again.oid, l.oid) || strcmp(again.xet_hash, l.xet_hash) || again.size != l.size ||
	    again.content_len != l.content_len ||
	    (l.content_len && memcmp(again.content, l.content, l.content_len)))
		fail("an accepted line, written again, reads as another");
	free(text);
	hf_commit_line_release(&again);
	hf_commit_line_release(&l);
	return 0;
}
