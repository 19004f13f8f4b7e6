/*
 * test-p2p-agent-policy.c - the instance agent's two policies, without a session or a disk: which
 * snapshots eviction drops (agent_evict_pick: least recently used first, busy ones never, until the
 * cache is under its bound) and which files a snapshot wants (agent_select for a pull's
 * --include/--exclude, agent_prefetch for a mount's --prefetch, agent_want_indices for libtorrent's
 * file indices), and where a held snapshot's swarm is (agent_sources_rebase: the mirrors it is told
 * about now); which /v2/ paths the endpoint takes for a registry's manifests and blobs
 * (agent_oci_path); and where a Xet reconstruction's fetch URLs start in the file (agent_xet_rewrite).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "p2p/agent/agent-int.h"
#include "p2p/p2p.h"
#include "test.h"

#define N(a) (sizeof(a) / sizeof(*(a)))

TEST(evict_least_recently_used_first_until_under)
{
	/* used 100, bound 60: the oldest (2, then 0) go; 1 and 3 stay */
	struct agent_evict_cand c[] = {
		{ .held = 20, .use_seq = 5 },
		{ .held = 30, .use_seq = 9 },
		{ .held = 25, .use_seq = 2 },
		{ .held = 25, .use_seq = 7 },
	};
	size_t pick[N(c)];
	int64_t left = -1;

	CHECK_INT(agent_evict_pick(c, N(c), 100, 60, pick, &left), 2);
	CHECK_INT(pick[0], 2);
	CHECK_INT(pick[1], 0);
	CHECK_INT(left, 55);
}

TEST(evict_never_busy)
{
	/* the oldest is mounted or pinned: the next oldest goes in its place */
	struct agent_evict_cand c[] = {
		{ .held = 50, .use_seq = 1, .busy = true },
		{ .held = 50, .use_seq = 2 },
		{ .held = 50, .use_seq = 3 },
	};
	size_t pick[N(c)];
	int64_t left = -1;

	CHECK_INT(agent_evict_pick(c, N(c), 150, 100, pick, &left), 1);
	CHECK_INT(pick[0], 1);
	CHECK_INT(left, 100); /* at the bound is under it */
}

TEST(evict_nothing_when_under_or_all_busy)
{
	struct agent_evict_cand c[] = {
		{ .held = 10, .use_seq = 1 },
		{ .held = 10, .use_seq = 2, .busy = true },
	};
	size_t pick[N(c)];
	int64_t left = -1;

	CHECK_INT(agent_evict_pick(c, N(c), 20, 20, pick, &left), 0);
	CHECK_INT(left, 20);
	c[0].busy = true;
	CHECK_INT(agent_evict_pick(c, N(c), 500, 20, pick, &left), 0);
	CHECK_INT(left, 500); /* still over: the caller thins cold pieces */
	CHECK_INT(agent_evict_pick(NULL, 0, 500, 20, pick, &left), 0);
}

TEST(evict_order_uncounted_first_then_time)
{
	/* use_seq 0 (not used since the agent started): older than any counted use, by last_used */
	struct agent_evict_cand c[] = {
		{ .held = 10, .use_seq = 1, .last_used = 100 },
		{ .held = 10, .use_seq = 0, .last_used = 900 },
		{ .held = 10, .use_seq = 0, .last_used = 500 },
		{ .held = 10, .use_seq = 2, .last_used = 50 },
	};
	size_t pick[N(c)];
	int64_t left = -1;

	CHECK_INT(agent_evict_pick(c, N(c), 40, 0, pick, &left), 4);
	CHECK_INT(pick[0], 2);
	CHECK_INT(pick[1], 1);
	CHECK_INT(pick[2], 0);
	CHECK_INT(pick[3], 3);
	CHECK_INT(left, 0);
}

static json_t *meta_of(const char *const *paths, size_t n)
{
	json_t *files = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(files, json_pack("{s:s, s:I}", "path", paths[i], "size", (json_int_t)1000));
	return json_pack("{s:o}", "files", files);
}

static const char *const repo[] = {
	"config.json", "README.md", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
	"model.safetensors.index.json", "gguf/llm-Q4_K_M.gguf", "gguf/llm-Q8_0.gguf", "tokenizer.json",
};

/* Whether arr holds exactly these strings, in order. */
static bool is(json_t *arr, const char *const *want, size_t n)
{
	if (json_array_size(arr) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!json_string_value(json_array_get(arr, i)) ||
		    strcmp(json_string_value(json_array_get(arr, i)), want[i]))
			return false;
	return true;
}

TEST(want_pull_include_exclude)
{
	json_t *meta = meta_of(repo, N(repo)), *inc = json_pack("[s]", "*Q4_K_M*"),
	       *exc = json_pack("[s]", "README.md");
	json_t *w;
	const char *q4[] = { "config.json", "README.md", "model.safetensors.index.json", "gguf/llm-Q4_K_M.gguf",
			     "tokenizer.json" };
	const char *noreadme[] = { "config.json", "model.safetensors.index.json", "gguf/llm-Q4_K_M.gguf",
				   "tokenizer.json" };
	const char *nogguf[] = { "config.json", "README.md", "model-00001-of-00002.safetensors",
				 "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json" };

	CHECK(agent_select(meta, NULL, NULL) == NULL); /* no pattern: every file */
	w = agent_select(meta, inc, NULL);
	CHECK(is(w, q4, N(q4))); /* the matches and the metadata */
	json_decref(w);
	w = agent_select(meta, inc, exc);
	CHECK(is(w, noreadme, N(noreadme))); /* exclude wins over the metadata */
	json_decref(w);
	json_decref(exc);
	exc = json_pack("[s]", "gguf/");
	w = agent_select(meta, NULL, exc);
	CHECK(is(w, nogguf, N(nogguf)));
	json_decref(w);
	json_decref(exc);
	json_decref(inc);
	json_decref(meta);
}

TEST(want_mount_prefetch)
{
	json_t *meta = meta_of(repo, N(repo)), *all = json_string("all"), *none = json_string("none");
	json_t *pats = json_pack("[s]", "model-0000[1]*"), *w;
	const char *metadata[] = { "config.json", "README.md", "model.safetensors.index.json", "tokenizer.json" };
	const char *first[] = { "config.json", "README.md", "model-00001-of-00002.safetensors",
				"model.safetensors.index.json", "tokenizer.json" };

	CHECK(agent_prefetch(meta, all) == NULL);
	w = agent_prefetch(meta, none);
	CHECK(json_is_array(w) && json_array_size(w) == 0);
	json_decref(w);
	w = agent_prefetch(meta, NULL);
	CHECK(is(w, metadata, N(metadata)));
	json_decref(w);
	w = agent_prefetch(meta, pats);
	CHECK(is(w, first, N(first)));
	json_decref(w);
	json_decref(pats);
	json_decref(none);
	json_decref(all);
	json_decref(meta);
}

TEST(want_indices)
{
	struct p2p_file_entry v[] = {
		{ .path = "a.bin", .index = 3 },
		{ .path = "b.json", .index = 0 },
		{ .path = "sub/c.bin", .index = 7 },
	};
	struct p2p_file_list l = { .v = v, .n = N(v) };
	json_t *want = json_pack("[s, s, s]", "sub/c.bin", "a.bin", "not-there");
	size_t n = 99;
	int *idx = agent_want_indices(&l, want, &n);

	CHECK_INT(n, 2);
	CHECK_INT(idx[0], 3); /* in the list's order */
	CHECK_INT(idx[1], 7);
	free(idx);
	idx = agent_want_indices(&l, NULL, &n);
	CHECK_INT(n, 3);
	CHECK_INT(idx[0], 3);
	CHECK_INT(idx[1], 0);
	CHECK_INT(idx[2], 7);
	free(idx);
	json_decref(want);
}

/* The mirrors a held snapshot asks: those the agent is told about now, whatever its torrent says. */
TEST(sources_follow_the_mirrors)
{
	json_t *tr = json_pack("[s, s]", "http://old:8080/announce?hmcap=C", "http://peer:80/announce?hmcap=C");
	json_t *ws = json_pack("[s]", "http://old:8080/p2p/seed/BTIH/");
	json_t *r;

	/* moved: the new list first, the answering one before it; the old base gone, the peer kept */
	r = agent_sources_rebase("http://a:1, http://b:2/", "http://b:2", tr, "/announce");
	CHECK_INT(json_array_size(r), 3);
	CHECK_STR(json_string_value(json_array_get(r, 0)), "http://b:2/announce?hmcap=C");
	CHECK_STR(json_string_value(json_array_get(r, 1)), "http://a:1/announce?hmcap=C");
	CHECK_STR(json_string_value(json_array_get(r, 2)), "http://peer:80/announce?hmcap=C");
	json_decref(r);
	/* taken back after a restart (no answer yet): the agent's mirrors, in their order */
	r = agent_sources_rebase("http://c:3", NULL, ws, "/p2p/");
	CHECK_INT(json_array_size(r), 1);
	CHECK_STR(json_string_value(json_array_get(r, 0)), "http://c:3/p2p/seed/BTIH/");
	json_decref(r);
	/* the same mirror: nothing changes */
	r = agent_sources_rebase("http://old:8080", "http://old:8080", tr, "/announce");
	CHECK(json_equal(r, tr));
	json_decref(r);
	/* no mirror to put them on, or URLs of no mirror: as they are */
	r = agent_sources_rebase(NULL, NULL, tr, "/announce");
	CHECK(json_equal(r, tr));
	json_decref(r);
	r = agent_sources_rebase("http://a:1", NULL, ws, "/announce");
	CHECK(json_equal(r, ws));
	json_decref(r);
	json_decref(tr);
	json_decref(ws);
}

static bool oci_is(const char *path, enum agent_oci_kind want, const char *name, const char *ref)
{
	char *n = NULL, *r = NULL;
	enum agent_oci_kind k = agent_oci_path(path, &n, &r);
	bool ok = k == want && (k == AGENT_OCI_NONE ? !n && !r : !strcmp(n, name) && !strcmp(r, ref));

	free(n);
	free(r);
	return ok;
}

TEST(oci_paths)
{
	CHECK(oci_is("/v2/hf/acme/x/manifests/main", AGENT_OCI_MANIFEST, "hf/acme/x", "main"));
	CHECK(oci_is("/v2/image/hf/acme/x/manifests/sha256:ab", AGENT_OCI_MANIFEST, "image/hf/acme/x", "sha256:ab"));
	CHECK(oci_is("/v2/hf/acme/x/blobs/sha256:ab", AGENT_OCI_BLOB, "hf/acme/x", "sha256:ab"));
	/* a name holding the word: the last one is the verb */
	CHECK(oci_is("/v2/hf/blobs/x/blobs/sha256:ab", AGENT_OCI_BLOB, "hf/blobs/x", "sha256:ab"));
	/* not the registry's: the root, the token, tags, a Hub path under /v2/, nothing after the verb */
	CHECK(oci_is("/v2/", AGENT_OCI_NONE, NULL, NULL));
	CHECK(oci_is("/v2/token", AGENT_OCI_NONE, NULL, NULL));
	CHECK(oci_is("/v2/hf/acme/x/tags/list", AGENT_OCI_NONE, NULL, NULL));
	CHECK(oci_is("/v2/x/resolve/main/config.json", AGENT_OCI_NONE, NULL, NULL));
	CHECK(oci_is("/v2/hf/acme/x/manifests/", AGENT_OCI_NONE, NULL, NULL));
	CHECK(oci_is("/v2/manifests/main", AGENT_OCI_NONE, NULL, NULL));
	CHECK(oci_is("/acme/x/blobs/sha256:ab", AGENT_OCI_NONE, NULL, NULL));
	CHECK(oci_is("/v2/hf/acme/x/blobs/sha256:ab/more", AGENT_OCI_NONE, NULL, NULL));
}

/* A reconstruction's fetch URLs learn where their bytes start in the file (agent_xet_rewrite): the
 * first term starts offset_into_first_range before the Range's start, each next one where the last
 * ended; v1's entry has one range, v2's several; an entry no term names is left as it was. */
TEST(xet_rewrite_gives_each_fetch_url_its_offsets)
{
	const char *v1 = "{\"offset_into_first_range\": 100, \"terms\": ["
		"{\"hash\": \"aa\", \"unpacked_length\": 5000, \"range\": {\"start\": 3, \"end\": 5}},"
		"{\"hash\": \"bb\", \"unpacked_length\": 700, \"range\": {\"start\": 0, \"end\": 1}}],"
		"\"fetch_info\": {\"aa\": [{\"range\": {\"start\": 3, \"end\": 5}, \"url\": \"http://e/x/S/0?cap=C\","
		"\"url_range\": {\"start\": 9000, \"end\": 14015}}],"
		"\"bb\": [{\"range\": {\"start\": 0, \"end\": 1}, \"url\": \"http://e/x/S/1?cap=D\","
		"\"url_range\": {\"start\": 0, \"end\": 707}},"
		"{\"range\": {\"start\": 4, \"end\": 6}, \"url\": \"http://e/x/S/2?cap=E\","
		"\"url_range\": {\"start\": 50, \"end\": 90}}]}}";
	const char *v2 = "{\"offset_into_first_range\": 0, \"terms\": ["
		"{\"hash\": \"aa\", \"unpacked_length\": 10, \"range\": {\"start\": 0, \"end\": 1}},"
		"{\"hash\": \"aa\", \"unpacked_length\": 20, \"range\": {\"start\": 7, \"end\": 8}}],"
		"\"xorbs\": {\"aa\": [{\"url\": \"http://e/x/S/0?cap=C\", \"ranges\": ["
		"{\"chunks\": {\"start\": 0, \"end\": 1}, \"bytes\": {\"start\": 0, \"end\": 17}},"
		"{\"chunks\": {\"start\": 7, \"end\": 8}, \"bytes\": {\"start\": 400, \"end\": 427}}]}]}}";
	char *ans = xstrdup(v1);
	size_t len = strlen(ans);
	json_t *j;

	/* the client asked from byte 1000: the first term starts at 900, the second at 5900 */
	agent_xet_rewrite("bytes=1000-1999", &ans, &len);
	j = json_loads(ans, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(j, "fetch_info"),
		"aa"), 0), "url")), "http://e/x/S/0?cap=C&at=9000:900");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(j, "fetch_info"),
		"bb"), 0), "url")), "http://e/x/S/1?cap=D&at=0:5900");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(j, "fetch_info"),
		"bb"), 1), "url")), "http://e/x/S/2?cap=E");
	json_decref(j);
	free(ans);
	/* v2, no Range: one URL, two ranges, two offsets */
	ans = xstrdup(v2);
	len = strlen(ans);
	agent_xet_rewrite(NULL, &ans, &len);
	j = json_loads(ans, 0, NULL);
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(j, "xorbs"),
		"aa"), 0), "url")), "http://e/x/S/0?cap=C&at=0:0,400:10");
	json_decref(j);
	free(ans);
	/* not a reconstruction: as it was */
	ans = xstrdup("{\"error\": \"no\"}");
	len = strlen(ans);
	agent_xet_rewrite(NULL, &ans, &len);
	CHECK_STR(ans, "{\"error\": \"no\"}");
	free(ans);
}

int main(void)
{
	RUN(evict_least_recently_used_first_until_under);
	RUN(evict_never_busy);
	RUN(evict_nothing_when_under_or_all_busy);
	RUN(evict_order_uncounted_first_then_time);
	RUN(want_pull_include_exclude);
	RUN(want_mount_prefetch);
	RUN(want_indices);
	RUN(sources_follow_the_mirrors);
	RUN(oci_paths);
	RUN(xet_rewrite_gives_each_fetch_url_its_offsets);
	return test_done();
}
