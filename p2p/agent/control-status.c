/*
 * control-status.c - what GET /v1/status on the control socket answers (docs/agent.md, "The
 * control API"): the agent as a whole (its cache, its mirror, its ports, the totals, the scrub, every
 * pull's links) and an entry per name of each snapshot: its progress, what it fetched over HTTP, why
 * it waits, the error said in its user's words. Read on the loop from the agent's own bookkeeping
 * and libtorrent's counts; control.c sends it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent-int.h"
#include "base/xmalloc.h"
#include "hub/http/httpd.h"
#include "p2p/mount.h"
#include "p2p/p2p.h"

/* What a snapshot's error means for its user: libtorrent says "Bad address" when a write to a full
 * disk faults; say the disk is full, what is missing, what is free and what to do, when the cache's
 * disk lacks the bytes still to come (the agent goes on by itself once it has them: the tick). */
static char *error_words(struct agent *a, const struct agent_snap *s, const struct p2p_torrent_status *st)
{
	/* what it lacks of the files it wants, or of all of them while mounted (reads may want any) */
	int64_t total = 0, need = agent_snap_need(a, s->meta, s->nmounts ? NULL : s->want, &total);
	char *room = agent_room_refusal(a, s->spec ? s->spec : s->btih, need, total);
	char *w;

	if (!room)
		return xstrdup(st->message);
	w = xasprintf("the cache's disk is full: %s; it goes on once there is room (%s)", room, st->message);
	free(room);
	return w;
}

/* What libtorrent counts, and what the fill wrote that it does not count yet. */
static int64_t have_bytes(const struct agent_snap *s, const struct p2p_torrent_status *st)
{
	int64_t have = st->total_done + agent_fill_unseen(s);

	return have < st->total_wanted ? have : st->total_wanted;
}

/* Mounts of s that umount detached and still serve somebody. */
static size_t lingering_in_use(const struct agent_snap *s)
{
	size_t n = 0;

	for (size_t k = 0; k < s->nlingering; k++)
		n += p2p_mount_connected(s->lingering[k]);
	return n;
}

/* Of the files s wants (all, or those its pulls and mounts asked for): their size ("wanted_size",
 * which a reader moving through a mount does not change, as libtorrent's count of wanted bytes does)
 * and what the cache holds of them ("wanted_held"), for status's progress. */
static void wanted_json(struct agent *a, const struct agent_snap *s, json_t *j)
{
	struct p2p_file_list l = { 0 };
	int64_t size = 0, have = 0, *held = NULL;
	size_t nw = 0;
	int *idx = NULL;

	if (!p2p_session_files(a->ses, s->btih, &l)) {
		held = xcalloc(l.n + 1, sizeof(*held));
		idx = agent_want_indices(&l, s->want, &nw);
		if (!p2p_session_files_held(a->ses, s->btih, &l, held))
			for (size_t i = 0, k = 0; i < l.n && k < nw; i++)
				if (l.v[i].index == idx[k]) {
					size += l.v[i].size;
					have += held[i];
					k++;
				}
		have += agent_fill_unseen(s); /* (written by the direct fill, not counted by libtorrent yet) */
	}
	json_object_set_new(j, "wanted_size", json_integer(size));
	json_object_set_new(j, "wanted_held", json_integer(have < size ? have : size));
	free(held);
	free(idx);
	p2p_file_list_release(&l);
}

/* One entry of status: snapshot s as name (one of s->names). */
static json_t *snap_json(struct agent *a, const struct agent_snap *s, json_t *name)
{
	struct p2p_torrent_status st = { 0 };
	json_t *mounts = json_array(), *j;
	char *path = xasprintf("%s/%s", s->save, s->name ? s->name : "");
	bool ok = !p2p_session_torrent_status(a->ses, s->btih, &st);
	size_t direct = 0;

	for (size_t k = 0; k < s->nmounts; k++)
		if (s->mounts[k].name == name) {
			json_array_append_new(mounts, json_string(s->mounts[k].dir));
			direct += p2p_mount_shortcuts(s->mounts[k].m);
		}
	j = json_pack("{s:O?, s:O?, s:O?, s:O?, s:s, s:I, s:I, s:b, s:b, s:b, s:I, s:o, s:i, s:I, s:I}", "spec",
		      json_object_get(name, "spec"), "revision", json_object_get(name, "revision"), "commit",
		      json_object_get(name, "commit"), "synced_at", json_object_get(name, "synced_at"), "btih", s->btih,
		      "bytes_have", (json_int_t)(ok ? have_bytes(s, &st) : 0), "bytes_total",
		      (json_int_t)(ok ? st.total_wanted : 0), "complete", ok && (st.seeding || st.seed_mode),
		      "verified", s->verified && !json_array_size(s->pending_links), "pinned", s->pinned, "last_used",
		      (json_int_t)s->last_used, "mounts", mounts, "peers", ok ? st.peers : 0, "uploaded",
		      (json_int_t)(ok ? st.uploaded : 0), "downloaded", (json_int_t)(ok ? st.downloaded : 0));
	if (ok && st.error) {
		char *w = error_words(a, s, &st);
		json_object_set_new(j, "error", json_string(w));
		free(w);
	} else if (agent_fill_broken(s)) {
		json_object_set_new(j, "error", json_string(agent_fill_broken(s))); /* (a pull ends with it) */
	}
	/* each pull's hub cache links, by the id its answer gave: null (made) or why they failed */
	json_object_set_new(j, "links", json_deep_copy(s->links_done));
	json_object_set_new(j, "path", json_string(path));
	/* pieces the HTTP fill fetched from the mirror while alone (fill.c), in downloaded too */
	json_object_set_new(j, "fetched_over_http", json_integer(s->fill_bytes));
	/* bytes of the pieces libtorrent holds, which it offers to peers (not those the direct fill wrote
	 * and has not handed over yet) */
	json_object_set_new(j, "offered", json_integer(ok ? st.held : 0));
	/* mounts umount detached that still serve open files or another namespace's copy */
	json_object_set_new(j, "detached_in_use", json_integer((json_int_t)lingering_in_use(s)));
	/* taken back whole after a restart: its pieces are verified as they are read, not all up front */
	json_object_set_new(j, "checked_lazily", json_boolean(ok && st.seed_mode));
	/* its wanted contents are kept by sha256 (done in the background once it is quiet) */
	json_object_set_new(j, "kept", json_boolean(s->indexed));
	/* the rate bytes come at now (bytes/s over the last seconds), and why none come, since when */
	json_object_set_new(j, "rate", json_integer(s->rate));
	json_object_set_new(j, "waiting", s->waiting[0] ? json_string(s->waiting) : json_null());
	json_object_set_new(j, "waiting_since", s->waiting_since ? json_integer(s->waiting_since) : json_null());
	/* the background scrub: when it last read this snapshot back whole, and the damage it found */
	json_object_set_new(j, "scrubbed_at", s->scrubbed_at ? json_integer(s->scrubbed_at) : json_null());
	json_object_set_new(j, "scrub_damaged", json_integer(s->scrub_damaged));
	/* where its swarm is: the trackers and web seeds (the mirrors) it asks now */
	json_object_set_new(j, "sources", json_deep_copy(json_object_get(s->meta, "sources")));
	/* files its mounts serve straight from the cache (bind mounts), not through FUSE */
	json_object_set_new(j, "served_directly", json_integer((json_int_t)direct));
	/* of the whole snapshot (bytes_total and bytes_have are of the files it wants): its size and
	 * file count, the bytes the cache holds of it (wanted, or read through a mount), and how many
	 * files it wants (null: all) */
	{
		json_t *files = json_object_get(s->meta, "files"), *f;
		int64_t size = 0, held = ok ? st.held + agent_fill_unseen(s) : 0;
		size_t i;
		json_array_foreach(files, i, f)
			size += json_integer_value(json_object_get(f, "size"));
		json_object_set_new(j, "size", json_integer(size));
		json_object_set_new(j, "files", json_integer((json_int_t)json_array_size(files)));
		json_object_set_new(j, "held", json_integer(held < size ? held : size));
		json_object_set_new(j, "selected",
				    s->want ? json_integer((json_int_t)json_array_size(s->want)) : json_null());
		/* bigger than the cache's bound: it stays only pinned or mounted (then in part) */
		json_object_set_new(j, "over_bound", json_boolean(a->cfg->cache_size > 0 && size > a->cfg->cache_size));
	}
	wanted_json(a, s, j);
	json_object_set_new(j, "mirror", json_deep_copy(json_object_get(s->meta, "mirror")));
	free(path);
	return j;
}

json_t *agent_status_json(struct agent *a)
{
	json_t *snaps = json_array(), *o;
	int64_t over_http = 0;
	struct p2p_session_status ss = { 0 };
	int64_t up = 0, down = 0;

	for (size_t i = 0; i < a->nsnaps; i++) {
		json_t *nm;
		size_t k;
		/* a wait for room in the cache as it is this moment, not at the last tick */
		agent_snap_room_words(a, a->snaps[i], !a->snaps[i]->finished);
		json_array_foreach(a->snaps[i]->names, k, nm)
			json_array_append_new(snaps, snap_json(a, a->snaps[i], nm));
	}
	p2p_session_status(a->ses, &ss);
	p2p_session_totals(a->ses, &up, &down);
	for (size_t i = 0; i < a->nsnaps; i++)
		over_http += a->snaps[i]->fill_bytes;
	o = json_pack("{s:i, s:i, s:s, s:s?, s:s, s:I, s:I, s:i, s:I, s:I, s:I, s:o}", "pid", (int)getpid(),
		      "http_port", a->http ? httpd_port(a->http) : 0, "socket", a->cfg->socket_path, "mirror",
		      a->cfg->mirror, "cache", a->cfg->cache_dir, "cache_used", (json_int_t)agent_cache_used(a),
		      "cache_size", (json_int_t)a->cfg->cache_size, "p2p_port", ss.listen_port, "started_at",
		      (json_int_t)a->started_at, "uploaded", (json_int_t)up, "downloaded", (json_int_t)down,
		      "snapshots", snaps);
	/* what the fill fetched from the mirror over HTTP (downloaded counts BitTorrent's payload), and
	 * where the local endpoint listens */
	json_object_set_new(o, "fetched_over_http", json_integer(over_http));
	json_object_set_new(o, "links", json_deep_copy(a->links_done));
	json_object_set_new(o, "scrub", agent_scrub_status(a));
	if (a->http_listen && a->http) {
		const char *colon = strrchr(a->http_listen, ':');
		char *ep = xasprintf("%.*s:%d", colon ? (int)(colon - a->http_listen) : (int)strlen(a->http_listen),
				     a->http_listen, httpd_port(a->http));
		json_object_set_new(o, "http", json_string(ep));
		free(ep);
	} else {
		json_object_set_new(o, "http", json_null());
	}
	return o;
}
