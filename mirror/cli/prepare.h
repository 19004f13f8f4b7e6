/*
 * prepare.h - what serve and sync are told (the environment, the configuration file, the command
 * line), made and checked apart from running them, so that `config check` runs the same checks.
 */
#ifndef HM_CLI_PREPARE_H
#define HM_CLI_PREPARE_H

#include <stdbool.h>

#include "config.h"
#include "mirror/serve/serve.h"
#include "mirror/sync.h"

struct cli_serve_prep {
	struct mirror_serve_config cfg;
	struct config conf;
	const char *access;         /* --access-log */
	const char *admin_token_file;
	char *admin_token;          /* read from it (owned) */
	const char *hf_token_file, *ms_token_file;  /* on demand: upstream tokens */
	char *hf_token, *ms_token;  /* read from them (owned) */
	const char *config;
	int auth, max_connections;
	const char *local_quota_arg; /* --local-quota NS=SIZE,... */
	char *local_quota;           /* ... in bytes, for cfg.local_quota (owned) */
};

/* Fill p from the defaults, the configuration file and argv, and check the result. Returns CLI_OK
 * (then cli_serve_prep_release(p) once cfg is done with: it borrows p's strings), or CLI_USAGE /
 * CLI_FAILED after saying why (nothing to release). */
int cli_serve_prepare(int argc, char **argv, struct cli_serve_prep *p);
/* Whether serve's HTTP address and its BitTorrent seed's are one port (on the same host, or either
 * on every address): the seed would quietly take another. */
bool cli_ports_clash(const char *listen, const char *p2p_listen);
/* serve's address (p2p: its seed's) when neither the command line nor the file names one: the
 * environment's ($HUBMIRROR_LISTEN, $HUBMIRROR_P2P_LISTEN), else 0.0.0.0:8080 and 0.0.0.0:6881. */
const char *cli_listen_default(bool p2p);
/* What p owns: the configuration's strings and the tokens read. */
void cli_serve_prep_release(struct cli_serve_prep *p);

struct cli_sync_opts {
	struct mirror_sync_config cfg;
	const char *dir, *config, *hf_token_file, *ms_token_file;
	const char *mirror;         /* --mirror URL: ask that mirror's serve to sync (its operator API) */
	bool json, wait, progress;
	bool status;                /* --status: say how the running (or last) sync stands, and the next */
	bool local;                 /* --local: run here even when a serve runs on the directory */
	int retention;              /* --retention N: keep N old snapshots per repo, gc after the run; -1 off */
	char *hf_token, *ms_token;  /* read from the token files (owned) */
};

/* Fill o: the environment, then the configuration file (config_file, or the one argv or the
 * environment names; loaded into *conf: release it), then argv (argc 0: none), then the token files
 * (readable by their owner only). Returns CLI_OK, or CLI_USAGE / CLI_FAILED after saying why. */
int cli_sync_prepare(int argc, char **argv, const char *config_file, struct cli_sync_opts *o, struct config *conf);
void cli_sync_opts_release(struct cli_sync_opts *o);

#endif
