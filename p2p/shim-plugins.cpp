/*
 * shim-plugins.cpp - the libtorrent plugins a session's torrents run (shim-session-int.hpp): a web seed
 * byte counter (libtorrent keeps per-connection counters only), and a peer filter: it drops every
 * peer's piece suggestions, and for origin_last hides the mirror's own seed from the piece picker while
 * peers have the piece (docs/agent.md).
 */
#include "shim-session-int.hpp"

namespace {

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
 * Every bittorrent peer's SUGGEST is dropped: a session in suggest_read_cache mode (shim.cpp, kept for
 * its piece picker) sends them, and libtorrent's picker takes suggested pieces before any priority, so
 * heeding them would put a peer's guess ahead of a mount's reads and a partial pull's files.
 *
 * p2p_add.origin_last: a peer whose id starts with P2P_ORIGIN_PEER_ID (the mirror's seed) is taken to
 * have nothing. Its bitfield, have-all, have and allowed-fast messages are handled here and never
 * reach libtorrent, so no request ever goes to it; what only the mirror has comes over HTTP instead
 * (the agent's fill). The id is known from the handshake on, before any of those messages.
 */
class peer_filter final : public lt::peer_plugin {
public:
  peer_filter(lt::peer_connection_handle pc, bool origin_last) : m_pc(std::move(pc)), m_origin_last(origin_last) {}

  bool on_bitfield(lt::bitfield const &) override
  {
	  return origin(); }
	bool on_have_all() override { return origin(); }
	bool on_have(lt::piece_index_t) override { return origin(); }
	bool on_suggest(lt::piece_index_t) override { return true; }
	bool on_allowed_fast(lt::piece_index_t) override { return origin(); }

private:
	bool origin() const
	{
		if (!m_origin_last)
			return false;
		try {
			lt::peer_id const &id = m_pc.pid();
			static const char prefix[] = P2P_ORIGIN_PEER_ID;
			return std::memcmp(id.data(), prefix, sizeof prefix - 1) == 0;
		} catch (...) {
			return false;
		}
	}
	lt::peer_connection_handle m_pc;
	bool m_origin_last;
};

class peer_filters final : public lt::torrent_plugin {
public:
	explicit peer_filters(bool origin_last) : m_origin_last(origin_last) {}

	std::shared_ptr<lt::peer_plugin> new_connection(lt::peer_connection_handle const &pc) override
	{
		if (pc.type() != lt::connection_type::bittorrent)
			return nullptr;
		return std::make_shared<peer_filter>(pc, m_origin_last);
	}

private:
	bool m_origin_last;
};

} // namespace

/* The plugins every torrent of a session carries: the web seeds' byte count, and the peer filter
 * (suggestions dropped; with origin_last, the mirror's seed hidden). */
void add_plugins(lt::add_torrent_params &atp, std::shared_ptr<web_bytes> web, bool origin_last)
{
	atp.extensions.push_back([web](lt::torrent_handle const &, lt::client_data_t) {
		return std::shared_ptr<lt::torrent_plugin>(std::make_shared<web_torrent_counter>(web));
	});
	atp.extensions.push_back([origin_last](lt::torrent_handle const &, lt::client_data_t) {
		return std::shared_ptr<lt::torrent_plugin>(std::make_shared<peer_filters>(origin_last));
	});
}
