/*
 * hfwrite.c - the Hub API's write side on the wire (hfwrite.h): a commit's NDJSON line, a Git LFS
 * batch request.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/hex.h"
#include "base/xmalloc.h"
#include "hfwrite.h"

static int refuse(struct hf_commit_line *out, char **errmsg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refuse(struct hf_commit_line *out, char **errmsg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*errmsg = xvasprintf(fmt, ap); /* (before the release: fmt's arguments may be out's) */
	va_end(ap);
	hf_commit_line_release(out);
	return -EINVAL;
}

static int take_header(struct hf_commit_line *out, json_t *v, char **errmsg)
{
	const char *s = json_string_value(json_object_get(v, "summary"));
	const char *d = json_string_value(json_object_get(v, "description"));
	const char *p = json_string_value(json_object_get(v, "parentCommit"));

	if (p && !(strlen(p) == 40 && hex_is_lower(p, 40)))
		return refuse(out, errmsg, "parentCommit is a commit id, not '%s'", p);
	out->summary = xstrdup(s && *s ? s : "Upload files");
	out->description = d ? xstrdup(d) : NULL;
	snprintf(out->parent, sizeof(out->parent), "%s", p ? p : "");
	return 0;
}

/* A small file's content: base64 (the only encoding), decoded. Strictly the alphabet, padded at the
 * end only: EVP_DecodeBlock alone would skip white space and count padding as bytes. */
static int take_file(struct hf_commit_line *out, json_t *v, char **errmsg)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	json_t *c = json_object_get(v, "content");
	const char *content = json_string_value(c), *enc = json_string_value(json_object_get(v, "encoding"));
	size_t n = content ? json_string_length(c) : 0, pad = 0;
	int len;

	while (pad < 2 && pad < n && content[n - 1 - pad] == '=')
		pad++;
	if (!content || (enc && strcmp(enc, "base64")) || n % 4 || n > (size_t)1 << 30 ||
	    strspn(content, alphabet) != n - pad)
		return refuse(out, errmsg, "'%s': a file's content is base64", out->path);
	out->content = xmalloc(n / 4 * 3 + 1);
	len = n ? EVP_DecodeBlock(out->content, (const unsigned char *)content, (int)n) : 0;
	if (len < 0 || (size_t)len != n / 4 * 3)
		return refuse(out, errmsg, "'%s': a file's content is base64", out->path);
	out->content_len = n / 4 * 3 - pad;
	out->content[out->content_len] = '\0';
	return 0;
}

static int take_lfs(struct hf_commit_line *out, json_t *v, char **errmsg)
{
	const char *oid = json_string_value(json_object_get(v, "oid"));
	const char *algo = json_string_value(json_object_get(v, "algo"));
	const char *xet = json_string_value(json_object_get(v, "xetHash"));
	json_t *sz = json_object_get(v, "size");

	if (!oid && xet && strlen(xet) == 64 && hex_is_lower(xet, 64) && !algo &&
	    (!sz || (json_is_integer(sz) && json_integer_value(sz) >= 0))) {
		/* a file a Xet upload made, by its Xet hash: the mirror knows its sha256 (routes-xet-write.c) */
		memcpy(out->xet_hash, xet, 65);
		out->size = sz ? json_integer_value(sz) : -1;
		return 0;
	}
	if (!oid || strlen(oid) != 64 || !hex_is_lower(oid, 64) || (algo && strcmp(algo, "sha256")) ||
	    (sz && (!json_is_integer(sz) || json_integer_value(sz) < 0)))
		return refuse(out, errmsg, "'%s': an lfsFile is {path, algo: sha256, oid}", out->path);
	memcpy(out->oid, oid, 65);
	out->size = sz ? json_integer_value(sz) : -1;
	return 0;
}

int hf_commit_line_parse(const char *line, size_t n, struct hf_commit_line *out, char **errmsg)
{
	json_t *o = json_loadb(line, n, 0, NULL), *v = json_object_get(o, "value");
	const char *key = json_string_value(json_object_get(o, "key"));
	const char *path = json_string_value(json_object_get(v, "path"));
	int r;

	memset(out, 0, sizeof(*out));
	out->size = -1;
	*errmsg = NULL;
	if (!key || !json_is_object(v)) {
		r = refuse(out, errmsg, "each line is {\"key\", \"value\"}");
	} else if (!strcmp(key, "header")) {
		out->key = HF_COMMIT_HEADER;
		r = take_header(out, v, errmsg);
	} else if (!path || strlen(path) != json_string_length(json_object_get(v, "path"))) {
		r = refuse(out, errmsg, "a '%s' line names its path", key);
	} else {
		out->path = xstrdup(path);
		r = 0;
		if (!strcmp(key, "file")) {
			out->key = HF_COMMIT_FILE;
			r = take_file(out, v, errmsg);
		} else if (!strcmp(key, "lfsFile")) {
			out->key = HF_COMMIT_LFS_FILE;
			r = take_lfs(out, v, errmsg);
		} else if (!strcmp(key, "deletedFile")) {
			out->key = HF_COMMIT_DELETED_FILE;
		} else if (!strcmp(key, "deletedFolder")) {
			size_t l = strlen(out->path);
			while (l > 0 && out->path[l - 1] == '/')
				out->path[--l] = '\0';
			out->key = HF_COMMIT_DELETED_FOLDER;
		} else {
			r = refuse(out, errmsg, "a line of key '%s' is not known here", key);
		}
	}
	json_decref(o);
	return r;
}

void hf_commit_line_release(struct hf_commit_line *l)
{
	if (!l)
		return;
	free(l->path);
	free(l->summary);
	free(l->description);
	free(l->content);
	memset(l, 0, sizeof(*l));
	l->size = -1;
}

int hf_lfs_batch_parse(const char *body, size_t len, size_t max_objects, struct hf_lfs_batch *out, const char **why)
{
	json_t *in = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL), *objs, *o, *t;
	const char *op;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(in) || !json_is_array(objs = json_object_get(in, "objects")) ||
	    !(op = json_string_value(json_object_get(in, "operation")))) {
		json_decref(in);
		*why = "a batch request is {\"operation\", \"objects\": [{\"oid\", \"size\"}]}";
		return -EINVAL;
	}
	if (json_array_size(objs) > max_objects) {
		json_decref(in);
		*why = "too many objects in one batch";
		return -E2BIG;
	}
	if (!strcmp(op, "upload") || !strcmp(op, "download"))
		snprintf(out->operation, sizeof(out->operation), "%s", op);
	json_array_foreach(json_object_get(in, "transfers"), i, t) {
		out->multipart |= json_is_string(t) && !strcmp(json_string_value(t), "multipart");
		out->xet |= json_is_string(t) && !strcmp(json_string_value(t), "xet");
	}
	out->objects = xcalloc(json_array_size(objs) + 1, sizeof(*out->objects));
	json_array_foreach(objs, i, o) {
		struct hf_lfs_object *x = &out->objects[out->nobjects++];
		json_t *oid = json_object_get(o, "oid"), *sz = json_object_get(o, "size");
		const char *s = json_string_value(oid);
		size_t n = s ? json_string_length(oid) : 0;
		x->size = json_is_integer(sz) ? json_integer_value(sz) : 0;
		x->ok = s && n == 64 && hex_is_lower(s, 64) && json_is_integer(sz) && x->size >= 0;
		/* (what is shown of a malformed one: a string of up to 64 bytes, no NUL, as sent) */
		if (s && n <= 64 && strlen(s) == n)
			memcpy(x->oid, s, n + 1);
	}
	json_decref(in);
	return 0;
}

void hf_lfs_batch_release(struct hf_lfs_batch *b)
{
	if (!b)
		return;
	free(b->objects);
	memset(b, 0, sizeof(*b));
}
