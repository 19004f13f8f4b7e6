/*
 * shim-pieces.cpp - the pieces the instance agent puts into a session's torrents and takes out of
 * them, on the session's table (shim-session-int.hpp): the direct fill's pieces, checked against their
 * v2 hashes and written into the files (write_piece), handed to libtorrent as a peer's (add_piece) or
 * all at once by adding the torrent again with them had (reseed); and eviction's side: when a reader
 * last read each piece (touch), the pieces read least recently (cold_pieces), and those taken out of
 * the files, their disk freed (evict_pieces).
 */
#include "shim-session-int.hpp"

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
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
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
	});
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
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
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
	});
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

extern "C" int p2p_session_add_piece(struct p2p_session *s, const char *btih, int piece, const char *data,
				     size_t len)
{
	return with_entry(s, btih, [&](torrent_entry &e) -> int {
		if (piece < 0 || piece >= e.ti->num_pieces() ||
		    len != static_cast<size_t>(e.ti->piece_size(lt::piece_index_t(piece))))
			return -EINVAL;
		/* copied into a vector libtorrent keeps: the caller's buffer is free again at once. libtorrent
		 * writes the piece's blocks and checks its hashes as for a piece from a peer; a piece that
		 * fails is dropped (hash_failed) and fetched again from peers. */
		e.h.add_piece(lt::piece_index_t(piece), std::vector<char>(data, data + len));
		return 0;
	});
}
