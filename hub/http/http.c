/*
 * http.c - libcurl multi on a libuv loop (after curl's docs/examples/multi-uv.c), with our redirect,
 * token and retry rules on top. See http.h for the contract.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/str.h"
#include "base/xmalloc.h"
#include "hubmirror-config.h"
#include "http-int.h"
#include "http.h"

struct hub_http {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;
	struct hub_http_config cfg;
	char *user_agent;
	size_t active;
	uint64_t attempts;
	uint64_t rng;
	uint64_t ratelimit_until;     /* uv_now of the latest end of a wait upstream asked for (429) */
	struct sock_ctx *socks;
};

struct sock_ctx {
	uv_poll_t poll;
	curl_socket_t fd;
	struct hub_http *h;
	struct sock_ctx *prev, *next;  /* open sockets, so hub_http_free can close what curl leaves */
};

enum hdr { H_CONTENT_RANGE, H_CONTENT_TYPE, H_ETAG, H_LINK, H_ERROR_CODE, H_ERROR_MESSAGE,
	   H_REPO_COMMIT, H_LOCATION, H_RETRY_AFTER, H_RATELIMIT, H_MIRROR_TIER, H_ORIGIN_CHECKED, H_COUNT };

static const char *const hdr_names[H_COUNT] = {
	"content-range", "content-type", "etag", "link", "x-error-code", "x-error-message",
	"x-repo-commit", "location", "retry-after", "ratelimit", "x-hubmirror-tier", "x-hubmirror-origin-checked",
};

struct hub_http_req {
	struct hub_http *h;
	struct hub_http_req_opts o;   /* strings below are our copies */
	char *url;                    /* current URL (changes on redirect) */
	char *origin;                 /* scheme://host:port of the first URL: the only token recipient */
	char *token;
	char *inm;
	char *header;
	CURL *easy;
	struct curl_slist *headers;
	uv_timer_t timer;             /* retry backoff, and deferred completion after cancel */
	bool in_multi;
	bool cancelled;
	bool completed;
	int tries;                    /* attempts that failed in a retryable way (transport, 5xx) */
	int rl_tries;                 /* 429 answers */
	int redirects;
	char *xet_hash;               /* X-Xet-Hash: the first hop that stated one (the Hub's resolve
				       * states it on its redirect to the CDN, which does not) */
	/* per attempt */
	long status;
	bool headers_done;
	bool delivering;              /* on_response ran: the body belongs to the caller */
	int64_t content_length;
	char *hdr[H_COUNT];
	struct buf body;
	int abort_code;
	char errbuf[CURL_ERROR_SIZE];
};

static uint64_t next_rand(struct hub_http *h)
{
	/* xorshift64*: jitter only, nothing secret */
	h->rng ^= h->rng >> 12;
	h->rng ^= h->rng << 25;
	h->rng ^= h->rng >> 27;
	return h->rng * 0x2545F4914F6CDD1DULL;
}

/* ---- requests -------------------------------------------------------------------------------- */

static void attempt_reset(struct hub_http_req *r)
{
	r->status = 0;
	r->headers_done = false;
	r->delivering = false;
	r->content_length = -1;
	for (int i = 0; i < H_COUNT; i++)
		FREE_AND_NULL(&r->hdr[i]);
	buf_reset(&r->body);
}

static void fill_resp(struct hub_http_req *r, struct hub_http_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->status = r->status;
	resp->content_length = r->content_length;
	resp->content_range = r->hdr[H_CONTENT_RANGE];
	resp->content_type = r->hdr[H_CONTENT_TYPE];
	resp->etag = r->hdr[H_ETAG];
	resp->link = r->hdr[H_LINK];
	resp->error_code = r->hdr[H_ERROR_CODE];
	resp->error_message = r->hdr[H_ERROR_MESSAGE];
	resp->repo_commit = r->hdr[H_REPO_COMMIT];
	resp->mirror_tier = r->hdr[H_MIRROR_TIER];
	resp->origin_checked = r->hdr[H_ORIGIN_CHECKED];
	resp->xet_hash = r->xet_hash;
	resp->url = r->url;
	resp->transport_error = r->errbuf[0] ? r->errbuf : NULL;
	resp->redirects = r->redirects;
	resp->tries = r->tries + r->rl_tries + 1;
}

static bool status_retryable(long s)
{
	return s == 408 || s == 500 || s == 502 || s == 503 || s == 504;
}

static bool budget_left(struct hub_http_req *r, long status)
{
	if (status == 429)
		return r->rl_tries + 1 < r->h->cfg.max_ratelimit_tries;
	return r->tries + 1 < r->h->cfg.max_tries;
}

static bool is_redirect(long s)
{
	return s == 301 || s == 302 || s == 303 || s == 307 || s == 308;
}

/* The answer of this attempt is the caller's (not a redirect or a retry we will make). */
static bool attempt_is_final(struct hub_http_req *r)
{
	if (is_redirect(r->status) && r->hdr[H_LOCATION])
		return false;
	if ((r->status == 429 || status_retryable(r->status)) && budget_left(r, r->status))
		return false;
	return true;
}

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
	struct hub_http_req *r = ud;
	size_t len = size * n, klen;
	const char *colon;

	if (len >= 5 && skip_prefix(line, "HTTP/")) {
		attempt_reset(r); /* a new status line: 1xx interim answers come before the real one */
		return len;
	}
	if (len <= 2 && (line[0] == '\r' || line[0] == '\n')) {
		long status = 0;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status < 200)
			return len; /* end of an interim answer */
		r->status = status;
		r->headers_done = true;
		if (attempt_is_final(r)) {
			struct hub_http_resp resp;
			fill_resp(r, &resp);
			r->delivering = true;
			if (r->o.on_response) {
				int e = r->o.on_response(r->o.ud, &resp);
				if (e) {
					r->abort_code = e;
					return 0; /* abort the transfer */
				}
			}
		}
		return len;
	}
	colon = memchr(line, ':', len);
	if (!colon)
		return len;
	klen = (size_t)(colon - line);
	for (int i = 0; i < H_COUNT; i++) {
		if (strlen(hdr_names[i]) == klen && !strncasecmp(line, hdr_names[i], klen)) {
			const char *v = colon + 1, *e = line + len;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
				e--;
			free(r->hdr[i]);
			r->hdr[i] = xstrndup(v, (size_t)(e - v));
			return len;
		}
	}
	if (klen == 10 && !strncasecmp(line, "x-xet-hash", 10) && !r->xet_hash) {
		const char *v = colon + 1, *e = line + len;
		while (v < e && (*v == ' ' || *v == '\t'))
			v++;
		while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
			e--;
		r->xet_hash = xstrndup(v, (size_t)(e - v));
		return len;
	}
	if (klen == 14 && !strncasecmp(line, "content-length", 14))
		r->content_length = strtoll(colon + 1, NULL, 10);
	return len;
}

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
	struct hub_http_req *r = ud;
	size_t len = size * n;

	if (!r->delivering)
		return len; /* the body of a redirect or of an answer we retry: drop it */
	if (r->o.on_body) {
		int e = r->o.on_body(r->o.ud, data, len);
		if (e) {
			r->abort_code = e;
			return CURL_WRITEFUNC_ERROR;
		}
		return len;
	}
	if (r->body.len + len > r->o.max_body) {
		r->abort_code = -EFBIG;
		return CURL_WRITEFUNC_ERROR;
	}
	buf_add(&r->body, data, len);
	return len;
}

static void req_closed(uv_handle_t *handle)
{
	struct hub_http_req *r = handle->data;

	for (int i = 0; i < H_COUNT; i++)
		free(r->hdr[i]);
	buf_release(&r->body);
	free(r->xet_hash);
	free(r->url);
	free(r->origin);
	free(r->token);
	free(r->inm);
	free(r->header);
	free(r);
}

static void req_detach_easy(struct hub_http_req *r)
{
	if (r->in_multi) {
		curl_multi_remove_handle(r->h->multi, r->easy);
		r->in_multi = false;
	}
}

/* Deliver the result and free the request (in the timer's close callback). */
static void req_complete(struct hub_http_req *r, int result)
{
	struct hub_http_resp resp;

	if (r->completed)
		return;
	r->completed = true;
	req_detach_easy(r);
	uv_timer_stop(&r->timer);
	fill_resp(r, &resp);
	r->h->active--;
	r->o.on_done(r->o.ud, result, &resp, r->o.on_body ? NULL : r->body.data,
		     r->o.on_body ? 0 : r->body.len);
	curl_slist_free_all(r->headers);
	r->headers = NULL;
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
	uv_close((uv_handle_t *)&r->timer, req_closed);
}

static int req_start_attempt(struct hub_http_req *r)
{
	struct hub_http *h = r->h;
	char *origin = http__url_origin(r->url), *logurl;
	bool same_origin = origin && !strcmp(origin, r->origin);

	free(origin);
	attempt_reset(r);
	r->errbuf[0] = '\0';
	curl_slist_free_all(r->headers);
	r->headers = NULL;
	/* The token goes to the first host only; a CDN or any other host never sees it. */
	if (r->token && same_origin) {
		char *a = xasprintf("Authorization: Bearer %s", r->token);
		r->headers = curl_slist_append(r->headers, a);
		free(a);
		if (r->o.token_cookie) {
			a = xasprintf("Cookie: %s=%s", r->o.token_cookie, r->token);
			r->headers = curl_slist_append(r->headers, a);
			free(a);
		}
	}
	if (r->inm) {
		char *a = xasprintf("If-None-Match: %s", r->inm);
		r->headers = curl_slist_append(r->headers, a);
		free(a);
	}
	if (r->header)
		r->headers = curl_slist_append(r->headers, r->header);
	r->headers = curl_slist_append(r->headers, "Accept: */*");
	r->headers = curl_slist_append(r->headers, "Expect:");
	curl_easy_setopt(r->easy, CURLOPT_URL, r->url);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	if (r->o.range_len > 0) {
		char range[48];
		snprintf(range, sizeof(range), "%lld-%lld", (long long)r->o.range_start,
			 (long long)(r->o.range_start + r->o.range_len - 1));
		curl_easy_setopt(r->easy, CURLOPT_RANGE, range);
	} else if (r->o.range_start > 0) {
		char range[32];
		snprintf(range, sizeof(range), "%lld-", (long long)r->o.range_start);
		curl_easy_setopt(r->easy, CURLOPT_RANGE, range);
	}
	h->attempts++;
	logurl = http__url_for_log(r->url);
	log_debug("http", "%s %s%s", r->o.head ? "HEAD" : "GET", logurl, same_origin ? "" : " (no token: other host)");
	free(logurl);
	if (curl_multi_add_handle(h->multi, r->easy) != CURLM_OK)
		return HM_ERR_CURL;
	r->in_multi = true;
	return 0;
}

static void on_retry_timer(uv_timer_t *t)
{
	struct hub_http_req *r = t->data;

	if (r->cancelled) {
		req_complete(r, -ECANCELED);
		return;
	}
	if (req_start_attempt(r))
		req_complete(r, HM_ERR_CURL);
}

static double parse_retry_after(struct hub_http_req *r)
{
	const char *ra = r->hdr[H_RETRY_AFTER], *rl = r->hdr[H_RATELIMIT];
	double s = -1;

	if (ra) {
		char *end;
		double v = strtod(ra, &end);
		if (end != ra && v >= 0) {
			s = v;
		} else {
			time_t when = curl_getdate(ra, NULL);
			if (when > 0)
				s = (double)(when - time(NULL));
		}
	}
	if (s < 0 && rl) { /* RateLimit: "api";r=0;t=55 */
		const char *t = strstr(rl, ";t=");
		if (t)
			s = strtod(t + 3, NULL);
	}
	if (s < 0)
		s = 1;
	if (s > r->h->cfg.retry_after_max_s)
		s = r->h->cfg.retry_after_max_s;
	return s;
}

static void schedule_retry(struct hub_http_req *r, double delay_s)
{
	uint64_t ms = (uint64_t)(delay_s * 1000.0);

	req_detach_easy(r);
	uv_timer_start(&r->timer, on_retry_timer, ms ? ms : 1, 0);
}

static double backoff(struct hub_http_req *r)
{
	double d = r->h->cfg.backoff_base_s;

	for (int i = 1; i < r->tries && d < r->h->cfg.backoff_max_s; i++)
		d *= 2;
	if (d > r->h->cfg.backoff_max_s)
		d = r->h->cfg.backoff_max_s;
	/* jitter: somewhere in [d/2, d] so a fleet of retries does not arrive in step */
	return d / 2 + (d / 2) * (double)(next_rand(r->h) % 1000) / 1000.0;
}

/* One attempt ended (curl said DONE). Decide: complete, redirect, or retry. */
static void attempt_done(struct hub_http_req *r, CURLcode cc)
{
	if (r->cancelled) {
		req_complete(r, -ECANCELED);
		return;
	}
	if (r->abort_code) {
		req_complete(r, r->abort_code);
		return;
	}
	if (cc != CURLE_OK) {
		int code = cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : HM_ERR_CURL;
		/* A streamed body that has started is the caller's to resume; anything else we retry. */
		bool caller_owns = r->delivering && r->o.on_body;
		if (cc == CURLE_PEER_FAILED_VERIFICATION) {
			/* a certificate no CA here vouches for: asking again changes nothing; say the way out */
			size_t n = strlen(r->errbuf);
			snprintf(r->errbuf + n, sizeof(r->errbuf) - n,
				 "%s(a private CA? point HUBMIRROR_CA_BUNDLE at its PEM "
				 "certificate: docs/operations.md)",
				 n ? " " : "");
			req_complete(r, code);
			return;
		}
		if (!caller_owns && r->tries + 1 < r->h->cfg.max_tries) {
			r->tries++;
			log_debug("http", "attempt failed (%s), retry %d", curl_easy_strerror(cc), r->tries);
			schedule_retry(r, backoff(r));
			return;
		}
		req_complete(r, code);
		return;
	}
	if (!r->headers_done) {
		req_complete(r, HM_ERR_HTTP);
		return;
	}
	if (is_redirect(r->status) && r->hdr[H_LOCATION]) {
		char *next = http__url_resolve(r->url, r->hdr[H_LOCATION]),
		     *origin = next ? http__url_origin(next) : NULL;
		if (!next || !origin || ++r->redirects > r->h->cfg.max_redirects) {
			free(next);
			free(origin);
			req_complete(r, HM_ERR_HTTP);
			return;
		}
		free(origin);
		free(r->url);
		r->url = next;
		req_detach_easy(r);
		if (req_start_attempt(r))
			req_complete(r, HM_ERR_CURL);
		return;
	}
	if (!r->delivering) { /* 429 or 5xx with budget left */
		if (r->status == 429) {
			double wait = parse_retry_after(r);
			uint64_t until = uv_now(r->h->loop) + (uint64_t)(wait * 1000.0);
			r->rl_tries++;
			if (until > r->h->ratelimit_until)
				r->h->ratelimit_until = until;
			schedule_retry(r, wait);
		} else {
			r->tries++;
			schedule_retry(r, backoff(r));
		}
		return;
	}
	req_complete(r, 0);
}

static void check_multi_info(struct hub_http *h)
{
	CURLMsg *msg;
	int pending;

	while ((msg = curl_multi_info_read(h->multi, &pending))) {
		struct hub_http_req *r = NULL;
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		attempt_done(r, msg->data.result);
	}
}

/* The CAs an operator set up for hubmirror's own clients (a mirror with a certificate of the site's
 * CA; docs/operations.md): $HUBMIRROR_CA_BUNDLE, else $CURL_CA_BUNDLE, else $SSL_CERT_FILE (a PEM
 * file), and $SSL_CERT_DIR (a hashed folder). Without them, the system's store. */
void http__trust_cas(CURL *e)
{
	const char *f = getenv("HUBMIRROR_CA_BUNDLE"), *d = getenv("SSL_CERT_DIR");

	if (!f || !*f)
		f = getenv("CURL_CA_BUNDLE");
	if (!f || !*f)
		f = getenv("SSL_CERT_FILE");
	if (f && *f)
		curl_easy_setopt(e, CURLOPT_CAINFO, f);
	if (d && *d)
		curl_easy_setopt(e, CURLOPT_CAPATH, d);
}

struct hub_http_req *hub_http_request(struct hub_http *h, const struct hub_http_req_opts *opts)
{
	struct hub_http_req *r;

	if (!opts->url || !opts->on_done || (!opts->on_body && !opts->max_body && !opts->head))
		return NULL;
	r = xcalloc(1, sizeof(*r));
	r->origin = http__url_origin(opts->url);
	if (!r->origin) {
		free(r);
		return NULL;
	}
	r->h = h;
	r->o = *opts;
	r->url = xstrdup(opts->url);
	r->token = opts->token && *opts->token ? xstrdup(opts->token) : NULL;
	r->inm = opts->if_none_match ? xstrdup(opts->if_none_match) : NULL;
	r->header = opts->header ? xstrdup(opts->header) : NULL;
	r->o.header = NULL;
	r->o.url = NULL;
	r->o.token = NULL;
	r->o.if_none_match = NULL;
	buf_init(&r->body);
	r->content_length = -1;
	uv_timer_init(h->loop, &r->timer);
	r->timer.data = r;

	r->easy = curl_easy_init();
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_USERAGENT, h->user_agent);
	curl_easy_setopt(r->easy, CURLOPT_FOLLOWLOCATION, 0L); /* we follow, with our token rules */
	curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, h->cfg.connect_timeout_ms);
	curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(r->easy, CURLOPT_LOW_SPEED_TIME, h->cfg.stall_timeout_s);
	curl_easy_setopt(r->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	http__trust_cas(r->easy);
	if (opts->head)
		curl_easy_setopt(r->easy, CURLOPT_NOBODY, 1L);
	if (!opts->on_body)
		curl_easy_setopt(r->easy, CURLOPT_ACCEPT_ENCODING, ""); /* JSON may come compressed */
	if (opts->on_body)
		curl_easy_setopt(r->easy, CURLOPT_BUFFERSIZE, 256L * 1024);
	h->active++;
	if (req_start_attempt(r)) {
		/* cannot even start: finish on the loop, never inside this call */
		r->cancelled = true;
		uv_timer_start(&r->timer, on_retry_timer, 0, 0);
	}
	return r;
}

void hub_http_cancel(struct hub_http_req *r)
{
	if (!r || r->completed || r->cancelled)
		return;
	r->cancelled = true;
	req_detach_easy(r);
	uv_timer_start(&r->timer, on_retry_timer, 0, 0);
}

size_t hub_http_active(const struct hub_http *h)
{
	return h->active;
}

double hub_http_ratelimit_wait(const struct hub_http *h)
{
	uint64_t now = uv_now(h->loop);

	return h->ratelimit_until > now ? (double)(h->ratelimit_until - now) / 1000.0 : 0;
}

uint64_t hub_http_attempts(const struct hub_http *h)
{
	return h->attempts;
}

/* ---- curl <-> libuv glue --------------------------------------------------------------------- */

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock_ctx *c = p->data;
	int flags = 0, running;

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (!status && (events & UV_READABLE))
		flags |= CURL_CSELECT_IN;
	if (!status && (events & UV_WRITABLE))
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(c->h->multi, c->fd, flags, &running);
	check_multi_info(c->h);
}

static void on_timeout(uv_timer_t *t)
{
	struct hub_http *h = t->data;
	int running;

	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_multi_info(h);
}

static int start_timeout(CURLM *multi, long timeout_ms, void *ud)
{
	struct hub_http *h = ud;

	if (timeout_ms < 0)
		uv_timer_stop(&h->timer);
	else
		uv_timer_start(&h->timer, on_timeout, timeout_ms ? (uint64_t)timeout_ms : 0, 0);
	return 0;
}

static void sock_closed(uv_handle_t *handle)
{
	free(handle->data);
}

/* Unlink and close one socket context (freed in the close callback). */
static void sock_forget(struct hub_http *h, struct sock_ctx *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		h->socks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	uv_poll_stop(&c->poll);
	uv_close((uv_handle_t *)&c->poll, sock_closed);
}

static int handle_socket(CURL *easy, curl_socket_t s, int action, void *ud, void *socketp)
{
	struct hub_http *h = ud;
	struct sock_ctx *c = socketp;
	int events = 0;

	switch (action) {
	case CURL_POLL_IN:
	case CURL_POLL_OUT:
	case CURL_POLL_INOUT:
		if (!c) {
			c = xcalloc(1, sizeof(*c));
			c->fd = s;
			c->h = h;
			if (uv_poll_init_socket(h->loop, &c->poll, s)) {
				free(c);
				return -1;
			}
			c->poll.data = c;
			c->next = h->socks;
			if (h->socks)
				h->socks->prev = c;
			h->socks = c;
			curl_multi_assign(h->multi, s, c);
		}
		if (action != CURL_POLL_OUT)
			events |= UV_READABLE;
		if (action != CURL_POLL_IN)
			events |= UV_WRITABLE;
		uv_poll_start(&c->poll, events, on_poll);
		break;
	case CURL_POLL_REMOVE:
		if (c) {
			sock_forget(h, c);
			curl_multi_assign(h->multi, s, NULL);
		}
		break;
	default:
		break;
	}
	return 0;
}

int hub_http_new(uv_loop_t *loop, const struct hub_http_config *config, struct hub_http **out)
{
	struct hub_http *h = xcalloc(1, sizeof(*h));

	if (config)
		h->cfg = *config;
	if (!h->cfg.max_tries)
		h->cfg.max_tries = 6;
	if (!h->cfg.max_ratelimit_tries)
		h->cfg.max_ratelimit_tries = 30;
	if (h->cfg.backoff_base_s <= 0)
		h->cfg.backoff_base_s = 0.5;
	if (h->cfg.backoff_max_s <= 0)
		h->cfg.backoff_max_s = 30;
	if (h->cfg.retry_after_max_s <= 0)
		h->cfg.retry_after_max_s = 300;
	if (!h->cfg.connect_timeout_ms)
		h->cfg.connect_timeout_ms = 10000;
	if (!h->cfg.stall_timeout_s)
		h->cfg.stall_timeout_s = 60;
	if (!h->cfg.max_redirects)
		h->cfg.max_redirects = 10;
	h->user_agent = config && config->user_agent ? xstrdup(config->user_agent)
						      : xstrdup("hubmirror/" HUBMIRROR_VERSION);
	h->cfg.user_agent = NULL;
	h->loop = loop;
	h->rng = uv_hrtime() | 1;
	h->multi = curl_multi_init();
	if (!h->multi) {
		free(h->user_agent);
		free(h);
		return HM_ERR_CURL;
	}
	uv_timer_init(loop, &h->timer);
	h->timer.data = h;
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, handle_socket);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, start_timeout);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 16L);
	*out = h;
	return 0;
}

static void http_closed(uv_handle_t *handle)
{
	free(handle->data);
}

void hub_http_free(struct hub_http **hp)
{
	struct hub_http *h = hp ? *hp : NULL;

	if (!h)
		return;
	curl_multi_cleanup(h->multi);
	while (h->socks) /* sockets curl closed without telling us */
		sock_forget(h, h->socks);
	free(h->user_agent);
	uv_close((uv_handle_t *)&h->timer, http_closed);
	*hp = NULL;
}
