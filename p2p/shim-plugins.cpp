/*
 * shim-plugins.cpp - the libtorrent plugins a session's torrents run (shim-session-int.hpp): a web seed
 * byte counter (libtorrent keeps per-connection counters only), and origin_last, which hides the
 * mirror's own seed from the piece picker while peers have the piece (docs/agent.md).
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

} // namespace

/* The plugins every torrent of a session carries: the web seeds' byte count, and for origin_last
 * the peer plugin that hides the mirror's seed. */
void add_plugins(lt::add_torrent_params &atp, std::shared_ptr<web_bytes> web, bool origin_last)
{
	atp.extensions.push_back([web](lt::torrent_handle const &, lt::client_data_t) {
		return std::shared_ptr<lt::torrent_plugin>(std::make_shared<web_torrent_counter>(web));
	});
	if (origin_last)
		atp.extensions.push_back([](lt::torrent_handle const &, lt::client_data_t) {
			return std::shared_ptr<lt::torrent_plugin>(std::make_shared<origin_blind>());
		});
}
