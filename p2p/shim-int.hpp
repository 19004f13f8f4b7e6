/*
 * shim-int.hpp - what the C++ files of the libtorrent shim share (shim.cpp, shim-read.cpp and
 * shim-plugins.cpp: sessions and reading, with shim-session-int.hpp; shim-torrent.cpp: making and reading
 * torrents). Nothing outside p2p/ includes it.
 */
#ifndef HM_P2P_SHIM_INT_HPP
#define HM_P2P_SHIM_INT_HPP

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <libtorrent/load_torrent.hpp>
#include <libtorrent/torrent_info.hpp>

extern "C" {
#include "base/err.h"
}

namespace lt = libtorrent;

/* libtorrent's load limits for a torrent buffer already in memory (at least floor bytes allowed):
 * snapshots' torrents can be tens of MB (100,000 files) and hold more than 2 million pieces, and a
 * buffer in memory is no threat by its size; tokens are bounded by it. */
inline lt::load_torrent_limits limits_for(size_t len, size_t floor)
{
	lt::load_torrent_limits lim;
	lim.max_buffer_size = static_cast<int>(std::min<size_t>(INT_MAX, std::max<size_t>(len + 1, floor)));
	lim.max_pieces = INT_MAX;
	lim.max_decode_tokens = INT_MAX;
	return lim;
}

/* *errmsg = a malloc'd copy of msg (when errmsg is not NULL). */
inline void set_err(char **errmsg, const std::string &msg)
{
	if (!errmsg)
		return;
	*errmsg = static_cast<char *>(std::malloc(msg.size() + 1));
	if (*errmsg)
		std::memcpy(*errmsg, msg.c_str(), msg.size() + 1);
}

/* Inside a catch block: the error of the exception being handled, after prefix, in *errmsg; returns
 * HM_ERR_TORRENT. */
inline int torrent_error(char **errmsg, const std::string &prefix)
{
	try {
		throw;
	} catch (const std::exception &e) {
		set_err(errmsg, prefix + e.what());
	} catch (...) {
		set_err(errmsg, prefix + "unknown libtorrent exception");
	}
	return HM_ERR_TORRENT;
}

/* A path libtorrent would rename, made safe to print: every byte outside printable ASCII, '"' and
 * '\\' as \\xNN (such a path may carry direction marks or bad UTF-8). */
inline std::string quoted(const std::string &p)
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

/* The metadata of a bencoded torrent (throws what libtorrent throws). */
inline lt::torrent_info info_of(const unsigned char *torrent, size_t len)
{
	return lt::torrent_info(lt::span<char const>(reinterpret_cast<char const *>(torrent),
						     static_cast<std::ptrdiff_t>(std::min<size_t>(len, PTRDIFF_MAX))),
				limits_for(len, 100000000), lt::from_span);
}

/* Fill *out with the files of ti as p2p_session_files lists them (shim-torrent.cpp; throws what
 * libtorrent throws, allocates with the x* family). */
struct p2p_file_list;
void list_files_of(lt::torrent_info const &ti, struct p2p_file_list *out);

/*
 * How the shim checks a piece itself (direct mode's writes, reads that read a piece back, verify,
 * contents kept by sha256): against the torrent's v2 hashes, SHA-256 like the files' upstream hashes,
 * one pass over the bytes (docs/p2p.md, "One hash per byte"). v2_of gives each piece's expected root
 * of its file's Merkle subtree, from the piece layers and the small files' roots; it needs a
 * torrent_info as parsed from the bytes (load_torrent_buffer moves the piece layers out of its own).
 * An empty table (a torrent without v2 hashes) makes both checks use the v1 piece hash (SHA-1).
 */
std::vector<lt::sha256_hash> v2_of(lt::torrent_info const &ti);

/* Whether data, piece p as peers see it (len bytes, pads as zeros), is what the torrent says. */
bool piece_ok(lt::torrent_info const &ti, std::vector<lt::sha256_hash> const &v2, int p, const char *data,
	      size_t len);

/* Whether what the files under save_path hold of piece p is what the torrent says; a missing or short
 * file is a mismatch (shim-torrent.cpp). gentle: the pages it reads that were not in the page cache
 * before are dropped from it again (a background scrub must not push out what readers use). */
bool verify_in_file(lt::torrent_info const &ti, std::vector<lt::sha256_hash> const &v2, std::string const &save_path,
		    int p, bool gentle = false);

#endif
