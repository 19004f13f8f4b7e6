/*
 * shim.cpp - the only C++ file: libtorrent-rasterbar behind the C API of p2p.h.
 *
 * Rules for this file: no C++ type leaves it, every extern "C" function catches everything, and
 * libtorrent's settings for a data-center swarm (libtorrent-notes.md) are applied in one place.
 */
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <libtorrent/alert_types.hpp>
#include <libtorrent/bencode.hpp>
#include <libtorrent/create_torrent.hpp>
#include <libtorrent/file_storage.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/settings_pack.hpp>
#include <libtorrent/torrent_info.hpp>
#include <libtorrent/version.hpp>

extern "C" {
#include "base/err.h"
#include "base/xmalloc.h"
#include "p2p-int.h"
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

/* A path libtorrent would rename, made safe to print: every byte outside printable ASCII, '"' and
 * '\\' as \\xNN (such a path may carry direction marks or bad UTF-8). */
static std::string quoted(const std::string &p)
{
	static const char hex[] = "0123456789abcdef";
	std::string q = "\"";

	for (unsigned char c : p) {
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
			q += "\\x";
			q += hex[c >> 4];
			q += hex[c & 15];
		} else {
			q += static_cast<char>(c);
		}
	}
	return q + "\"";
}

/*
 * Torrent creation. Determinism comes from fixing every input libtorrent would otherwise pick:
 * the piece size (caller's rule), the file order (libtorrent canonicalises hybrid torrents itself, and
 * the caller already sorted the same way), no file attributes, no mtime, no creation date, no creator.
 * 2.0.8 pads after the last file too ("tail padding", new in 2.0.8): torrents made by other libtorrent
 * versions of the same files can differ, so every node must run the same one (libtorrent-notes.md).
 */
extern "C" int p2p__torrent_build(const char *parent, const char *name, const char *const *paths,
				  const int64_t *sizes, size_t n, int64_t piece_size,
				  struct p2p__built *out, char **errmsg)
{
	try {
		lt::file_storage fs;
		std::vector<std::string> want;
		want.reserve(n);
		fs.reserve(static_cast<int>(std::min<size_t>(n, INT_MAX)));
		for (size_t i = 0; i < n; i++) {
			want.push_back(std::string(name) + "/" + paths[i]);
			fs.add_file(want.back(), sizes[i]);
		}
		lt::create_torrent ct(fs, static_cast<int>(piece_size), lt::create_torrent::no_attributes);
		ct.set_creation_date(0); /* 0: the key is left out */

		/* Hashing reads the files through the symlinks. One hashing thread per core: the work is
		 * SHA-1 + SHA-256 of every byte and the files are usually in the page cache (just written). */
		lt::settings_pack sp;
		unsigned cores = std::thread::hardware_concurrency();
		sp.set_int(lt::settings_pack::hashing_threads,
			   static_cast<int>(std::clamp(cores, 1u, 8u)));
		lt::error_code ec;
		lt::set_piece_hashes(ct, parent, sp, [](lt::piece_index_t) {}, ec);
		if (ec) {
			set_err(errmsg, "hashing \"" + std::string(name) + "\": " + ec.message());
			return HM_ERR_TORRENT;
		}

		lt::entry e = ct.generate();
		/* generate() leaves these out when unset; make sure, they would break determinism. */
		e.dict().erase("creation date");
		e.dict().erase("created by");
		e.dict().erase("comment");
		std::vector<char> buf;
		lt::bencode(std::back_inserter(buf), e);

		/* Load it back as a client would. The loader sanitises paths (it cuts components over 240
		 * bytes, drops Unicode direction marks, replaces bad UTF-8): a path it changes would land
		 * somewhere else on a peer than on the web seed, so refuse it here. Limits are raised for
		 * this check only: it is our own buffer. */
		lt::load_torrent_limits lim;
		lim.max_buffer_size = static_cast<int>(
			std::min<size_t>(INT_MAX, std::max<size_t>(buf.size() + 1, 10000000)));
		lim.max_pieces = INT_MAX;
		lim.max_decode_tokens = INT_MAX;
		lt::torrent_info ti(lt::span<char const>(buf.data(), static_cast<std::ptrdiff_t>(buf.size())), lim,
				    lt::from_span);
		lt::file_storage const &got = ti.files();
		std::unordered_set<std::string> loaded;
		for (lt::file_index_t i : got.file_range())
			if (!got.pad_file_at(i))
				loaded.insert(got.file_path(i));
		for (std::string const &w : want) {
			if (!loaded.count(w)) {
				set_err(errmsg, "path " + quoted(w) +
						" would be renamed by BitTorrent clients (libtorrent sanitises it)");
				return HM_ERR_PATH_UNSAFE;
			}
		}
		if (loaded.size() != want.size() || !ti.info_hashes().has_v1() || !ti.info_hashes().has_v2()) {
			set_err(errmsg, "generated torrent does not load back as the same hybrid torrent");
			return HM_ERR_TORRENT;
		}

		out->len = buf.size();
		out->data = static_cast<unsigned char *>(xmalloc(buf.size()));
		std::memcpy(out->data, buf.data(), buf.size());
		std::memcpy(out->v1, ti.info_hashes().v1.data(), sizeof out->v1);
		std::memcpy(out->v2, ti.info_hashes().v2.data(), sizeof out->v2);
		out->pieces = ti.num_pieces();
		return 0;
	} catch (const std::exception &e) {
		set_err(errmsg, std::string("creating torrent \"") + name + "\": " + e.what());
		return HM_ERR_TORRENT;
	} catch (...) {
		set_err(errmsg, "creating torrent: unknown libtorrent exception");
		return HM_ERR_TORRENT;
	}
}
