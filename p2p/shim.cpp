/*
 * shim.cpp - libtorrent-rasterbar's sessions behind the C API of p2p.h (with shim-torrent.cpp, which
 * makes and reads torrents, the only C++ of the project).
 *
 * Rules for this file: no C++ type leaves it, every extern "C" function catches everything, and
 * libtorrent's settings for a data-center swarm (docs/libtorrent.md) are applied in one place.
 */
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <libtorrent/address.hpp>
#include <libtorrent/alert_types.hpp>
#include <libtorrent/bencode.hpp>
#include <libtorrent/create_torrent.hpp>
#include <libtorrent/error_code.hpp>
#include <libtorrent/extensions.hpp>
#include <libtorrent/file_storage.hpp>
#include <libtorrent/hasher.hpp>
#include <libtorrent/load_torrent.hpp>
#include <libtorrent/peer_class.hpp>
#include <libtorrent/peer_connection_handle.hpp>
#include <libtorrent/peer_info.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/settings_pack.hpp>
#include <libtorrent/torrent_handle.hpp>
#include <libtorrent/torrent_info.hpp>
#include <libtorrent/torrent_status.hpp>
#include <libtorrent/version.hpp>

extern "C" {
#include "base/err.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "p2p-int.h"
#include "p2p/p2p.h"
}
#include "shim-int.hpp"

namespace lt = libtorrent;

/*
 * Payload received from the web seeds (BEP 19 url seeds, BEP 17 http seeds) of one torrent.
 * libtorrent keeps per-connection counters only, and closes web seed connections when a torrent
 * finishes, so the bytes of closed connections are banked here by a peer plugin (on libtorrent's network
 * thread) and the open ones are added at status time. reported keeps the value from going backwards
 * when a connection closes between reading closed and listing the peers.
 */
struct web_bytes {
	std::atomic<std::int64_t> closed{0};
	std::atomic<std::int64_t> reported{0};
};

/* Attached to each web seed connection: banks its payload when it closes. on_disconnect runs before
 * libtorrent drops the connection from the torrent's peer list, inside one network-thread call, so a
 * synchronous get_peer_info sees a connection either live or banked, never both. */
class web_peer_counter final : public lt::peer_plugin {
public:
	web_peer_counter(lt::peer_connection_handle pc, std::shared_ptr<web_bytes> c)
		: m_pc(std::move(pc)), m_c(std::move(c)) {}

	void on_disconnect(lt::error_code const &) override
	{
		try {
			if (!m_pc.native_handle())
				return;
			lt::peer_info pi;
			m_pc.get_peer_info(pi);
			m_c->closed += pi.total_download;
		} catch (...) {
			/* a lost count is not worth unwinding libtorrent's network thread */
		}
	}

private:
	lt::peer_connection_handle m_pc;
	std::shared_ptr<web_bytes> m_c;
};

class web_torrent_counter final : public lt::torrent_plugin {
public:
	explicit web_torrent_counter(std::shared_ptr<web_bytes> c) : m_c(std::move(c)) {}

	std::shared_ptr<lt::peer_plugin> new_connection(lt::peer_connection_handle const &pc) override
	{
		if (pc.type() == lt::connection_type::bittorrent)
			return nullptr;
		return std::make_shared<web_peer_counter>(pc, m_c);
	}

private:
	std::shared_ptr<web_bytes> m_c;
};

/*
 * p2p_add.origin_last: a peer whose id starts with P2P_ORIGIN_PEER_ID (the mirror's seed) is taken to
 * have nothing. Its bitfield, have-all, have, suggest and allowed-fast messages are handled here and
 * never reach libtorrent, so no request ever goes to it; what only the mirror has comes over HTTP
 * instead (the agent's fill). The id is known from the handshake on, before any of those messages.
 */
class origin_blind_peer final : public lt::peer_plugin {
public:
	explicit origin_blind_peer(lt::peer_connection_handle pc) : m_pc(std::move(pc)) {}

	bool on_bitfield(lt::bitfield const &) override { return origin(); }
	bool on_have_all() override { return origin(); }
	bool on_have(lt::piece_index_t) override { return origin(); }
	bool on_suggest(lt::piece_index_t) override { return origin(); }
	bool on_allowed_fast(lt::piece_index_t) override { return origin(); }

private:
	bool origin() const
	{
		try {
			lt::peer_id const &id = m_pc.pid();
			static const char prefix[] = P2P_ORIGIN_PEER_ID;
			return std::memcmp(id.data(), prefix, sizeof prefix - 1) == 0;
		} catch (...) {
			return false;
		}
	}
	lt::peer_connection_handle m_pc;
};

class origin_blind final : public lt::torrent_plugin {
public:
	std::shared_ptr<lt::peer_plugin> new_connection(lt::peer_connection_handle const &pc) override
	{
		if (pc.type() != lt::connection_type::bittorrent)
			return nullptr;
		return std::make_shared<origin_blind_peer>(pc);
	}
};

/*
 * Pieces whose bytes are verified in the file, one bit each, for p2p_session_have_range: read and set
 * without a lock from any thread. A bit is set only by p2p_session_have_range, from have_piece() or
 * from the file itself (verify_in_file), never from piece_finished_alert: 2.0.8 checks a piece as soon
 * as all its blocks are received, hashing the ones still waiting to be written from its store buffer,
 * and posts that alert then, while up to aio_threads write jobs of the piece may still be queued; a
 * pread in that window returns the zeros of a sparse file (docs/p2p.md, "Which bytes a read may
 * return"). Bits are never cleared: libtorrent never rewrites a piece it has, and nothing here starts
 * a recheck.
 */
struct have_cache {
	explicit have_cache(int pieces)
		: n(std::max(pieces, 0)), words(new std::atomic<std::uint64_t>[(std::size_t(n) + 63) / 64]()),
		  evicting(new std::atomic<std::uint64_t>[(std::size_t(n) + 63) / 64]()),
		  touched(new std::atomic<std::uint32_t>[std::size_t(n) + 1]()) {}
	bool get(int i) const
	{
		return (words[std::size_t(i) / 64].load(std::memory_order_acquire) >> (i % 64)) & 1;
	}
	void set(int i)
	{
		if (i >= 0 && i < n)
			words[std::size_t(i) / 64].fetch_or(std::uint64_t(1) << (i % 64), std::memory_order_release);
	}
	void clear(int i)
	{
		if (i >= 0 && i < n)
			words[std::size_t(i) / 64].fetch_and(~(std::uint64_t(1) << (i % 64)), std::memory_order_release);
	}
	/* Readers waiting for a piece (p2p_session_wait_range) sleep on cv, each with the piece it waits
	 * for in waiting; notify() after a batch of set()s wakes them when one of those came, so a reader
	 * is woken for its own piece, not for every piece of the torrent. */
	std::mutex cv_mu;
	std::condition_variable cv;
	std::vector<int> waiting;
	std::atomic<int> nwaiting{0};
	void notify()
	{
		/* (the fences pair with the waiter's: it sees the piece set, or this sees it waiting) */
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (!nwaiting.load(std::memory_order_seq_cst))
			return;
		std::lock_guard<std::mutex> lock(cv_mu);
		for (int p : waiting)
			if (get(p)) {
				cv.notify_all();
				return;
			}
	}
	/* (after a recheck, an eviction, a drain that admitted nothing: wake every waiter to look again) */
	void notify_all()
	{
		std::lock_guard<std::mutex> lock(cv_mu);
		cv.notify_all();
	}
	bool is_evicting(int i) const
	{
		return (evicting[std::size_t(i) / 64].load(std::memory_order_seq_cst) >> (i % 64)) & 1;
	}
	int const n;
	std::unique_ptr<std::atomic<std::uint64_t>[]> words;
	/* Pieces p2p_session_evict_pieces is taking away: never admitted (libtorrent still counts them as
	 * had until the torrent is added again without them, and their bytes are holes meanwhile) */
	std::unique_ptr<std::atomic<std::uint64_t>[]> evicting;
	/* per piece: when a reader last read it (p2p_session_touch), seconds of the steady clock + 1; 0:
	 * never */
	std::unique_ptr<std::atomic<std::uint32_t>[]> touched;
	/* The first missing pieces of the latest p2p_session_want_range calls with deadline 0 (readers
	 * waiting: several, as a loader reads four shards on four threads), oldest first, for
	 * p2p_session_take_wanted; a piece named again keeps its place */
	std::mutex wanted_mu;
	std::vector<int> wanted;
	bool push_wanted(int p)
	{
		std::lock_guard<std::mutex> lock(wanted_mu);
		if (std::find(wanted.begin(), wanted.end(), p) != wanted.end())
			return false;
		if (wanted.size() >= 64)
			wanted.erase(wanted.begin()); /* the oldest: its reader asks again */
		wanted.push_back(p);
		return true;
	}
	int pop_wanted()
	{
		std::lock_guard<std::mutex> lock(wanted_mu);
		if (wanted.empty())
			return -1;
		int p = wanted.front();
		wanted.erase(wanted.begin());
		return p;
	}
	/* pieces libtorrent believed it had whose bytes in the files failed their hash, and when the
	 * torrent was last rechecked for them (steady clock, ms) */
	std::atomic<int> damaged{0};
	std::atomic<std::int64_t> rechecked_ms{0};
	/* when a reader last asked libtorrent what it has (admit_written from have_range): readers woken
	 * at every piece must not each ask again (two calls into its network thread) */
	std::atomic<std::int64_t> admitted_ms{0};
	std::atomic<bool> trusted{false};       /* what admit_written said then */
	std::mutex write_mu;                    /* p2p_session_write_piece's writes, one at a time */
	/* a piece was found damaged: libtorrent's word that it has a piece is no promise any more (it
	 * says so until its recheck has run, and the recheck is asynchronous), so each piece not cached
	 * here is read back from the files (admit_written) */
	std::atomic<bool> distrust{false};
};

struct torrent_entry {
	lt::torrent_handle h;
	std::shared_ptr<const lt::torrent_info> ti;
	/* each piece's v2 hash (v2_of): what the shim's own checks compare with */
	std::shared_ptr<const std::vector<lt::sha256_hash>> v2;
	std::shared_ptr<web_bytes> web;
	std::string save_path;             /* as given to p2p_session_add (never moved) */
	std::shared_ptr<have_cache> have;
	bool origin_last = false;          /* as given to p2p_session_add (p2p_session_reseed adds again) */
};

static bool admit_written(torrent_entry const &e);

/* Call fn(piece) for each piece that holds bytes of file index (nothing for a pad file, an empty file
 * or an index out of range). */
template <typename F> static void for_pieces_of(lt::file_storage const &fs, int index, F fn)
{
	if (index < 0 || index >= fs.num_files() || fs.pad_file_at(lt::file_index_t(index)))
		return;
	std::int64_t size = fs.file_size(lt::file_index_t(index)), at = fs.file_offset(lt::file_index_t(index));
	std::int64_t pl = fs.piece_length();
	if (size <= 0)
		return;
	for (std::int64_t p = at / pl; p <= (at + size - 1) / pl; p++)
		fn(static_cast<int>(p));
}

struct p2p_session {
	std::unique_ptr<lt::session> ses;
	std::mutex mu;                                   /* guards torrents and the removed_* bank */
	std::unordered_map<std::string, torrent_entry> torrents;  /* by btih, lowercase hex */
	std::int64_t removed_up = 0, removed_down = 0;   /* payload counts of torrents removed */
	bool draining = false;                           /* inside p2p_session_drain (loop thread only) */
	/* p2p_session_set_want_notify's: a reader waits for a new piece */
	std::atomic<void (*)(void *)> want_fn{nullptr};
	std::atomic<void *> want_ud{nullptr};
};




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
static bool btih_key(const char *btih, std::string &key)
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
static bool find_entry(struct p2p_session *s, const char *btih, torrent_entry &e)
{
	std::string key;

	if (!btih_key(btih, key))
		return false;
	std::lock_guard<std::mutex> lock(s->mu);
	auto it = s->torrents.find(key);
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

/* The plugins every torrent of a session carries: the web seeds' byte count, and for origin_last
 * the peer plugin that hides the mirror's seed. */
static void add_plugins(lt::add_torrent_params &atp, std::shared_ptr<web_bytes> web, bool origin_last)
{
	atp.extensions.push_back([web](lt::torrent_handle const &, lt::client_data_t) {
		return std::shared_ptr<lt::torrent_plugin>(std::make_shared<web_torrent_counter>(web));
	});
	if (origin_last)
		atp.extensions.push_back([](lt::torrent_handle const &, lt::client_data_t) {
			return std::shared_ptr<lt::torrent_plugin>(std::make_shared<origin_blind>());
		});
}

/* Remove h from s (its files stay), its counts banked for p2p_session_totals first: remove_torrent is
 * queued behind this status call on the network thread, and totals reads under the same lock (held
 * by the caller), so nothing counts twice. */
static void bank_and_remove(struct p2p_session *s, lt::torrent_handle const &h)
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
			int np = atp.ti->num_pieces();
			if (a->have && a->nhave != static_cast<size_t>(np)) {
				set_err(errmsg, "p2p_session_add: have names " + std::to_string(a->nhave) + " pieces, the torrent has " +
						std::to_string(np));
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
			auto v2 = std::make_shared<const std::vector<lt::sha256_hash>>(v2_of(info_of(a->torrent, a->len)));
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
			s->torrents.emplace(hex, torrent_entry{h, std::move(ti), std::move(v2), std::move(web), a->save_path,
							       std::move(have), a->origin_last});
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
		std::string key;
		if (!btih_key(btih, key))
			return HM_ERR_NOT_FOUND;
		std::lock_guard<std::mutex> lock(s->mu);
		auto it = s->torrents.find(key);
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

/*
 * Reading on demand. The torrent_info in the table is the torrent's own metadata (never renamed or
 * remapped here), so file sizes, offsets and pieces are read from it without asking libtorrent's network
 * thread; the have cache answers pieces already seen verified; only the rest cost a call to libtorrent
 * (made outside s->mu, on a copy of the entry).
 */

/* Between the deadlines of consecutive pieces of one range: they are fetched in order. */
static const int deadline_step_ms = 5;

/* The error of a call on a handle: its torrent was removed (by another thread, after find_entry), or
 * something else. */
static int handle_error(lt::system_error const &e)
{
	if (e.code() == lt::error_code(lt::errors::invalid_torrent_handle, lt::libtorrent_category()))
		return HM_ERR_NOT_FOUND;
	return HM_ERR_TORRENT;
}

/* A file index a caller may use: in range, not a pad file. */
static bool user_file(lt::file_storage const &fs, int index)
{
	return index >= 0 && index < fs.num_files() && !fs.pad_file_at(lt::file_index_t(index));
}

/* The pieces [*first, *last] that bytes [offset, offset + len) of file index touch; *first > *last for an
 * empty range. Returns 0 or -EINVAL (bad index, negative or out-of-file range). */
static int range_pieces(lt::file_storage const &fs, int index, std::int64_t offset, std::int64_t len,
			int *first, int *last)
{
	if (!user_file(fs, index))
		return -EINVAL;
	std::int64_t size = fs.file_size(lt::file_index_t(index));
	if (offset < 0 || len < 0 || offset > size || len > size - offset)
		return -EINVAL;
	if (len == 0) {
		*first = 1;
		*last = 0;
		return 0;
	}
	std::int64_t at = fs.file_offset(lt::file_index_t(index)) + offset;
	std::int64_t pl = fs.piece_length();
	*first = static_cast<int>(at / pl);
	*last = static_cast<int>((at + len - 1) / pl);
	return 0;
}

/* The entry of btih (copied out of the table) and the pieces [*first, *last] that bytes [offset,
 * offset + len) of its file index touch: 0, HM_ERR_NOT_FOUND or -EINVAL. */
static int entry_range(struct p2p_session *s, const char *btih, int index, std::int64_t offset, std::int64_t len,
		       torrent_entry &e, int *first, int *last)
{
	if (!find_entry(s, btih, e))
		return HM_ERR_NOT_FOUND;
	return range_pieces(e.ti->files(), index, offset, len, first, last);
}

extern "C" int p2p_session_files(struct p2p_session *s, const char *btih, struct p2p_file_list *out)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		list_files_of(*e.ti, out);
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_want_files(struct p2p_session *s, const char *btih, const int *index, size_t n)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		std::vector<lt::download_priority_t> prio = e.h.get_piece_priorities();
		std::vector<std::pair<lt::piece_index_t, lt::download_priority_t>> up;
		for (size_t i = 0; i < n; i++)
			for_pieces_of(e.ti->files(), index ? index[i] : -1, [&](int p) {
				if (static_cast<size_t>(p) < prio.size() && prio[static_cast<size_t>(p)] == lt::dont_download &&
				    !e.have->get(p)) {
					prio[static_cast<size_t>(p)] = lt::default_priority; /* once, if named twice */
					up.emplace_back(lt::piece_index_t(p), lt::default_priority);
				}
			});
		if (!up.empty())
			e.h.prioritize_pieces(up);
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_files_held(struct p2p_session *s, const char *btih, const struct p2p_file_list *l,
				      int64_t *held)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		std::vector<std::int64_t> fp = e.h.file_progress(lt::torrent_handle::piece_granularity);
		for (size_t i = 0; i < l->n; i++) {
			size_t k = static_cast<size_t>(l->v[i].index);
			held[i] = k < fp.size() ? fp[k] : 0;
		}
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" void p2p_session_set_want_notify(struct p2p_session *s, void (*fn)(void *ud), void *ud)
{
	s->want_fn.store(nullptr);
	s->want_ud.store(ud);
	s->want_fn.store(fn);
}

extern "C" void p2p_file_list_release(struct p2p_file_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		std::free(l->v[i].path);
	std::free(l->v);
	std::free(l->name);
	l->v = nullptr;
	l->n = 0;
	l->name = nullptr;
}

extern "C" int p2p_session_file_path(struct p2p_session *s, const char *btih, int index, char **out)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		lt::file_storage const &fs = e.ti->files();
		if (!user_file(fs, index))
			return -EINVAL;
		std::string p = fs.file_path(lt::file_index_t(index), e.save_path);
		*out = xstrdup(p.c_str());
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}


/*
 * Cache as had every piece whose bytes libtorrent has written and verified, and say whether its word
 * can be taken for this torrent. A piece passes its check (torrent_status::pieces, and
 * piece_finished_alert) as soon as its blocks are received, hashed partly from the store buffer; it
 * stays in the download queue until its last block is written, and only then is it the picker's
 * "have" (piece_picker::mark_as_finished). So: passed and not in the queue, read in that order (a
 * piece that finishes writing in between is had either way). Not trusted: a torrent in seed mode
 * (every piece counts as passed) and one that has had a piece fail (libtorrent's v2 block-hash path
 * can then mark pieces had while their re-downloaded blocks are being written): there the caller
 * reads each piece back from the file (docs/p2p.md, "Which bytes a read may return").
 */
static bool admit_written(torrent_entry const &e)
{
	lt::torrent_status st = e.h.status(lt::torrent_handle::query_pieces);
	if ((st.flags & lt::torrent_flags::seed_mode) || st.total_failed_bytes > 0 || e.have->distrust)
		return false;
	std::vector<lt::partial_piece_info> queue = e.h.get_download_queue();
	std::vector<int> busy;
	busy.reserve(queue.size());
	for (lt::partial_piece_info const &q : queue)
		busy.push_back(static_cast<int>(q.piece_index));
	std::sort(busy.begin(), busy.end());
	int n = std::min(st.pieces.size(), e.have->n);
	bool more = false;
	for (int i = 0; i < n; i++)
		if (!e.have->get(i) && st.pieces.get_bit(lt::piece_index_t(i)) &&
		    !std::binary_search(busy.begin(), busy.end(), i) && !e.have->is_evicting(i)) {
			e.have->set(i);
			more = true;
		}
	if (more)
		e.have->notify();
	return true;
}

static std::uint32_t steady_s()
{
	return static_cast<std::uint32_t>(
		std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

static std::int64_t steady_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

/* Piece p, which libtorrent believes it has, failed its hash in the files (bit rot, another process,
 * a file deleted while the agent was down): libtorrent must learn it has not, or it neither fetches
 * the piece nor stops offering it. 2.0.8 can forget no single piece: the torrent's files are checked
 * again (at most every 10 s), which finds every such piece and fetches them again. */
static void found_damaged(torrent_entry const &e, int p)
{
	std::int64_t now = steady_ms(), was = e.have->rechecked_ms.load();

	e.have->clear(p);
	e.have->damaged++;
	e.have->distrust = true;
	if (now - was >= 10000 && e.have->rechecked_ms.compare_exchange_strong(was, now))
		e.h.force_recheck();
}

extern "C" int p2p_session_have_range(struct p2p_session *s, const char *btih, int index, int64_t offset,
				      int64_t len)
{
	try {
		torrent_entry e;
		int first, last;
		int r = entry_range(s, btih, index, offset, len, e, &first, &last);
		if (r)
			return r;
		int p = first;
		while (p <= last && e.have->get(p))
			p++;
		if (p > last)
			return 1;
		/* A piece not seen yet: admit what libtorrent has whole in the files (two calls to its
		 * network thread for every piece at once; at most every 100 ms from here: the drain admits
		 * what each piece alert brings at once), or, where its word is no such promise, read the
		 * pieces back from the files. */
		std::int64_t now = steady_ms(), was = e.have->admitted_ms.load();
		if (now - was >= 100 || !e.have->trusted) {
			e.have->admitted_ms.store(now);
			e.have->trusted = admit_written(e);
		}
		if (e.have->trusted) {
			for (; p <= last; p++)
				if (!e.have->get(p))
					return 0;
			return 1;
		}
		for (; p <= last; p++) {
			if (e.have->get(p))
				continue;
			if (e.have->is_evicting(p) || !e.h.have_piece(lt::piece_index_t(p)))
				return 0;
			if (!verify_in_file(*e.ti, *e.v2, e.save_path, p)) {
				found_damaged(e, p);
				return 0;
			}
			e.have->set(p);
		}
		return 1;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_wait_range(struct p2p_session *s, const char *btih, int index, int64_t offset, int64_t len,
				      int timeout_ms)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		int r = p2p_session_have_range(s, btih, index, offset, len), first, last, p;
		if (r != 0 || timeout_ms <= 0 || range_pieces(e.ti->files(), index, offset, len, &first, &last))
			return r;
		for (p = first; p <= last && e.have->get(p); p++)
			;
		if (p > last)
			return p2p_session_have_range(s, btih, index, offset, len);
		{
			std::unique_lock<std::mutex> lock(e.have->cv_mu);
			e.have->waiting.push_back(p);
			e.have->nwaiting.fetch_add(1, std::memory_order_seq_cst);
			std::atomic_thread_fence(std::memory_order_seq_cst);
			e.have->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return e.have->get(p); });
			e.have->waiting.erase(std::find(e.have->waiting.begin(), e.have->waiting.end(), p));
			e.have->nwaiting.fetch_sub(1, std::memory_order_seq_cst);
		}
		return p2p_session_have_range(s, btih, index, offset, len);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_want_range(struct p2p_session *s, const char *btih, int index, int64_t offset,
				      int64_t len, int deadline_ms)
{
	try {
		torrent_entry e;
		int first, last;
		int r = entry_range(s, btih, index, offset, len, e, &first, &last);
		if (r)
			return r;
		if (deadline_ms < 0)
			return -EINVAL;
		/* set_piece_deadline only posts to the network thread; there libtorrent ignores a piece it
		 * has (so the cache merely saves posts), raises the piece to top priority, and, when the
		 * torrent had no deadline pending, cancels the requests to peers for other pieces that they
		 * have not served yet (libtorrent's cancel_non_critical), so that these go out first. */
		std::int64_t d = deadline_ms;
		bool told = false;
		std::uint32_t now = steady_s() + 1;
		for (int p = first; p <= last; p++) {
			if (e.have->get(p))
				continue;
			/* asked for (a read, or a readahead of one) counts as read now: a piece fetched ahead of
			 * its reader is not the coldest the moment it lands (p2p_session_cold_pieces) */
			e.have->touched[static_cast<size_t>(p)].store(now, std::memory_order_relaxed);
			/* a reader waits for this one (a readahead, with a later deadline, names none) */
			if (d == 0 && !told) {
				told = true;
				if (e.have->push_wanted(p)) {
					void (*fn)(void *) = s->want_fn.load();
					if (fn)
						fn(s->want_ud.load());
				}
			}
			e.h.set_piece_deadline(lt::piece_index_t(p), static_cast<int>(std::min<std::int64_t>(d, INT_MAX)));
			d += deadline_step_ms;
		}
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_download_pause(struct p2p_session *s, const char *btih, bool pause)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		/* libtorrent's upload mode: no request to any peer (deadlines wait too), uploads go on */
		if (pause)
			e.h.set_flags(lt::torrent_flags::upload_mode);
		else
			e.h.unset_flags(lt::torrent_flags::upload_mode);
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_verify(struct p2p_session *s, const char *btih, int *checked, int *damaged)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		int n = e.ti->num_pieces(), ok = 0, bad = 0;
		for (int p = 0; p < n; p++) {
			if (!e.h.have_piece(lt::piece_index_t(p)))
				continue;
			if (verify_in_file(*e.ti, *e.v2, e.save_path, p)) {
				ok++;
				e.have->set(p);
			} else {
				bad++;
				e.have->clear(p);
				e.have->damaged++;
			}
		}
		if (bad) {
			e.have->distrust = true;
			e.have->rechecked_ms = steady_ms();
			e.h.force_recheck();
		}
		*checked = ok + bad;
		*damaged = bad;
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_retry(struct p2p_session *s, const char *btih)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		/* an error stops the torrent (pauses it): clear it, and start it again. A write that failed
		 * (a full disk) may have lost bytes libtorrent counts as had (its mmap'd pages dropped at
		 * writeback): its word is no promise until its files are checked again, so they are, and
		 * reads meanwhile verify each piece in the file */
		e.h.clear_error();
		e.h.unset_flags(lt::torrent_flags::upload_mode);
		e.h.resume();
		e.have->distrust = true;
		e.have->rechecked_ms = steady_ms();
		e.h.force_recheck();
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

/* Write all of buf at off into fd. 0 or -errno. */
static int pwrite_all(int fd, const char *buf, size_t len, std::int64_t off)
{
	while (len) {
		ssize_t n = ::pwrite(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= static_cast<size_t>(n);
		off += n;
	}
	return 0;
}

extern "C" int p2p_session_write_piece(struct p2p_session *s, const char *btih, int piece, const char *data,
				       size_t len)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		lt::file_storage const &fs = e.ti->files();
		if (piece < 0 || piece >= e.ti->num_pieces() ||
		    len != static_cast<size_t>(e.ti->piece_size(lt::piece_index_t(piece))))
			return -EINVAL;
		if (!piece_ok(*e.ti, *e.v2, piece, data, len))
			return HM_ERR_HASH_MISMATCH;
		/* Hashed on any number of threads, written by one at a time: writes into one file from
		 * several threads wait on its inode lock by spinning (measured: a sixth of a pull's CPU) */
		std::lock_guard<std::mutex> writing(e.have->write_mu);
		std::int64_t at = 0;
		for (lt::file_slice const &sl : fs.map_block(lt::piece_index_t(piece), 0, static_cast<int>(len))) {
			const char *part = data + at;
			at += sl.size;
			if (fs.pad_file_at(sl.file_index))
				continue;
			/* libtorrent's loader made the path safe: it stays under save_path */
			std::string path = fs.file_path(sl.file_index, e.save_path);
			int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd < 0 && errno == ENOENT) { /* its folders, the first time */
				int r = path_mkdirs(path.substr(0, path.rfind('/')).c_str(), 0755);
				if (r)
					return r;
				fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			}
			if (fd < 0)
				return -errno;
			int r = pwrite_all(fd, part, static_cast<size_t>(sl.size), sl.offset);
			::close(fd);
			if (r)
				return r;
		}
		/* checked before the write, and the write has returned: a pread now sees exactly these bytes */
		e.have->set(piece);
		e.have->notify();
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

/* Add the torrent of entry it (under s->mu) again, from the torrent's bytes, with the pieces have
 * given as had (libtorrent's resume data: nothing is read or hashed) and the piece priorities prio
 * (empty: all default); its trackers and plugins are kept, its web seeds are not. On an error the
 * torrent is gone from s. */
static int add_again(struct p2p_session *s, std::unordered_map<std::string, torrent_entry>::iterator it,
		     const unsigned char *torrent, size_t len, lt::typed_bitfield<lt::piece_index_t> const &have,
		     std::vector<lt::download_priority_t> const &prio, bool keep_upload_mode, char **errmsg)
{
	torrent_entry &e = it->second;
	/* from the torrent's bytes: a torrent_info libtorrent has used no longer holds the v2 piece
	 * layers (libtorrent moves them into the torrent), without which no piece passes */
	lt::add_torrent_params atp = lt::load_torrent_buffer(
		lt::span<char const>(reinterpret_cast<char const *>(torrent),
				     static_cast<std::ptrdiff_t>(std::min<size_t>(len, PTRDIFF_MAX))),
		limits_for(len, 100000000));
	if (!atp.ti || atp.ti->info_hashes().v1 != e.ti->info_hashes().v1) {
		set_err(errmsg, "adding the torrent again: not this torrent");
		return HM_ERR_USAGE;
	}
	atp.trackers.clear();
	atp.tracker_tiers.clear();
	atp.url_seeds.clear();
	atp.ti->set_web_seeds({});
	atp.save_path = e.save_path;
	/* the trackers live in the torrent, not in its metadata */
	for (lt::announce_entry const &ae : e.h.trackers()) {
		atp.trackers.push_back(ae.url);
		atp.tracker_tiers.push_back(ae.tier);
	}
	atp.flags &= ~(lt::torrent_flags::auto_managed | lt::torrent_flags::paused);
	if (keep_upload_mode && (e.h.flags() & lt::torrent_flags::upload_mode))
		atp.flags |= lt::torrent_flags::upload_mode;
	atp.have_pieces = have;
	if (std::find(prio.begin(), prio.end(), lt::dont_download) != prio.end())
		atp.piece_priorities = prio;
	add_plugins(atp, e.web, e.origin_last);
	/* Swap: libtorrent runs the removal before the add (both go to its network thread in this
	 * order), so the info-hash is free again. The entry keeps its have cache: reads of what was
	 * had go on without a pause. No "stopped" announce from the old torrent: it could reach the
	 * tracker after the new one's "started" and drop this peer from the swarm. */
	e.h.replace_trackers({});
	bank_and_remove(s, e.h);
	lt::error_code ec;
	lt::torrent_handle h = s->ses->add_torrent(std::move(atp), ec);
	if (ec) {
		set_err(errmsg, "adding torrent " + it->first + " again: " + ec.message());
		s->torrents.erase(it);
		return HM_ERR_TORRENT;
	}
	e.h = h;
	return 0;
}

extern "C" int p2p_session_reseed(struct p2p_session *s, const char *btih, const unsigned char *torrent, size_t len,
				  char **errmsg)
{
	try {
		std::string key;
		if (!btih_key(btih, key))
			return HM_ERR_NOT_FOUND;
		std::lock_guard<std::mutex> lock(s->mu);
		auto it = s->torrents.find(key);
		if (it == s->torrents.end())
			return HM_ERR_NOT_FOUND;
		torrent_entry &e = it->second;
		lt::file_storage const &fs = e.ti->files();
		int np = e.ti->num_pieces();
		bool whole = true;
		for (int p = 0; whole && p < np; p++)
			whole = e.have->get(p);
		if (whole) {
			/* empty files have no piece: make them, as libtorrent would */
			for (lt::file_index_t i : fs.file_range()) {
				if (fs.pad_file_at(i) || fs.file_size(i) != 0)
					continue;
				std::string path = fs.file_path(i, e.save_path);
				if (path_mkdirs(path.substr(0, path.rfind('/')).c_str(), 0755) == 0) {
					int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
					if (fd >= 0)
						::close(fd);
				}
			}
		}
		/* what was written and verified here is had: libtorrent reads and hashes nothing again (a
		 * recheck of a whole snapshot cost a read of every byte and, in 2.0.8, an madvise per
		 * piece). Its wishes stay as they were. */
		lt::typed_bitfield<lt::piece_index_t> have(np, false);
		for (int p = 0; p < np; p++)
			if (e.have->get(p))
				have.set_bit(lt::piece_index_t(p));
		return add_again(s, it, torrent, len, have, e.h.get_piece_priorities(), false, errmsg);
	} catch (...) {
		return torrent_error(errmsg, "adding the torrent again: ");
	}
}

extern "C" int p2p_session_touch(struct p2p_session *s, const char *btih, int index, int64_t offset, int64_t len)
{
	try {
		torrent_entry e;
		int first, last;
		int r = entry_range(s, btih, index, offset, len, e, &first, &last);
		if (r)
			return r;
		std::uint32_t now = steady_s() + 1;
		for (int p = first; p <= last; p++)
			if (e.have->touched[static_cast<size_t>(p)].load(std::memory_order_relaxed) != now)
				e.have->touched[static_cast<size_t>(p)].store(now, std::memory_order_seq_cst);
		/* before the caller's p2p_session_have_range: an eviction that clears a piece after this
		 * sees the touch (p2p_session_evict_pieces) */
		std::atomic_thread_fence(std::memory_order_seq_cst);
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_cold_pieces(struct p2p_session *s, const char *btih, const int *keep, size_t nkeep,
				       int idle_s, struct p2p_cold **out, size_t *n)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		int np = e.ti->num_pieces();
		std::vector<char> kept(static_cast<size_t>(np), 0);
		for (size_t i = 0; i < nkeep; i++)
			for_pieces_of(e.ti->files(), keep ? keep[i] : -1, [&](int p) { kept[static_cast<size_t>(p)] = 1; });
		lt::torrent_status st = e.h.status(lt::torrent_handle::query_pieces);
		bool all = bool(st.flags & lt::torrent_flags::seed_mode) || st.is_seeding;
		std::uint32_t now = steady_s() + 1;
		std::vector<struct p2p_cold> v;
		for (int p = 0; p < np; p++) {
			std::uint32_t t = e.have->touched[static_cast<size_t>(p)].load(std::memory_order_relaxed);
			if (kept[static_cast<size_t>(p)] || e.have->is_evicting(p) || (t && now - t < static_cast<std::uint32_t>(idle_s)))
				continue;
			/* had: by libtorrent, or written here (the direct fill's pieces libtorrent does not know) */
			if (!all && !e.have->get(p) && (p >= st.pieces.size() || !st.pieces.get_bit(lt::piece_index_t(p))))
				continue;
			v.push_back({ p, t, e.ti->piece_size(lt::piece_index_t(p)) });
		}
		std::stable_sort(v.begin(), v.end(), [](p2p_cold const &a, p2p_cold const &b) { return a.touched < b.touched; });
		*out = static_cast<struct p2p_cold *>(xcalloc(v.size() + 1, sizeof(**out)));
		std::copy(v.begin(), v.end(), *out);
		*n = v.size();
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

/* Free the disk of piece p's bytes in the files (holes; the files keep their sizes). Bytes freed, or
 * -1 when nothing was freed: a file with another name (a content kept by sha256, or shared with
 * another snapshot: not this torrent's alone), or a file system without hole punching. */
static std::int64_t punch_piece(torrent_entry const &e, int p)
{
	lt::file_storage const &fs = e.ti->files();
	std::vector<std::pair<int, lt::file_slice>> fds;
	std::int64_t freed = 0;
	bool ok = true;

	for (lt::file_slice const &sl : fs.map_block(lt::piece_index_t(p), 0, e.ti->piece_size(lt::piece_index_t(p)))) {
		if (fs.pad_file_at(sl.file_index) || sl.size <= 0)
			continue;
		std::string path = fs.file_path(sl.file_index, e.save_path);
		int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		struct stat sb;
		if (fd < 0) {
			ok = errno == ENOENT; /* nothing there to free */
			continue;
		}
		fds.emplace_back(fd, sl);
		if (::fstat(fd, &sb) < 0 || sb.st_nlink > 1)
			ok = false;
	}
	for (auto &f : fds) {
		if (ok && ::fallocate(f.first, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, f.second.offset, f.second.size) == 0)
			freed += f.second.size;
		else if (ok)
			ok = false; /* (hubmirror's pieces are one file's: nothing was punched before) */
		::close(f.first);
	}
	return ok ? freed : -1;
}

extern "C" int p2p_session_evict_pieces(struct p2p_session *s, const char *btih, const unsigned char *torrent,
					size_t len, struct p2p_cold *pieces, size_t n, int64_t *freed,
					size_t *evicted, char **errmsg)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		int np = e.ti->num_pieces();
		std::vector<int> gone;
		std::int64_t bytes = 0;
		/* 1. no read admits them from now on; 2. one read since they were found cold keeps a piece
		 * (a reader touches before it looks: it then either saw the piece cleared and waits for it
		 * again, or its touch is seen here); 3. their bytes go, while libtorrent still counts them as
		 * had (so nothing writes them meanwhile); 4. the torrent is added again without them. */
		for (size_t i = 0; i < n; i++) {
			int p = pieces[i].piece;
			if (p < 0 || p >= np)
				continue;
			e.have->evicting[static_cast<size_t>(p) / 64].fetch_or(std::uint64_t(1) << (p % 64));
			e.have->clear(p);
		}
		std::atomic_thread_fence(std::memory_order_seq_cst);
		for (size_t i = 0; i < n; i++) {
			int p = pieces[i].piece;
			if (p < 0 || p >= np)
				continue;
			std::int64_t f = -1;
			if (e.have->touched[static_cast<size_t>(p)].load(std::memory_order_seq_cst) == pieces[i].touched)
				f = punch_piece(e, p);
			if (f < 0) { /* read again since, or not freed: it stays (admitted again from libtorrent) */
				e.have->evicting[static_cast<size_t>(p) / 64].fetch_and(~(std::uint64_t(1) << (p % 64)));
				pieces[i].size = 0;
				continue;
			}
			bytes += f;
			gone.push_back(p);
		}
		int r = 0;
		if (!gone.empty()) {
			std::string key;
			btih_key(btih, key);
			std::lock_guard<std::mutex> lock(s->mu);
			auto it = s->torrents.find(key);
			lt::torrent_status st;
			bool lt_had = false;
			if (it != s->torrents.end()) {
				st = it->second.h.status(lt::torrent_handle::query_pieces);
				for (int p : gone)
					lt_had |= (st.flags & lt::torrent_flags::seed_mode) ||
						  (p < st.pieces.size() && st.pieces.get_bit(lt::piece_index_t(p)));
			}
			if (it == s->torrents.end()) {
				r = HM_ERR_NOT_FOUND;
			} else if (!lt_had) {
				/* pieces only the direct fill wrote (libtorrent knows none): not wanted any more */
				std::vector<std::pair<lt::piece_index_t, lt::download_priority_t>> prio;
				for (int p : gone)
					prio.emplace_back(lt::piece_index_t(p), lt::dont_download);
				it->second.h.prioritize_pieces(prio);
			} else {
				torrent_entry &cur = it->second;
				bool trust = !(st.flags & lt::torrent_flags::seed_mode) && st.total_failed_bytes == 0 &&
					     !cur.have->distrust;
				lt::typed_bitfield<lt::piece_index_t> have(np, false);
				if (trust)
					admit_written(cur);
				for (int p = 0; p < np; p++)
					if (trust ? cur.have->get(p)
						  : ((st.flags & lt::torrent_flags::seed_mode) ||
						     (p < st.pieces.size() && st.pieces.get_bit(lt::piece_index_t(p)))))
						have.set_bit(lt::piece_index_t(p));
				std::vector<lt::download_priority_t> prio = cur.h.get_piece_priorities();
				if (prio.size() != static_cast<size_t>(np))
					prio.assign(static_cast<size_t>(np), lt::default_priority);
				for (int p : gone) {
					have.clear_bit(lt::piece_index_t(p));
					prio[static_cast<size_t>(p)] = lt::dont_download;
				}
				/* what came from seed mode is verified as it is read, as before */
				if (!trust)
					cur.have->distrust = true;
				r = add_again(s, it, torrent, len, have, prio, true, errmsg);
			}
		}
		for (int p : gone)
			e.have->evicting[static_cast<size_t>(p) / 64].fetch_and(~(std::uint64_t(1) << (p % 64)));
		if (r)
			return r;
		if (freed)
			*freed = bytes;
		if (evicted)
			*evicted = gone.size();
		return 0;
	} catch (...) {
		return torrent_error(errmsg, "evicting pieces: ");
	}
}

extern "C" int p2p_session_reannounce(struct p2p_session *s, const char *btih)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		e.h.force_reannounce(0, -1, lt::torrent_handle::ignore_min_interval);
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_take_wanted(struct p2p_session *s, const char *btih)
{
	torrent_entry e;
	if (!find_entry(s, btih, e))
		return HM_ERR_NOT_FOUND;
	return e.have->pop_wanted();
}

extern "C" int p2p_session_pieces_had(struct p2p_session *s, const char *btih, unsigned char *had, int *avail,
				      int n)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		if (n != e.ti->num_pieces())
			return -EINVAL;
		lt::torrent_status st = e.h.status(lt::torrent_handle::query_pieces);
		/* a torrent still checking its files lists no piece yet: then nothing counts as missing */
		bool known = st.pieces.size() == n && st.state != lt::torrent_status::checking_files &&
			     st.state != lt::torrent_status::checking_resume_data;
		std::vector<lt::download_priority_t> prio = e.h.get_piece_priorities();
		for (int i = 0; i < n; i++) {
			had[i] = !known || st.pieces.get_bit(lt::piece_index_t(i));
			if (!had[i] && i < static_cast<int>(prio.size()) && prio[static_cast<size_t>(i)] == lt::dont_download)
				had[i] = 2;
		}
		if (avail) {
			std::vector<int> v;
			e.h.piece_availability(v);
			for (int i = 0; i < n; i++)
				avail[i] = i < static_cast<int>(v.size()) ? std::max(v[size_t(i)], 0) : 0;
			/* a snubbed peer (it left requests unanswered: lan_tuning's request_timeout) has its
			 * pieces in name only: what only such peers have counts as nobody's */
			std::vector<lt::peer_info> peers;
			e.h.get_peer_info(peers);
			for (lt::peer_info const &pi : peers) {
				if (!(pi.flags & lt::peer_info::snubbed))
					continue;
				for (int i = 0; i < n && i < pi.pieces.size(); i++)
					if (pi.pieces.get_bit(lt::piece_index_t(i)) && avail[i] > 0)
						avail[i]--;
			}
		}
		return known ? 0 : 1;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_add_piece(struct p2p_session *s, const char *btih, int piece, const char *data,
				     size_t len)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		if (piece < 0 || piece >= e.ti->num_pieces() ||
		    len != static_cast<size_t>(e.ti->piece_size(lt::piece_index_t(piece))))
			return -EINVAL;
		/* copied into a vector libtorrent keeps: the caller's buffer is free again at once. libtorrent
		 * writes the piece's blocks and checks its hashes as for a piece from a peer; a piece that
		 * fails is dropped (hash_failed) and fetched again from peers. */
		e.h.add_piece(lt::piece_index_t(piece), std::vector<char>(data, data + len));
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}
