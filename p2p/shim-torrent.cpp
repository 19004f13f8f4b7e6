/*
 * shim-torrent.cpp - torrents as files: the libtorrent half of p2p_torrent_create (the hybrid torrent
 * of a snapshot, hashed straight from the store's files), and reading torrents and checking files
 * against them (p2p_torrent_info_hash, p2p_torrent_web_seeds, p2p_torrent_verify_file; the v2 piece
 * checks the session shares, shim-int.hpp). The session side is shim.cpp, shim-read.cpp and shim-plugins.cpp.
 *
 * libtorrent lays the torrent out (file order, pad files, piece count) and writes it; the hashes are
 * computed here, reading each file from its source path or its reader (a content the store's bucket
 * holds and local disk does not, read in ranges), because libtorrent's set_piece_hashes reads only
 * from a directory laid out under the torrent's own paths: for a snapshot of 100,000 files that meant
 * as many symlinks made and removed again, 90% of the time of a torrent (docs/p2p.md).
 *
 * In a hybrid torrent every file starts a piece and is followed by a pad file to the piece's end, so
 * each piece holds the bytes of one file and zeros. Its v1 hash is the SHA-1 of those bytes, zeros
 * included. Its v2 hash (BEP 52) is the root of a Merkle tree of SHA-256s of its 16 KiB blocks. The
 * last block may be short. The leaves past the file's last block are zero, and the tree is as wide as
 * a piece, or, for a file smaller than one piece, as its block count rounded up to a power of two.
 * That is what libtorrent's own set_piece_hashes computes; the unit tests compare the info-hashes with
 * it (python3-libtorrent).
 */
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <libtorrent/bencode.hpp>
#include <libtorrent/create_torrent.hpp>
#include <libtorrent/file_storage.hpp>
#include <libtorrent/hasher.hpp>
#include <libtorrent/torrent_info.hpp>

extern "C" {
#include "base/err.h"
#include "base/xmalloc.h"
#include "p2p-int.h"
#include "p2p/p2p.h"
}
#include "shim-int.hpp"

namespace {

constexpr int block_size = 16 * 1024;

/* The root of a Merkle tree over leaves (a power of two of them), SHA-256 of each pair's 64 bytes. */
lt::sha256_hash merkle_root(std::vector<lt::sha256_hash> &leaves)
{
	for (size_t width = leaves.size(); width > 1; width /= 2)
		for (size_t i = 0; i < width / 2; i++) {
			lt::hasher256 h;
			h.update(leaves[2 * i]);
			h.update(leaves[2 * i + 1]);
			leaves[i] = h.final();
		}
	return leaves[0];
}

/* The smallest power of two >= n (n >= 1). */
size_t pow2_at_least(size_t n)
{
	size_t p = 1;
	while (p < n)
		p *= 2;
	return p;
}

/* The hashes of one torrent, filled by the hashing threads, then handed to create_torrent. */
struct hashing {
	lt::file_storage const &fs;
	std::vector<const p2p_file *> const &source;  /* by file index; NULL for pad and empty files */
	std::vector<lt::sha1_hash> v1;                 /* by piece */
	std::vector<std::vector<lt::sha256_hash>> v2;  /* by file index: its pieces' roots */
	std::vector<int> files;                        /* the files to hash, in order */
	struct job {
		int fi, k0, n;                         /* pieces [k0, k0 + n) of file fi, counted from its first */
	};
	std::vector<job> jobs;                         /* the files cut into jobs, in order */
	std::atomic<size_t> next{0};
	std::atomic<bool> failed{false};
	std::mutex mu;
	int error = 0;
	std::string message;

	hashing(lt::file_storage const &f, std::vector<const p2p_file *> const &s) : fs(f), source(s) {}

	void fail(int code, std::string const &msg)
	{
		std::lock_guard<std::mutex> g(mu);
		if (!error) {
			error = code;
			message = msg;
		}
		failed = true;
	}
};

/* The width of file f's piece subtrees: a piece's blocks, or for a file smaller than a piece its blocks
 * rounded up to a power of two (BEP 52; what set_piece_hashes computes). */
size_t subtree_width(lt::file_storage const &fs, lt::file_index_t f)
{
	std::int64_t const size = fs.file_size(f), plen = fs.piece_length();
	size_t const file_blocks = static_cast<size_t>((size + block_size - 1) / block_size);
	return size < plen ? pow2_at_least(file_blocks) : static_cast<size_t>(plen / block_size);
}

/* The root of the subtree over want bytes at data (a piece's part of one file), width leaves wide. */
lt::sha256_hash subtree_root(const char *data, size_t want, size_t width, std::vector<lt::sha256_hash> &leaves)
{
	leaves.assign(width, lt::sha256_hash());
	for (size_t b = 0; b * block_size < want && b < width; b++) {
		size_t const len = std::min(static_cast<size_t>(block_size), want - b * block_size);
		leaves[b] = lt::hasher256(data + b * block_size, static_cast<int>(len)).final();
	}
	return merkle_root(leaves);
}

/* A job is 8 MiB of whole pieces of one file (one piece, when pieces are bigger): one call of a file's
 * reader (one GET of the bucket's, not one for each 64 KiB piece of a small torrent), one pread of a
 * file; and what lets every hashing thread work on one big file. */
constexpr std::int64_t job_bytes = 8 * 1024 * 1024;

/* Bytes [at, at + len) of file fi into buf, all of them: true, or false once hs.fail said why. */
bool read_bytes(hashing &hs, int fi, int fd, char *buf, size_t len, std::int64_t at)
{
	p2p_file const &f = *hs.source[static_cast<size_t>(fi)];
	size_t got = 0;

	if (f.read) {
		char *why = nullptr;
		int r = f.read(f.ud, at, buf, len, &why);
		if (r) {
			hs.fail(r < 0 ? r : HM_ERR_TORRENT, std::string("reading ") + quoted(f.path) + " at " +
								    std::to_string(at) + ": " +
								    (why ? why : err_str(r < 0 ? r : HM_ERR_TORRENT)));
		}
		free(why);
		return !r;
	}
	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, at + static_cast<std::int64_t>(got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			hs.fail(r < 0 ? -errno : HM_ERR_SIZE_MISMATCH,
				std::string("reading ") + f.source + ": " +
					(r < 0 ? std::strerror(errno) : "shorter than its size"));
			return false;
		}
		got += static_cast<size_t>(r);
	}
	return true;
}

/* Cut every file into jobs, and size its v2 hashes (before the threads start: each job then writes
 * its own pieces' entries only). */
void plan_jobs(hashing &hs)
{
	std::int64_t const plen = hs.fs.piece_length();
	int const per = static_cast<int>(std::max<std::int64_t>(1, job_bytes / plen));

	for (int fi : hs.files) {
		std::int64_t const size = hs.fs.file_size(lt::file_index_t(fi));
		int const npieces = static_cast<int>((size + plen - 1) / plen);
		hs.v2[static_cast<size_t>(fi)].resize(static_cast<size_t>(npieces));
		for (int k0 = 0; k0 < npieces; k0 += per)
			hs.jobs.push_back({ fi, k0, std::min(per, npieces - k0) });
	}
}

/* Hash one job: its pieces' bytes, each piece's then the pad's zeros after the file's last. buf is the
 * thread's, grown to the job's whole pieces (so that the last piece's pad fits after its bytes). */
void hash_job(hashing &hs, hashing::job const &j, std::vector<char> &buf, std::vector<lt::sha256_hash> &leaves)
{
	lt::file_index_t const f(j.fi);
	p2p_file const &src = *hs.source[static_cast<size_t>(j.fi)];
	std::int64_t const size = hs.fs.file_size(f), plen = hs.fs.piece_length(), at = j.k0 * plen;
	int const first = static_cast<int>(hs.fs.file_offset(f) / plen);
	size_t const width = subtree_width(hs.fs, f);
	size_t const len = static_cast<size_t>(std::min(j.n * plen, size - at));
	int fd = -1;

	if (!src.read && (fd = open(src.source, O_RDONLY | O_CLOEXEC)) < 0) {
		hs.fail(-errno, std::string("opening ") + src.source + ": " + std::strerror(errno));
		return;
	}
	if (buf.size() < static_cast<size_t>(j.n * plen))
		buf.resize(static_cast<size_t>(j.n * plen));
	bool const ok = read_bytes(hs, j.fi, fd, buf.data(), len, at);
	if (fd >= 0)
		close(fd);
	for (int i = 0; ok && i < j.n; i++) {
		int const k = j.k0 + i, piece = first + k;
		size_t const want = static_cast<size_t>(std::min(plen, size - k * plen));
		size_t const span = static_cast<size_t>(hs.fs.piece_size(lt::piece_index_t(piece)));
		char *data = buf.data() + i * plen;
		/* v1: the piece as peers see it, the pad's zeros included (only the file's last piece has one) */
		std::memset(data + want, 0, span > want ? span - want : 0);
		hs.v1[static_cast<size_t>(piece)] = lt::hasher(data, static_cast<int>(span)).final();
		/* v2: this piece's subtree of the file's Merkle tree */
		hs.v2[static_cast<size_t>(j.fi)][static_cast<size_t>(k)] = subtree_root(data, want, width, leaves);
	}
}

void hash_worker(hashing &hs)
{
	std::vector<char> buf;
	std::vector<lt::sha256_hash> leaves;

	/* jobs are taken in order, and a job taken is read even if another failed meanwhile: a reader may
	 * wait for the ranges before its own (p2p.h) */
	for (size_t i; !hs.failed && (i = hs.next++) < hs.jobs.size();)
		hash_job(hs, hs.jobs[i], buf, leaves);
}

/* SHA-1 + SHA-256 of every byte, one thread per core, at most 8 (the files are usually in the page
 * cache, just written; a bucket's reads wait on the network, several at once). */
void hash_all(hashing &hs)
{
	unsigned cores = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
	std::vector<std::thread> workers;

	try {
		for (unsigned t = 1; t < cores && t < hs.jobs.size(); t++)
			workers.emplace_back(hash_worker, std::ref(hs));
	} catch (...) {
		/* no more threads: the ones started and this one do the work */
	}
	hash_worker(hs);
	for (std::thread &w : workers)
		w.join();
}

/* The torrent as a client loaded it holds every path of want unchanged, and is hybrid: 0, or an error
 * with *errmsg. */
int loads_back_same(lt::torrent_info const &ti, std::vector<std::string> const &want, char **errmsg)
{
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
	return 0;
}

} // namespace

/*
 * Torrent creation. Determinism comes from fixing every input libtorrent would otherwise pick:
 * the piece size (caller's rule), the file order (libtorrent canonicalises hybrid torrents itself, and
 * the caller already sorted the same way), no file attributes, no mtime, no creation date, no creator.
 * 2.0.8 pads after the last file too ("tail padding", new in 2.0.8): torrents made by other libtorrent
 * versions of the same files can differ, so every node must run the same one (docs/libtorrent.md).
 */
extern "C" int p2p__torrent_build(const char *name, const struct p2p_file *const *files, size_t n,
				  int64_t piece_size, struct p2p__built *out, char **errmsg)
{
	try {
		lt::file_storage fs;
		std::vector<std::string> want;
		std::unordered_map<std::string, const p2p_file *> by_path;
		want.reserve(n);
		by_path.reserve(n);
		fs.reserve(static_cast<int>(std::min<size_t>(n, INT_MAX)));
		for (size_t i = 0; i < n; i++) {
			want.push_back(std::string(name) + "/" + files[i]->path);
			fs.add_file(want.back(), files[i]->size);
			by_path.emplace(want.back(), files[i]);
		}
		lt::create_torrent ct(fs, static_cast<int>(piece_size), lt::create_torrent::no_attributes);
		ct.set_creation_date(0); /* 0: the key is left out */

		/* The laid-out torrent's files (pads added, maybe reordered) back to their sources. */
		lt::file_storage const &laid = ct.files();
		std::vector<const p2p_file *> source(static_cast<size_t>(laid.num_files()), nullptr);
		hashing hs(laid, source);
		hs.v1.resize(static_cast<size_t>(laid.num_pieces()));
		hs.v2.resize(static_cast<size_t>(laid.num_files()));
		for (lt::file_index_t i : laid.file_range()) {
			if (laid.pad_file_at(i) || laid.file_size(i) == 0)
				continue;
			auto it = by_path.find(laid.file_path(i));
			if (it == by_path.end() || laid.file_offset(i) % laid.piece_length()) {
				set_err(errmsg, "libtorrent laid out \"" + std::string(name) + "\" unexpectedly");
				return HM_ERR_TORRENT;
			}
			source[static_cast<size_t>(static_cast<int>(i))] = it->second;
			hs.files.push_back(static_cast<int>(i));
		}

		plan_jobs(hs);
		hash_all(hs);
		if (hs.failed) {
			set_err(errmsg, "hashing \"" + std::string(name) + "\": " + hs.message);
			return hs.error;
		}
		for (lt::piece_index_t p : laid.piece_range())
			ct.set_hash(p, hs.v1[static_cast<size_t>(static_cast<int>(p))]);
		for (int fi : hs.files)
			for (size_t k = 0; k < hs.v2[static_cast<size_t>(fi)].size(); k++)
				ct.set_hash2(lt::file_index_t(fi), lt::piece_index_t::diff_type(static_cast<int>(k)),
					     hs.v2[static_cast<size_t>(fi)][k]);

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
		lt::load_torrent_limits lim = limits_for(buf.size(), 10000000);
		lt::torrent_info ti(lt::span<char const>(buf.data(), static_cast<std::ptrdiff_t>(buf.size())), lim,
				    lt::from_span);
		if (int r = loads_back_same(ti, want, errmsg))
			return r;

		out->len = buf.size();
		out->data = static_cast<unsigned char *>(xmalloc(buf.size()));
		std::memcpy(out->data, buf.data(), buf.size());
		std::memcpy(out->v1, ti.info_hashes().v1.data(), sizeof out->v1);
		std::memcpy(out->v2, ti.info_hashes().v2.data(), sizeof out->v2);
		out->pieces = ti.num_pieces();
		return 0;
	} catch (...) {
		return torrent_error(errmsg, std::string("creating torrent \"") + name + "\": ");
	}
}

/* ---- reading torrents and files ---------------------------------------------------------------- */

std::vector<lt::sha256_hash> v2_of(lt::torrent_info const &ti)
{
	lt::file_storage const &fs = ti.files();
	std::int64_t const plen = fs.piece_length();
	std::vector<lt::sha256_hash> v;

	if (!ti.info_hashes().has_v2())
		return v;
	v.resize(static_cast<size_t>(ti.num_pieces()));
	for (lt::file_index_t f : fs.file_range()) {
		std::int64_t const size = fs.file_size(f);
		if (fs.pad_file_at(f) || size == 0)
			continue;
		std::int64_t const first = fs.file_offset(f) / plen, npieces = (size + plen - 1) / plen;
		/* a file bigger than a piece: its piece layer; one no bigger: its root */
		lt::span<char const> layer = ti.piece_layer(f);
		if (fs.file_offset(f) % plen ||
		    layer.size() != npieces * static_cast<std::ptrdiff_t>(lt::sha256_hash::size()))
			return {};
		for (std::int64_t k = 0; k < npieces; k++)
			v[static_cast<size_t>(first + k)] = lt::sha256_hash(layer.data() + k * lt::sha256_hash::size());
	}
	return v;
}

namespace {

/* The file piece p holds bytes of, and how many (pads are zeros, not hashed in v2); -1 when the piece
 * spans two real files (a v1 torrent's layout: checked by its v1 hash). */
int piece_file(lt::file_storage const &fs, int p, std::int64_t &bytes)
{
	int file = -1;

	bytes = 0;
	for (lt::file_slice const &sl : fs.map_block(lt::piece_index_t(p), 0, fs.piece_size(lt::piece_index_t(p)))) {
		if (fs.pad_file_at(sl.file_index))
			continue;
		if (file >= 0 && file != static_cast<int>(sl.file_index))
			return -1;
		file = static_cast<int>(sl.file_index);
		bytes += sl.size;
	}
	return file;
}

} // namespace

bool piece_ok(lt::torrent_info const &ti, std::vector<lt::sha256_hash> const &v2, int p, const char *data, size_t len)
{
	lt::file_storage const &fs = ti.files();
	std::int64_t want;
	int f;

	if (p < 0 || p >= ti.num_pieces() || len != static_cast<size_t>(ti.piece_size(lt::piece_index_t(p))))
		return false;
	if (v2.size() != static_cast<size_t>(ti.num_pieces()) || (f = piece_file(fs, p, want)) < 0)
		return lt::hasher(data, static_cast<int>(len)).final() == ti.hash_for_piece(lt::piece_index_t(p));
	static thread_local std::vector<lt::sha256_hash> leaves;
	return subtree_root(data, static_cast<size_t>(want), subtree_width(fs, lt::file_index_t(f)), leaves) ==
	       v2[static_cast<size_t>(p)];
}

/* Is any page of [at, at + len) of fd in the page cache? (mincore of a mapping of it; true when that
 * cannot be told, so that nothing is dropped on a guess.) */
static bool cached(int fd, std::int64_t at, size_t len)
{
	long const pg = sysconf(_SC_PAGESIZE);
	std::int64_t const start = at - at % pg;
	size_t const span = static_cast<size_t>(at - start) + len;
	std::vector<unsigned char> vec((span + static_cast<size_t>(pg) - 1) / static_cast<size_t>(pg));
	void *m = ::mmap(nullptr, span, PROT_READ, MAP_SHARED, fd, start);
	bool any = true;

	if (m == MAP_FAILED)
		return true;
	if (::mincore(m, span, vec.data()) == 0)
		any = std::any_of(vec.begin(), vec.end(), [](unsigned char v) { return v & 1; });
	::munmap(m, span);
	return any;
}

/* Reads through the page cache, so right after a piece was written this costs the hashing only (one
 * pass: SHA-256 of its 16 KiB blocks, or SHA-1 of the piece for a torrent without v2 hashes). */
bool verify_in_file(lt::torrent_info const &ti, std::vector<lt::sha256_hash> const &v2, std::string const &save_path,
		    int p, bool gentle)
{
	static thread_local std::vector<char> buf(256 * 1024);
	static thread_local std::vector<lt::sha256_hash> leaves;
	static const std::vector<char> zeros(64 * 1024, 0);
	lt::file_storage const &fs = ti.files();
	lt::piece_index_t const piece(p);
	std::int64_t want;
	int const f = v2.size() == static_cast<size_t>(ti.num_pieces()) ? piece_file(fs, p, want) : -1;
	lt::hasher h;

	if (f >= 0)
		leaves.assign(subtree_width(fs, lt::file_index_t(f)), lt::sha256_hash());
	size_t leaf = 0;
	for (lt::file_slice const &sl : fs.map_block(piece, 0, fs.piece_size(piece))) {
		std::int64_t left = sl.size;
		if (fs.pad_file_at(sl.file_index)) {
			if (f >= 0)
				continue;
			for (; left > 0; left -= std::min<std::int64_t>(left, std::int64_t(zeros.size())))
				h.update(zeros.data(),
					 static_cast<int>(std::min<std::int64_t>(left, std::int64_t(zeros.size()))));
			continue;
		}
		std::string path = fs.file_path(sl.file_index, save_path);
		int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return false;
		/* gentle: no readahead, which would bring in the next chunk's pages, and a chunk with any
		 * page in counts as cached and stays: a scrub behind a mount's reads kept every byte */
		if (gentle)
			(void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
		std::int64_t at = sl.offset;
		while (left > 0) {
			/* a chunk read whole, so that v2's 16 KiB blocks never straddle two reads */
			size_t const chunk =
				static_cast<size_t>(std::min<std::int64_t>(left, std::int64_t(buf.size())));
			size_t got = 0;
			bool const drop = gentle && !cached(fd, at, chunk);
			while (got < chunk) {
				ssize_t n =
					::pread(fd, buf.data() + got, chunk - got, at + static_cast<std::int64_t>(got));
				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0)
					break;
				got += static_cast<size_t>(n);
			}
			if (drop) /* what only this read brought in goes again */
				(void)posix_fadvise(fd, at, static_cast<off_t>(chunk), POSIX_FADV_DONTNEED);
			if (got < chunk)
				break;
			if (f < 0) {
				h.update(buf.data(), static_cast<int>(chunk));
			} else {
				for (size_t b = 0; b < chunk && leaf < leaves.size(); b += block_size)
					leaves[leaf++] =
						lt::hasher256(buf.data() + b,
							      static_cast<int>(std::min<size_t>(block_size, chunk - b)))
							.final();
			}
			at += static_cast<std::int64_t>(chunk);
			left -= static_cast<std::int64_t>(chunk);
		}
		::close(fd);
		if (left > 0)
			return false;
	}
	if (f >= 0)
		return merkle_root(leaves) == v2[static_cast<size_t>(p)];
	return h.final() == ti.hash_for_piece(piece);
}

extern "C" int p2p_torrent_info_hash(const unsigned char *torrent, size_t len, char *btih_out, char **errmsg)
{
	try {
		if (!torrent || !btih_out) {
			set_err(errmsg, "p2p_torrent_info_hash: missing torrent");
			return HM_ERR_USAGE;
		}
		lt::torrent_info ti = info_of(torrent, len);
		if (!ti.info_hashes().has_v1()) {
			set_err(errmsg, "torrent has no v1 info-hash (v2-only torrents are not supported)");
			return HM_ERR_TORRENT;
		}
		static const char digits[] = "0123456789abcdef";
		auto const &h = ti.info_hashes().v1;
		for (int i = 0; i < 20; i++) {
			btih_out[2 * i] = digits[static_cast<unsigned char>(h[i]) >> 4];
			btih_out[2 * i + 1] = digits[static_cast<unsigned char>(h[i]) & 15];
		}
		btih_out[40] = '\0';
		return 0;
	} catch (...) {
		return torrent_error(errmsg, "not a torrent: ");
	}
}

extern "C" int p2p_torrent_web_seeds(const unsigned char *torrent, size_t len, char ***out, size_t *n)
{
	try {
		if (!torrent || !out || !n)
			return HM_ERR_USAGE;
		lt::torrent_info ti = info_of(torrent, len);
		std::vector<lt::web_seed_entry> const &ws = ti.web_seeds();
		char **v = static_cast<char **>(xcalloc(ws.size() + 1, sizeof(char *)));
		for (size_t i = 0; i < ws.size(); i++)
			v[i] = xstrdup(ws[i].url.c_str());
		*out = v;
		*n = ws.size();
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

extern "C" int p2p_torrent_trackers(const unsigned char *torrent, size_t len, char ***out, size_t *n)
{
	try {
		if (!torrent || !out || !n)
			return HM_ERR_USAGE;
		lt::torrent_info ti = info_of(torrent, len);
		std::vector<lt::announce_entry> const &tr = ti.trackers();
		char **v = static_cast<char **>(xcalloc(tr.size() + 1, sizeof(char *)));
		for (size_t i = 0; i < tr.size(); i++)
			v[i] = xstrdup(tr[i].url.c_str());
		*out = v;
		*n = tr.size();
		return 0;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}

void list_files_of(lt::torrent_info const &ti, struct p2p_file_list *out)
{
	lt::file_storage const &fs = ti.files();
	std::string name = ti.name();
	std::string prefix = name + "/";
	std::vector<std::string> paths;
	std::vector<int> idx;
	for (lt::file_index_t i : fs.file_range()) {
		if (fs.pad_file_at(i))
			continue;
		std::string p = fs.file_path(i);
		if (p.compare(0, prefix.size(), prefix) == 0)
			p.erase(0, prefix.size());
		paths.push_back(std::move(p));
		idx.push_back(static_cast<int>(i));
	}
	/* Nothing below throws (the x* family aborts on out of memory). */
	struct p2p_file_list l;
	l.n = paths.size();
	l.v = static_cast<struct p2p_file_entry *>(xcalloc(l.n ? l.n : 1, sizeof *l.v));
	for (size_t i = 0; i < l.n; i++) {
		l.v[i].path = xstrdup(paths[i].c_str());
		l.v[i].size = fs.file_size(lt::file_index_t(idx[i]));
		l.v[i].index = idx[i];
		l.v[i].offset = fs.file_offset(lt::file_index_t(idx[i]));
	}
	l.name = xstrdup(name.c_str());
	l.piece_size = fs.piece_length();
	l.pieces = fs.num_pieces();
	l.total = fs.total_size();
	*out = l;
}

extern "C" int p2p_torrent_files(const unsigned char *torrent, size_t len, struct p2p_file_list *out, char **errmsg)
{
	try {
		if (!torrent || !out)
			return HM_ERR_USAGE;
		lt::torrent_info ti = info_of(torrent, len);
		list_files_of(ti, out);
		return 0;
	} catch (...) {
		return torrent_error(errmsg, "reading the torrent: ");
	}
}

extern "C" int p2p_torrent_verify_file(const unsigned char *torrent, size_t len, const char *save_path,
				       const char *path)
{
	try {
		if (!torrent || !save_path || !path)
			return HM_ERR_USAGE;
		lt::torrent_info ti = info_of(torrent, len);
		if (!ti.info_hashes().has_v1())
			return HM_ERR_TORRENT;
		std::vector<lt::sha256_hash> const v2 = v2_of(ti);
		lt::file_storage const &fs = ti.files();
		std::string want = ti.name() + "/" + path;
		for (lt::file_index_t i : fs.file_range()) {
			if (fs.pad_file_at(i) || fs.file_path(i) != want)
				continue;
			std::int64_t size = fs.file_size(i);
			if (size == 0)
				return 1;
			std::int64_t start = fs.file_offset(i), pl = fs.piece_length();
			/* a piece that holds bytes of another real file cannot be checked from this one */
			for (int p = int(start / pl); p <= int((start + size - 1) / pl); p++) {
				for (lt::file_slice const &sl :
				     fs.map_block(lt::piece_index_t(p), 0, fs.piece_size(lt::piece_index_t(p))))
					if (sl.file_index != i && !fs.pad_file_at(sl.file_index))
						return 0;
				if (!verify_in_file(ti, v2, save_path, p))
					return 0;
			}
			return 1;
		}
		return HM_ERR_NOT_FOUND;
	} catch (...) {
		return HM_ERR_TORRENT;
	}
}
