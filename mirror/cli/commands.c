/*
 * commands.c - the one table of commands. Add a command here and in its own cmd-<name>.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const struct cli_command cli_commands[] = {
	{ "add", cmd_add,
	  "add [--data DIR] [--revision REV] [--include GLOB]... [--exclude GLOB]... [--prefer-safetensors]\n"
	  "       [--open] [--preheat] [--refs tags|default|all|NAME,...] SPEC...\n"
	  "       hubmirror add [--data DIR] --from FILE",
	  "track repositories for the mirror to sync",
	  "SPEC is hf:ORG/NAME, hf:datasets/ORG/NAME, ms:ORG/NAME or ms:datasets/ORG/NAME, optionally\n"
	  "with @REVISION (a branch, tag or refs/pr/N; default main on Hugging Face, master on ModelScope).\n"
	  "Adding a tracked repo again replaces its options.\n"
	  "  --data DIR        data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --revision REV    revision to follow, for every SPEC without @REVISION\n"
	  "  --include GLOB    sync only paths matching GLOB (repeatable; default: everything)\n"
	  "  --exclude GLOB    skip paths matching GLOB (repeatable)\n"
	  "  --prefer-safetensors  when the snapshot has *.safetensors weights, skip the other weight\n"
	  "                    formats (*.bin *.pt *.pth *.h5 *.msgpack *.ckpt *.ot)\n"
	  "  --open            serve the content of a repo that is gated upstream to every client of\n"
	  "                    this mirror (the operator has cleared its license for them)\n"
	  "  --preheat         have agents started with --preheat fetch each new snapshot in the\n"
	  "                    background, so the swarm is warm before the first instance needs it\n"
	  "  --refs WHICH      refs mirrored besides the followed revision, each addressable by name\n"
	  "                    and commit: tags (the default: every tag, and a dataset's\n"
	  "                    refs/convert/parquet), default (the followed revision only), all (every\n"
	  "                    branch, tag and conversion), or names (v1.0,dev; repeatable)\n"
	  "  --mirror URL      add them on that mirror, through its operator API ($HUBMIRROR_ADMIN_TOKEN),\n"
	  "                    not in a local data directory\n"
	  "  --from FILE       read one SPEC per line, each followed by its own options; '#' comments.\n"
	  "                    All lines are checked first: one bad line adds nothing. FILE - is stdin.\n" },
	{ "backup", cmd_backup, "backup [--data DIR] --output FILE",
	  "copy the catalog as of now, while serve and sync run",
	  "Writes the catalog (SQLite's online backup: one consistent moment, whatever a running serve or\n"
	  "sync does) to FILE, through a temporary file renamed into place. The store is content-addressed:\n"
	  "the catalog is what must be kept; 'hubmirror restore' puts it back.\n"
	  "  --data DIR      data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --output FILE   where to write it (replaced if it exists)\n" },
	{ "config", cmd_config, "config check|show [FILE]",
	  "check the configuration file, or show the settings it makes",
	  "FILE defaults to $HUBMIRROR_CONFIG, else /etc/hubmirror/hubmirror.conf. 'check' reads it as serve\n"
	  "and sync would (every key is one of their options, checked the same way; the error names the\n"
	  "line), and also loads the tokens file, the token files and the TLS certificate it names. 'show'\n"
	  "prints every key it may hold with its value, or says which option's default applies.\n"
	  "serve and sync read it (--config FILE, or the same defaults); their command line wins over it,\n"
	  "and it wins over the environment. Keys: docs/configuration.md.\n" },
	{ "export", cmd_export, "export [--data DIR] [--since BUNDLE|DATE] [--volume-size SIZE] --output FILE SPEC...",
	  "write repositories into a bundle to carry into a network without internet",
	  "Writes one tar archive (zstd-compressed when FILE ends in .zst): a manifest of the repositories\n"
	  "(their settings, metadata, every snapshot a ref points at, each file's path, size and hashes),\n"
	  "then each content once, streamed from the store. 'hubmirror import' reads it on the other side.\n"
	  "  --data DIR      data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --output FILE   the bundle (written through a temporary file, renamed at the end)\n"
	  "  --since BUNDLE|DATE   an incremental bundle: the manifest whole, but only the contents\n"
	  "                  that earlier bundle does not list (or stored here after DATE: 2026-11-01,\n"
	  "                  2026-11-01T12:00:00Z, @UNIXSECONDS); importing it needs those in the store\n"
	  "  --volume-size SIZE    cut the archive into FILE.001, FILE.002, ... of SIZE bytes (4G, 700M);\n"
	  "                  import FILE.001 reads them all\n" },
	{ "gc", cmd_gc, "gc [--data DIR] [--keep N] [--partial-age HOURS] [--dry-run] [--wait] [--json]",
	  "drop snapshots nothing needs, and the files only they used",
	  "Keeps every snapshot a ref points at or a pin holds (hubmirror pin) and the N most recent of\n"
	  "each tracked repository; drops\n"
	  "all snapshots of removed repositories, then every stored file no kept snapshot references,\n"
	  "files the catalog does not know (left by a crash), and partial downloads older than HOURS.\n"
	  "  --data DIR            data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --keep N              recent snapshots kept per repository besides ref targets (default 2)\n"
	  "  --partial-age HOURS   delete partial downloads older than this (default 168)\n"
	  "  --dry-run             report what would go, change nothing\n"
	  "  --wait                wait for a running sync instead of failing\n"
	  "  --json                print the report as JSON\n" },
	{ "pin", cmd_pin, "pin [--data DIR] [--remove] SPEC[@REV]...",
	  "keep snapshots through gc, retention and the store quota",
	  "Pins the snapshot of REV (a ref or a commit the mirror holds; default: the followed revision)\n"
	  "so that gc, sync --retention and the store quota never drop it, even once no ref points at it.\n"
	  "'hubmirror info --json' shows each snapshot's pin. Removing a repository drops its pins.\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --remove     unpin instead\n" },
	{ "help", cmd_help, "help [COMMAND]", "show the commands, or the help of one",
	  "Without COMMAND, list every command with a one-line summary. With COMMAND, show its usage\n"
	  "and options. `hubmirror COMMAND --help` shows the same.\n" },
	{ "info", cmd_info, "info [--data DIR | --mirror URL] [--json] [--files] SPEC[@REV]", "show one tracked repository",
	  "Show a tracked repository: followed revision, synced commit, file count and size, sync status\n"
	  "and error, include/exclude globs, the refs it mirrors and holds.\n"
	  "  --files      also list its files (size, sha256, path): of the followed snapshot, or of REV\n"
	  "               (a ref or commit the mirror holds)\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --mirror URL ask a running mirror instead (default $HUBMIRROR_URL when --data is not given);\n"
	  "               also prints the lines to use it (endpoint and mount command)\n"
	  "  --json       print a JSON object (the same fields as one entry of `ls --json`)\n" },
	{ "init", cmd_init, "init [--data DIR]", "make an empty mirror",
	  "Makes the data directory (its catalog and store) if it holds no mirror yet; one that does is\n"
	  "left as it is. Only init, add, import and restore make a data directory: every other command\n"
	  "(serve, sync, ls, ...) refuses one that holds no mirror, so a mistyped --data is an error.\n"
	  "A mirror that only serves on demand (serve --on-demand) starts from an empty one.\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n" },
	{ "import", cmd_import, "import [--data DIR] [--wait] [--json] [--keep-options] FILE...",
	  "bring the repositories of bundles into this mirror",
	  "Reads every header of FILE first and refuses an archive holding anything but its manifest and\n"
	  "the contents it names (links, devices, other paths, a wrong size): nothing enters the store then.\n"
	  "Each content is verified against its sha256 as it is stored; those the store holds are hashed,\n"
	  "not stored again, so importing again, or after an interruption, goes on where it stopped. A\n"
	  "content the bundle names without carrying it must be one this mirror holds and may show under\n"
	  "that name (public, or that repository's own). Then the repositories,\n"
	  "snapshots and refs enter the catalog and their torrents are made (the same info-hashes as on\n"
	  "the exporting mirror). FILE.001 stands for every volume of a bundle cut by --volume-size.\n"
	  "One import or sync at a time per data directory.\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --wait       wait for a running sync instead of failing\n"
	  "  --json       print each bundle's report as JSON\n"
	  "  --keep-options  give new repositories the bundle's options (open, preheat, include/exclude,\n"
	  "               guards); without it they get none, and tracked ones always keep their own\n" },
	{ "ls", cmd_ls, "ls [--data DIR | --mirror URL] [--json]", "list the tracked repositories",
	  "One line per tracked repository: spec, followed revision, sync status, files and size of the\n"
	  "synced snapshot, last sync time (UTC).\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --mirror URL list a running mirror's catalog (default $HUBMIRROR_URL when --data is not given)\n"
	  "  --json       print a JSON array of objects with stable field names:\n"
	  "               spec hub type name revision commit sync_status sync_error files size\n"
	  "               last_sync_at added_at include exclude\n" },
	{ "remove", cmd_remove, "remove [--data DIR | --mirror URL] SPEC...", "stop tracking repositories",
	  "Stop syncing the repositories. Their synced files stay in the store until `hubmirror gc`.\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --mirror URL remove them on that mirror, through its operator API ($HUBMIRROR_ADMIN_TOKEN)\n" },
	{ "search", cmd_search, "search [--data DIR | --mirror URL] [--hub hf|ms] [--type model|dataset] [--limit N] [--json] QUERY...",
	  "search the catalog: names, authors, tags, task, library, license, card text",
	  "Every word of QUERY matches as a prefix (qwen inst finds Qwen2.5-7B-Instruct); results are ranked.\n"
	  "  --data DIR     search the local catalog (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --mirror URL   search a running mirror (default $HUBMIRROR_URL when --data is not given)\n"
	  "  --hub, --type  narrow to one hub or kind\n"
	  "  --limit N      at most N results (default 50)\n"
	  "  --json         print a JSON array\n" },
	{ "agent", cmd_agent,
	  "agent [--mirror URL] [--cache DIR] [--cache-size SIZE] [--socket PATH] [--listen ADDR]\n"
	  "      [--upload-limit RATE] [--http HOST:PORT] [--preheat [--preheat-every S]]\n"
	  "      [--no-fill] [--mirror-timeout S] [--foreground]\n"
	  "       hubmirror agent --stop [--socket PATH]",
	  "run the instance agent: one process for every mount, the swarm session and the cache",
	  "The agent holds every mount of this machine in one long-lived process with one BitTorrent\n"
	  "session and one cache, and keeps seeding what it fetched after the mount is gone and after a\n"
	  "restart. 'hubmirror mount' starts one when none runs. Returns once it listens on its socket.\n"
	  "  --mirror URL[,URL...]   the mirror(s) for mounts that name none (default $HUBMIRROR_URL);\n"
	  "                      with several, the first that answers (one may be down)\n"
	  "  --cache DIR         where the bytes are kept (default $HUBMIRROR_CACHE or /var/cache/hubmirror);\n"
	  "                      its log is DIR/agent.log\n"
	  "  --socket PATH       the control socket (default $HUBMIRROR_AGENT_SOCKET or\n"
	  "                      /run/hubmirror/agent.sock), readable by its owner only\n"
	  "  --listen ADDR       where this peer listens for other peers (default 0.0.0.0:0)\n"
	  "  --cache-size SIZE   keep the cache under SIZE (k/M/G/T): past it, the least recently used\n"
	  "                      snapshots neither mounted nor pinned (pull --pin) are evicted\n"
	  "  --upload-limit R    cap what it sends to peers (bytes/s, k/M/G suffixes)\n"
	  "  --http HOST:PORT    the local hub endpoint: the Hugging Face and ModelScope APIs of the mirror\n"
	  "                      on this instance, file bytes through the swarm and the cache\n"
	  "                      (HF_ENDPOINT=http://HOST:PORT)\n"
	  "  --preheat           fetch in the background what the mirror marks to preheat (add --preheat),\n"
	  "                      asking every 300 s or --preheat-every S\n"
	  "  --no-fill           take what only the mirror has from its BitTorrent seed and web seed\n"
	  "                      instead of over HTTP ranges from its store\n"
	  "  --mirror-timeout S  a mirror that sends nothing for S seconds (default 20) is given up and\n"
	  "                      the next one asked; with none left, a held snapshot is used\n"
	  "  --foreground        stay in the foreground (for systemd)\n"
	  "  --stop              ask the running agent to unmount everything and end; returns once it\n"
	  "                      has (SIGHUP is ignored)\n" },
	{ "mount", cmd_mount,
	  "mount [--mirror URL] [--cache DIR] [--hf-cache DIR | --no-hf-cache] [--ms-cache DIR | --no-ms-cache]\n"
	  "      [--listen ADDR] [--socket PATH] [--prefetch PATTERN|all|none]... SPEC[@REV] [DIR]",
	  "attach a synced repo: read-only files fetched on demand from the swarm, and in the hub caches",
	  "Asks the instance agent to mount the snapshot read-only on DIR (default /models/ORG/NAME) with\n"
	  "FUSE: the files are there at once, a read fetches the pieces it touches (asked for first) and\n"
	  "those just ahead of a reader that reads on, from peers and the mirror; every byte read is\n"
	  "verified. In the background only the files a library reads first (configs, tokenizers,\n"
	  "*.index.json, README.md: the metadata pull takes too) are fetched, unless --prefetch asks for\n"
	  "more. A Hugging Face repo is also linked into the Hugging Face cache\n"
	  "(models--ORG--NAME/snapshots/COMMIT, refs/REV), so libraries find it with HF_HUB_OFFLINE=1; a\n"
	  "ModelScope repo into both ModelScope SDKs' caches. Starts the agent when none runs (with\n"
	  "--cache and --listen); returns once the files are visible.\n"
	  "  --prefetch PATTERN   fetch the files matching PATTERN (a glob, as pull --include) in the\n"
	  "                 background too; 'all': every file (not for a repo bigger than the cache's bound\n"
	  "                 or its disk's room: then the default, and a warning); 'none': only what is read\n"
	  "  --mirror URL[,URL...]   the mirror, or several of one deployment: the first that answers\n"
	  "                 (default $HUBMIRROR_URL, else the running agent's)\n"
	  "  --cache DIR    for a new agent: where the bytes are kept (default $HUBMIRROR_CACHE or\n"
	  "                 /var/cache/hubmirror)\n"
	  "  --hf-cache DIR the Hugging Face hub cache (default $HF_HUB_CACHE, $HF_HOME/hub or\n"
	  "                 ~/.cache/huggingface/hub); --no-hf-cache: no links\n"
	  "  --ms-cache DIR the ModelScope cache of ms: repos (default $MODELSCOPE_CACHE, or\n"
	  "                 ~/.cache/modelscope/hub and ~/.cache/modelscope); --no-ms-cache: no links\n"
	  "  --listen ADDR  for a new agent: where it listens for other peers (default 0.0.0.0:0)\n"
	  "  --socket PATH  the agent's socket (default $HUBMIRROR_AGENT_SOCKET or /run/hubmirror/agent.sock)\n" },
	{ "pull", cmd_pull,
	  "pull [--mirror URL] [--cache DIR] [--hf-cache DIR | --no-hf-cache] [--ms-cache DIR | --no-ms-cache]\n"
	  "     [--listen ADDR] [--socket PATH] [--include PATTERN]... [--exclude PATTERN]... [--pin] [--json]\n"
	  "     SPEC[@REV]...",
	  "fetch synced repos (whole, or some files) into the instance's cache and the hub caches, without FUSE",
	  "Asks the instance agent (starting one as mount does) to fetch each snapshot from the swarm into\n"
	  "its cache, and once every byte is verified there, to link it into the Hugging Face or\n"
	  "ModelScope cache, where libraries find it offline. For containers without /dev/fuse, and for\n"
	  "warming an instance before a job. Exits 0 when every snapshot is verified and linked.\n"
	  "  --include PATTERN   only the files matching a PATTERN (several may be given), as hf download\n"
	  "           --include: a shell glob against the whole path ('*' crosses '/', 'dir/' is all under\n"
	  "           dir), plus the small files a library reads first (config*.json, tokenizer*,\n"
	  "           *.index.json, README.md, ...). A later pull of more files adds them.\n"
	  "  --exclude PATTERN   not the files matching a PATTERN (metadata included)\n"
	  "  --pin    never evict these snapshots from the cache (agent --cache-size)\n"
	  "  --json   a JSON line per snapshot about once a second: spec commit bytes_have bytes_total\n"
	  "           verified (on a terminal without --json: a progress line)\n"
	  "The other options are mount's.\n" },
	{ "umount", cmd_umount, "umount [--socket PATH] DIR", "detach a folder that 'hubmirror mount' attached",
	  "Asks the agent to unmount DIR (a plain unmount if no agent holds it). The snapshot stays in the\n"
	  "agent's cache and keeps seeding.\n" },
	{ "drop", cmd_drop, "drop [--socket PATH] [--hf-cache DIR | --no-hf-cache] [--ms-cache DIR | --no-ms-cache] SPEC[@REV]...",
	  "take snapshots out of the instance agent's cache",
	  "Like hf cache delete: the agent drops the snapshots of SPEC (of SPEC@REV: that ref's or commit's)\n"
	  "from its cache (their files, their torrent, their record), and this command takes their links\n"
	  "out of the hub caches a pull would have linked into. A snapshot that is mounted, or still in use\n"
	  "after an umount, is refused with where; a pinned one goes. The next pull or mount fetches it again.\n" },
	{ "status", cmd_status, "status [--socket PATH] [--json]\n       hubmirror status --verify [--json] [SPEC]",
	  "show what the instance agent holds",
	  "The agent (pid, cache, mirror, peer port, bytes sent and received) and each snapshot it holds:\n"
	  "spec, commit, bytes had of total, complete or not, peers, where it is mounted, and its error.\n"
	  "  --json   print the agent's answer as JSON (fields: pid socket mirror cache p2p_port started_at\n"
	  "           uploaded downloaded snapshots[spec revision commit btih bytes_have bytes_total\n"
	  "           complete mounts peers uploaded downloaded links detached_in_use error])\n"
	  "  --verify read back and hash every piece the cache holds (of SPEC's snapshots): damaged ones\n"
	  "           (bit rot, another process) are fetched again from the swarm and the mirror; exit 1\n"
	  "           when some were damaged\n" },
	{ "serve", cmd_serve,
	  "serve [--config FILE] [--data DIR] [--listen HOST:PORT] [--sync-at HH:MM] [--sync-every D] [--access-log FILE|-]\n"
	  "       [--tokens FILE] [--auth open|listed|all]\n"
	  "       [--hf-upstream URL] [--ms-upstream URL] [--ready-file FILE] [--tls-cert FILE --tls-key FILE]\n"
	  "       [--shutdown-grace S] [--peer-mirror URL[,URL...]] [--on-demand PATTERNS [--on-demand-ttl D] [--on-demand-max-repos N]\n"
	  "       [--hf-token-file FILE] [--ms-token-file FILE]]\n"
	  "       [--header-timeout S] [--idle-timeout S] [--write-timeout S]\n"
	  "       [--p2p-listen HOST:PORT|off] [--p2p-upload-limit BYTES/S] [--p2p-rescan S] [--p2p-super-seed]\n"
	  "       [--search-budget MS] [--max-connections N] [--trusted-proxy ADDR[,ADDR...]]",
	  "run the mirror node: the Hugging Face API over the synced store, and the nightly sync",
	  "Answers the Hugging Face Hub API (repo info, tree, paths-info, refs, resolve and raw with Range,\n"
	  "listings) for the synced repositories, from the catalog and the store only: point clients at it\n"
	  "with HF_ENDPOINT=http://HOST:PORT. /healthz says whether the catalog is readable.\n"
	  "  --data DIR          data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --listen HOST:PORT  address to listen on (default $HUBMIRROR_LISTEN or 0.0.0.0:8080;\n"
	  "                      port 0 picks a free one)\n"
	  "  --sync-at HH:MM     run 'hubmirror sync --wait' every day at this local time\n"
	  "  --sync-every D      also run it D after the previous run ended (90, 15m, 6h)\n"
	  "  --tokens FILE       operator tokens: lines 'TOKEN *' or 'TOKEN SPEC...' ('#' comments)\n"
	  "  --auth MODE         open (no token), listed (repos named in FILE need a token granting\n"
	  "                      them; the default with --tokens) or all (every request but /healthz)\n"
	  "  --hf-upstream URL, --ms-upstream URL   passed to the scheduled sync\n"
	  "  --access-log FILE   one line per request (common log format plus seconds); - for stdout\n"
	  "  --ready-file FILE   write the base URL there once listening (for scripts)\n"
	  "  --header-timeout S  close a connection whose request (line, headers, body) takes longer\n"
	  "                      than S seconds from its first byte (default 15)\n"
	  "  --idle-timeout S    close a keep-alive connection idle between requests for S seconds\n"
	  "                      (default 75)\n"
	  "  --write-timeout S   close a connection whose client accepts no byte of the answer for S\n"
	  "                      seconds (default 120)\n"
	  "  --p2p-listen A      where the mirror seeds its torrents over BitTorrent (default\n"
	  "                      $HUBMIRROR_P2P_LISTEN or 0.0.0.0:6881; off: web seed and tracker only)\n"
	  "  --p2p-upload-limit N  cap the seed's upload, LAN peers included (bytes/s, k/M/G suffixes)\n"
	  "  --p2p-rescan S      look for torrents a sync made, or gc dropped, every S seconds (30)\n"
	  "  --search-budget MS  the longest one catalog search may run; past it a 400 (100)\n"
	  "  --max-connections N HTTP connections open at once; past it a 503 (16384)\n"
	  "  --trusted-proxy A   believe X-Forwarded-Host/-Proto only from these peer addresses\n"
	  "  --config FILE       the configuration file (default $HUBMIRROR_CONFIG, else\n"
	  "                      /etc/hubmirror/hubmirror.conf if present); options given here win\n"
	  "  --admin-token-file FILE  turn on the operator's API (/api/admin/: status, sync now, pause,\n"
	  "                      add and remove repos) for requests bearing the token in FILE (mode 600)\n"
	  "  --peer-mirror URL[,URL...]   the deployment's other mirrors: every torrent lists them\n"
	  "                      after this one, as trackers and web seeds (docs/deployment.md)\n"
	  "  --on-demand PATTERNS  fetch from upstream what a client asks for that the list lacks, for\n"
	  "                      repos these comma-separated globs cover (hf:Qwen/*, hf:datasets/*,\n"
	  "                      ms:qwen/*, or *): tracked at once, large files fetched when first\n"
	  "                      asked and streamed while they verify; the nightly sync completes them\n"
	  "  --on-demand-ttl D   a repo tracked on demand that nobody asks for this long (30d, 12h)\n"
	  "                      stops being tracked; gc drops its contents (default 30d)\n"
	  "  --on-demand-max-repos N  at most N repos tracked on demand at once; past it a new one\n"
	  "                      is answered 503 until one expires (default 1000)\n"
	  "  --hf-token-file FILE, --ms-token-file FILE   upstream tokens for on-demand fetches (mode 600)\n"
	  "  --shutdown-grace S  on SIGTERM/SIGINT, stop taking connections and let answers in flight\n"
	  "                      finish for up to S seconds (default 10; 0: stop at once)\n"
	  "  --tls-cert FILE, --tls-key FILE   HTTPS on the same port (PEM certificate chain and\n"
	  "                      key); plain HTTP still answers there. SIGHUP loads them again\n"
	  "  --p2p-super-seed    offer each peer only pieces no peer has yet: the mirror sends about one\n"
	  "                      copy of a model however many fetch it, at the cost of a slower start\n"
	  "                      (experimental: a lone client without the web seed can stall at the end)\n"
	  "Stops on SIGINT or SIGTERM (gracefully: see --shutdown-grace; a second signal stops at once).\n" },
	{ "sync", cmd_sync,
	  "sync [--config FILE] [--data DIR] [--hf-upstream URL] [--ms-upstream URL] [--hf-token-file FILE]\n"
	  "     [--ms-token-file FILE] [--json] [--wait] [--jobs N] [--check-refs] [--retention N]\n"
	  "     [--quota SIZE] [SPEC...]\n"
	  "       hubmirror sync --status [--data DIR | --mirror URL] [--json]",
	  "fetch what changed upstream for the tracked repositories (or those named)",
	  "For each repository, resolve its revision upstream; an unchanged commit costs one request.\n"
	  "Otherwise list its files and fetch, verified against upstream's sha256 (or git id), the ones\n"
	  "the store lacks; the new snapshot becomes visible only when all of its files are in. A repo\n"
	  "that fails keeps its previous snapshot, and partial files are resumed by the next run.\n"
	  "Then the refs each repository mirrors besides (add --refs; its tags by default): upstream's\n"
	  "refs are listed when the followed snapshot changed, or weekly, or every run for branches;\n"
	  "each new one is fetched the same way, and refs upstream no longer has are dropped.\n"
	  "Exit status 1 when any repository failed (gated, denied, missing, error).\n"
	  "  --data DIR          data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --check-refs        list upstream's refs of every repository now, not only when due\n"
	  "  --retention N       after the run, keep N old snapshots per repository besides those a ref\n"
	  "                      points at, and drop the rest with the contents only they used (gc)\n"
	  "  --quota SIZE        the store's size limit (500G, 2T): a repository that would go over it\n"
	  "                      first drops old snapshots (never a ref's or a pinned one, oldest first);\n"
	  "                      when that cannot make room it fails with outcome quota, the rest go on\n"
	  "  --config FILE       the configuration file (default $HUBMIRROR_CONFIG, else\n"
	  "                      /etc/hubmirror/hubmirror.conf if present): its [sync] keys and data\n"
	  "  --mirror URL        have that mirror's serve run the sync (its operator API, with\n"
	  "                      $HUBMIRROR_ADMIN_TOKEN); with --wait, until it ends, with its status.\n"
	  "                      A serve with the operator API on this data directory is used by itself\n"
	  "                      (its token read from its file), unless an option only a run here can\n"
	  "                      honour is given (--jobs, --quota, ...); it prints what the serve's run\n"
	  "                      prints, as it goes\n"
	  "  --status            how the running sync stands (repo i of n, bytes, rate, ETA, what it\n"
	  "                      fetches, a wait upstream asked for), or how the last ended; and when the\n"
	  "                      serve's schedule runs the next\n"
	  "  --local             run the sync here even then\n"
	  "  --hf-token-file FILE, --ms-token-file FILE   the upstream token, from a file readable by\n"
	  "                      its owner only (wins over $HF_TOKEN / $MODELSCOPE_API_TOKEN)\n"
	  "  --hf-upstream URL   Hugging Face endpoint (default $HUBMIRROR_HF_UPSTREAM, $HF_ENDPOINT,\n"
	  "                      or https://huggingface.co); may be another hubmirror\n"
	  "  --ms-upstream URL   ModelScope endpoint (default $HUBMIRROR_MS_UPSTREAM,\n"
	  "                      $MODELSCOPE_ENDPOINT, or https://www.modelscope.cn)\n"
	  "  --json              print the run's report as JSON\n"
	  "  --wait              if another sync runs on this data directory, wait for it\n"
	  "  --jobs N            files fetched in parallel (default 8)\n"
	  "  --max-tries N       attempts per request and per file before giving up (default 6 / 5)\n"
	  "  --retry-delay S     first backoff after a failure, doubling with jitter (default 0.5)\n"
	  "  --progress, --no-progress   live progress on stderr (default: when it is a terminal)\n"
	  "Tokens come from $HF_TOKEN (or $HUGGING_FACE_HUB_TOKEN) and $MODELSCOPE_API_TOKEN; they are\n"
	  "sent only to the upstream host itself, never to the hosts it redirects to, and never logged.\n" },
	{ "request", cmd_request, "request [--mirror URL] [--reason TEXT] SPEC...",
	  "ask a mirror for repositories it does not have",
	  "Records a request on the mirror (--mirror URL or $HUBMIRROR_URL; $HUBMIRROR_TOKEN when its\n"
	  "tokens file asks for one): the operator approves or declines it ('hubmirror requests'). Asking\n"
	  "for one that is pending adds your ask to it; one the mirror has already is said so.\n"
	  "  --mirror URL    the mirror\n"
	  "  --reason TEXT   why (one line, at most 1000 bytes): the operator sees it\n" },
	{ "requests", cmd_requests,
	  "requests [--data DIR | --mirror URL] [--state pending|approved|declined] [--json]\n"
	  "       requests approve|decline [--data DIR | --mirror URL] [--note TEXT] ID...",
	  "list users' requests for repositories, and approve or decline them",
	  "Without a verb, the requests: pending first (most asked for first), then the decided ones.\n"
	  "approve tracks the repository (with the default options: change them with 'hubmirror add');\n"
	  "on a mirror (through its operator API, $HUBMIRROR_ADMIN_TOKEN) a sync of it starts at once,\n"
	  "on a data directory the next sync fetches it. decline closes the request; --note tells the\n"
	  "user why (the web page shows it).\n"
	  "  --data DIR     data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --mirror URL   a running mirror instead (or $HUBMIRROR_URL)\n"
	  "  --state S      only the requests in state S\n"
	  "  --note TEXT    the operator's word on the decision\n"
	  "  --json         print JSON\n" },
	{ "restore", cmd_restore, "restore [--data DIR] [--json] FILE",
	  "put a catalog backup in place",
	  "Checks that FILE is a sound hubmirror catalog (quick_check, a schema this binary knows), then\n"
	  "replaces the data directory's catalog with it (its old WAL removed first) and migrates it if it\n"
	  "is older. Refused while a serve or a sync uses the directory; a bad FILE changes nothing.\n"
	  "Contents the catalog names that the store lacks mark their repositories damaged, and torrents\n"
	  "whose files are gone are dropped: the next 'hubmirror sync' fetches and makes them again.\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --json       print the report as JSON\n" },
	{ "verify", cmd_verify, "verify [--data DIR] [--wait] [--json]",
	  "re-hash every stored file; quarantine corrupt ones for the next sync to fetch again",
	  "Reads every blob of the store and checks it against its sha256. A corrupt blob is moved to\n"
	  "store/quarantine/ and never served; the repositories that hold it are marked 'damaged' and\n"
	  "the next 'hubmirror sync' fetches it again. Exit status 1 when anything was wrong.\n"
	  "  --data DIR   data directory (default $HUBMIRROR_DATA or /var/lib/hubmirror)\n"
	  "  --wait       wait for a running sync instead of failing\n"
	  "  --json       print the report as JSON\n" },
	{ "version", cmd_version, "version [--json]", "print the versions of hubmirror and its libraries",
	  "Print the hubmirror version and the versions of the libraries it was built with.\n"
	  "  --json   print them as a JSON object\n" },
};
const unsigned cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);

const struct cli_command *cli_find(const char *name)
{
	for (unsigned i = 0; i < cli_command_count; i++)
		if (!strcmp(cli_commands[i].name, name))
			return &cli_commands[i];
	return NULL;
}

void cli_print_help(const struct cli_command *cmd)
{
	printf("usage: hubmirror %s\n\n%s\n", cmd->synopsis, cmd->summary);
	if (cmd->help && *cmd->help)
		printf("\n%s", cmd->help);
}
