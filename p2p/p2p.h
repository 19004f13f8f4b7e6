/*
 * p2p.h - the swarm: a plain C view of libtorrent-rasterbar.
 *
 * Everything libtorrent is behind this header; no C++ type crosses it, and every function catches
 * exceptions and turns them into error codes (style.md). The implementation is p2p/shim.cpp, the only
 * C++ in the project.
 */
#ifndef HM_P2P_H
#define HM_P2P_H

#include <stdbool.h>

struct p2p_session;

struct p2p_session_config {
	/* libtorrent listen_interfaces, e.g. "127.0.0.1:0" (port 0: any free port). Borrowed. */
	const char *listen_interfaces;
	/* Local service discovery (BEP 14). DHT, UPnP and NAT-PMP are always off inside a data center. */
	bool enable_lsd;
};

struct p2p_session_status {
	int listen_port;   /* TCP port the session listens on */
	bool dht;          /* settings as libtorrent reports them back */
	bool upnp;
	bool natpmp;
	bool lsd;
	bool multiple_connections_per_ip;
};

/*
 * Start a session and wait until it listens (at most a few seconds). On success *out is the new
 * session, owned by the caller (p2p_session_free). On failure returns HM_ERR_TORRENT and, if errmsg
 * is not NULL, sets *errmsg to a malloc'd message the caller frees; *out is untouched.
 */
int p2p_session_new(const struct p2p_session_config *cfg, struct p2p_session **out, char **errmsg);

/* Read back the settings in force and the listen port. Returns 0 or HM_ERR_TORRENT. */
int p2p_session_status(struct p2p_session *s, struct p2p_session_status *out);

/* Stop the session (aborts its network activity) and free it. Accepts NULL and *s == NULL. */
void p2p_session_free(struct p2p_session **s);

/* libtorrent's version string, e.g. "2.0.8.0". Static. */
const char *p2p_version(void);

#endif
