/*
 * fuzz-gitcommit.c - mirror/gitobj.c as git push's hook reads a pushed commit (mirror/gitpush.c): the
 * input is a commit object's bytes (the seeds are commits git made), then optionally a NUL and the
 * paths of a tree, one a line, as `git ls-tree -r` lists them to the hook.
 *  - A commit gitobj_commit_parse accepts writes back to itself: its tree, parent, author and
 *    committer lines, a blank line and its message, as git fast-import writes them when the mirror
 *    rebuilds its repository from the catalog (mirror/gitrepo.c), are its bytes, so the commit id is
 *    the pusher's; when its author and committer are one ident at +0000, gitobj_commit_text (the
 *    writer of the API's commits) gives the same id; its fields are its lines, read again here (a
 *    name before the email, no '<' or '>' astray, a time, a zone of at most 14 hours, as fast-import
 *    takes an ident). A refused one says why and hands back nothing.
 *  - The files of a tree whose paths pass path_check (as the hook has them) rebuild to the tree id
 *    git computes, by a second writer here that builds each folder as git does (entries in git's
 *    order, a folder's name compared as if it ended in '/'); gitobj_tree_id refuses exactly the
 *    lists that hold a path twice or a path that is a file and a folder.
 * FUZZ_GITCOMMIT_DUMP=FILE appends each accepted commit's author, committer and message (hex, one line
 * each) to FILE, for tests/fuzz/gitcommit-fast-import.py to hand to the real git fast-import.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "mirror/gitobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 256

/* "NAME <EMAIL> SECONDS +HHMM", read here independently: *at the seconds */
static bool ident_ok(const char *id, int64_t *at)
{
	const char *lt = strchr(id, '<'), *gt, *zone;
	char *end;

	if (!lt || lt - id < 2 || lt[-1] != ' ' || memchr(id, '>', (size_t)(lt - id)))
		return false;
	gt = lt + 1 + strcspn(lt + 1, "<>");
	if (*gt != '>' || gt[1] != ' ' || gt[2] < '0' || gt[2] > '9')
		return false;
	errno = 0;
	*at = strtoll(gt + 2, &end, 10);
	if (errno || *end != ' ' || (end[1] != '+' && end[1] != '-'))
		return false;
	zone = end + 2;
	return strlen(zone) == 4 && strspn(zone, "0123456789") == 4 && strcmp(zone, "1400") <= 0;
}

static void dump(const char *file, const struct gitobj_commit *c)
{
	FILE *f = fopen(file, "a");
	const char *v[] = { c->author_line, c->committer_line, c->message };

	for (size_t i = 0; f && i < 3; i++) {
		for (const unsigned char *p = (const unsigned char *)v[i]; *p; p++)
			fprintf(f, "%02x", *p);
		fputc(i < 2 ? ' ' : '\n', f);
	}
	if (f)
		fclose(f);
}

static void check_commit(const char *raw, size_t len)
{
	struct gitobj_commit c, c2;
	const char *why = NULL;
	char id[41], id2[41], *text;
	int64_t at, cat;
	size_t tlen;
	struct buf b;

	if (gitobj_commit_parse(raw, len, &c, &why)) {
		if (!why || !*why || c.author_line || c.committer_line || c.author || c.message)
			abort();
		return;
	}
	/* the fields are the lines */
	if (strlen(c.tree) != 40 || !hex_is_lower(c.tree, 40) || (*c.parent && !hex_is_lower(c.parent, 40)) ||
	    !ident_ok(c.author_line, &at) || !ident_ok(c.committer_line, &cat) || at != c.at ||
	    strncmp(c.author, c.author_line, strlen(c.author)) || c.author[strlen(c.author) - 1] != '>' ||
	    strchr(c.author, '>') != c.author + strlen(c.author) - 1 || strchr(c.author_line, '\n') ||
	    strchr(c.committer_line, '\n'))
		abort();
	if (getenv("FUZZ_GITCOMMIT_DUMP"))
		dump(getenv("FUZZ_GITCOMMIT_DUMP"), &c);
	/* written back as fast-import writes it: the same bytes, the same id */
	buf_init(&b);
	buf_addf(&b, "tree %s\n", c.tree);
	if (*c.parent)
		buf_addf(&b, "parent %s\n", c.parent);
	buf_addf(&b, "author %s\ncommitter %s\n\n%s", c.author_line, c.committer_line, c.message);
	if (b.len != len || memcmp(b.data, raw, len)) {
		fprintf(stderr, "fuzz-gitcommit: a commit that writes back to other bytes:\n%.*s\n---\n%s\n", (int)len,
			raw, b.data);
		abort();
	}
	gitobj_id("commit", raw, len, id);
	gitobj_id("commit", b.data, b.len, id2);
	if (strcmp(id, id2))
		abort();
	/* read again: the same */
	if (gitobj_commit_parse(b.data, b.len, &c2, &why) || strcmp(c.tree, c2.tree) || strcmp(c.parent, c2.parent) ||
	    strcmp(c.author_line, c2.author_line) || strcmp(c.committer_line, c2.committer_line) ||
	    strcmp(c.message, c2.message) || c.at != c2.at)
		abort();
	gitobj_commit_release(&c2);
	buf_release(&b);
	/* one ident at +0000: what the API's commits are, and gitobj_commit_text writes the same */
	text = xasprintf("%s %" PRId64 " +0000", c.author, c.at);
	if (!strcmp(text, c.author_line) && !strcmp(text, c.committer_line)) {
		char *t = gitobj_commit_text(c.tree, *c.parent ? c.parent : NULL, c.author, c.at, c.message, &tlen);
		gitobj_id("commit", t, tlen, id2);
		if (strcmp(id, id2))
			abort();
		free(t);
	}
	free(text);
	gitobj_commit_release(&c);
}

/* ---- a tree as git builds it ---- */

struct node {
	char *name;
	bool dir;
	char blob[41];
	struct node *kids;
	size_t nkids;
};

/* git's order of a folder's entries: by name, a folder's as if it ended in '/' */
static int entry_cmp(const void *a, const void *b)
{
	const struct node *x = a, *y = b;
	size_t lx = strlen(x->name), ly = strlen(y->name), n = lx < ly ? lx : ly;
	int c = memcmp(x->name, y->name, n);
	unsigned char cx, cy;

	if (c)
		return c;
	cx = lx > n ? (unsigned char)x->name[n] : x->dir ? '/' : '\0';
	cy = ly > n ? (unsigned char)y->name[n] : y->dir ? '/' : '\0';
	return cx < cy ? -1 : cx > cy;
}

/* Add path to folder t; false when it is there already, or is a file and a folder */
static bool add(struct node *t, const char *path, const char *blob)
{
	size_t n = strcspn(path, "/");
	bool dir = path[n] == '/';
	struct node *k = NULL;

	for (size_t i = 0; i < t->nkids && !k; i++)
		if (strlen(t->kids[i].name) == n && !memcmp(t->kids[i].name, path, n))
			k = &t->kids[i];
	if (k && (!dir || !k->dir))
		return false;
	if (!k) {
		t->kids = xreallocarray(t->kids, t->nkids + 1, sizeof(*t->kids));
		k = &t->kids[t->nkids++];
		memset(k, 0, sizeof(*k));
		k->name = xstrndup(path, n);
		k->dir = dir;
		if (!dir)
			memcpy(k->blob, blob, 41);
	}
	return !dir || add(k, path + n + 1, blob);
}

static void tree_id(struct node *t, char out[41])
{
	struct buf b;
	unsigned char raw[20];

	buf_init(&b);
	if (t->nkids)
		qsort(t->kids, t->nkids, sizeof(*t->kids), entry_cmp);
	for (size_t i = 0; i < t->nkids; i++) {
		struct node *k = &t->kids[i];
		char sub[41];
		if (k->dir)
			tree_id(k, sub);
		hex_decode(k->dir ? sub : k->blob, raw, 20);
		buf_addf(&b, "%s %s", k->dir ? "40000" : "100644", k->name);
		buf_add(&b, "", 1);
		buf_add(&b, (const char *)raw, 20);
	}
	gitobj_id("tree", b.data ? b.data : "", b.len, out);
	buf_release(&b);
}

static void node_free(struct node *t)
{
	for (size_t i = 0; i < t->nkids; i++)
		node_free(&t->kids[i]);
	free(t->kids);
	free(t->name);
}

static void check_tree(const char *list, size_t len)
{
	struct gitobj_file f[MAX_FILES];
	char *text = xstrndup(list, len), *save = NULL, blobs[MAX_FILES][41], lib[41], ref[41];
	struct node root = { 0 };
	size_t n = 0;
	bool ok = true;
	int r;

	for (char *l = strtok_r(text, "\n", &save); l && n < MAX_FILES; l = strtok_r(NULL, "\n", &save)) {
		if (path_check_str(l))
			goto out; /* the hook refuses such a push before it builds a tree */
		gitobj_id("blob", l, strlen(l), blobs[n]); /* any blob id, one per path */
		f[n] = (struct gitobj_file){ l, blobs[n] };
		ok = add(&root, l, blobs[n]) && ok;
		n++;
	}
	r = gitobj_tree_id(f, n, lib);
	if ((r != 0) == ok || (r && r != -EINVAL))
		abort(); /* refused exactly the lists with a path twice or a file that is a folder */
	if (!r) {
		tree_id(&root, ref);
		if (strcmp(lib, ref))
			abort();
	}
out:
	node_free(&root);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *raw = (const char *)data, *nul = memchr(data, '\0', size);
	char *copy = malloc(size ? size : 1);
	size_t clen = nul ? (size_t)(nul - raw) : size;

	/* a copy of the commit's bytes alone: the parser must stay inside them */
	memcpy(copy, raw, clen);
	check_commit(copy, clen);
	if (nul)
		check_tree(nul + 1, size - clen - 1);
	free(copy);
	return 0;
}
