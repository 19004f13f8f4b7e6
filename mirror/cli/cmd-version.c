/*
 * cmd-version.c - `hubmirror version [--json]` (also `hubmirror --version`): our version and the
 * versions of the libraries actually loaded, which is what an operator needs in a bug report.
 */
#include <getopt.h>
#include <stdio.h>

#include <archive.h>
#include <curl/curl.h>
#define FUSE_USE_VERSION 35
#include <fuse3/fuse.h>
#include <http_parser.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <uv.h>

#include "cli.h"
#include "hubmirror-config.h"
#include "p2p/p2p.h"

int cmd_version(int argc, char **argv)
{
	unsigned long hp = http_parser_version();
	char hpver[32];
	bool json = false;
	json_t *o;
	const struct cli_flag flags[] = { CLI_BOOL("json", &json, "print them as a JSON object"), CLI_END };

	if (cli_parse_flags_only(cli_find("version"), argc, argv, flags))
		return CLI_USAGE;

	snprintf(hpver, sizeof(hpver), "%lu.%lu.%lu", (hp >> 16) & 255, (hp >> 8) & 255, hp & 255);
	o = json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i}}",
		      "hubmirror", HUBMIRROR_VERSION, "libraries",
		      "libcurl", curl_version_info(CURLVERSION_NOW)->version,
		      "sqlite", sqlite3_libversion(),
		      "libuv", uv_version_string(),
		      "openssl", OpenSSL_version(OPENSSL_VERSION),
		      "jansson", jansson_version_str(),
		      "libtorrent", p2p_version(),
		      "libarchive", archive_version_details(),
		      "http-parser", hpver,
		      "fuse", fuse_version());
	if (!o)
		return CLI_FAILED;
	if (json) {
		cli_print_json(o);
	} else {
		const char *k;
		json_t *v;
		printf("hubmirror %s\n", HUBMIRROR_VERSION);
		json_object_foreach(json_object_get(o, "libraries"), k, v) {
			if (json_is_string(v))
				printf("  %-12s %s\n", k, json_string_value(v));
			else
				printf("  %-12s %lld\n", k, (long long)json_integer_value(v));
		}
	}
	json_decref(o);
	return CLI_OK;
}
