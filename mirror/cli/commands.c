/*
 * commands.c - the one table of commands. Add a command here (its synopsis, summary and the prose of
 * its help) and in its own cmd-<name>.c (its options, each with its help, in its table of struct cli_flag).
 */
#include <string.h>

#include "cli.h"

const struct cli_command cli_commands[] = {
	{"add", cmd_add,
	 "add [--data DIR] [--revision REV] [--include GLOB]... [--exclude GLOB]... [--prefer-safetensors]\n"
	 "       [--open] [--preheat] [--refs tags|default|all|NAME,...] SPEC...\n"
	 "       hubmirror add [--data DIR] --from FILE",
	 "track repositories for the mirror to sync",
	 "SPEC is hf:ORG/NAME, hf:datasets/ORG/NAME, ms:ORG/NAME or ms:datasets/ORG/NAME, optionally\n"
	 "with @REVISION (a branch, tag or refs/pr/N; default main on Hugging Face, master on ModelScope).\n"
	 "Adding a tracked repo again replaces its options.\n"},
	{"backup", cmd_backup, "backup [--data DIR] [--store URL] --output FILE",
	 "copy the catalog as of now, while serve and sync run",
	 "Writes the catalog (SQLite's online backup: one consistent moment, whatever a running serve or\n"
	 "sync does) to FILE, through a temporary file renamed into place. The store is content-addressed:\n"
	 "the catalog is what must be kept; 'hubmirror restore' puts it back.\n"},
	{"config", cmd_config, "config check|show [FILE]",
	 "check the configuration file, or show the settings it makes",
	 "FILE defaults to $HUBMIRROR_CONFIG, else /etc/hubmirror/hubmirror.conf. 'check' reads it as serve\n"
	 "and sync would (every key is one of their options, checked the same way; the error names the\n"
	 "line), and also loads the tokens file, the token files and the TLS certificate it names. 'show'\n"
	 "prints every key it may hold with its value, or says which option's default applies.\n"
	 "serve and sync read it (--config FILE, or the same defaults); their command line wins over it,\n"
	 "and it wins over the environment. Keys: docs/configuration.md.\n"},
	{"export", cmd_export,
	 "export [--data DIR] [--since BUNDLE|DATE] [--volume-size SIZE] --output FILE (SPEC... | --all)",
	 "write repositories into a bundle to carry into a network without internet",
	 "Writes one tar archive (zstd-compressed when FILE ends in .zst): a manifest of the repositories\n"
	 "(their settings, metadata, every snapshot a ref points at, each file's path, size and hashes),\n"
	 "then each content once, streamed from the store. 'hubmirror import' reads it on the other side.\n"},
	{"gc", cmd_gc, "gc [--data DIR] [--store URL] [--keep N] [--partial-age HOURS] [--grace HOURS]\n"
	 "   [--xet-upload-age HOURS] [--dry-run] [--wait] [--json]",
	 "drop snapshots nothing needs, and the files only they used",
	 "Keeps every snapshot a ref points at or a pin holds (hubmirror pin) and the N most recent of\n"
	 "each tracked repository; drops\n"
	 "all snapshots of removed repositories, then every stored file no kept snapshot references,\n"
	 "files the catalog does not know (left by a crash), and partial downloads older than HOURS.\n"
	 "With a bucket, also the Xet uploads' xorbs its staging area kept past their time.\n"},
	{"git-hook", cmd_git_hook, "git-hook",
	 "git's pre-receive hook for a push into a local repository (serve runs it)",
	 "Not for people: serve runs git's receive-pack with it as the pre-receive hook during a git push\n"
	 "into a local repository (docs/uploads.md). It checks the pushed commits, writes their files to\n"
	 "the store and records them and the moved refs in the catalog in one transaction; only then does\n"
	 "git move its refs. Its settings come from serve in the environment.\n"},
	{"pin", cmd_pin, "pin [--data DIR] [--remove] SPEC[@REV]...",
	 "keep snapshots through gc, retention and the store quota",
	 "Pins the snapshot of REV (a ref or a commit the mirror holds; default: the followed revision)\n"
	 "so that gc, sync --retention and the store quota never drop it, even once no ref points at it.\n"
	 "'hubmirror info --json' shows each snapshot's pin. Removing a repository drops its pins.\n"},
	{"help", cmd_help, "help [COMMAND]", "show the commands, or the help of one",
	 "Without COMMAND, list every command with a one-line summary. With COMMAND, show its usage\n"
	 "and options. `hubmirror COMMAND --help` shows the same.\n"},
	{"info", cmd_info, "info [--data DIR | --mirror URL] [--json] [--files] SPEC[@REV]",
	 "show one tracked repository",
	 "Show a tracked repository: followed revision, synced commit, file count and size, sync status\n"
	 "and error, include/exclude globs, the refs it mirrors and holds.\n"},
	{"init", cmd_init, "init [--data DIR]", "make an empty mirror",
	 "Makes the data directory (its catalog and store) if it holds no mirror yet; one that does is\n"
	 "left as it is. Only init, add, import and restore make a data directory: every other command\n"
	 "(serve, sync, ls, ...) refuses one that holds no mirror, so a mistyped --data is an error.\n"
	 "A mirror that only serves on demand (serve --on-demand) starts from an empty one.\n"},
	{"import", cmd_import, "import [--data DIR] [--wait] [--json] [--keep-options] FILE...",
	 "bring the repositories of bundles into this mirror",
	 "Reads every header of FILE first and refuses an archive holding anything but its manifest and\n"
	 "the contents it names (links, devices, other paths, a wrong size): nothing enters the store then.\n"
	 "Each content is verified against its sha256 as it is stored; those the store holds are hashed,\n"
	 "not stored again, so importing again, or after an interruption, goes on where it stopped. A\n"
	 "content the bundle names without carrying it must be one this mirror holds and may show under\n"
	 "that name (public, or that repository's own). Then the repositories,\n"
	 "snapshots and refs enter the catalog and their torrents are made (the same info-hashes as on\n"
	 "the exporting mirror). FILE.001 stands for every volume of a bundle cut by --volume-size.\n"
	 "One import or sync at a time per data directory.\n"},
	{"ls", cmd_ls, "ls [--data DIR | --mirror URL] [--json]", "list the tracked repositories",
	 "One line per tracked repository: spec, followed revision, sync status, files and size of the\n"
	 "synced snapshot, last sync time (UTC).\n"},
	{"remove", cmd_remove, "remove [--data DIR | --mirror URL] SPEC...", "stop tracking repositories",
	 "Stop syncing the repositories. Their synced files stay in the store until `hubmirror gc`.\n"},
	{"search", cmd_search,
	 "search [--data DIR | --mirror URL] [--hub hf|ms] [--type model|dataset] [--limit N] [--json] QUERY...",
	 "search the catalog: names, authors, tags, task, library, license, card text",
	 "Every word of QUERY matches as a prefix (qwen inst finds Qwen2.5-7B-Instruct); results are ranked.\n"},
	{"agent", cmd_agent,
	 "agent [--mirror URL] [--cache DIR] [--cache-size SIZE] [--keep-pulled S] [--socket PATH]\n"
	 "      [--listen ADDR] [--upload-limit RATE] [--http HOST:PORT] [--preheat [--preheat-every S]]\n"
	 "      [--no-fill] [--mirror-timeout S] [--scrub-rate R] [--scrub-every S] [--token-file FILE]\n"
	 "      [--foreground]\n"
	 "       hubmirror agent --stop [--socket PATH]",
	 "run the instance agent: one process for every mount, the swarm session and the cache",
	 "The agent holds every mount of this machine in one long-lived process with one BitTorrent\n"
	 "session and one cache, and keeps seeding what it fetched after the mount is gone and after a\n"
	 "restart. 'hubmirror mount' starts one when none runs. Returns once it listens on its socket.\n"
	 "In the background it reads back and hashes what it verified (the scrub), fetching damage again.\n"},
	{"mount", cmd_mount,
	 "mount [--mirror URL] [--cache DIR] [--hf-cache DIR | --no-hf-cache] [--ms-cache DIR | --no-ms-cache]\n"
	 "      [--listen ADDR] [--socket PATH] [--prefetch PATTERN|all|none]... SPEC[@REV] [DIR]",
	 "attach a synced repo: read-only files fetched on demand from the swarm, and in the hub caches",
	 "Asks the instance agent to mount the snapshot read-only on DIR (default /models/ORG/NAME) with\n"
	 "FUSE: the files are there at once, a read fetches the pieces it touches (asked for first) and\n"
	 "those just ahead of a reader that reads on, from peers and the mirror; every byte read is\n"
	 "verified. In the background only the files a library reads first (configs, tokenizers,\n"
	 "*.index.json, README.md: the metadata pull takes too) and the shards a *.safetensors.index.json\n"
	 "names (when they fit in the cache) are fetched; --prefetch asks for more, --prefetch none for\n"
	 "nothing. A Hugging Face repo is also linked into the Hugging Face cache\n"
	 "(models--ORG--NAME/snapshots/COMMIT, refs/REV), so libraries find it with HF_HUB_OFFLINE=1; a\n"
	 "ModelScope repo into both ModelScope SDKs' caches. Starts the agent when none runs (with\n"
	 "--cache and --listen); returns once the files are visible. At umount, the hub cache's links\n"
	 "point at the agent's cache where it holds the files verified, and the others are taken away.\n"},
	{"pull", cmd_pull,
	 "pull [--mirror URL] [--cache DIR] [--hf-cache DIR | --no-hf-cache] [--ms-cache DIR | --no-ms-cache]\n"
	 "     [--listen ADDR] [--socket PATH] [--include PATTERN]... [--exclude PATTERN]... [--pin] [--json]\n"
	 "     SPEC[@REV]...",
	 "fetch synced repos (whole, or some files) into the instance's cache and the hub caches, without FUSE",
	 "Asks the instance agent (starting one as mount does) to fetch each snapshot from the swarm into\n"
	 "its cache, and once every byte is verified there, to link it into the Hugging Face or\n"
	 "ModelScope cache, where libraries find it offline. For containers without /dev/fuse, and for\n"
	 "warming an instance before a job. Exits 0 when every snapshot is verified and linked. A snapshot\n"
	 "bigger than the agent's --cache-size is refused up front unless --pin (it would be evicted).\n"
	 "While nothing comes, the progress line says why (the mirror unreachable, no peer) instead of\n"
	 "an ETA.\n"},
	{"umount", cmd_umount, "umount [--socket PATH] DIR", "detach a folder that 'hubmirror mount' attached",
	 "Asks the agent to unmount DIR (a plain unmount if no agent holds it). The snapshot stays in the\n"
	 "agent's cache and keeps seeding. The hub caches' links into DIR then point at the agent's cache\n"
	 "where it holds the files verified, and the others are taken away (it says how many of each):\n"
	 "none is left pointing into the empty folder.\n"},
	{"drop", cmd_drop,
	 "drop [--socket PATH] [--hf-cache DIR | --no-hf-cache] [--ms-cache DIR | --no-ms-cache] SPEC[@REV]...",
	 "take snapshots out of the instance agent's cache",
	 "Like hf cache delete: the agent drops the snapshots of SPEC (of SPEC@REV: that ref's or commit's)\n"
	 "from its cache (their files, their torrent, their record), and this command takes their links\n"
	 "out of the hub caches a pull would have linked into. A snapshot that is mounted, or still in use\n"
	 "after an umount, is refused with where; a pinned one goes, and so does one a pull still waits for\n"
	 "(that pull fails, saying so). The next pull or mount fetches it again.\n"},
	{"status", cmd_status, "status [--socket PATH] [--json]\n       hubmirror status --verify [--json] [SPEC]",
	 "show what the instance agent holds",
	 "The agent (pid, cache, mirror, peer port, bytes sent and received) and each snapshot it holds:\n"
	 "spec, commit, what the cache holds of its size, its state (complete, ready, fetching N% of the\n"
	 "files it wants; pinned; bigger than the cache), peers, its mirror, where it is mounted, and its\n"
	 "error or why nothing comes (the mirror unreachable, no peer); what the background scrub found.\n"},
	{"serve", cmd_serve,
	 "serve [--config FILE] [--data DIR] [--listen HOST:PORT] [--sync-at HH:MM] [--sync-every D] [--access-log "
	 "FILE|-]\n"
	 "       [--tokens FILE] [--auth open|listed|all]\n"
	 "       [--hf-upstream URL] [--ms-upstream URL] [--ready-file FILE] [--tls-cert FILE --tls-key FILE]\n"
	 "       [--shutdown-grace S] [--peer-mirror URL[,URL...]] [--on-demand PATTERNS [--on-demand-ttl D] "
	 "[--on-demand-max-repos N]\n"
	 "       [--hf-token-file FILE] [--ms-token-file FILE]]\n"
	 "       [--header-timeout S] [--idle-timeout S] [--write-timeout S]\n"
	 "       [--p2p-listen HOST:PORT|off] [--p2p-upload-limit BYTES/S] [--p2p-rescan S] [--p2p-super-seed]\n"
	 "       [--search-budget MS] [--max-connections N] [--trusted-proxy ADDR[,ADDR...]] [--xet-backfill BYTES/S]",
	 "run the mirror node: the Hugging Face API over the synced store, and the nightly sync",
	 "Answers the Hugging Face Hub API (repo info, tree, paths-info, refs, resolve and raw with Range,\n"
	 "listings) for the synced repositories, from the catalog and the store only: point clients at it\n"
	 "with HF_ENDPOINT=http://HOST:PORT. /healthz says whether the catalog is readable.\n"
	 "Stops on SIGINT or SIGTERM (gracefully: see --shutdown-grace; a second signal stops at once).\n"},
	{"sync", cmd_sync,
	 "sync [--config FILE] [--data DIR] [--hf-upstream URL] [--ms-upstream URL] [--hf-token-file FILE]\n"
	 "     [--ms-token-file FILE] [--json] [--wait] [--jobs N] [--check-refs] [--retention N]\n"
	 "     [--quota SIZE] [--xet on|off] [SPEC...]\n"
	 "       hubmirror sync --status [--data DIR | --mirror URL] [--json]",
	 "fetch what changed upstream for the tracked repositories (or those named)",
	 "For each repository, resolve its revision upstream; an unchanged commit costs one request.\n"
	 "Otherwise list its files and fetch, verified against upstream's sha256 (or git id), the ones\n"
	 "the store lacks; the new snapshot becomes visible only when all of its files are in. A repo\n"
	 "that fails keeps its previous snapshot, and partial files are resumed by the next run.\n"
	 "A file upstream offers through Xet comes as the chunks the store lacks (xorb ranges; the\n"
	 "rest read from stored files), proven whole as any other; plain HTTP when Xet fails.\n"
	 "Then the refs each repository mirrors besides (add --refs; its tags by default): upstream's\n"
	 "refs are listed when the followed snapshot changed, or weekly, or every run for branches;\n"
	 "each new one is fetched the same way, and refs upstream no longer has are dropped.\n"
	 "Exit status 1 when any repository failed (gated, denied, missing, error).\n"
	 "Tokens come from $HF_TOKEN (or $HUGGING_FACE_HUB_TOKEN) and $MODELSCOPE_API_TOKEN; they are\n"
	 "sent only to the upstream host itself, never to the hosts it redirects to, and never logged.\n"},
	{"request", cmd_request, "request [--mirror URL] [--reason TEXT] SPEC...",
	 "ask a mirror for repositories it does not have",
	 "Records a request on the mirror (--mirror URL or $HUBMIRROR_URL; $HUBMIRROR_TOKEN when its\n"
	 "tokens file asks for one): the operator approves or declines it ('hubmirror requests'). Asking\n"
	 "for one that is pending adds your ask to it; one the mirror has already is said so.\n"},
	{"requests", cmd_requests,
	 "requests [--data DIR | --mirror URL] [--state pending|approved|declined] [--json]\n"
	 "       requests approve|decline [--data DIR | --mirror URL] [--note TEXT] ID...",
	 "list users' requests for repositories, and approve or decline them",
	 "Without a verb, the requests: pending first (most asked for first), then the decided ones.\n"
	 "approve tracks the repository (with the default options: change them with 'hubmirror add');\n"
	 "on a mirror (through its operator API, $HUBMIRROR_ADMIN_TOKEN) a sync of it starts at once,\n"
	 "on a data directory the next sync fetches it. decline closes the request; --note tells the\n"
	 "user why (the web page shows it).\n"},
	{"restore", cmd_restore, "restore [--data DIR] [--store URL] [--json] FILE", "put a catalog backup in place",
	 "Checks that FILE is a sound hubmirror catalog (quick_check, a schema this binary knows), then\n"
	 "replaces the data directory's catalog with it (its old WAL removed first) and migrates it if it\n"
	 "is older. Refused while a serve or a sync uses the directory; a bad FILE changes nothing.\n"
	 "Contents the catalog names that the store lacks mark their repositories damaged, and torrents\n"
	 "whose files are gone are dropped: the next 'hubmirror sync' fetches and makes them again.\n"},
	{"verify", cmd_verify, "verify [--data DIR] [--store URL] [--wait] [--json]",
	 "re-hash every stored file; quarantine corrupt ones for the next sync to fetch again",
	 "Reads every blob of the store and checks it against its sha256. A corrupt blob is moved to\n"
	 "store/quarantine/ and never served; the repositories that hold it are marked 'damaged' and\n"
	 "the next 'hubmirror sync' fetches it again. A content only local repositories name has no\n"
	 "upstream: it is reported lost, with the commits that name it; the same bytes uploaded again\n"
	 "make them whole. Exit status 1 when anything was wrong.\n"},
	{"version", cmd_version, "version [--json]", "print the versions of hubmirror and its libraries",
	 "Print the hubmirror version and the versions of the libraries it was built with.\n"},
};
const unsigned cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);

const struct cli_command *cli_find(const char *name)
{
	for (unsigned i = 0; i < cli_command_count; i++)
		if (!strcmp(cli_commands[i].name, name))
			return &cli_commands[i];
	return NULL;
}
