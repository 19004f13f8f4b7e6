/*
 * http.h - upstream HTTP on libcurl multi, driven by a libuv loop.
 *
 * One struct hub_http per loop. A request runs until its on_done callback; between, the layer
 * - follows redirects itself (relative and cross-host), sending the bearer token only to the host of
 *   the first URL, never to another host (a CDN), and never forwarding any client header;
 * - retries what happened before any body byte reached the caller: connection errors and resets,
 *   408/500/502/503/504 with exponential backoff and jitter, and 429 after Retry-After (or the
 *   RateLimit header's t=), each within its own budget of tries;
 * - reports a failure in the middle of a body to the caller, who knows how to resume (Range).
 * Tokens are never logged: debug logs show URLs without query strings and no headers.
 */
#ifndef HM_HUB_HTTP_H
#define HM_HUB_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct hub_http;
struct hub_http_req;

struct hub_http_config {
	const char *user_agent;     /* borrowed; NULL: "hubmirror/VERSION" */
	int max_tries;              /* transport errors and 5xx; 0: 6 */
	int max_ratelimit_tries;    /* 429 answers; 0: 30 */
	double backoff_base_s;      /* first backoff; 0: 0.5 s (doubling, with jitter) */
	double backoff_max_s;       /* 0: 30 s */
	double retry_after_max_s;   /* cap on a server's Retry-After; 0: 300 s */
	long connect_timeout_ms;    /* 0: 10 s */
	long stall_timeout_s;       /* abort when no byte arrives for this long; 0: 60 s */
	int max_redirects;          /* 0: 10 */
};

/* What the final answer said (after redirects). Strings owned by the request; valid during callbacks. */
struct hub_http_resp {
	long status;
	int64_t content_length;     /* -1 when absent */
	const char *content_range;  /* NULL when absent */
	const char *content_type;
	const char *etag;
	const char *link;           /* Link header (pagination) */
	const char *error_code;     /* X-Error-Code */
	const char *error_message;  /* X-Error-Message */
	const char *repo_commit;    /* X-Repo-Commit */
	const char *mirror_tier;    /* X-Hubmirror-Tier: the upstream is a hubmirror of this tier */
	const char *origin_checked; /* X-Hubmirror-Origin-Checked: when the Hub was last asked (unix s) */
	const char *xet_hash;       /* X-Xet-Hash as the first hop along the redirects that stated one
				     * said it (as huggingface_hub reads it: the Hub's resolve, not its CDN);
				     * unchecked text, NULL when none did */
	const char *url;            /* the URL that answered (after redirects) */
	const char *transport_error; /* libcurl's words when the transfer itself failed, else NULL */
	int redirects;
	int tries;                  /* attempts made, 1 when the first one answered */
};

struct hub_http_req_opts {
	const char *url;            /* borrowed for the call */
	const char *token;          /* borrowed for the call; NULL: anonymous */
	const char *token_cookie;   /* also send the token as this cookie (ModelScope: "m_session_id"),
				     * to the first host only like the header; a static string; NULL: none */
	const char *if_none_match;  /* borrowed; NULL: none */
	const char *header;         /* one more request header, "Name: value", borrowed; NULL: none */
	int64_t range_start;        /* > 0: ask for bytes=range_start- */
	int64_t range_len;          /* > 0: ask for exactly bytes=range_start-(range_start+range_len-1)
				     * (range_start may then be 0) */
	bool head;                  /* HEAD instead of GET */
	/* Body handling: either buffer it (max_body bytes, then fail with -EFBIG) and get it in on_done,
	 * or stream it through on_body. */
	size_t max_body;
	/* Called once, when the final status is known and before any body byte. Returning non-zero
	 * aborts the request (on_done gets that code). May be NULL. on_response and on_body run inside
	 * libcurl: they must not start or cancel requests (return non-zero instead). */
	int (*on_response)(void *ud, const struct hub_http_resp *resp);
	/* Streamed body (when not NULL; then nothing is buffered). Non-zero aborts with that code. */
	int (*on_body)(void *ud, const char *data, size_t n);
	/*
	 * Always called exactly once, from the loop, never from inside hub_http_request(). result is 0
	 * when an answer arrived whatever its status (check resp->status), or a negative code: -ECANCELED,
	 * -ETIMEDOUT, HM_ERR_CURL (transport), -EFBIG, or a code returned by on_response/on_body.
	 * body/body_len hold the buffered body (not with on_body). The request is freed after it returns.
	 */
	void (*on_done)(void *ud, int result, const struct hub_http_resp *resp, const char *body,
			size_t body_len);
	void *ud;
};

/* Create the HTTP layer on loop. config may be NULL (defaults). Returns 0 or HM_ERR_CURL; *out owned. */
int hub_http_new(uv_loop_t *loop, const struct hub_http_config *config, struct hub_http **out);

/* Start a request. Returns the request (owned by the layer until on_done), or NULL with nothing
 * started when opts are invalid. */
struct hub_http_req *hub_http_request(struct hub_http *h, const struct hub_http_req_opts *opts);

/* Cancel: on_done runs soon with -ECANCELED (unless it already ran). */
void hub_http_cancel(struct hub_http_req *req);

/* Number of requests started and not yet done. */
size_t hub_http_active(const struct hub_http *h);

/* Stats since creation: attempts sent (including retries and redirects). */
uint64_t hub_http_attempts(const struct hub_http *h);
/* Seconds left of the longest wait upstream asked for (429 with Retry-After), 0 when none: a progress
 * line says "waiting" instead of standing still. */
double hub_http_ratelimit_wait(const struct hub_http *h);

/* Free the layer once no request is active (close its handles; run the loop after to finish).
 * Accepts NULL and *h == NULL. */
void hub_http_free(struct hub_http **h);

/* Percent-encode s for one URL path segment (encodes '/' too) or, with keep_slash, for a path.
 * Caller frees. */
char *hub_url_escape(const char *s, bool keep_slash);

/* Parse an RFC 8288 Link header and return the URL of rel="next" (caller frees), or NULL. */
char *hub_link_next(const char *link);

/*
 * A blocking GET for command-line tools (no loop needed): at most max bytes of body into *body
 * (malloc'd, NUL-terminated, caller frees), the status in *status. token (NULL: none) goes as a
 * bearer token; redirects are not followed. Returns 0 when an answer came, whatever its status;
 * HM_ERR_CURL with *errmsg (malloc'd) when the transfer failed; -EFBIG past max.
 */
int hub_http_get_blocking(const char *url, const char *token, size_t max, char **body, size_t *len, long *status,
			  char **errmsg);

/* The same with more to say: a POST of a JSON body (body non-NULL), over a unix socket (the URL's
 * host is then only a name), with its own overall timeout (0: 120 s). A refused or missing unix
 * socket is -ECONNREFUSED (with *errmsg), so a caller can tell "nobody listens" from other failures. */
struct hub_http_call {
	const char *url;
	const char *token;          /* NULL: none */
	const char *unix_socket;    /* NULL: TCP to the URL's host */
	const char *body;           /* NULL: GET; else POST with Content-Type application/json */
	size_t max;                 /* the most body bytes taken */
	long timeout_s;
	long connect_timeout_ms;    /* 0: 10 s */
	long stall_s;               /* fail when no byte came for this long (a server that accepts and
				     * never answers); 0: only timeout_s bounds the wait */
	const atomic_bool *cancel;  /* when it turns true the transfer ends within a second; may be NULL */
	/* for a proxy (the agent's local endpoint): */
	const char *method;         /* "HEAD", "POST", ...; NULL: GET, or POST with a body */
	size_t body_len;            /* 0: strlen(body) */
	const char *body_type;      /* NULL: application/json */
	const char *const *headers; /* more "Name: value" lines, NULL-terminated; may be NULL */
	/* each header of the final answer (name as sent, value without the line end) */
	void (*on_header)(void *ud, const char *name, const char *value);
	void *ud;
};
int hub_http_call_blocking(const struct hub_http_call *c, char **body, size_t *len, long *status, char **errmsg);

#endif
