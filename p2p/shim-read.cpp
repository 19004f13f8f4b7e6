/*
 * shim-read.cpp - reading on demand from a session's torrents (p2p.h: files, verified ranges, waits,
 * wishes and deadlines, verification, sources and room); on the session's table (shim-session-int.hpp).
 * The pieces the agent writes, hands over and takes out are shim-pieces.cpp's.
 */
#include "shim-session-int.hpp"

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
int handle_error(lt::system_error const &e)
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
int entry_range(struct p2p_session *s, const char *btih, int index, std::int64_t offset, std::int64_t len,
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
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		std::vector<lt::download_priority_t> prio = e.h.get_piece_priorities();
		std::vector<std::pair<lt::piece_index_t, lt::download_priority_t>> up;
		for (size_t i = 0; i < n; i++)
			for_pieces_of(e.ti->files(), index ? index[i] : -1, [&](int p) {
				if (static_cast<size_t>(p) < prio.size() &&
				    prio[static_cast<size_t>(p)] == lt::dont_download && !e.have->get(p)) {
					prio[static_cast<size_t>(p)] = lt::default_priority; /* once, if named twice */
					up.emplace_back(lt::piece_index_t(p), lt::default_priority);
				}
			});
		if (!up.empty())
			e.h.prioritize_pieces(up);
		return 0;
	});
}

extern "C" int p2p_session_files_held(struct p2p_session *s, const char *btih, const struct p2p_file_list *l,
				      int64_t *held)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		std::vector<std::int64_t> fp = e.h.file_progress(lt::torrent_handle::piece_granularity);
		for (size_t i = 0; i < l->n; i++) {
			size_t k = static_cast<size_t>(l->v[i].index);
			held[i] = k < fp.size() ? fp[k] : 0;
		}
		return 0;
	});
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
bool admit_written(torrent_entry const &e)
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
	/* (libtorrent's word was taken before a piece found damaged meanwhile cleared its bit: under the
	 * lock mark_damaged takes, either this sets the bit first and the damage clears it after, or the
	 * damage came first and nothing is set) */
	std::lock_guard<std::mutex> lock(e.have->admit_mu);
	if (e.have->distrust)
		return false;
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

std::uint32_t steady_s()
{
	return static_cast<std::uint32_t>(
		std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch())
			.count());
}

static std::int64_t steady_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

void distrust_and_recheck(torrent_entry const &e)
{
	e.have->distrust = true;
	e.have->rechecked_ms = steady_ms();
	e.h.force_recheck();
}

/* Piece p, which libtorrent believes it has, failed its hash in the files (bit rot, another process,
 * a file deleted while the agent was down): libtorrent must learn it has not, or it neither fetches
 * the piece nor stops offering it. 2.0.8 can forget no single piece: the torrent's files are checked
 * again (at most every 10 s), which finds every such piece and fetches them again. */
static void mark_damaged(torrent_entry const &e, int p)
{
	std::lock_guard<std::mutex> lock(e.have->admit_mu);

	e.have->distrust = true; /* before the bit goes: admit_written must not set it again */
	e.have->clear(p);
	e.have->damaged++;
}

static void found_damaged(torrent_entry const &e, int p)
{
	std::int64_t now = steady_ms(), was = e.have->rechecked_ms.load();

	mark_damaged(e, p);
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
			have_cache::waiter w(p);
			std::unique_lock<std::mutex> lock(e.have->cv_mu);
			e.have->waiting.push_back(&w);
			e.have->nwaiting.fetch_add(1, std::memory_order_seq_cst);
			std::atomic_thread_fence(std::memory_order_seq_cst);
			w.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return e.have->get(p); });
			e.have->waiting.erase(std::find(e.have->waiting.begin(), e.have->waiting.end(), &w));
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
			e.h.set_piece_deadline(lt::piece_index_t(p),
					       static_cast<int>(std::min<std::int64_t>(d, INT_MAX)));
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
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		/* libtorrent's upload mode: no request to any peer (deadlines wait too), uploads go on */
		if (pause)
			e.h.set_flags(lt::torrent_flags::upload_mode);
		else
			e.h.unset_flags(lt::torrent_flags::upload_mode);
		return 0;
	});
}

extern "C" int p2p_session_verify(struct p2p_session *s, const char *btih, int *checked, int *damaged)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		int n = e.ti->num_pieces(), ok = 0, bad = 0;
		for (int p = 0; p < n; p++) {
			if (!e.h.have_piece(lt::piece_index_t(p)))
				continue;
			if (verify_in_file(*e.ti, *e.v2, e.save_path, p)) {
				ok++;
				e.have->set(p);
			} else {
				bad++;
				mark_damaged(e, p);
			}
		}
		if (bad)
			distrust_and_recheck(e);
		*checked = ok + bad;
		*damaged = bad;
		return 0;
	});
}

extern "C" int p2p_session_verify_pieces(struct p2p_session *s, const char *btih, int first, int64_t max_bytes,
					 bool gentle, int *next, int *checked, int *damaged, int64_t *bytes)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		int n = e.ti->num_pieces(), ok = 0, bad = 0, p = std::max(first, 0);
		std::int64_t read = 0;
		for (; p < n && (read < max_bytes || ok + bad == 0); p++) {
			if (e.have->is_evicting(p) || !e.h.have_piece(lt::piece_index_t(p)))
				continue;
			read += e.ti->piece_size(lt::piece_index_t(p));
			if (verify_in_file(*e.ti, *e.v2, e.save_path, p, gentle)) {
				ok++;
				e.have->set(p);
			} else if (e.have->is_evicting(p)) {
				continue; /* eviction took its bytes meanwhile (a hole): not damage */
			} else {
				bad++;
				mark_damaged(e, p);
			}
		}
		if (bad)
			distrust_and_recheck(e);
		*next = p;
		*checked = ok + bad;
		*damaged = bad;
		*bytes = read;
		return 0;
	});
}

extern "C" int p2p_session_set_sources(struct p2p_session *s, const char *btih, const char *const *trackers,
				       size_t ntrackers, const char *const *web_seeds, size_t nweb)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		std::vector<lt::announce_entry> v;
		for (size_t i = 0; i < ntrackers; i++) {
			if (!trackers[i])
				continue;
			lt::announce_entry ae(trackers[i]);
			ae.tier = static_cast<std::uint8_t>(std::min<size_t>(v.size(), 255));
			v.push_back(std::move(ae));
		}
		e.h.replace_trackers(v);
		for (std::string const &u : e.h.url_seeds())
			e.h.remove_url_seed(u);
		for (size_t i = 0; i < nweb; i++)
			if (web_seeds[i])
				e.h.add_url_seed(web_seeds[i]);
		if (!v.empty())
			e.h.force_reannounce(0, -1, lt::torrent_handle::ignore_min_interval);
		return 0;
	});
}

extern "C" int p2p_session_set_room(struct p2p_session *s, const char *btih, int64_t room)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		/* libtorrent's download limit of the torrent (its peer class: every peer of it, local ones
		 * and web seeds too), in bytes a second; 0 is no limit, so no room is 1 byte a second */
		int limit = room < 0 ? 0 : room == 0 ? 1 : static_cast<int>(std::min<int64_t>(room, INT_MAX));
		if (e.h.download_limit() != limit)
			e.h.set_download_limit(limit);
		return 0;
	});
}

extern "C" int p2p_session_retry(struct p2p_session *s, const char *btih)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		/* an error stops the torrent (pauses it): clear it, and start it again. A write that failed
		 * (a full disk) may have lost bytes libtorrent counts as had (its mmap'd pages dropped at
		 * writeback): its word is no promise until its files are checked again, so they are, and
		 * reads meanwhile verify each piece in the file */
		e.h.clear_error();
		e.h.unset_flags(lt::torrent_flags::upload_mode);
		e.h.resume();
		distrust_and_recheck(e);
		return 0;
	});
}

extern "C" int p2p_session_reannounce(struct p2p_session *s, const char *btih)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		e.h.force_reannounce(0, -1, lt::torrent_handle::ignore_min_interval);
		return 0;
	});
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
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		if (n != e.ti->num_pieces())
			return -EINVAL;
		lt::torrent_status st = e.h.status(lt::torrent_handle::query_pieces);
		/* a torrent still checking its files lists no piece yet: then nothing counts as missing */
		bool known = st.pieces.size() == n && st.state != lt::torrent_status::checking_files &&
			     st.state != lt::torrent_status::checking_resume_data;
		std::vector<lt::download_priority_t> prio = e.h.get_piece_priorities();
		for (int i = 0; i < n; i++) {
			had[i] = !known || st.pieces.get_bit(lt::piece_index_t(i));
			if (!had[i] && i < static_cast<int>(prio.size()) &&
			    prio[static_cast<size_t>(i)] == lt::dont_download)
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
	});
}
