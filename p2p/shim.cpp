/*
 * shim.cpp - libtorrent-rasterbar's sessions behind the C API of p2p.h: settings, sessions, adding
 * and removing torrents, their status and alerts. The rest of the shim, the only C++ of the project:
 * shim-read.cpp (reading on demand), shim-pieces.cpp (the pieces the agent writes, hands over and
 * takes out), shim-plugins.cpp (libtorrent plugins), shim-torrent.cpp (making and reading torrents);
 * shim-session-int.hpp and shim-int.hpp between them.
 *
 * Rules for the shim: no C++ type leaves it, every extern "C" function catches everything, and
 * libtorrent's settings for a data-center swarm (docs/libtorrent.md) are applied in one place (here).
 */
#include "shim-session-int.hpp"

/* lan_tuning: the buffer and connection settings of libtorrent's high_performance_seed preset (not its
 * short timeouts and max_failcount 1, which suit a seedbox more than a LAN of agents), TCP only (uTP
 * keeps a LAN far below its speed: docs/libtorrent.md), and active limits raised so that hundreds of
 * torrents are all active (announced to trackers and LSD) even if some are auto-managed. */
static void lan_settings(lt::settings_pack &sp)
{
	static const int from_preset[] = {
		lt::settings_pack::send_buffer_watermark,
		lt::settings_pack::send_buffer_low_watermark,
		lt::settings_pack::send_buffer_watermark_factor,
		lt::settings_pack::send_not_sent_low_watermark,
		lt::settings_pack::max_queued_disk_bytes,
		lt::settings_pack::max_peer_recv_buffer_size,
		lt::settings_pack::max_out_request_queue,
		lt::settings_pack::checking_mem_usage,
		lt::settings_pack::file_pool_size,
		lt::settings_pack::connections_limit,
		lt::settings_pack::connection_speed,
		lt::settings_pack::listen_queue_size,
		lt::settings_pack::unchoke_slots_limit,
	};
	lt::settings_pack hp = lt::high_performance_seed();

	for (int name : from_preset)
		sp.set_int(name, hp.get_int(name));
	sp.set_bool(lt::settings_pack::enable_outgoing_utp, false);
	sp.set_bool(lt::settings_pack::enable_incoming_utp, false);
	sp.set_int(lt::settings_pack::active_downloads, 2000);
	sp.set_int(lt::settings_pack::active_seeds, 20000);
	sp.set_int(lt::settings_pack::active_limit, 20000);
	sp.set_int(lt::settings_pack::active_tracker_limit, 20000);
	sp.set_int(lt::settings_pack::active_lsd_limit, 20000);
}

/* The settings every hubmirror session runs with; see docs/libtorrent.md for why each. */
static lt::settings_pack base_settings(const struct p2p_session_config *cfg)
{
	lt::settings_pack sp;

	if (cfg && cfg->lan_tuning)
		lan_settings(sp);
	sp.set_str(lt::settings_pack::listen_interfaces,
		   cfg && cfg->listen_interfaces ? cfg->listen_interfaces : "0.0.0.0:6881");
	/* DHT bootstraps to the internet; UPnP/NAT-PMP poke routers. None belongs in a data center. */
	sp.set_bool(lt::settings_pack::enable_dht, false);
	sp.set_bool(lt::settings_pack::enable_upnp, false);
	sp.set_bool(lt::settings_pack::enable_natpmp, false);
	sp.set_bool(lt::settings_pack::enable_lsd, cfg && cfg->enable_lsd);
	/* Many peers share one address on a LAN (and on loopback in tests). */
	sp.set_bool(lt::settings_pack::allow_multiple_connections_per_ip, true);
	/* What p2p_session_drain reports: errors (file errors are error|storage), status (finished, listen
	 * results, torrent errors), piece_progress (piece_finished_alert, one per verified piece). */
	sp.set_int(lt::settings_pack::alert_mask,
		   lt::alert_category::error | lt::alert_category::status | lt::alert_category::storage |
			   lt::alert_category::piece_progress);
	/* One piece alert per piece: 2000 (the default) can overflow while the loop is busy for a moment on
	 * a fast LAN; 10000 is what high_performance_seed uses. */
	sp.set_int(lt::settings_pack::alert_queue_size, 10000);
	/* Pick by priority from the first piece on. libtorrent picks a torrent's first 4 pieces at random,
	 * ignoring priorities, so a read on a fresh mount (p2p_session_want_range: top priority plus a
	 * deadline) waited behind them: measured, behind 3 s of requests already queued at a 1 MiB/s seed.
	 * On a LAN a random start buys nothing over rarest-first, which also starts at a random piece among
	 * equally rare ones. */
	sp.set_int(lt::settings_pack::initial_picker_threshold, 0);
	if (cfg && cfg->origin)
		sp.set_str(lt::settings_pack::peer_fingerprint, P2P_ORIGIN_PEER_ID "0100-");
	/* Keep the piece picker of a torrent that completes. 2.0.8's set_piece_deadline posts
	 * cancel_non_critical for later, which walks the peers' queues through the picker; when the
	 * torrent became a seed in between (its last pieces passing meanwhile), the picker is gone and the
	 * network thread dereferences null (fixed upstream in 2.0.11). A session that sets deadlines
	 * (p2p_session_want_range: every agent) keeps the picker only in suggest_read_cache mode; the
	 * suggestions that mode sends are ignored by every hubmirror peer (shim-plugins.cpp), so they do
	 * not reorder anyone's picks (docs/libtorrent.md, "Other 2.0.8 details"). */
	if (!cfg || !cfg->origin)
		sp.set_int(lt::settings_pack::suggest_mode, lt::settings_pack::suggest_read_cache);
	/* Agents keep connections libtorrent calls redundant: an agent alone at first is in upload mode
	 * (fill.c), and peers that hung up on it left the swarm a few connections each (reads stalled
	 * 5-30 s). A mirror's seed keeps the default (docs/libtorrent.md, upload mode). */
	if (cfg && cfg->lan_tuning && !cfg->origin)
		sp.set_bool(lt::settings_pack::close_redundant_connections, false);
	/* A peer that claims pieces and does not send them (broken, or hostile) loses its requests and is
	 * snubbed after 5 s, not libtorrent's 60 (a WAN's figure): on a LAN a block comes in milliseconds.
	 * Snubbed peers do not count in p2p_session_pieces_had's availability, so the fill takes those
	 * pieces from the mirror (docs/agent.md). */
	if (cfg && cfg->lan_tuning && !cfg->origin) {
		sp.set_int(lt::settings_pack::request_timeout, 5);
		sp.set_int(lt::settings_pack::piece_timeout, 5);
		/* a web seed (the mirror) that failed is asked again after 3 s, not 30: a mirror that
		 * restarts is taken up again at once, and asking one that is down costs it nothing */
		sp.set_int(lt::settings_pack::urlseed_wait_retry, 3);
	}
	/* Every byte a session receives is hashed twice (SHA-1 for v1, SHA-256 for v2: ~0.75 s of CPU per
	 * 512 MiB here); libtorrent's one hashing thread made that the ceiling of a lone instance's speed. */
	sp.set_int(lt::settings_pack::hashing_threads,
		   static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)));
	return sp;
}


/*
 * libtorrent reads and writes its files through mmap and turns the SIGBUS of a page that cannot be
 * read or written (a full disk, a file cut short) into an error with its try_signal helper. That
 * helper installs its handlers on first use, SIGSEGV first, then SIGBUS, and a second disk thread that
 * faults in between gets the default action: the agent died of SIGBUS once in CI (t0715, hashing a
 * piece on a full disk). Until libtorrent's handler is in place, this one stands in: it waits for the
 * real one (at most a second) and passes the signal on to it in the faulting thread, where its jump
 * buffer lives. Installed only over the default action, so a sanitizer's own handler is left alone.
 */
static void sigbus_stand_in(int signo, siginfo_t *si, void *ctx)
{
	for (int i = 0; i < 10000; i++) {
		struct sigaction cur;
		if (sigaction(SIGBUS, nullptr, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_sigaction != sigbus_stand_in) {
			cur.sa_sigaction(signo, si, ctx);
			return;
		}
		struct timespec pause = {0, 100000};
		nanosleep(&pause, nullptr);
	}
	signal(signo, SIG_DFL);
	raise(signo);
}

static void guard_first_sigbus()
{
	static std::once_flag once;
	std::call_once(once, [] {
		struct sigaction cur;
		if (sigaction(SIGBUS, nullptr, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) ||
		    cur.sa_handler != SIG_DFL)
			return;
		struct sigaction sa;
		std::memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = sigbus_stand_in;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGBUS, &sa, nullptr);
	});
}

extern "C" int p2p_session_new(const struct p2p_session_config *cfg, struct p2p_session **out,
			       char **errmsg)
{
	try {
		guard_first_sigbus();
		if (cfg && cfg->local_upload_limit < 0) {
			set_err(errmsg, "local_upload_limit is negative");
			return -EINVAL;
		}
		auto s = std::make_unique<p2p_session>();
		s->ses = std::make_unique<lt::session>(lt::session_params(base_settings(cfg)));
		if (cfg && cfg->local_upload_limit > 0) {
			/* Peers on the local network are in the local class, which the global limits skip. */
			lt::peer_class_info pci = s->ses->get_peer_class(lt::session::local_peer_class_id);
			pci.upload_limit = static_cast<int>(std::min<int64_t>(cfg->local_upload_limit, INT_MAX));
			s->ses->set_peer_class(lt::session::local_peer_class_id, pci);
		}

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
	} catch (...) {
		return torrent_error(errmsg, "");
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
		/* First, so that the caller's wakeup (a uv_async_t it may close next) is never called again;
		 * libtorrent calls it under the alert queue's lock, which this takes too. */
		(*s)->ses->set_alert_notify(std::function<void()>());
	} catch (...) {
	}
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

/*
 * Torrents in a session. The table maps btih -> handle; libtorrent's own calls are thread-safe, the
 * table is guarded by s->mu. Calls on a handle (status, connect_peer, ...) wait for the network thread.
 */

static void hex40(lt::sha1_hash const &h, char out[41])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 20; i++) {
		auto c = static_cast<unsigned char>(h[static_cast<std::size_t>(i)]);
		out[2 * i] = hex[c >> 4];
		out[2 * i + 1] = hex[c & 15];
	}
	out[40] = '\0';
}

/* The table key of btih: 40 hex digits, lowercased. false for anything else (then no such torrent). */
bool btih_key(const char *btih, std::string &key)
{
	if (!btih || std::strlen(btih) != 40)
		return false;
	key.assign(btih, 40);
	for (char &c : key) {
		if (c >= 'A' && c <= 'F')
			c = static_cast<char>(c - 'A' + 'a');
		else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

/* Copy the entry of btih out of the table (handles are cheap to copy). false if there is none. */
std::unordered_map<std::string, torrent_entry>::iterator find_locked(struct p2p_session *s, const char *btih)
{
	std::string key;

	return btih_key(btih, key) ? s->torrents.find(key) : s->torrents.end();
}

bool find_entry(struct p2p_session *s, const char *btih, torrent_entry &e)
{
	std::lock_guard<std::mutex> lock(s->mu);
	auto it = find_locked(s, btih);

	if (it == s->torrents.end())
		return false;
	e = it->second;
	return true;
}

/*
 * Payload bytes of a torrent since it was added. libtorrent has two counters, neither right alone:
 * total_payload_* is exact but restarts from 0 when the torrent is paused and resumed; all_time_*
 * survives that but only takes in each second's bytes at libtorrent's one-second tick (a torrent that
 * just finished shows up to a second short). The larger of the two is exact until a pause and at most a
 * second behind after one. all_time_* starts from 0 because no resume data is loaded; if it ever is,
 * subtract the loaded values here.
 */
static std::int64_t payload_up(lt::torrent_status const &st)
{
	return std::max(st.all_time_upload, st.total_payload_upload);
}

static std::int64_t payload_down(lt::torrent_status const &st)
{
	return std::max(st.all_time_download, st.total_payload_download);
}


/* Remove h from s (its files stay), its counts banked for p2p_session_totals first: remove_torrent is
 * queued behind this status call on the network thread, and totals reads under the same lock (held
 * by the caller), so nothing counts twice. */
void bank_and_remove(struct p2p_session *s, lt::torrent_handle const &h)
{
	lt::torrent_status st = h.status({});

	s->removed_up += payload_up(st);
	s->removed_down += payload_down(st);
	s->ses->remove_torrent(h); /* no delete_files: the files are the caller's */
}

extern "C" int p2p_session_add(struct p2p_session *s, const struct p2p_add *a, char *btih_out,
			       char **errmsg)
{
	try {
		if (!s || !a || !a->torrent || !a->save_path || !*a->save_path ||
		    (a->nweb_seeds && !a->web_seeds)) {
			set_err(errmsg, "p2p_session_add: missing torrent or save_path");
			return HM_ERR_USAGE;
		}
		lt::load_torrent_limits lim = limits_for(a->len, 100000000);
		lt::add_torrent_params atp = lt::load_torrent_buffer(
			lt::span<char const>(reinterpret_cast<char const *>(a->torrent),
					     static_cast<std::ptrdiff_t>(std::min<size_t>(a->len, PTRDIFF_MAX))),
			lim);
		if (!atp.ti || !atp.ti->info_hashes().has_v1()) {
			set_err(errmsg, "torrent has no v1 info-hash (v2-only torrents are not supported)");
			return HM_ERR_TORRENT;
		}
		char hex[41];
		hex40(atp.ti->info_hashes().v1, hex);

		std::lock_guard<std::mutex> lock(s->mu);
		auto it = s->torrents.find(hex);
		if (it != s->torrents.end()) {
			for (size_t i = 0; i < a->nweb_seeds; i++)
				if (a->web_seeds[i])
					it->second.h.add_url_seed(a->web_seeds[i]);
		} else {
			atp.save_path = a->save_path;
			atp.flags &= ~(lt::torrent_flags::auto_managed | lt::torrent_flags::paused);
			if (a->seed_mode)
				atp.flags |= lt::torrent_flags::seed_mode;
			if (a->super_seed)
				atp.flags |= lt::torrent_flags::super_seeding;
			if (a->upload_only)
				atp.flags |= lt::torrent_flags::upload_mode;
			if (a->no_url_list) {
				atp.url_seeds.clear();
				atp.http_seeds.clear();
				atp.ti->set_web_seeds({});
			}
			for (size_t i = 0; i < a->nweb_seeds; i++)
				if (a->web_seeds[i])
					atp.url_seeds.push_back(a->web_seeds[i]);
			if (a->trackers) {
				atp.trackers.clear();
				atp.tracker_tiers.clear();
				for (size_t i = 0; i < a->ntrackers; i++) {
					atp.trackers.push_back(a->trackers[i]);
					atp.tracker_tiers.push_back(static_cast<int>(i));
				}
			}
			int np = atp.ti->num_pieces();
			if (a->have && a->nhave != static_cast<size_t>(np)) {
				set_err(errmsg, "p2p_session_add: have names " + std::to_string(a->nhave) +
							" pieces, the torrent has " + std::to_string(np));
				return HM_ERR_USAGE;
			}
			if (a->select) {
				atp.piece_priorities.assign(static_cast<size_t>(np), lt::dont_download);
				for (size_t i = 0; i < a->nwant; i++)
					for_pieces_of(atp.ti->files(), a->want ? a->want[i] : -1, [&](int p) {
						atp.piece_priorities[static_cast<size_t>(p)] = lt::default_priority;
					});
			}
			if (a->have) {
				atp.have_pieces.resize(np, false);
				for (int i = 0; i < np; i++)
					if (a->have[i])
						atp.have_pieces.set_bit(lt::piece_index_t(i));
			}
			auto web = std::make_shared<web_bytes>();
			add_plugins(atp, web, a->origin_last);
			std::shared_ptr<const lt::torrent_info> ti = atp.ti;
			/* (load_torrent_buffer moved the piece layers out of atp.ti: read from the bytes again) */
			auto v2 = std::make_shared<const std::vector<lt::sha256_hash>>(
				v2_of(info_of(a->torrent, a->len)));
			auto have = std::make_shared<have_cache>(ti->num_pieces());
			/* pieces given as had are read back from the file before a read may have them */
			if (a->have)
				have->distrust = true;
			lt::error_code ec;
			lt::torrent_handle h = s->ses->add_torrent(std::move(atp), ec);
			if (ec) {
				set_err(errmsg, "adding torrent " + std::string(hex) + ": " + ec.message());
				return HM_ERR_TORRENT;
			}
			s->torrents.emplace(hex, torrent_entry{h, std::move(ti), std::move(v2), std::move(web),
							       a->save_path, std::move(have), a->origin_last});
		}
		if (btih_out)
			std::memcpy(btih_out, hex, sizeof hex);
		return 0;
	} catch (...) {
		return torrent_error(errmsg, "loading torrent: ");
	}
}

extern "C" int p2p_session_remove(struct p2p_session *s, const char *btih)
{
	try {
		std::lock_guard<std::mutex> lock(s->mu);
		auto it = find_locked(s, btih);
		if (it == s->torrents.end())
			return HM_ERR_NOT_FOUND;
		bank_and_remove(s, it->second.h);
		s->torrents.erase(it);
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

/* Parse "1.2.3.4:6881" or "[::1]:6881". */
static bool parse_endpoint(const char *text, lt::tcp::endpoint &ep)
{
	std::string t = text ? text : "";
	std::string host, port;

	if (!t.empty() && t[0] == '[') {
		size_t close = t.find("]:");
		if (close == std::string::npos)
			return false;
		host = t.substr(1, close - 1);
		port = t.substr(close + 2);
	} else {
		size_t colon = t.rfind(':');
		if (colon == std::string::npos)
			return false;
		host = t.substr(0, colon);
		port = t.substr(colon + 1);
		if (host.find(':') != std::string::npos) /* IPv6 without brackets */
			return false;
	}
	if (host.empty() || port.empty() || port.size() > 5 ||
	    port.find_first_not_of("0123456789") != std::string::npos)
		return false;
	unsigned long p = std::strtoul(port.c_str(), nullptr, 10);
	if (p == 0 || p > 65535)
		return false;
	lt::error_code ec;
	lt::address addr = lt::make_address(host, ec);
	if (ec)
		return false;
	ep = lt::tcp::endpoint(addr, static_cast<unsigned short>(p));
	return true;
}

extern "C" int p2p_session_connect(struct p2p_session *s, const char *btih, const char *endpoint)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		lt::tcp::endpoint ep;
		if (!parse_endpoint(endpoint, ep))
			return -EINVAL;
		/* libtorrent's default flags. Not without pex_encryption: 2.0.8 then never reconnects to the
		 * peer once the connection drops (as it does when a seed_mode torrent rechecks). */
		e.h.connect_peer(ep);
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

/* "<file>: <error>" for an error tied to a file of ti, "<error>" otherwise. */
static std::string error_text(lt::error_code const &ec, lt::file_index_t file, lt::torrent_info const *ti)
{
	std::string msg = ec.message();
	if (ti && file >= lt::file_index_t(0) && file < ti->files().end_file())
		msg = ti->files().file_path(file) + ": " + msg;
	return msg;
}

static void copy_message(char *dst, size_t size, std::string const &msg)
{
	size_t n = std::min(msg.size(), size - 1);
	std::memcpy(dst, msg.data(), n);
	dst[n] = '\0';
}

extern "C" int p2p_session_torrent_status(struct p2p_session *s, const char *btih,
					  struct p2p_torrent_status *out)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;

		/* Closed web seed connections first, then the open ones: a connection that closes in between
		 * is missed this time (and counted next time), never counted twice. */
		std::int64_t web = e.web->closed.load();
		std::vector<lt::peer_info> peers;
		e.h.get_peer_info(peers);
		for (lt::peer_info const &p : peers)
			if (p.connection_type & (lt::peer_info::web_seed | lt::peer_info::http_seed))
				web += p.total_download;
		std::int64_t prev = e.web->reported.load();
		while (prev < web && !e.web->reported.compare_exchange_weak(prev, web)) {
		}
		web = std::max(web, prev);

		lt::torrent_status st = e.h.status(lt::torrent_handle::query_accurate_download_counters);
		struct p2p_torrent_status r;
		std::memset(&r, 0, sizeof r);
		r.seed_mode = bool(st.flags & lt::torrent_flags::seed_mode);
		r.seeding = st.is_seeding && !r.seed_mode;
		r.paused = bool(st.flags & lt::torrent_flags::paused);
		r.error = bool(st.errc);
		if (r.error)
			copy_message(r.message, sizeof r.message, error_text(st.errc, st.error_file, e.ti.get()));
		r.progress = st.progress;
		r.total_wanted = st.total_wanted;
		r.total_done = st.total_wanted_done;
		r.uploaded = payload_up(st);
		r.downloaded = payload_down(st);
		r.from_web_seeds = web;
		r.peers = st.num_peers;
		r.seeds = st.num_seeds;
		r.known_peers = st.list_peers;
		r.tracker_replied = !st.current_tracker.empty();
		r.checking = st.state == lt::torrent_status::checking_files ||
			     st.state == lt::torrent_status::checking_resume_data;
		r.finished = st.is_finished && !r.checking;
		r.num_pieces = e.ti->num_pieces();
		r.pieces_have = st.num_pieces;
		r.held = st.total_done;
		r.damaged = e.have->damaged.load();
		*out = r;
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_goodbyes(struct p2p_session *s, struct p2p_goodbye **out, size_t *n, int *port)
{
	*out = nullptr;
	*n = 0;
	try {
		std::vector<std::pair<std::string, lt::sha1_hash>> v;
		{
			std::lock_guard<std::mutex> lock(s->mu);
			for (auto const &kv : s->torrents) {
				lt::info_hash_t const ih = kv.second.ti->info_hashes();
				for (lt::announce_entry const &ae : kv.second.h.trackers()) {
					if (ih.has_v1())
						v.emplace_back(ae.url, ih.v1);
					if (ih.has_v2())
						v.emplace_back(ae.url, ih.get(lt::protocol_version::V2));
				}
			}
		}
		*port = s->ses->listen_port();
		if (v.empty())
			return 0;
		struct p2p_goodbye *g = static_cast<struct p2p_goodbye *>(xcalloc(v.size(), sizeof(*g)));
		for (std::size_t i = 0; i < v.size(); i++) {
			g[i].url = xstrdup(v[i].first.c_str());
			std::memcpy(g[i].hash, v[i].second.data(), sizeof g[i].hash);
		}
		*out = g;
		*n = v.size();
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" void p2p_goodbyes_free(struct p2p_goodbye *g, size_t n)
{
	for (std::size_t i = 0; g && i < n; i++)
		free(g[i].url);
	free(g);
}

extern "C" int p2p_session_totals(struct p2p_session *s, int64_t *uploaded, int64_t *downloaded)
{
	try {
		std::lock_guard<std::mutex> lock(s->mu);
		std::int64_t up = s->removed_up, down = s->removed_down;
		std::vector<lt::torrent_status> all =
			s->ses->get_torrent_status([](lt::torrent_status const &) { return true; }, {});
		for (lt::torrent_status const &st : all) {
			up += payload_up(st);
			down += payload_down(st);
		}
		if (uploaded)
			*uploaded = up;
		if (downloaded)
			*downloaded = down;
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" void p2p_session_set_wakeup(struct p2p_session *s, void (*fn)(void *ud), void *ud)
{
	try {
		if (fn)
			s->ses->set_alert_notify([fn, ud] { fn(ud); });
		else
			s->ses->set_alert_notify(std::function<void()>());
	} catch (...) {
		/* only an invalid session handle throws here, and ours lives until p2p_session_free */
	}
}

extern "C" int p2p_session_drain(struct p2p_session *s,
				 void (*on_event)(void *ud, const struct p2p_event *ev), void *ud)
{
	if (s->draining)
		return -EBUSY; /* pop_alerts would free the alerts the outer call is walking */
	s->draining = true;
	int n = 0;
	bool dropped = false;
	std::unordered_set<std::string> pieces_of;   /* torrents with new pieces: admitted after the loop */
	try {
		std::vector<lt::alert *> alerts;
		s->ses->pop_alerts(&alerts);
		for (lt::alert *a : alerts) {
			struct p2p_event ev = {};
			std::string msg;
			ev.piece = -1;
			if (lt::alert_cast<lt::torrent_finished_alert>(a)) {
				ev.kind = P2P_EVENT_FINISHED;
			} else if (auto *pf = lt::alert_cast<lt::piece_finished_alert>(a)) {
				ev.kind = P2P_EVENT_PIECE;
				ev.piece = static_cast<int>(pf->piece_index);
			} else if (auto *fe = lt::alert_cast<lt::file_error_alert>(a)) {
				ev.kind = P2P_EVENT_ERROR;
				msg = std::string(fe->filename()) + ": " + lt::operation_name(fe->op) + ": " +
				      fe->error.message();
			} else if (auto *te = lt::alert_cast<lt::torrent_error_alert>(a)) {
				ev.kind = P2P_EVENT_ERROR;
				msg = te->error.message();
				if (te->filename() && *te->filename())
					msg = std::string(te->filename()) + ": " + msg;
			} else if (lt::alert_cast<lt::alerts_dropped_alert>(a)) {
				dropped = true;
				continue;
			} else {
				continue;
			}
			/* All four are torrent alerts. A torrent already gone has no hash left: skip it. */
			lt::info_hash_t ih = static_cast<lt::torrent_alert *>(a)->handle.info_hashes();
			if (!ih.has_v1())
				continue;
			char hex[41];
			hex40(ih.v1, hex);
			if (ev.kind == P2P_EVENT_PIECE)
				pieces_of.insert(hex);
			ev.btih = hex;
			ev.message = msg.c_str();
			n++;
			if (on_event)
				on_event(ud, &ev);
		}
		/* Admit what those pieces made whole on this thread, so that reads find them cached instead
		 * of asking libtorrent's network thread themselves. */
		for (std::string const &hex : pieces_of) {
			torrent_entry e;
			/* (a torrent whose word is no promise admits nothing here: its waiting readers look
			 * again themselves, reading the new pieces back) */
			if (find_entry(s, hex.c_str(), e) && !admit_written(e))
				e.have->notify_all();
		}
	} catch (...) {
		dropped = true;
	}
	s->draining = false;
	return dropped ? HM_ERR_TORRENT : n;
}
