/*
 * mirror.c - the agent's client of its mirrors: a snapshot's description and torrent, asked of each
 * mirror of the list in turn. Blocking, so from worker threads only (never the agent's loop): a mirror
 * that accepts and never answers holds the asker for the stall time (--mirror-timeout) at most, and
 * the agent's stop ends the wait. And the goodbyes to the trackers, once the loop has ended.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/xmalloc.h"
#include "hub/http/http.h"
#include "hub/hub.h"
#include "p2p/p2p.h"

long agent_mirror_stall_s(const struct agent *a)
{
	return a->cfg->mirror_timeout_s > 0 ? a->cfg->mirror_timeout_s : 20;
}

/* GET mirror + path; 0 with the body, or an HTTP status for the client with *errmsg (malloc'd). */
static int mirror_get(struct agent *a, const char *mirror, const char *path, const char *token, char **body,
		      size_t *len, char **errmsg)
{
	char *url = xasprintf("%s%s", mirror, path), *err = NULL;
	/* a mirror that accepts and never answers must not hold the caller for long: the next one is
	 * asked after the stall (docs/agent.md) */
	struct hub_http_call c = { .url = url, .token = token, .max = 128 << 20, .timeout_s = 600,
				   .connect_timeout_ms = 5000, .stall_s = agent_mirror_stall_s(a), .cancel = &a->quit };
	long status = 0;
	int r;

	r = hub_http_call_blocking(&c, body, len, &status, &err);
	free(url);
	if (r) {
		*errmsg = xasprintf("cannot reach the mirror at %s: %s", mirror, err ? err : err_str(r));
		free(err);
		return 502;
	}
	if (status != 200) {
		json_t *j = json_loadb(*body, *len, 0, NULL);
		const char *e = json_string_value(json_object_get(j, "error"));
		*errmsg = xstrdup(e ? e : "unexpected answer");
		json_decref(j);
		free(*body);
		*body = NULL;
		/* 503: a snapshot the mirror fetched on demand is being completed; the client asks again */
		return status == 404 || status == 401 || status == 403 || status == 503 ? (int)status : 502;
	}
	return 0;
}

char *agent_mirror_at(const char *list, size_t i)
{
	const char *p = list;
	size_t k = 0;

	/* empty entries ("A,,B", a trailing comma) are skipped, not the end of the list */
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		while (n && *p == ' ') {
			p++;
			n--;
		}
		while (n && (p[n - 1] == ' ' || p[n - 1] == '/'))
			n--;
		if (n && k++ == i)
			return xstrndup(p, n);
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

static int fetch_snapshot_one(struct agent *a, const char *mirror, const char *token, const struct hub_spec *spec,
			      json_t **meta, char **tor, size_t *tlen, char **errmsg);

/* The base URL (scheme://host[:port][/prefix]) of a URL of the mirror's: what comes before marker
 * ("/announce", "/p2p/") in it; NULL when it has none. Malloc'd. */
static char *url_base(const char *url, const char *marker, const char **rest)
{
	const char *host = strstr(url, "://"), *at = host ? strstr(host + 3, marker) : NULL;

	if (!at)
		return NULL;
	*rest = at;
	return xstrndup(url, (size_t)(at - url));
}

json_t *agent_sources_rebase(const char *mirrors, const char *answered, json_t *urls, const char *marker)
{
	json_t *out = json_array(), *it;
	const char *rest = NULL;
	char *first = url_base(json_string_value(json_array_get(urls, 0)), marker, &rest), *m;
	size_t i;

	if (!answered && !(m = agent_mirror_at(mirrors, 0))) { /* no mirror to put them on: as they are */
		free(first);
		json_decref(out);
		return json_deep_copy(urls);
	}
	if (!answered)
		free(m);
	/* the torrent's first URL is the mirror that answered (as it was asked), the others its peer mirrors
	 * (serve --peer-mirror): the mirrors this agent is told about now come first, in their order, the
	 * one that answered before them, then the peer mirrors; the base that answered, if it is none of
	 * the agent's, is left out (a mirror that moved) */
	if (first && answered)
		json_array_append_new(out, json_sprintf("%s%s", answered, rest));
	for (i = 0; first && (m = agent_mirror_at(mirrors, i)) != NULL; i++) {
		json_t *u = json_sprintf("%s%s", m, rest);
		if (!agent_json_has(out, json_string_value(u)))
			json_array_append(out, u);
		json_decref(u);
		free(m);
	}
	json_array_foreach(urls, i, it) {
		if (!json_is_string(it) || (i == 0 && first) || agent_json_has(out, json_string_value(it)))
			continue;
		json_array_append(out, it);
	}
	free(first);
	return out;
}

bool agent_json_has(json_t *arr, const char *str)
{
	json_t *it;
	size_t i;

	json_array_foreach(arr, i, it)
		if (json_is_string(it) && str && !strcmp(json_string_value(it), str))
			return true;
	return false;
}

/* The torrent's trackers and web seeds (their URLs) as a list of strings. */
static json_t *torrent_urls(const char *tor, size_t tlen, bool seeds)
{
	char **v = NULL;
	size_t n = 0;
	json_t *out = json_array();

	if (!(seeds ? p2p_torrent_web_seeds : p2p_torrent_trackers)((const unsigned char *)tor, tlen, &v, &n)) {
		for (size_t i = 0; i < n; i++) {
			json_array_append_new(out, json_string(v[i]));
			free(v[i]);
		}
		free(v);
	}
	return out;
}

json_t *agent_sources(const char *mirrors, const char *answered, const char *tor, size_t tlen, json_t *had)
{
	json_t *tr = json_is_array(json_object_get(had, "trackers")) ? json_incref(json_object_get(had, "trackers"))
								     : torrent_urls(tor, tlen, false);
	json_t *ws = json_is_array(json_object_get(had, "web_seeds")) ? json_incref(json_object_get(had, "web_seeds"))
								      : torrent_urls(tor, tlen, true);
	json_t *out = json_pack("{s:o, s:o}", "trackers", agent_sources_rebase(mirrors, answered, tr, "/announce"),
				"web_seeds", agent_sources_rebase(mirrors, answered, ws, "/p2p/"));

	json_decref(tr);
	json_decref(ws);
	return out;
}

int agent_fetch_snapshot(struct agent *a, const char *mirrors, const char *token, const struct hub_spec *spec,
			 json_t **meta, char **tor, size_t *tlen, char **errmsg)
{
	char *m;
	int st = 502;

	/* several mirrors of one deployment (a comma list): the first that answers; one that cannot be
	 * reached, or answers nonsense, passes the question to the next */
	for (size_t i = 0; (m = agent_mirror_at(mirrors, i)) != NULL; i++) {
		if (i) {
			free(*errmsg);
			*errmsg = NULL;
		}
		st = fetch_snapshot_one(a, m, token, spec, meta, tor, tlen, errmsg);
		/* where the swarm's trackers and web seeds are: at the mirrors asked now, whatever the
		 * torrent was made with (a snapshot held since then takes these: agent_snap_add) */
		if (!st)
			json_object_set_new(*meta, "sources", agent_sources(mirrors, m, *tor, *tlen, NULL));
		free(m);
		if (st != 502)
			break;
		json_decref(*meta);
		*meta = NULL;
	}
	if (st == 502 && !*errmsg)
		*errmsg = xstrdup("no mirror given");
	return st;
}

/* A refusal in words that say what to do: the mirror's own answer is the Hub's ("Invalid username or
 * password."), which names neither the token nor the way out. */
static void explain(int st, const char *token, const struct hub_spec *spec, char **errmsg)
{
	char *s = NULL, *spec_s;

	if (st == 401)
		s = xstrdup(
			token ? "the mirror refused the token (HUBMIRROR_TOKEN): it is not one of the mirror's tokens"
			      : "the mirror wants a token: set HUBMIRROR_TOKEN to one its operator gave you");
	else if (st == 403)
		s = xstrdup(
			token ? "the token (HUBMIRROR_TOKEN) does not cover this repository: ask the mirror's operator "
				"for a grant of it"
			      : "the mirror gives it only with a token that covers it: set HUBMIRROR_TOKEN");
	else if (st == 404 && *errmsg && !strcmp(*errmsg, "repo not on this mirror")) {
		spec_s = hub_spec_format(spec, 0);
		s = xasprintf("not on this mirror: ask for it with 'hubmirror request %s' (what it holds: "
			      "'hubmirror search WORDS')", spec_s);
		free(spec_s);
	}
	if (s) {
		free(*errmsg);
		*errmsg = s;
	}
}

static int fetch_snapshot_one(struct agent *a, const char *mirror, const char *token, const struct hub_spec *spec,
			      json_t **meta, char **tor, size_t *tlen, char **errmsg)
{
	char *q = spec->revision ? hub_url_escape(spec->revision, false) : NULL, *body = NULL, *path;
	const char *rev, *commit;
	size_t len = 0;
	int st;

	path = xasprintf("/api/p2p/torrent/%s/%s/%s?meta=1%s%s", hub_kind_name(spec->hub), hub_type_name(spec->type),
			 spec->name, q ? "&rev=" : "", q ? q : "");
	st = mirror_get(a, mirror, path, token, &body, &len, errmsg);
	free(path);
	free(q);
	if (st) {
		explain(st, token, spec, errmsg);
		goto out;
	}
	*meta = json_loadb(body, len, 0, NULL);
	free(body);
	rev = json_string_value(json_object_get(*meta, "revision"));
	commit = json_string_value(json_object_get(*meta, "commit"));
	/* the commit names a folder of the HF cache: 40 hex digits, nothing else */
	if (!rev || !commit || hub_check_revision(rev) || !hex_is_lower(commit, 40)) {
		*errmsg = xasprintf("%s answered a snapshot without a usable commit or ref", mirror);
		st = 502;
		goto out;
	}
	/* the torrent of that very commit, even if a sync moves the ref meanwhile */
	path = xasprintf("/api/p2p/torrent/%s/%s/%s?rev=%s", hub_kind_name(spec->hub), hub_type_name(spec->type),
			 spec->name, commit);
	st = mirror_get(a, mirror, path, token, tor, tlen, errmsg);
	free(path);
	if (st)
		explain(st, token, spec, errmsg);
	else
		json_object_set_new(*meta, "mirror", json_string(mirror)); /* which one answered (status) */
out:
	return st;
}

/* ---- goodbyes to the trackers as the agent ends ---- */

#define GOODBYE_BUDGET_MS 5000  /* all of them, at most (a mirror away: one failure per URL, then none) */

void agent_say_goodbyes(const struct p2p_goodbye *g, size_t n, int port)
{
	uint64_t start = uv_hrtime() / 1000000;
	const char **failed = xcalloc(n + 1, sizeof(*failed));
	size_t nfailed = 0;

	for (size_t i = 0; i < n && port > 0 && uv_hrtime() / 1000000 - start < GOODBYE_BUDGET_MS; i++) {
		struct hub_http_call c = { .max = 64 << 10, .timeout_s = 2, .connect_timeout_ms = 1000, .stall_s = 2 };
		char q[3 * 20 + 1], *url, *body = NULL, *err = NULL;
		bool skip = strncmp(g[i].url, "http://", 7) && strncmp(g[i].url, "https://", 8);
		size_t len = 0;
		long status = 0;

		for (size_t k = 0; !skip && k < nfailed; k++)
			skip = !strcmp(failed[k], g[i].url);
		if (skip)
			continue;
		for (int b = 0; b < 20; b++)
			snprintf(q + 3 * b, 4, "%%%02X", g[i].hash[b]);
		/* the tracker knows a peer by its address and port: this one's, going */
		url = xasprintf("%s%sinfo_hash=%s&peer_id=-HM0001-goodbye00000&port=%d&uploaded=0&downloaded=0&left=0"
				"&event=stopped&compact=1&numwant=0",
				g[i].url, strchr(g[i].url, '?') ? "&" : "?", q, port);
		c.url = url;
		if (hub_http_call_blocking(&c, &body, &len, &status, &err) || status != 200)
			failed[nfailed++] = g[i].url;
		free(body);
		free(err);
		free(url);
	}
	free(failed);
}
