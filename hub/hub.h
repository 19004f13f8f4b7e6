/*
 * hub.h - repository specs (hf:ORG/NAME, ms:datasets/ORG/NAME@REV): parsing, formatting and the
 * hubs' naming rules. The upstream clients are in upstream.h and http.h, the HTTP server in httpd.h.
 */
#ifndef HM_HUB_H
#define HM_HUB_H

#include <stddef.h>

enum hub_kind { HUB_HF, HUB_MS };
enum hub_repo_type { HUB_MODEL, HUB_DATASET };

/* A repository named on the command line or in a list: hf:ORG/NAME, hf:datasets/ORG/NAME, ms:...,
 * each optionally followed by @REVISION. */
struct hub_spec {
	enum hub_kind hub;
	enum hub_repo_type type;
	char *name;      /* owned: "org/name" (or a bare legacy "name" on hf) */
	char *revision;  /* owned, NULL when none was given */
};

/*
 * Parse s into *out. Names follow the hubs' rules: parts of [A-Za-z0-9._-], 1-96 characters, not
 * starting or ending with '.' or '-', no "--" or ".."; ModelScope needs an owner. A revision is
 * 1-255 printable characters without "..", spaces or a leading '/'. On success the caller releases
 * *out with hub_spec_release(); on failure *out is untouched and HM_ERR_BAD_SPEC is returned.
 */
int hub_spec_parse(const char *s, struct hub_spec *out);
void hub_spec_release(struct hub_spec *spec);

/* "hf:datasets/org/name" (with "@rev" if with_rev and a revision is set). Caller frees. */
char *hub_spec_format(const struct hub_spec *spec, int with_rev);

/* "hf"/"ms", "model"/"dataset"; and the reverse, returning 0 or HM_ERR_BAD_SPEC. */
const char *hub_kind_name(enum hub_kind k);
const char *hub_type_name(enum hub_repo_type t);
int hub_kind_parse(const char *s, enum hub_kind *out);
int hub_type_parse(const char *s, enum hub_repo_type *out);

/* The revision a repo follows when none is given: "main" on Hugging Face, "master" on ModelScope. */
const char *hub_default_revision(enum hub_kind k);

/* Validate a repo name or a revision on its own (the rules of hub_spec_parse). 0 or HM_ERR_BAD_SPEC. */
int hub_check_name(enum hub_kind k, const char *name);
int hub_check_revision(const char *rev);

#endif
