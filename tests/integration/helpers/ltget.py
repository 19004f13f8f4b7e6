#!/usr/bin/python3
"""ltget.py [--seed S] [--listen ADDR] [--timeout S] [--rate BYTES/S] TORRENT DIR: download TORRENT into DIR with
python3-libtorrent (Debian's 2.0.8 bindings), DHT/LSD/UPnP/NAT-PMP off, listening on loopback (or
--listen, as bench/swarm_bench.py does in network namespaces), and wait until every piece is verified
against the torrent's hashes (v2 merkle roots for a hybrid torrent). With --seed, keep seeding for S
seconds afterwards (data already in DIR is checked and seeded at once). Prints what came from web
seeds and from peers, and the seconds it took. Exit 0 when complete, 1 on a torrent error or after
--timeout seconds (50)."""
import argparse
import time

import libtorrent as lt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=float, default=0)
    ap.add_argument("--listen", default="127.0.0.1:0", help="libtorrent listen_interfaces")
    ap.add_argument("--timeout", type=float, default=50)
    ap.add_argument("--rate", type=int, default=0, help="download rate limit (0: none)")
    ap.add_argument("torrent")
    ap.add_argument("dir")
    a = ap.parse_args()
    ses = lt.session({"listen_interfaces": a.listen, "enable_dht": False, "enable_lsd": False,
                      "enable_upnp": False, "enable_natpmp": False,
                      # every peer of a test lives on 127.0.0.1 (libtorrent-notes: off, most fail)
                      "allow_multiple_connections_per_ip": True,
                      # TCP only, as the mirror's LAN-tuned seed: a uTP attempt first costs ~4 s
                      "enable_outgoing_utp": False, "enable_incoming_utp": False,
                      "alert_mask": lt.alert.category_t.error_notification | lt.alert.category_t.status_notification})
    if a.rate:
        # loopback counts as the local network, which libtorrent exempts from limits by default
        ses.apply_settings({"download_rate_limit": a.rate, "ignore_limits_on_local_network": False})
    ti = lt.torrent_info(a.torrent)
    h = ses.add_torrent({"ti": ti, "save_path": a.dir})
    t0 = time.time()
    deadline = time.time() + a.timeout
    while time.time() < deadline:
        for al in ses.pop_alerts():
            if isinstance(al, (lt.torrent_error_alert, lt.file_error_alert)):
                print("libtorrent: %s" % al.message())
                return 1
        s = h.status()
        if s.is_seeding:
            web = sum(p.total_download for p in h.get_peer_info() if p.connection_type == lt.peer_info.web_seed)
            print("complete: %d pieces, %d payload bytes downloaded, %d of them from web seeds, in %.2f s"
                  % (ti.num_pieces(), s.total_payload_download, web, time.time() - t0), flush=True)
            end = time.time() + a.seed
            while time.time() < end:
                time.sleep(0.2)
            return 0
        time.sleep(0.1)
    s = h.status()
    print("timeout: state %s, %.0f%%, %d peers, %s" % (s.state, s.progress * 100, s.num_peers, s.errc.message()))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
