#!/usr/bin/python3
"""lt_check.py TORRENT DIR [--timeout SECONDS]: does DIR hold exactly the data of TORRENT?

An independent check of a .torrent with libtorrent's own Python binding (run it with /usr/bin/python3,
where python3-libtorrent lives). DIR is the parent of the torrent's root directory (DIR/<name>/<path>).
The torrent is added to a private session (save_path=DIR; DHT, LSD, UPnP and NAT-PMP off; listening on
127.0.0.1 only), its files are rechecked from disk, and one JSON object is printed:

  {"name": ..., "btih": v1 hex, "btmh": v2 hex, "files": [paths inside <name>/, pad files left out],
   "pieces": pieces in the torrent, "have": pieces that verified, "seeding": bool}

Exit status: 0 if every piece verified, 1 if not, 2 on usage or load errors. Stdlib + libtorrent only,
so integration tests can use it as is.

lt_check.py --make PIECE_SIZE DIR NAME: make the hybrid torrent of DIR/NAME with libtorrent's own
create_torrent and set_piece_hashes, and print {"btih": ..., "btmh": ...}: what a torrent made another
way must match.
"""
import json
import sys
import time

import libtorrent as lt


def wait_checked(ses, deadline):
    """Wait for the next torrent_checked_alert; False on timeout or a torrent error."""
    while time.monotonic() < deadline:
        ses.wait_for_alert(100)
        for a in ses.pop_alerts():
            if isinstance(a, lt.torrent_checked_alert):
                return True
            if isinstance(a, lt.torrent_error_alert):
                print("lt_check: %s" % a.message(), file=sys.stderr)
                return False
    print("lt_check: timed out waiting for the check", file=sys.stderr)
    return False


def make(piece, parent, name):
    fs = lt.file_storage()
    lt.add_files(fs, parent + "/" + name)
    ct = lt.create_torrent(fs, piece)
    lt.set_piece_hashes(ct, parent)
    limits = {"max_buffer_size": 1 << 30, "max_pieces": 1 << 24, "max_decode_tokens": 1 << 30}
    ih = lt.torrent_info(lt.bencode(ct.generate()), limits).info_hashes()
    print(json.dumps({"btih": str(ih.v1), "btmh": str(ih.v2)}))
    return 0


def main(argv):
    args = [a for a in argv[1:]]
    if len(args) == 4 and args[0] == "--make":
        return make(int(args[1]), args[2], args[3])
    timeout = 120.0
    if "--timeout" in args:
        i = args.index("--timeout")
        timeout = float(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    torrent, save_path = args

    # Raised limits: a snapshot of many files makes a large .torrent.
    limits = {"max_buffer_size": 1 << 30, "max_pieces": 1 << 24, "max_decode_tokens": 1 << 30}
    try:
        ti = lt.torrent_info(torrent, limits)
    except RuntimeError as e:
        print("lt_check: cannot load %s: %s" % (torrent, e), file=sys.stderr)
        return 2
    fs = ti.files()
    name = ti.name()
    files = []
    for i in range(fs.num_files()):
        if fs.file_flags(i) & lt.file_storage.flag_pad_file:
            continue
        p = fs.file_path(i)
        files.append(p[len(name) + 1:] if p.startswith(name + "/") else p)

    ses = lt.session({
        "listen_interfaces": "127.0.0.1:0",
        "enable_dht": False,
        "enable_lsd": False,
        "enable_upnp": False,
        "enable_natpmp": False,
        "alert_mask": lt.alert.category_t.status_notification | lt.alert.category_t.error_notification,
    })
    atp = lt.add_torrent_params()
    atp.ti = ti
    atp.save_path = save_path
    # The default flags are paused + auto_managed: a paused torrent never finishes its check.
    atp.flags &= ~(lt.torrent_flags.auto_managed | lt.torrent_flags.paused)
    h = ses.add_torrent(atp)

    # The first check runs on its own when the torrent is added; then recheck explicitly, so what we
    # report comes from reading every byte now, not from any state libtorrent kept.
    deadline = time.monotonic() + timeout
    ok = wait_checked(ses, deadline)
    if ok:
        h.force_recheck()
        ok = wait_checked(ses, deadline)
    st = h.status()
    have = st.num_pieces
    ih = ti.info_hashes()
    print(json.dumps({
        "name": name,
        "btih": str(ih.v1) if ih.has_v1() else None,
        "btmh": str(ih.v2) if ih.has_v2() else None,
        "files": files,
        "pieces": ti.num_pieces(),
        "have": have,
        "seeding": bool(st.is_seeding),
    }))
    ses.remove_torrent(h)
    del ses
    return 0 if ok and have == ti.num_pieces() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
