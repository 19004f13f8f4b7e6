/*
 * agent-int.h - what the agent's files share (private to p2p/agent/).
 */
#ifndef HM_AGENT_INT_H
#define HM_AGENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "agent.h"
#include "p2p/keep.h"

struct httpd;
struct httpd_req;
struct p2p_mount;
struct p2p_session;

/* One mount point of a snapshot. */
struct agent_mount {
	char *dir;
	struct p2p_mount *m;
};

/* A snapshot the agent holds: its torrent is in the session from the first mount (or the agent's
 * start, for one held before) until the agent ends. */
struct snap {
	char btih[41];
	json_t *meta;                   /* the mirror's answer: spec fields, revision, commit, name, files */
	const char *spec;               /* borrowed from meta: "hf:org/name", "ms:datasets/o/n" */
	const char *revision, *commit, *name;
	unsigned char *torrent;
	size_t tlen;
	struct p2p_known *known;        /* strings borrowed from meta */
	size_t nknown;
	char *save;                     /* <cache>/<btih> */
	struct agent_mount *mounts;
	size_t nmounts;
	bool finished;                  /* every piece had */
	bool indexed;                   /* contents kept by sha256 (or given up) */
	bool indexing;                  /* an index job runs */
	int index_tries;
	uv_work_t work;
};

struct agent {
	const struct agent_config *cfg;
	uv_loop_t loop;
	struct p2p_session *ses;
	struct httpd *ctl;
	uv_async_t wake;
	uv_timer_t tick;
	uv_signal_t sigterm, sigint;
	struct snap **snaps;
	size_t nsnaps;
	bool stopping;
	int64_t started_at;
};

/* The control API's handler (control.c). */
int agent_control(void *ud, struct httpd_req *req);

/* The snapshot with this btih, or NULL. */
struct snap *agent_snap_find(struct agent *a, const char *btih);
/* Take a snapshot the mirror described (meta, consumed) with its torrent (copied): place the
 * contents the cache holds, add it to the session, and remember it on disk. Returns the snapshot
 * (an existing one if the agent has it already) or NULL with *errmsg. */
struct snap *agent_snap_add(struct agent *a, json_t *meta, const unsigned char *torrent, size_t tlen,
			    char **errmsg);
/* End: unmount everything (lazily), close the control socket; the loop then ends. Not from inside a
 * control handler (it frees the server): there, agent_stop_soon (once the answer is out). */
void agent_stop(struct agent *a);
void agent_stop_soon(struct agent *a);

#endif
