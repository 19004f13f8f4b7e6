/*
 * scrub.c - the background scrub (docs/agent.md, "Bit rot after verification"): every verified
 * snapshot the agent holds is read back and hashed again, piece by piece, at a bounded rate
 * (agent --scrub-rate, bytes/s) and a pass at most every --scrub-every seconds, as storage systems
 * scrub. A verified snapshot's files are served as read-only bind mounts, straight from the cache:
 * a byte that rots after the check reached readers until someone ran `status --verify`.
 *
 * One step at a time on libuv's thread pool, at SCHED_IDLE and the idle I/O class, reading about a
 * second's worth of the rate (p2p_session_verify_pieces, gentle: what its reads bring into the page
 * cache that was not there is dropped again, so loaders keep theirs); the next step waits until the
 * rate allows it. Damage is handled as a read's check or `status --verify` handles it: the pieces are
 * no longer admitted, libtorrent checks the files again and fetches them anew from peers and the
 * mirror (agent_snap_damaged: the mounts go back to FUSE meanwhile), and status says what was found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent-int.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "p2p/p2p.h"

#define SCRUB_FOUND_MAX 16      /* the last damages found, kept for status */

struct agent_scrub {
	uv_work_t w;
	bool running;                   /* a step is on the thread pool */
	char btih[41];                  /* the snapshot being scrubbed ("" between snapshots) */
	int piece;                      /* where its next step starts */
	json_t *done;                   /* this pass: btih -> true for those scrubbed */
	uint64_t next_at;               /* uv_now before which no step starts */
	int64_t pass_started;           /* unix time the pass began (0: none under way) */
	/* the step's input and output */
	struct agent *a;
	int first, next, checked, damaged, r;
	int64_t max_bytes, read;
	uint64_t started_ms;
	/* totals, for status */
	int64_t bytes, pieces, damaged_total, passes, last_pass_at;
	json_t *found;                  /* [{spec, btih, pieces, at}], the last SCRUB_FOUND_MAX */
};

struct agent_scrub *agent_scrub_new(void)
{
	struct agent_scrub *c = xcalloc(1, sizeof(*c));

	c->done = json_object();
	c->found = json_array();
	return c;
}

void agent_scrub_free(struct agent_scrub **c)
{
	if (!*c)
		return;
	json_decref((*c)->done);
	json_decref((*c)->found);
	free(*c);
	*c = NULL;
}

/* May s be scrubbed now? Verified and quiet: not being checked, thinned, or written by the fill. */
static bool eligible(struct agent *a, const struct agent_snap *s)
{
	struct p2p_torrent_status st;

	return s->verified && s->finished && !s->settling && !s->evicting && !agent_fill_direct(s) &&
	       !p2p_session_torrent_status(a->ses, s->btih, &st) && !st.checking && !st.error;
}

static void step_work(uv_work_t *w)
{
	struct agent_scrub *c = w->data;

	/* on CPU time and disk time nobody else wants: a loader beside it goes first */
	agent_thread_idle(true);
	c->r = p2p_session_verify_pieces(c->a->ses, c->btih, c->first, c->max_bytes, true, &c->next, &c->checked,
					 &c->damaged, &c->read);
	agent_thread_idle(false);
}

/* The damage a step found in s: fetched again, said in the log and in status. */
static void found(struct agent *a, struct agent_snap *s, int pieces)
{
	struct agent_scrub *c = a->scrub;

	log_warn("agent", "scrub: %s: %d piece%s damaged in the cache since it was verified: fetching %s again from "
		 "peers and the mirror", s->spec ? s->spec : s->btih, pieces, pieces == 1 ? "" : "s",
		 pieces == 1 ? "it" : "them");
	s->scrub_damaged += pieces;
	c->damaged_total += pieces;
	json_array_append_new(c->found, json_pack("{s:s?, s:s, s:i, s:I}", "spec", s->spec, "btih", s->btih,
						   "pieces", pieces, "at", (json_int_t)time(NULL)));
	while (json_array_size(c->found) > SCRUB_FOUND_MAX)
		json_array_remove(c->found, 0);
	agent_snap_damaged(a, s);
}

static void step_done(uv_work_t *w, int status)
{
	struct agent_scrub *c = w->data;
	struct agent *a = c->a;
	struct agent_snap *s = agent_snap_find(a, c->btih);
	uint64_t spent = uv_now(&a->loop) - c->started_ms, due;

	(void)status;
	c->running = false;
	if (c->r || !s) { /* gone meanwhile (dropped, evicted): the next one */
		c->btih[0] = '\0';
		return;
	}
	c->bytes += c->read;
	c->pieces += c->checked;
	c->piece = c->next;
	if (c->damaged)
		found(a, s, c->damaged);
	/* past its last piece (a step that read nothing); or damage, which makes libtorrent check every
	 * file again: this pass has done its part on it */
	if (c->damaged || !c->checked) {
		s->scrubbed_at = time(NULL);
		json_object_set_new(c->done, c->btih, json_true());
		c->btih[0] = '\0';
	}
	/* the rate: this step's bytes take bytes / rate seconds, whatever the step itself took */
	due = (uint64_t)(c->read * 1000 / a->cfg->scrub_rate);
	c->next_at = uv_now(&a->loop) + (due > spent ? due - spent : 0);
}

/* The next snapshot of this pass, or NULL when every one is done (or none may be scrubbed now). */
static struct agent_snap *pick(struct agent *a, bool *pending)
{
	*pending = false;
	for (size_t i = 0; i < a->nsnaps; i++) {
		struct agent_snap *s = a->snaps[i];
		if (json_object_get(a->scrub->done, s->btih))
			continue;
		if (eligible(a, s))
			return s;
		*pending |= s->verified; /* (busy for now: it is waited for) */
	}
	return NULL;
}

void agent_scrub_tick(struct agent *a)
{
	struct agent_scrub *c = a->scrub;
	struct agent_snap *s;
	bool pending;

	if (a->cfg->scrub_rate <= 0 || c->running || a->stopping || uv_now(&a->loop) < c->next_at)
		return;
	if (!c->btih[0] || !(s = agent_snap_find(a, c->btih)) || !eligible(a, s)) {
		if (!(s = pick(a, &pending))) {
			if (c->pass_started && !pending) {
				/* every snapshot held was read back once: the next pass after --scrub-every */
				c->passes++;
				c->last_pass_at = time(NULL);
				c->pass_started = 0;
				json_object_clear(c->done);
				c->next_at = uv_now(&a->loop) + (uint64_t)agent_scrub_every_s(a) * 1000;
				log_info("agent", "scrub: pass %lld done (%lld pieces read back in all, %lld damaged)",
					 (long long)c->passes, (long long)c->pieces, (long long)c->damaged_total);
			}
			return;
		}
		if (!c->pass_started)
			c->pass_started = time(NULL);
		memcpy(c->btih, s->btih, sizeof(c->btih));
		c->piece = 0;
	}
	/* about a second of the rate at a time (a piece at least: p2p_session_verify_pieces) */
	c->a = a;
	c->first = c->piece;
	c->max_bytes = a->cfg->scrub_rate;
	c->next = c->first;
	c->checked = c->damaged = 0;
	c->read = 0;
	c->started_ms = uv_now(&a->loop);
	c->running = true;
	c->w.data = c;
	uv_queue_work(&a->loop, &c->w, step_work, step_done);
}

int agent_scrub_every_s(const struct agent *a)
{
	return a->cfg->scrub_every_s > 0 ? a->cfg->scrub_every_s : 7 * 86400;
}

json_t *agent_scrub_status(const struct agent *a)
{
	const struct agent_scrub *c = a->scrub;

	return json_pack("{s:I, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:O}", "rate", (json_int_t)a->cfg->scrub_rate,
			 "every", agent_scrub_every_s(a), "passes", (json_int_t)c->passes, "last_pass_at",
			 (json_int_t)c->last_pass_at, "pass_started", (json_int_t)c->pass_started, "bytes",
			 (json_int_t)c->bytes, "pieces", (json_int_t)c->pieces, "damaged", (json_int_t)c->damaged_total,
			 "found", c->found);
}
