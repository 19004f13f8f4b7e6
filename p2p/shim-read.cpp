/*
 * shim-read.cpp - reading on demand from a session's torrents (p2p.h: files, verified ranges, waits,
 * wishes and deadlines), the agent's direct writes and hand-over (write_piece, reseed, add_piece), and
 * eviction of cold pieces; on the session's table (shim-session-int.hpp).
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
				if (static_cast<size_t>(p) < prio.size() &&
				    prio[static_cast<size_t>(p)] == lt::dont_download && !e.have->get(p)) {
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

static std::uint32_t steady_s()
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
				mark_damaged(e, p);
			}
		}
		if (bad)
			distrust_and_recheck(e);
		*checked = ok + bad;
		*damaged = bad;
		return 0;
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_verify_pieces(struct p2p_session *s, const char *btih, int first, int64_t max_bytes,
					 bool gentle, int *next, int *checked, int *damaged, int64_t *bytes)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
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
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_set_sources(struct p2p_session *s, const char *btih, const char *const *trackers,
				       size_t ntrackers, const char *const *web_seeds, size_t nweb)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
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
	} catch (lt::system_error const &err) {
		return handle_error(err);
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_session_set_room(struct p2p_session *s, const char *btih, int64_t room)
{
	try {
		torrent_entry e;
		if (!find_entry(s, btih, e))
			return HM_ERR_NOT_FOUND;
		/* libtorrent's download limit of the torrent (its peer class: every peer of it, local ones
		 * and web seeds too), in bytes a second; 0 is no limit, so no room is 1 byte a second */
		int limit = room < 0 ? 0 : room == 0 ? 1 : static_cast<int>(std::min<int64_t>(room, INT_MAX));
		if (e.h.download_limit() != limit)
			e.h.set_download_limit(limit);
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
		distrust_and_recheck(e);
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
	atp.download_limit = e.h.download_limit(); /* the room it had (p2p_session_set_room) */
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
		std::lock_guard<std::mutex> lock(s->mu);
		auto it = find_locked(s, btih);
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
			for_pieces_of(e.ti->files(), keep ? keep[i] : -1,
				      [&](int p) { kept[static_cast<size_t>(p)] = 1; });
		lt::torrent_status st = e.h.status(lt::torrent_handle::query_pieces);
		bool all = bool(st.flags & lt::torrent_flags::seed_mode) || st.is_seeding;
		std::uint32_t now = steady_s() + 1;
		std::vector<struct p2p_cold> v;
		for (int p = 0; p < np; p++) {
			std::uint32_t t = e.have->touched[static_cast<size_t>(p)].load(std::memory_order_relaxed);
			if (kept[static_cast<size_t>(p)] || e.have->is_evicting(p) ||
			    (t && now - t < static_cast<std::uint32_t>(idle_s)))
				continue;
			/* had: by libtorrent, or written here (the direct fill's pieces libtorrent does not know) */
			if (!all && !e.have->get(p) &&
			    (p >= st.pieces.size() || !st.pieces.get_bit(lt::piece_index_t(p))))
				continue;
			v.push_back({ p, t, e.ti->piece_size(lt::piece_index_t(p)) });
		}
		std::stable_sort(v.begin(), v.end(),
				 [](p2p_cold const &a, p2p_cold const &b) { return a.touched < b.touched; });
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
		if (ok && ::fallocate(f.first, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, f.second.offset,
				      f.second.size) == 0)
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
			if (e.have->touched[static_cast<size_t>(p)].load(std::memory_order_seq_cst) ==
			    pieces[i].touched)
				f = punch_piece(e, p);
			if (f < 0) { /* read again since, or not freed: it stays (admitted again from libtorrent) */
				e.have->evicting[static_cast<size_t>(p) / 64].fetch_and(
					~(std::uint64_t(1) << (p % 64)));
				pieces[i].size = 0;
				continue;
			}
			bytes += f;
			gone.push_back(p);
		}
		int r = 0;
		if (!gone.empty()) {
			std::lock_guard<std::mutex> lock(s->mu);
			auto it = find_locked(s, btih);
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
