/*
 * fuzz-spec.c - hub/spec.c, repository specs as users and lists write them (hf:org/name@rev): a spec
 * that parses has a name of at most one "/" (none only for Hugging Face's legacy names) with no "..",
 * and formats back to a spec that parses to the same thing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct hub_spec a, b;

	memcpy(s, data, size);
	s[size] = '\0';
	if (!hub_spec_parse(s, &a)) {
		char *again = hub_spec_format(&a, 1);
		/* org/name; Hugging Face also has bare legacy names (gpt2) */
		if (!a.name || (!strchr(a.name, '/') && a.hub != HUB_HF) || strstr(a.name, "..") || a.name[0] == '/' ||
		    strchr(strchr(a.name, '/') ? strchr(a.name, '/') + 1 : a.name, '/'))
			abort();
		if (hub_spec_parse(again, &b) || strcmp(a.name, b.name) || a.hub != b.hub || a.type != b.type ||
		    (a.revision == NULL) != (b.revision == NULL) || (a.revision && strcmp(a.revision, b.revision)))
			abort();
		hub_spec_release(&b);
		free(again);
		hub_spec_release(&a);
	}
	free(s);
	return 0;
}
