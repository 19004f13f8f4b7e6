/*
 * shim.cpp - the only C++ file: libtorrent-rasterbar behind the C API of p2p.h.
 *
 * Rules for this file: no C++ type leaves it, every extern "C" function catches everything, and
 * libtorrent's settings for a data-center swarm (libtorrent-notes.md) are applied in one place.
 */
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <libtorrent/alert_types.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/settings_pack.hpp>
#include <libtorrent/version.hpp>

extern "C" {
#include "base/err.h"
#include "p2p/p2p.h"
}

namespace lt = libtorrent;

struct p2p_session {
	std::unique_ptr<lt::session> ses;
};

static void set_err(char **errmsg, const std::string &msg)
{
	if (!errmsg)
		return;
	*errmsg = static_cast<char *>(std::malloc(msg.size() + 1));
	if (*errmsg)
		std::memcpy(*errmsg, msg.c_str(), msg.size() + 1);
}

/* The settings every hubmirror session runs with; see libtorrent-notes.md for why each. */
static lt::settings_pack base_settings(const struct p2p_session_config *cfg)
{
	lt::settings_pack sp;

	sp.set_str(lt::settings_pack::listen_interfaces,
		   cfg && cfg->listen_interfaces ? cfg->listen_interfaces : "0.0.0.0:6881");
	/* DHT bootstraps to the internet; UPnP/NAT-PMP poke routers. None belongs in a data center. */
	sp.set_bool(lt::settings_pack::enable_dht, false);
	sp.set_bool(lt::settings_pack::enable_upnp, false);
	sp.set_bool(lt::settings_pack::enable_natpmp, false);
	sp.set_bool(lt::settings_pack::enable_lsd, cfg && cfg->enable_lsd);
	/* Many peers share one address on a LAN (and on loopback in tests). */
	sp.set_bool(lt::settings_pack::allow_multiple_connections_per_ip, true);
	sp.set_int(lt::settings_pack::alert_mask,
		   lt::alert_category::error | lt::alert_category::status);
	return sp;
}

extern "C" int p2p_session_new(const struct p2p_session_config *cfg, struct p2p_session **out,
			       char **errmsg)
{
	try {
		auto s = std::make_unique<p2p_session>();
		s->ses = std::make_unique<lt::session>(lt::session_params(base_settings(cfg)));

		/* Listening is asynchronous: wait for the verdict so callers get a usable port or an error. */
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
		bool listening = false;
		std::string failure;
		while (!listening && failure.empty() && std::chrono::steady_clock::now() < deadline) {
			s->ses->wait_for_alert(std::chrono::milliseconds(100));
			std::vector<lt::alert *> alerts;
			s->ses->pop_alerts(&alerts);
			for (lt::alert *a : alerts) {
				if (auto *ok = lt::alert_cast<lt::listen_succeeded_alert>(a)) {
					if (ok->socket_type == lt::socket_type_t::tcp)
						listening = true;
				} else if (auto *bad = lt::alert_cast<lt::listen_failed_alert>(a)) {
					failure = bad->message();
				}
			}
		}
		if (!listening) {
			set_err(errmsg, failure.empty() ? "session did not start listening in time" : failure);
			return HM_ERR_TORRENT;
		}
		*out = s.release();
		return 0;
	} catch (const std::exception &e) {
		set_err(errmsg, e.what());
		return HM_ERR_TORRENT;
	} catch (...) {
		set_err(errmsg, "unknown libtorrent exception");
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_status(struct p2p_session *s, struct p2p_session_status *out)
{
	try {
		lt::settings_pack sp = s->ses->get_settings();
		out->listen_port = s->ses->listen_port();
		out->dht = sp.get_bool(lt::settings_pack::enable_dht);
		out->upnp = sp.get_bool(lt::settings_pack::enable_upnp);
		out->natpmp = sp.get_bool(lt::settings_pack::enable_natpmp);
		out->lsd = sp.get_bool(lt::settings_pack::enable_lsd);
		out->multiple_connections_per_ip =
			sp.get_bool(lt::settings_pack::allow_multiple_connections_per_ip);
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" void p2p_session_free(struct p2p_session **s)
{
	if (!s || !*s)
		return;
	try {
		delete *s; /* lt::session's destructor aborts and joins its threads */
	} catch (...) {
		/* nothing useful to do; the memory is gone either way */
	}
	*s = nullptr;
}

extern "C" const char *p2p_version(void)
{
	return lt::version();
}
