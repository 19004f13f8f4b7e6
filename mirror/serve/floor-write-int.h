/*
 * floor-write-int.h - the write floor of mirror/serve/ (floor-write.c, spool.c): what the write fronts
 * (upload, commit, lfs, git's push) share: the write gate, the local namespaces and their quotas, the
 * bodies streamed in (abandoning one; the spool), and the torrents of new commits. Nothing outside this
 * folder includes it; routes-int.h does, for every front.
 */
#ifndef HM_MIRROR_FLOOR_WRITE_INT_H
#define HM_MIRROR_FLOOR_WRITE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct catalog;
struct catalog_repo;
struct httpd_body_sink;
struct httpd_req;
struct mirror_routes;

/* The write floor's part of the routes (rt->write), which mirror_routes_new makes and mirror_routes_free
 * frees: the local namespaces (serve --local) and their quotas (--local-quota: "NS=BYTES, ..."), the
 * commit lock, the timer of new commits' torrents (armed once the loop is known). */
struct mirror__write *mirror__write_new(void);
void mirror__write_free(struct mirror__write **w);
void mirror__write_set_local(struct mirror__write *w, const char *namespaces, const char *quota);
void mirror__write_set_loop(struct mirror_routes *rt);
/* Has the mirror local namespaces at all? */
bool mirror__has_local(const struct mirror_routes *rt);
/* Commits to local repos, one at a time (on a worker). */
void mirror__commit_lock(struct mirror_routes *rt);
void mirror__commit_unlock(struct mirror_routes *rt);

/* The spool's part of the routes (rt->spool; spool.c): its bounds (serve --write-body-max, one commit's
 * or push's body; --write-spool-max, all of them being received at once; 0: the defaults) and counts;
 * freed once every body was released. */
struct mirror__spool *mirror__spool_new(void);
void mirror__spool_free(struct mirror__spool **sp);
void mirror__spool_set_bounds(struct mirror__spool *sp, int64_t body_max, int64_t spool_max);
/* What the bodies being received or read hold now, and the bodies refused for a bound (/metrics). */
void mirror__spool_stats(const struct mirror_routes *rt, int64_t *bytes, uint64_t *refused);

/* What a streamed request body became (mirror__claim_body): an LFS object's bytes in the store's
 * writer, or a commit's NDJSON or a push's pack in the spool, an unnamed file (spool.c). Each starts
 * with its head: its kind, and how it is freed (mirror__body_abandon). */
#define MIRROR__SINK_OBJECT 0x4f424a
#define MIRROR__SINK_COMMIT 0x434d54
struct mirror__sink {
	int kind;
	void (*abandon)(void *sink); /* frees the sink, on the loop */
};
struct mirror__commit_body {
	struct mirror__sink head;     /* MIRROR__SINK_COMMIT */
	int fd;                       /* the body so far (a job reading it holds the sink till its end) */
	int64_t got;
	int status;                   /* what went wrong keeping it (413, 403, 507, 503, 500), 0 if nothing */
	char why[256];                /* ... in words, for the answer */
	/* spool.c's */
	struct mirror_routes *rt;
	bool push;                    /* a git push's pack: git keeps a copy of its own, the disk counts two */
	int64_t xet_max;              /* a Xet xorb's or shard's: its bound (413 past it); -1 for the others */
	int64_t declared;             /* Content-Length, -1 for a chunked body */
	int64_t promised;             /* of that, what has not come yet (rt->spool counts it) */
	int64_t limit;                /* the most it may hold (spool.c's room_for) */
	int64_t checked;              /* a chunked body's size when its room was last asked */
	int64_t quota_room;           /* its namespace's room in body bytes, -1 for no quota */
	int fail;                     /* how passing limit is answered, with why */
	char quota_why[200];
};
/* Free a sink of either kind (NULL-safe; on the loop: a commit body's bytes are uncounted). */
void mirror__body_abandon(void *sink);
/* The spool of commit and push bodies (spool.c; docs/uploads.md, "Bodies and their bounds"), and of Xet
 * xorbs and shards (their front says which and whether: mirror__fronts' xet_body): the claim
 * of a POST to a commit or a git-receive-pack path (false when it is neither: then the body is any
 * other; false too, after httpd_body_refuse, when the request may not write there or its declared
 * length is over its bound), and a body's end (on the loop, NULL-safe). */
bool mirror__spool_claim(struct mirror_routes *rt, struct httpd_req *r, struct httpd_body_sink *sink);
void mirror__spool_release(struct mirror__commit_body *s);
/* May a handler read s (the request's spooled body, NULL when none)? Else *status and *why (NULL when
 * the handler is to say it in its own words; *status 0 when nothing refused the body: it was not
 * claimed) say how to answer: the claim's refusal or what the spool ran into (a 503 gets its
 * Retry-After here). */
bool mirror__spool_ok(struct httpd_req *req, const struct mirror__commit_body *s, int *status, const char **why);
/* Is name (ORG/NAME) under one of the local namespaces? */
bool mirror__local_namespace(const struct mirror_routes *rt, const char *name);
/* After a commit, on the loop: make the torrents of new commits in the background. */
void mirror__local_torrents(struct mirror_routes *rt);
/* Namespace ns's quota in bytes (--local-quota), -1 for none. */
int64_t mirror__local_quota(const struct mirror_routes *rt, const char *ns);
/* Would contents sha[0..n) of size[0..n) fit in the quota of name's namespace (ORG/NAME: ORG), those its
 * repos hold already counting nothing? On no, *msg (malloc'd) says how far over. Blocking (catalog). */
bool mirror__quota_room(struct mirror_routes *rt, struct catalog *cat, const char *name, const char *const *sha,
			const int64_t *size, size_t n, char **msg);
/* May this request write repo type/name ? Answers a refusal itself; *who (malloc'd)
 * names the writer for the log. */
bool mirror__write_gate(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			char **who);
/* The local repo type/name of the Hugging Face hub, its row in *repo (the caller's to release); else a
 * 404 (no such repo) or a 403 (a mirrored one: read-only) is answered and false returned. After the
 * write gate, which keeps a private repo from one who may not read it. Blocking (catalog). */
bool mirror__local_repo(struct mirror_routes *rt, struct httpd_req *req, const char *type, const char *name,
			struct catalog_repo *repo);

#endif
