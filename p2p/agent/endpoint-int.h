/*
 * endpoint-int.h - what the files of the agent's local hub endpoint share (endpoint.c: a request's
 * life, which requests are files, the snapshot and the body; endpoint-mirror.c: step 1, the mirror
 * asked, its answer kept and relayed; endpoint-tar.c: a registry mirror's tar layer). Nothing
 * outside p2p/agent/ includes it.
 */
#ifndef HM_P2P_AGENT_ENDPOINT_INT_H
#define HM_P2P_AGENT_ENDPOINT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent-int.h"
#include "hub/hub.h"
#include "hub/oci.h"

struct httpd_req;

#define READ_WAIT_S 600            /* a body waits this long for its next verified bytes */

/* One request to the endpoint, from its copy to its answer. */
struct agent_ep {
	struct agent *a;
	/* the request, copied */
	char *method, *target, *host, *auth, *inm, *range, *body, *ctype, *accept;
	size_t blen;
	bool xet_cas;                   /* a request to the CAS (a reconstruction): relayed with its Range */
	bool xet_info;                  /* the mirror answered resolve with Xet's file-info form */
	char *token;                    /* the bearer token of auth, for the snapshot calls */
	/* a file request: its repo, revision and path (NULL otherwise) */
	struct hub_spec spec;
	char *fpath;
	bool file;
	bool s3;                        /* an S3 request: its signed headers go to the mirror as they are */
	char **s3_headers;              /* "Name: value" lines of them, NULL-terminated */
	/* a registry request (oci.c): a manifest or a blob of oci_name, with its reference */
	enum agent_oci_kind oci;
	char *oci_name, *oci_ref;
	bool oci_layer;                 /* a blob that is a layer of a manifest passed: a file (layer) */
	bool ranged;                    /* a tar layer asked with a Range */
	bool tar_unchecked;             /* a tar layer streamed before its digest was checked */
	struct hub_oci_span sp;         /* a tar layer's range: its header's part, the file's, the zeros */
	struct agent_oci_layer layer;
	/* the mirror's answer */
	long status;
	json_t *headers;                /* {name: value} of passed[] */
	int64_t clen;                   /* its Content-Length (-1 none): a HEAD's says the body's size */
	char *answer;
	size_t alen;
	bool offline;                   /* the mirror did not answer: from the kept copy */
	/* step 2 */
	json_t *meta;
	char *tor;
	size_t tlen;
	char *why;
	/* step 3 and the body */
	char btih[41];
	int index;
	int64_t size, off, len;
	int fd;
	int64_t waited_since;           /* when the body last got no byte */
};

void agent_ep_free(struct agent_ep *e);

/* ---- step 1 (endpoint-mirror.c) ---- */

/* On a worker (httpd_defer): ask the mirror e's request, its answer into e (kept, or the kept copy
 * when the mirror cannot be reached). */
void agent_ep_ask_mirror(void *job);
/* The mirror's answer in e, relayed to r as it came. */
void agent_ep_relay(struct agent_ep *e, struct httpd_req *r);
/* An error answer of status, msg its message. */
void agent_ep_fail(struct httpd_req *r, int status, const char *msg);
/* The headers of the mirror's answer ({name: value}) onto r (Content-Type too when with_type). */
void agent_ep_set_headers(struct httpd_req *r, json_t *headers, bool with_type);

/* ---- steps 2 and 3, the body (endpoint.c) ---- */

/* On a worker: wait until the first bytes of the range are verified, then open the cache file. */
void agent_ep_first_bytes(void *job);
/* The gate of the body: how many bytes from off are verified now (see httpd_respond_file_gated). */
int64_t agent_ep_gate(void *ud, int64_t off, int64_t len);
/* A body's start, on the loop once agent_ep_first_bytes is done: the cache file's fd, e's no more; -1
 * when there is nothing to send (r gone, or the bytes did not come: answered status), e freed then. */
int agent_ep_body_fd(struct agent_ep *e, struct httpd_req *r, int status);
/* The gate's release: e freed (a tar layer streamed unchecked checked after, agent_ep_tar_check_later). */
void agent_ep_gate_release(void *ud);

/* ---- a registry mirror's tar layer (endpoint-tar.c) ---- */

/* Is the file at path of s the content digest ("sha256:...") names (a raw layer's digest)? */
bool agent_ep_raw_layer_is(const struct agent_snap *s, const char *path, const char *digest);
/* A tar layer streamed before its digest was checked: checked now on the threadpool, if the cache
 * holds its file whole and no other check runs. */
void agent_ep_tar_check_later(struct agent_ep *e);
/* On the loop: answer e's tar layer to r (header, the file's verified bytes, zeros). */
void agent_ep_start_tar(struct agent_ep *e, struct httpd_req *r);

#endif
