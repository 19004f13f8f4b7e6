/*
 * ondemand-complete.c - a snapshot tracked on demand made whole for an instance that wants all of it
 * (routes-p2p.c asks, the instance waits on 503 and Retry-After): a child `hubmirror sync --local`
 * of it, COMPLETIONS_MAX at a time, one per snapshot, which fetches what no client asked for yet and
 * makes the snapshot's torrent; serve stopping ends them (their locks and partial files make that
 * safe).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "ondemand.h"
#include "routes-int.h"

#include "ondemand-int.h"

static void completion_closed(uv_handle_t *h)
{
	struct completion *c = h->data;

	free(c->spec);
	free(c);
}

static void on_completion_exit(uv_process_t *p, int64_t status, int sig)
{
	struct completion *c = p->data, **pp;

	for (pp = &c->od->completions; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (sig || status)
		log_warn("ondemand", "%s: the sync completing it ended with %s %lld; the next request tries again",
			 c->spec, sig ? "signal" : "status", (long long)(sig ? sig : status));
	else
		log_info("ondemand", "%s: complete, torrent made", c->spec);
	uv_close((uv_handle_t *)p, completion_closed);
}

/* The option and its value after args[n], when there is a value; the new count. */
static int add_option(char **args, int n, char *option, char *value)
{
	if (!value)
		return n;
	args[n++] = option;
	args[n++] = value;
	return n;
}

int mirror_ondemand_complete(struct mirror_routes *rt, const char *hub, const char *type, const char *name)
{
	struct mirror_ondemand *od = rt->ondemand;
	char *spec = mirror__od_spec_text(hub, type, name), *args[20];
	struct completion *c;
	uv_process_options_t o;
	uv_stdio_container_t io[3];
	int n = 0, r;

	for (c = od->completions; c; c = c->next, n++)
		if (!strcmp(c->spec, spec)) {
			free(spec);
			return 0;
		}
	if (n >= COMPLETIONS_MAX) {
		free(spec);
		return 1; /* the instance asks again (503) */
	}
	n = 0;
	if (!od->self_exe) {
		free(spec);
		return -1;
	}
	args[n++] = od->self_exe;
	args[n++] = "sync";
	args[n++] = "--local";
	args[n++] = "--wait";
	args[n++] = "--no-progress";
	args[n++] = "--data";
	args[n++] = od->data_dir;
	n = add_option(args, n, "--config", od->config_path);
	n = add_option(args, n, "--hf-upstream", od->hf_base);
	n = add_option(args, n, "--ms-upstream", od->ms_base);
	n = add_option(args, n, "--hf-token-file", od->hf_token_file);
	n = add_option(args, n, "--ms-token-file", od->ms_token_file);
	args[n++] = spec;
	args[n] = NULL;
	c = xcalloc(1, sizeof(*c));
	c->od = od;
	c->spec = spec;
	c->proc.data = c;
	memset(&o, 0, sizeof(o));
	io[0].flags = UV_IGNORE;
	io[1].flags = UV_INHERIT_FD;
	io[1].data.fd = 2; /* its report goes to our log stream */
	io[2].flags = UV_INHERIT_FD;
	io[2].data.fd = 2;
	o.file = od->self_exe;
	o.args = args;
	o.stdio = io;
	o.stdio_count = 3;
	o.exit_cb = on_completion_exit;
	r = uv_spawn(od->loop, &c->proc, &o);
	if (r) {
		log_warn("ondemand", "%s: cannot start the sync completing it: %s", spec, uv_strerror(r));
		uv_close((uv_handle_t *)&c->proc, completion_closed);
		return -1;
	}
	c->next = od->completions;
	od->completions = c;
	log_info("ondemand", "%s: an instance wants it whole: syncing it now (pid %d)", spec, c->proc.pid);
	return 0;
}

void mirror__od_completions_stop(struct mirror_ondemand *od)
{
	while (od->completions) {
		struct completion *c = od->completions;
		od->completions = c->next;
		uv_process_kill(&c->proc, SIGTERM); /* its locks and partial files make this safe */
		uv_close((uv_handle_t *)&c->proc, completion_closed);
	}
}
