/*
 * hfwrite.h - the Hugging Face Hub API's write side on the wire, as a client sends it: one line of a
 * commit's NDJSON body (POST /api/{models,datasets}/ORG/NAME/commit/REV), and a Git LFS batch request
 * (POST .../info/lfs/objects/batch). Pure parsers: what they accept is what the mirror acts on, and
 * what they refuse they say why; no path is checked here (the mirror checks every path it takes:
 * base/path.h). tests/fuzz/fuzz-hfcommit.c and fuzz-lfsbatch.c drive them. docs/uploads.md.
 */
#ifndef HM_HUB_HFWRITE_H
#define HM_HUB_HFWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hf_commit_key {
	HF_COMMIT_HEADER,         /* {summary, description, parentCommit} */
	HF_COMMIT_FILE,           /* a small file: {path, content (base64), encoding: "base64"} */
	HF_COMMIT_LFS_FILE,       /* a large one by its sha256: {path, algo: "sha256", oid, size}, or by
				   * the Xet hash of a file a shard made: {path, xetHash, size} */
	HF_COMMIT_DELETED_FILE,   /* {path} */
	HF_COMMIT_DELETED_FOLDER, /* {path}, its trailing slashes dropped */
};

/* One line: {"key": KEY, "value": {...}}. Strings are malloc'd (hf_commit_line_release). */
struct hf_commit_line {
	enum hf_commit_key key;
	char *path;               /* every key but the header: as sent */
	char *summary;            /* header: never empty ("Upload files" when none came) */
	char *description;        /* header: NULL when none came */
	char parent[41];          /* header: parentCommit (40 lowercase hex), or "" */
	unsigned char *content;   /* file: the decoded bytes (content_len of them, and a NUL after) */
	size_t content_len;
	char oid[65];             /* lfsFile: its sha256, 64 lowercase hex; "" when it names its xetHash */
	char xet_hash[65];        /* lfsFile: its Xet hash (64 hex, as sent), when it names no oid; else "" */
	int64_t size;             /* lfsFile: its size, -1 when the line says none */
};

/* Parse one line (n bytes, its newline may be there). Returns 0 and *out, or -EINVAL with *errmsg
 * (malloc'd: what is wrong, naming the path where there is one; the Hub answers it 400) and *out
 * empty. */
int hf_commit_line_parse(const char *line, size_t n, struct hf_commit_line *out, char **errmsg);
void hf_commit_line_release(struct hf_commit_line *l);

/* One object of a batch request. */
struct hf_lfs_object {
	bool ok;                  /* oid is a sha256 (64 lowercase hex) and size an integer >= 0 */
	char oid[65];             /* as sent when ok; else what may be shown of it ("" or up to 64 chars) */
	int64_t size;             /* as sent, 0 when it is not an integer */
};

/* A batch request: {"operation", "transfers"?, "objects": [{"oid", "size"}, ...]}. */
struct hf_lfs_batch {
	char operation[16];       /* "upload", "download", or "" for anything else */
	bool multipart;           /* "transfers" names the Hub's "multipart" */
	bool xet;                 /* ... and "xet" (docs/protocols/xet.md, "Uploads") */
	struct hf_lfs_object *objects; /* malloc'd (hf_lfs_batch_release) */
	size_t nobjects;
};

/* Parse a batch request of len bytes (no duplicate keys). Returns 0 and *out; -EINVAL with *why
 * (static) when it is not a batch request; -E2BIG when it asks about more than max_objects. A
 * malformed object is not an error: its entry is !ok, and the answer says so for that object. */
int hf_lfs_batch_parse(const char *body, size_t len, size_t max_objects, struct hf_lfs_batch *out, const char **why);
void hf_lfs_batch_release(struct hf_lfs_batch *b);

#endif
