/*
 * test-hub-spec.c - repository specs: the forms of docs/commands/add.md, and names that must not pass.
 */
#include <stdlib.h>

#include "base/err.h"
#include "hub/hub.h"
#include "test.h"

TEST(parses_the_four_forms)
{
	struct hub_spec s;
	char *f;

	CHECK_INT(hub_spec_parse("hf:Qwen/Qwen2.5-7B-Instruct", &s), 0);
	CHECK_INT(s.hub, HUB_HF);
	CHECK_INT(s.type, HUB_MODEL);
	CHECK_STR(s.name, "Qwen/Qwen2.5-7B-Instruct");
	CHECK(s.revision == NULL);
	hub_spec_release(&s);

	CHECK_INT(hub_spec_parse("hf:datasets/HuggingFaceFW/fineweb@refs/pr/1", &s), 0);
	CHECK_INT(s.type, HUB_DATASET);
	CHECK_STR(s.name, "HuggingFaceFW/fineweb");
	CHECK_STR(s.revision, "refs/pr/1");
	f = hub_spec_format(&s, 1);
	CHECK_STR(f, "hf:datasets/HuggingFaceFW/fineweb@refs/pr/1");
	free(f);
	f = hub_spec_format(&s, 0);
	CHECK_STR(f, "hf:datasets/HuggingFaceFW/fineweb");
	free(f);
	hub_spec_release(&s);

	CHECK_INT(hub_spec_parse("ms:qwen/Qwen2.5-7B-Instruct@v1.0", &s), 0);
	CHECK_INT(s.hub, HUB_MS);
	CHECK_STR(s.revision, "v1.0");
	hub_spec_release(&s);

	CHECK_INT(hub_spec_parse("ms:datasets/modelscope/chinese-poetry", &s), 0);
	CHECK_INT(s.type, HUB_DATASET);
	hub_spec_release(&s);

	CHECK_INT(hub_spec_parse("hf:gpt2", &s), 0); /* legacy names without an org */
	CHECK_STR(s.name, "gpt2");
	hub_spec_release(&s);
	CHECK_STR(hub_default_revision(HUB_MS), "master");
	CHECK_STR(hub_default_revision(HUB_HF), "main");
}

/* A repository's page pasted from a browser names the repository. */
TEST(understands_pasted_urls)
{
	static const char *const urls[][2] = {
		{"https://huggingface.co/Qwen/Qwen2.5-7B-Instruct", "hf:Qwen/Qwen2.5-7B-Instruct"},
		{"https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/config.json",
		 "hf:Qwen/Qwen2.5-7B-Instruct"},
		{"https://hf.co/datasets/HuggingFaceFW/fineweb?x=1#top", "hf:datasets/HuggingFaceFW/fineweb"},
		{"https://huggingface.co/acme/m/tree/refs%2Fpr%2F1/sub", "hf:acme/m@refs/pr/1"},
		{"https://www.modelscope.cn/models/qwen/Qwen2.5-7B-Instruct/files", "ms:qwen/Qwen2.5-7B-Instruct"},
		{"https://modelscope.cn/datasets/acme/rows", "ms:datasets/acme/rows"},
	};
	static const char *const not_repos[] = {
		"https://huggingface.co/Qwen", "https://huggingface.co/spaces/a/b", "https://evil.example/a/b",
		"https://modelscope.cn/qwen/x", "https://huggingface.co/../../etc", "https://huggingface.co/a/..",
		"ftp://huggingface.co/a/b",
	};
	struct hub_spec s;

	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		char *f;
		CHECK_INT(hub_spec_parse(urls[i][0], &s), 0);
		f = s.name ? hub_spec_format(&s, 1) : NULL;
		CHECK_STR(f, urls[i][1]);
		free(f);
		hub_spec_release(&s);
	}
	for (size_t i = 0; i < sizeof(not_repos) / sizeof(not_repos[0]); i++)
		CHECK_INT(hub_spec_parse(not_repos[i], &s), HM_ERR_BAD_SPEC);
}

TEST(rejects_hostile_and_malformed)
{
	static const char *const bad[] =
		{
			"Qwen/Qwen2.5",
			"gh:org/name",
			"hf:",
			"hf:org/",
			"hf:/name",
			"hf:org/name/extra",
			"hf:../etc",
			"hf:org/..",
			"hf:org/a..b",
			"hf:org/a--b",
			"hf:.org/name",
			"hf:org/name-",
			"hf:org/na me",
			"hf:org/name@",
			"hf:org/name@../x",
			"hf:org/name@/abs",
			"hf:org/name@a b",
			"hf:org/name@a%2e",
			"ms:gpt2",
			"hf:org/name\n",
			"hf:datasets/",
			"hf:org\\name",
			"hf:org/"
			"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			"aaaaa", /* 97 */
		};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hub_spec s = { 0 };
		int r = hub_spec_parse(bad[i], &s);
		if (r != HM_ERR_BAD_SPEC)
			printf("#   accepted bad spec '%s'\n", bad[i]);
		CHECK_INT(r, HM_ERR_BAD_SPEC);
		CHECK(s.name == NULL);
	}
}

/* An owner called "models" or "datasets" reads as the type prefix unless it is spelled out: formatting
 * keeps the explicit "models/" so the spec parses back to the same repo (found by fuzz-spec). */
TEST(formats_back_to_the_same_repo)
{
	static const char *const specs[] = { "ms:models/models/m", "hf:models/datasets/x", "hf:datasets/models/y",
					      "hf:acme/plain@v1", "hf:gpt2" };

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct hub_spec a, b;
		char *f;
		CHECK_INT(hub_spec_parse(specs[i], &a), 0);
		f = hub_spec_format(&a, 1);
		CHECK_INT(hub_spec_parse(f, &b), 0);
		CHECK_STR(b.name, a.name);
		CHECK_INT(b.type, a.type);
		hub_spec_release(&a);
		hub_spec_release(&b);
		free(f);
	}
}

int main(void)
{
	RUN(parses_the_four_forms);
	RUN(understands_pasted_urls);
	RUN(rejects_hostile_and_malformed);
	RUN(formats_back_to_the_same_repo);
	return test_done();
}
