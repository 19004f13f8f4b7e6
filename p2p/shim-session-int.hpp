/*
 * shim-session-int.hpp - what the session's C++ files share (shim.cpp: settings, sessions, adding and
 * removing torrents, status, alerts; shim-read.cpp: reading on demand; shim-pieces.cpp: the agent's
 * direct writes and hand-over, eviction of cold pieces; shim-plugins.cpp: libtorrent plugins): the
 * session and its torrent table. Nothing outside p2p/ includes it.
 */
#ifndef HM_P2P_SHIM_SESSION_INT_HPP
#define HM_P2P_SHIM_SESSION_INT_HPP

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
			words[std::size_t(i) / 64].fetch_and(~(std::uint64_t(1) << (i % 64)),
							     std::memory_order_release);
	}
	/* Readers waiting for a piece (p2p_session_wait_range) each sleep on a condition variable of
	 * their own, with the piece they wait for; notify() after a batch of set()s wakes only those whose
	 * piece came. (One variable for all woke every waiting FUSE worker for any reader's piece: with
	 * four shards read on four threads, a dozen wake-ups and a fight for cv_mu per piece written, most
	 * of them to sleep again.) */
	struct waiter {
		explicit waiter(int p) : piece(p) {}
		int const piece;
		std::condition_variable cv;
	};
	std::mutex cv_mu;
	std::vector<waiter *> waiting;
	std::atomic<int> nwaiting{0};
	void notify()
	{
		/* (the fences pair with the waiter's: it sees the piece set, or this sees it waiting) */
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (!nwaiting.load(std::memory_order_seq_cst))
			return;
		std::lock_guard<std::mutex> lock(cv_mu);
		for (waiter *w : waiting)
			if (get(w->piece))
				w->cv.notify_one();
	}
	/* (after a recheck, an eviction, a drain that admitted nothing: wake every waiter to look again) */
	void notify_all()
	{
		std::lock_guard<std::mutex> lock(cv_mu);
		for (waiter *w : waiting)
			w->cv.notify_one();
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
	/* held by admit_written while it sets what libtorrent has, and by a piece found damaged while it
	 * sets distrust and clears the piece: a damaged piece is never admitted again on libtorrent's
	 * word taken before the damage was found */
	std::mutex admit_mu;
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

/* ---- shared between the files ---- */

/* Whether libtorrent's word that it has a piece is a promise now; admits what it has (shim-read.cpp). */
bool admit_written(torrent_entry const &e);
/* The web seed counter and the peer filter: suggestions dropped, and for origin_last the origin kept last
 * (shim-plugins.cpp). */
void add_plugins(lt::add_torrent_params &atp, std::shared_ptr<web_bytes> web, bool origin_last);
/* Bank a torrent's payload counts in s, then remove it from the session (s->mu held). */
void bank_and_remove(struct p2p_session *s, lt::torrent_handle const &h);
/* btih as the table's key (40 lowercase hex digits), false if it is none. */
bool btih_key(const char *btih, std::string &key);
/* A copy of btih's entry (under s->mu), false if the table has none. */
bool find_entry(struct p2p_session *s, const char *btih, torrent_entry &e);
/* btih's place in the table, or its end (no such torrent, or btih is none); the caller holds s->mu. */
std::unordered_map<std::string, torrent_entry>::iterator find_locked(struct p2p_session *s, const char *btih);
/* libtorrent's word on e's pieces is no promise until its files are checked again: they are, and
 * reads meanwhile verify each piece in the file (shim-read.cpp). */
void distrust_and_recheck(torrent_entry const &e);
/* The error of a call on a handle: HM_ERR_NOT_FOUND when its torrent was removed, else HM_ERR_TORRENT
 * (shim-read.cpp). */
int handle_error(lt::system_error const &e);
/* The steady clock in whole seconds (shim-read.cpp). */
std::uint32_t steady_s();
/* The entry of btih (copied out of the table) and the pieces [*first, *last] that bytes [offset,
 * offset + len) of its file index touch: 0, HM_ERR_NOT_FOUND or -EINVAL (shim-read.cpp). */
int entry_range(struct p2p_session *s, const char *btih, int index, std::int64_t offset, std::int64_t len,
		torrent_entry &e, int *first, int *last);
/* fn(e) on a copy of btih's entry, its answer returned: HM_ERR_NOT_FOUND when the table has none, and
 * every exception caught, as an extern "C" function must (libtorrent's by handle_error). */
template <typename F> static int with_entry(struct p2p_session *s, const char *btih, F fn)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		return fn(e);
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

#endif
