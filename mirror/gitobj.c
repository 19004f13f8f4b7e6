/*
 * gitobj.c - git object ids without git (gitobj.h).
 *
 * A tree lists its entries sorted by name, where a subtree's name compares as if it ended in '/'. The
 * full paths sorted bytewise give exactly that order at every level (a folder's paths are contiguous,
 * and "NAME/" is where git would put the subtree), so one sort of the whole list builds every tree.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/buf.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "gitobj.h"

void gitobj_id(const char *type, const void *data, size_t len, char out[41])
{
	char head[64];
	int n = snprintf(head, sizeof(head), "%s %zu", type, len);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
	EVP_DigestUpdate(ctx, head, (size_t)n + 1); /* with its NUL */
	EVP_DigestUpdate(ctx, data, len);
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	hex_encode(md, 20, out);
}

size_t gitobj_lfs_pointer(const char *sha256, int64_t size, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %" PRId64 "\n",
			 sha256, size);

	return n < 0 ? 0 : (size_t)n;
}

static int path_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gitobj_file *)a)->path, ((const struct gitobj_file *)b)->path);
}

static bool segment_ok(const char *s, size_t n)
{
	return n > 0 && !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

static bool path_ok(const char *p)
{
	for (;;) {
		size_t n = strcspn(p, "/");
		if (!segment_ok(p, n))
			return false;
		if (!p[n])
			return true;
		p += n + 1;
	}
}

/* The tree of files[lo, hi), every one of which starts with the same folder prefix of off bytes. */
static int tree_of(const struct gitobj_file *files, size_t lo, size_t hi, size_t off, char out[41])
{
	struct buf t = { 0 };
	unsigned char raw[20];
	int r = 0;

	for (size_t i = lo; i < hi && !r;) {
		const char *name = files[i].path + off;
		size_t n = strcspn(name, "/"), j = i + 1;
		char sub[41];

		if (!name[n]) { /* a file of this folder */
			if (i + 1 < hi && !strncmp(files[i + 1].path + off, name, n) &&
			    (files[i + 1].path[off + n] == '/' || !files[i + 1].path[off + n]))
				r = -EINVAL; /* the same path twice, or a file that is a folder too */
			else if (hex_decode(files[i].blob, raw, 20))
				r = -EINVAL;
			buf_adds(&t, "100644 ");
			buf_add(&t, name, n);
			buf_addch(&t, '\0');
			buf_add(&t, (const char *)raw, 20);
			i++;
			continue;
		}
		while (j < hi && !strncmp(files[j].path + off, name, n + 1))
			j++;
		r = tree_of(files, i, j, off + n + 1, sub);
		if (!r && hex_decode(sub, raw, 20))
			r = -EINVAL;
		buf_adds(&t, "40000 ");
		buf_add(&t, name, n);
		buf_addch(&t, '\0');
		buf_add(&t, (const char *)raw, 20);
		i = j;
	}
	if (!r)
		gitobj_id("tree", t.data ? t.data : "", t.len, out);
	buf_release(&t);
	return r;
}

/* Is files[i].path (of files[0, n), sorted) also the folder of a later path? The first path not below
 * "PATH/" tells: it is not always the next one, since "a.txt" and "a-b" sort between "a" and "a/b"
 * (found by tests/fuzz/fuzz-gitcommit). */
static bool folder_too(const struct gitobj_file *files, size_t i, size_t n)
{
	const char *p = files[i].path;
	size_t len = strlen(p), lo = i + 1, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(files[mid].path, p, len);
		if (c < 0 || (!c && (unsigned char)files[mid].path[len] < '/'))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !strncmp(files[lo].path, p, len) && files[lo].path[len] == '/';
}

int gitobj_tree_id(struct gitobj_file *files, size_t n, char out[41])
{
	for (size_t i = 0; i < n; i++)
		if (!path_ok(files[i].path) || strlen(files[i].blob) != 40 || !hex_is_lower(files[i].blob, 40))
			return -EINVAL;
	if (n)
		qsort(files, n, sizeof(*files), path_cmp);
	for (size_t i = 0; i < n; i++)
		if ((i + 1 < n && !strcmp(files[i].path, files[i + 1].path)) || folder_too(files, i, n))
			return -EINVAL; /* a path twice, or a file that is a folder too */
	return tree_of(files, 0, n, 0, out);
}

char *gitobj_commit_text(const char *tree, const char *parent, const char *who, int64_t when, const char *message,
			 size_t *len)
{
	struct buf b = { 0 };

	buf_addf(&b, "tree %s\n", tree);
	if (parent)
		buf_addf(&b, "parent %s\n", parent);
	buf_addf(&b, "author %s %" PRId64 " +0000\ncommitter %s %" PRId64 " +0000\n\n", who, when, who, when);
	buf_adds(&b, message);
	return buf_detach(&b, len);
}

/* Is id "NAME <EMAIL> SECONDS +HHMM" as fast-import takes it (a name, no '<' or '>' but the email's
 * own, a time zone of at most 14 hours)? *at: SECONDS. */
static bool ident_ok(const char *id, int64_t *at)
{
	const char *lt = strchr(id, '<'), *gt = lt ? strchr(lt + 1, '>') : NULL, *p;
	char *end;

	if (!lt || lt < id + 2 || lt[-1] != ' ' || memchr(id, '>', (size_t)(lt - id)) || !gt ||
	    memchr(lt + 1, '<', (size_t)(gt - lt - 1)) || gt[1] != ' ')
		return false;
	p = gt + 2;
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	*at = strtoll(p, &end, 10);
	if (errno || *end != ' ' || (end[1] != '+' && end[1] != '-'))
		return false;
	p = end + 2;
	return strlen(p) == 4 && strspn(p, "0123456789") == 4 && atoi(p) <= 1400;
}

/* The header line "NAME VALUE\n" at *p, its value malloc'd (NULL when the next line is not one). */
static char *header(const char **p, const char *end, const char *name)
{
	size_t n = strlen(name);
	const char *nl;

	if ((size_t)(end - *p) <= n || memcmp(*p, name, n) || (*p)[n] != ' ' ||
	    !(nl = memchr(*p + n + 1, '\n', (size_t)(end - *p - (ptrdiff_t)n - 1))))
		return NULL;
	{
		char *v = xstrndup(*p + n + 1, (size_t)(nl - *p - (ptrdiff_t)n - 1));
		*p = nl + 1;
		return v;
	}
}

int gitobj_commit_parse(const char *raw, size_t len, struct gitobj_commit *c, const char **why)
{
	const char *p = raw, *end = raw + len;
	char *tree = NULL, *parent = NULL, *more = NULL;
	int64_t cat;

	memset(c, 0, sizeof(*c));
	*why = "a malformed commit";
	if (memchr(raw, '\0', len)) {
		*why = "a commit holding a NUL byte";
		return -EINVAL;
	}
	tree = header(&p, end, "tree");
	parent = header(&p, end, "parent");
	if ((more = header(&p, end, "parent"))) {
		*why = "a merge commit (hubmirror keeps a linear history: rebase instead)";
		goto bad;
	}
	c->author_line = header(&p, end, "author");
	c->committer_line = header(&p, end, "committer");
	if (!tree || strlen(tree) != 40 || !hex_is_lower(tree, 40) ||
	    (parent && (strlen(parent) != 40 || !hex_is_lower(parent, 40))) || !c->author_line || !c->committer_line)
		goto bad;
	if (p >= end || *p != '\n') {
		*why = "a commit with a header hubmirror does not keep (a signature, an encoding, a mergetag)";
		goto bad;
	}
	if (!ident_ok(c->author_line, &c->at) || !ident_ok(c->committer_line, &cat)) {
		*why = "a commit whose author or committer is not \"NAME <EMAIL> TIME ZONE\" with a name";
		goto bad;
	}
	memcpy(c->tree, tree, 41);
	if (parent)
		memcpy(c->parent, parent, 41);
	c->author = xstrndup(c->author_line, (size_t)(strchr(c->author_line, '>') + 1 - c->author_line));
	c->message = xstrndup(p + 1, (size_t)(end - p - 1));
	free(tree);
	free(parent);
	return 0;
bad:
	free(tree);
	free(parent);
	free(more);
	gitobj_commit_release(c);
	return -EINVAL;
}

void gitobj_commit_release(struct gitobj_commit *c)
{
	free(c->author_line);
	free(c->committer_line);
	free(c->author);
	free(c->message);
	memset(c, 0, sizeof(*c));
}
