/*
 * oci.c - the local endpoint as the node's registry mirror (docs/agent.md, "The registry mirror"):
 * what a /v2/ path names, the manifests the mirror gave checked against their digests, and the layers
 * they list remembered, so that a blob asked for later is a file of a snapshot the agent takes through
 * its cache and the swarm (a raw layer: the file; a tar layer: the file between the header hub/oci.c
 * makes and zeros, its digest checked once against the manifest's when the file is whole in the cache).
 *
 * A layer is remembered by its repository's OCI name and digest under <cache>/agent/oci/ (a small JSON
 * file: the snapshot's spec and commit, the file's path, tar or raw, and once checked the tar header the
 * digest was computed with), so that a restart still knows it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "agent-int.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/path.h"
#include "base/xmalloc.h"
#include "hub/oci.h"

#define LAYER_TAR "application/vnd.oci.image.layer.v1.tar"
#define RAW_PREFIX "application/vnd.cncf.model."
#define MAX_ENTRY (64u << 10)

enum agent_oci_kind agent_oci_path(const char *path, char **name, char **ref)
{
	static const char *const kinds[] = { "/manifests/", "/blobs/" };
	const char *rest;

	if (strncmp(path, "/v2/", 4))
		return AGENT_OCI_NONE;
	rest = path + 4;
	for (int k = 0; k < 2; k++) {
		/* the last occurrence: a name may hold neither word as a segment, but be safe */
		const char *hit = NULL, *p = rest;
		size_t n = strlen(kinds[k]);
		while ((p = strstr(p, kinds[k])) != NULL)
			hit = p++;
		if (!hit || hit == rest || !hit[n] || strchr(hit + n, '/'))
			continue;
		*name = xstrndup(rest, (size_t)(hit - rest));
		*ref = xstrdup(hit + n);
		return k ? AGENT_OCI_BLOB : AGENT_OCI_MANIFEST;
	}
	return AGENT_OCI_NONE;
}

/* sha256:<64 lowercase hex> */
static bool is_digest(const char *s)
{
	return s && !strncmp(s, "sha256:", 7) && strlen(s) == 71 && hex_is_lower(s + 7, 64);
}

static char *entry_path(struct agent *a, const char *name, const char *digest)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[65], *key = xasprintf("%s %s", name, digest);

	SHA256((const unsigned char *)key, strlen(key), md);
	hex_encode(md, sizeof(md), hex);
	free(key);
	return agent_path_oci(a, hex);
}

static void entry_write(struct agent *a, const char *name, const char *digest, json_t *j)
{
	char *p = entry_path(a, name, digest), *dir = agent_path_oci(a, NULL), *s = json_dumps(j, JSON_COMPACT);

	path_mkdirs(dir, 0700);
	if (s)
		path_write_atomic(p, s, strlen(s), 0600);
	free(s);
	free(dir);
	free(p);
}

/* The hub spec an OCI name stands for, without the mirror's word for it ("image/" and "hf/" cut). */
static char *spec_of_name(const char *name)
{
	static const struct {
		const char *oci, *spec;
	} map[] = { { "hf-datasets/", "hf:datasets/" }, { "ms-datasets/", "ms:datasets/" }, { "hf/", "hf:" },
		    { "ms/", "ms:" } };

	if (!strncmp(name, "image/", 6))
		name += 6;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strncmp(name, map[i].oci, strlen(map[i].oci)))
			return xasprintf("%s%s", map[i].spec, name + strlen(map[i].oci));
	return NULL;
}

/* Remember each layer of the manifest j: raw layers (the ModelPack types) and tar layers, by path. */
static void learn_layers(struct agent *a, const char *name, const char *spec, const char *commit, json_t *j)
{
	json_t *l;
	size_t i;

	json_array_foreach(json_object_get(j, "layers"), i, l) {
		const char *mt = json_string_value(json_object_get(l, "mediaType"));
		const char *d = json_string_value(json_object_get(l, "digest"));
		json_t *an = json_object_get(l, "annotations");
		const char *p = json_string_value(json_object_get(an, "org.cncf.model.filepath"));
		bool tar = mt && !strcmp(mt, LAYER_TAR);
		json_t *e;

		if (!p || !is_digest(d) || !mt || (!tar && strncmp(mt, RAW_PREFIX, strlen(RAW_PREFIX))) ||
		    path_check_str(p))
			continue;
		e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "name", name, "digest", d, "spec", spec, "commit",
			      commit, "path", p, "tar", tar);
		entry_write(a, name, d, e);
		json_decref(e);
	}
}

int agent_oci_manifest(struct agent *a, const char *name, const char *ref, const char *digest, const char *commit,
		       const char *repo, const char *body, size_t len, const char **why)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	char have[72], *spec = NULL;
	json_t *j = NULL;
	int r = -1;

	memcpy(have, "sha256:", 7);
	SHA256((const unsigned char *)body, len, md);
	hex_encode(md, sizeof(md), have + 7);
	if (!is_digest(digest)) {
		*why = "the mirror's manifest came without its digest (Docker-Content-Digest)";
		goto out;
	}
	if (strcmp(have, digest) || (!strncmp(ref, "sha256:", 7) && strcmp(have, ref))) {
		*why = "the mirror's manifest is not the digest it was named by";
		goto out;
	}
	r = 0;
	j = json_loadb(body, len, 0, NULL);
	if (!commit)
		commit = json_string_value(
			json_object_get(json_object_get(j, "annotations"), "org.opencontainers.image.revision"));
	spec = repo ? xstrdup(repo) : spec_of_name(name);
	if (j && spec && commit && *commit && !strchr(commit, '@') && !strchr(commit, '/'))
		learn_layers(a, name, spec, commit, j);
out:
	json_decref(j);
	free(spec);
	return r;
}

int agent_oci_layer_find(struct agent *a, const char *name, const char *digest, struct agent_oci_layer *l)
{
	char *p = entry_path(a, name, digest), *raw = NULL;
	const char *spec, *commit, *path, *hdr;
	size_t len = 0;
	json_t *j = NULL;
	int r = HM_ERR_NOT_FOUND;

	if (is_digest(digest) && !path_read_file(p, MAX_ENTRY, &raw, &len))
		j = json_loadb(raw, len, 0, NULL);
	spec = json_string_value(json_object_get(j, "spec"));
	commit = json_string_value(json_object_get(j, "commit"));
	path = json_string_value(json_object_get(j, "path"));
	hdr = json_string_value(json_object_get(j, "header"));
	if (spec && commit && path && !path_check_str(path)) {
		memset(l, 0, sizeof(*l));
		l->spec = xasprintf("%s@%s", spec, commit);
		l->path = xstrdup(path);
		l->tar = json_is_true(json_object_get(j, "tar"));
		l->checked_size = json_integer_value(json_object_get(j, "size"));
		if (hdr && strlen(hdr) % 1024 == 0 && *hdr && l->checked_size > 0) {
			l->header_len = strlen(hdr) / 2;
			l->header = xmalloc(l->header_len);
			if (hex_decode(hdr, l->header, l->header_len)) {
				free(l->header);
				l->header = NULL;
				l->header_len = 0;
			}
		}
		if (!l->header)
			l->checked_size = -1;
		r = 0;
	}
	json_decref(j);
	free(raw);
	free(p);
	return r;
}

void agent_oci_layer_release(struct agent_oci_layer *l)
{
	free(l->spec);
	free(l->path);
	free(l->header);
	memset(l, 0, sizeof(*l));
}

int agent_oci_tar_check(struct agent *a, const char *name, const char *digest, struct agent_oci_layer *l,
			const char *file, int64_t size, const char **why)
{
	char have[72], *raw = NULL, *p, *hex;
	size_t len = 0;
	json_t *j = NULL;
	int r;

	if (l->header && l->checked_size == size)
		return 0; /* checked before, with this header */
	if (l->header && l->checked_size != size) {
		free(l->header);
		l->header = NULL;
	}
	if (!l->header && hub_oci_tar_header(l->path, size, &l->header, &l->header_len)) {
		*why = "the layer's tar header cannot be made for this file's name";
		return -1;
	}
	r = hub_oci_tar_digest_until(l->header, l->header_len, file, size, &a->quit, have);
	if (r || strcmp(have, digest)) {
		*why = r ? "the cached file cannot be read"
			 : "the tar layer made here is not the manifest's digest (the mirror wrote another tar header)";
		return -1;
	}
	l->checked_size = size;
	/* remembered with its header: the next request sends the same bytes without reading them twice */
	p = entry_path(a, name, digest);
	if (!path_read_file(p, MAX_ENTRY, &raw, &len))
		j = json_loadb(raw, len, 0, NULL);
	if (json_is_object(j)) {
		hex = xmalloc(l->header_len * 2 + 1);
		hex_encode(l->header, l->header_len, hex);
		json_object_set_new(j, "header", json_string(hex));
		json_object_set_new(j, "size", json_integer(size));
		entry_write(a, name, digest, j);
		free(hex);
	}
	json_decref(j);
	free(raw);
	free(p);
	return 0;
}
