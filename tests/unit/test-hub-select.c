/*
 * test-hub-select.c - which files a partial pull takes: huggingface_hub's filter_repo_objects rules
 * (fnmatch over the whole path, '*' crossing '/', a folder pattern), the metadata that comes along,
 * and --exclude winning over both.
 */
#include <stdint.h>

#include "hub/select.h"
#include "test.h"

#define N(a) (sizeof(a) / sizeof(*(a)))

TEST(globs_as_python_fnmatch)
{
	const char *q4[] = { "*Q4_K_M*" }, *dir[] = { "data/" }, *cls[] = { "model-0000[12]*" }, *none[] = { "" };

	CHECK(hub_glob_match_any(q4, 1, "llm-Q4_K_M.gguf"));
	CHECK(hub_glob_match_any(q4, 1, "Q4_K_M/llm-00001-of-00002.gguf")); /* '*' crosses '/' */
	CHECK(!hub_glob_match_any(q4, 1, "llm-Q4_K_S.gguf"));
	CHECK(!hub_glob_match_any(q4, 1, "llm-q4_k_m.gguf")); /* case matters, as on Linux */
	CHECK(hub_glob_match_any(dir, 1, "data/train/part-0.parquet"));
	CHECK(!hub_glob_match_any(dir, 1, "data.json"));
	CHECK(hub_glob_match_any(cls, 1, "model-00002-of-00004.safetensors"));
	CHECK(!hub_glob_match_any(cls, 1, "model-00003-of-00004.safetensors"));
	CHECK(!hub_glob_match_any(none, 1, "x"));
	CHECK(!hub_glob_match_any(NULL, 0, "x"));
}

TEST(metadata)
{
	CHECK(hub_is_metadata("README.md", 1000));
	CHECK(hub_is_metadata("config.json", 10));
	CHECK(hub_is_metadata("generation_config.json", 10));
	CHECK(hub_is_metadata("model.safetensors.index.json", 50000));
	CHECK(hub_is_metadata("tokenizer.json", 30 << 20));
	CHECK(hub_is_metadata("tokenizer_config.json", 10));
	CHECK(hub_is_metadata("text_encoder/config.json", 10)); /* diffusers' folders */
	CHECK(hub_is_metadata("configuration.json", 10));         /* ModelScope */
	CHECK(hub_is_metadata("modeling_custom.py", 10));         /* remote code, top level */
	CHECK(!hub_is_metadata("scripts/train.py", 10));
	CHECK(!hub_is_metadata("data/train.json", 10));           /* a dataset's JSON is data */
	CHECK(!hub_is_metadata("model.safetensors", 10));
	CHECK(!hub_is_metadata("tokenizer.json", HUB_META_MAX + 1));
	CHECK(!hub_is_metadata(".gitattributes", 10));
}

TEST(selection)
{
	const char *inc[] = { "*Q8_0*" }, *exc[] = { "*.md" };

	/* no pattern: everything */
	CHECK(hub_select(NULL, 0, NULL, 0, "llm-Q2_K.gguf", 1 << 30));
	/* an include: what matches, and the metadata */
	CHECK(hub_select(inc, 1, NULL, 0, "llm-Q8_0.gguf", 1 << 30));
	CHECK(!hub_select(inc, 1, NULL, 0, "llm-Q2_K.gguf", 1 << 30));
	CHECK(hub_select(inc, 1, NULL, 0, "README.md", 100));
	/* an exclude wins, over metadata too */
	CHECK(!hub_select(inc, 1, exc, 1, "README.md", 100));
	CHECK(!hub_select(NULL, 0, exc, 1, "README.md", 100));
	CHECK(hub_select(NULL, 0, exc, 1, "llm-Q2_K.gguf", 100));
}

TEST(pattern_check)
{
	char long_one[1100];

	memset(long_one, '*', sizeof(long_one) - 1);
	long_one[sizeof(long_one) - 1] = '\0';
	CHECK_INT(hub_glob_check("*.gguf"), 0);
	CHECK_INT(hub_glob_check(""), -EINVAL);
	CHECK_INT(hub_glob_check(NULL), -EINVAL);
	CHECK_INT(hub_glob_check("a\nb"), -EINVAL);
	CHECK_INT(hub_glob_check(long_one), -EINVAL);
}

int main(void)
{
	RUN(globs_as_python_fnmatch);
	RUN(metadata);
	RUN(selection);
	RUN(pattern_check);
	return test_done();
}
