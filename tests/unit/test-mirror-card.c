/*
 * test-mirror-card.c - cards as HTML: GitHub-flavoured Markdown in safe mode, the front matter left
 * out, the repo's own files through the mirror, nothing loaded from elsewhere.
 */
#include <stdlib.h>
#include <string.h>

#include "mirror/serve/card.h"
#include "test.h"

static char *render(const char *md)
{
	return mirror_card_html(md, strlen(md), "/acme/m/resolve/0123/");
}

TEST(renders_gfm_without_front_matter)
{
	char *h = render("---\nlicense: mit\ntags: [a]\n---\n# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~\n");

	CHECK(strstr(h, "<h1>Title</h1>") != NULL);
	CHECK(strstr(h, "<td>1</td>") != NULL);
	CHECK(strstr(h, "<del>old</del>") != NULL);
	CHECK(strstr(h, "license") == NULL);
	free(h);
	/* "---" that never closes is not front matter: the text stays */
	h = render("---\nnot closed\n");
	CHECK(strstr(h, "not closed") != NULL);
	free(h);
}

TEST(runs_nothing)
{
	char *h = render("<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n[a](javascript:alert(1)) "
			 "[b](vbscript:x) [c](file:///etc/passwd)\n");

	CHECK(strstr(h, "<script") == NULL);
	CHECK(strstr(h, "onerror") == NULL);
	CHECK(strstr(h, "javascript:") == NULL);
	CHECK(strstr(h, "vbscript:") == NULL);
	CHECK(strstr(h, "file:") == NULL);
	free(h);
}

TEST(own_files_through_the_mirror)
{
	char *h = render(
		"![logo](./assets/logo%20big.png) [cfg](config.json#x) [deep](a/b/../c.txt) "
		"[up](../../etc/passwd) [top](#usage) ![far](https://cdn.example/x.png) ![](//cdn.example/y.png)\n");

	CHECK(strstr(h, "<img src=\"/acme/m/resolve/0123/assets/logo%20big.png\"") != NULL);
	CHECK(strstr(h, "href=\"/acme/m/resolve/0123/config.json\"") != NULL);
	CHECK(strstr(h, "href=\"/acme/m/resolve/0123/a/c.txt\"") != NULL);
	CHECK(strstr(h, "href=\"../../etc/passwd\"") != NULL); /* leaves the repo: left as written */
	CHECK(strstr(h, "href=\"#usage\"") != NULL);
	/* remote images are links, never <img> */
	CHECK(strstr(h, "<a href=\"https://cdn.example/x.png\">far</a>") != NULL);
	CHECK(strstr(h, "<a href=\"//cdn.example/y.png\">(image)</a>") != NULL);
	CHECK(strstr(h, "<img src=\"https:") == NULL && strstr(h, "<img src=\"//") == NULL);
	free(h);
}

int main(void)
{
	RUN(renders_gfm_without_front_matter);
	RUN(runs_nothing);
	RUN(own_files_through_the_mirror);
	return test_done();
}
