/*
 * routes-oci-artifact.c - the OCI front's artifact of a snapshot (routes-oci.c has the whole story,
 * docs/protocols/oci.md): the CNCF ModelPack artifact (one raw layer per file, its digest the file's
 * sha256, and a config made from the snapshot's own files), or the image of tar layers (a config and
 * a manifest per platform, and their index). Built from the snapshot alone, so their bytes and
 * digests never change for one snapshot.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "base/buf.h"
#include "base/bug.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "catalog/catalog.h"
#include "hub/hub.h"
#include "hub/oci.h"
#include "mirror/data.h"
#include "store/store.h"
#include "routes-int.h"
#include "routes-oci-int.h"

#define OCI_MANIFEST_TYPE "application/vnd.oci.image.manifest.v1+json"
#define OCI_MODEL_ARTIFACT "application/vnd.cncf.model.manifest.v1+json"
#define OCI_MODEL_CONFIG "application/vnd.cncf.model.config.v1+json"
#define OCI_INDEX_TYPE "application/vnd.oci.image.index.v1+json"
#define OCI_IMAGE_CONFIG "application/vnd.oci.image.config.v1+json"
#define OCI_TAR_LAYER "application/vnd.oci.image.layer.v1.tar"
static const char *const oci_arch[OCI_NPLAT] = { "amd64", "arm64" };

/* ---- the artifact: layers, config, manifest ---- */

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcasecmp(s + n - m, suffix);
}

static bool suffix_in(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (has_suffix(s, *list))
			return true;
	return false;
}

/* The ModelPack layer media type of a file, by its name (docs/protocols/oci.md has the rules). */
static const char *oci_layer_type(const char *path, bool dataset)
{
	static const char *const weights[] = { ".safetensors", ".gguf", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".h5",
					       ".msgpack", ".tflite", ".pb", ".ot", ".mlmodel", ".npz", ".nemo", NULL };
	static const char *const code[] = { ".py", ".sh", ".ipynb", ".js", ".ts", ".c", ".h", ".cc", ".cpp", ".cu",
					    ".rs", ".go", ".java", ".lua", NULL };
	static const char *const docs[] = {".md",   ".rst", ".pdf", ".png",  ".jpg",
					   ".jpeg", ".gif", ".svg", ".webp", NULL};
	static const char *const data[] = { ".parquet", ".arrow", ".csv", ".tsv", ".jsonl", ".jsonl.gz", ".tfrecord",
					    ".zst", ".tar", ".tar.gz", ".zip", NULL };
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	if (!strncasecmp(base, "README", 6) || !strncasecmp(base, "LICENSE", 7) || !strncasecmp(base, "NOTICE", 6) ||
	    !strncasecmp(base, "COPYING", 7) || suffix_in(base, docs))
		return "application/vnd.cncf.model.doc.v1.raw";
	if (suffix_in(base, code))
		return "application/vnd.cncf.model.code.v1.raw";
	if (dataset || suffix_in(base, data))
		return "application/vnd.cncf.model.dataset.v1.raw";
	if (suffix_in(base, weights) && !has_suffix(base, ".index.json"))
		return "application/vnd.cncf.model.weight.v1.raw";
	/* config.json, tokenizers, vocabularies, the shards' index, anything else a model repo holds */
	return "application/vnd.cncf.model.weight.config.v1.raw";
}

static void oci_digest(const char *text, size_t len, char out[72])
{
	unsigned char md[32];
	unsigned int n = 0;

	EVP_Digest(text, len, md, &n, EVP_sha256(), NULL);
	memcpy(out, "sha256:", 7);
	hex_encode(md, 32, out + 7);
}

/* Add j (taken) as the artifact's next document, compact with sorted keys: the same snapshot gives the
 * same bytes. Its descriptor (mediaType, digest, size) is returned, new; NULL for a path not UTF-8. */
static json_t *oci_doc_add(struct oci_art *a, json_t *j, const char *type, bool manifest)
{
	struct oci_doc *d = &a->docs[a->ndocs];
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref(j);
	BUG_ON(a->ndocs >= OCI_MAX_DOCS);
	if (!text)
		return NULL;
	d->text = text;
	d->len = strlen(text);
	d->type = type;
	d->manifest = manifest;
	oci_digest(text, d->len, d->digest);
	a->ndocs++;
	return json_pack("{s:s,s:s,s:I}", "mediaType", type, "digest", d->digest, "size", (json_int_t)d->len);
}

/* The file's layer: raw (its digest the file's sha256), or in an image its tar layer (hub/oci.h) by the
 * digest kept for it, else noted missing. */
static void oci_art_add_layer(struct oci_art *a, const struct catalog_entry *e, const char *mt)
{
	char digest[72];
	size_t hlen = 0;
	int64_t size = e->size;

	snprintf(digest, sizeof(digest), "sha256:%s", e->sha256);
	if (a->o->image) {
		if (catalog_oci_tar_get(a->o->rt->data->catalog, e->sha256, e->path, digest, &hlen)) {
			json_array_append_new(a->missing,
					      json_pack("[s,s,I]", e->sha256, e->path, (json_int_t)e->size));
			return;
		}
		size = (int64_t)hlen + e->size + hub_oci_tar_tail(e->size);
		mt = OCI_TAR_LAYER;
	}
	json_array_append_new(a->layers,
			      json_pack("{s:s,s:s,s:I,s:{s:s,s:s}}", "mediaType", mt, "digest", digest, "size",
					(json_int_t)size, "annotations", "org.cncf.model.filepath", e->path,
					"org.opencontainers.image.title", e->path));
	json_array_append_new(a->diffs, json_string(digest));
}

static int oci_art_layer(void *ud, const struct catalog_entry *e)
{
	struct oci_art *a = ud;
	const char *mt = oci_layer_type(e->path, !strcmp(a->o->type, "dataset"));

	oci_art_add_layer(a, e, mt);
	if (a->want_layer && !strcmp(a->want_layer, e->sha256))
		a->layer_size = e->size;
	if (!strcmp(e->path, "config.json")) {
		snprintf(a->config_sha, sizeof(a->config_sha), "%s", e->sha256);
		a->config_size = e->size;
	}
	if (!a->format && !strcmp(mt, "application/vnd.cncf.model.weight.v1.raw")) {
		static const char *const kinds[][2] = {{".safetensors", "safetensors"},
						       {".gguf", "gguf"},
						       {".onnx", "onnx"},
						       {".bin", "pytorch"},
						       {".pt", "pytorch"},
						       {".pth", "pytorch"},
						       {".h5", "keras"},
						       {".msgpack", "flax"},
						       {".tflite", "tflite"}};
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (has_suffix(e->path, kinds[i][0]))
				a->format = kinds[i][1];
	}
	return 0;
}

/* The snapshot's config.json as JSON into a->config (NULL when none, too big, absent from the store or
 * not JSON). Read on serve's loop only from local disk (store_slurp local_only): one that only the
 * bucket holds is OCI_NEED_CONFIG (the caller reads it on a worker, into o->configs, and routes the
 * request again); one whose copy is not its content is HM_ERR_HASH_MISMATCH, and one the worker could
 * not read -EIO (a->config_err says why, either way): never read as the snapshot's. */
static int oci_read_config(struct oci_art *a)
{
	json_t *pre = a->o->configs ? json_object_get(a->o->configs, a->config_sha) : NULL;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!a->config_sha[0] || a->config_size > OCI_CONFIG_MAX)
		return 0;
	if (pre && json_is_string(pre)) {
		a->config_err = xstrdup(json_string_value(pre));
		return -EIO;
	}
	if (pre) {
		a->config = json_is_object(pre) ? json_incref(pre) : NULL;
		return 0;
	}
	r = store_slurp(a->o->rt->data->store, a->config_sha, OCI_CONFIG_MAX, true, &text, &len, &a->config_err);
	if (r == -EAGAIN) {
		FREE_AND_NULL(&a->config_err);
		return OCI_NEED_CONFIG;
	}
	if (r == HM_ERR_HASH_MISMATCH)
		return r;
	FREE_AND_NULL(&a->config_err);
	a->config = r ? NULL : mirror__oci_config_parse(text, len);
	free(text);
	return 0;
}

json_t *mirror__oci_config_parse(const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, JSON_DECODE_ANY, NULL);

	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

static char *oci_source_url(const struct catalog_repo *r)
{
	if (!strcmp(r->hub, "ms"))
		return xasprintf("https://www.modelscope.cn/%s/%s", strcmp(r->type, "dataset") ? "models" : "datasets",
				 r->name);
	return xasprintf("https://huggingface.co/%s%s", strcmp(r->type, "dataset") ? "" : "datasets/", r->name);
}

/* The model's config: what the snapshot's files say (config.json's architecture and dtype, the
 * weights' format), the repository and commit, the layers' digests. Nothing that changes with time. */
static json_t *oci_config_json(struct oci_art *a)
{
	const struct catalog_repo *r = &a->o->repo;
	json_t *cj = json_incref(a->config), *cfg = json_object(), *v;
	char *name = xasprintf("%s/%s", a->o->prefix, r->name);
	char *source = oci_source_url(r);
	json_t *out;

	if (cj) {
		v = json_array_get(json_object_get(cj, "architectures"), 0);
		if (!json_is_string(v))
			v = json_object_get(cj, "model_type");
		if (json_is_string(v))
			json_object_set(cfg, "architecture", v);
		v = json_object_get(cj, "torch_dtype");
		if (!json_is_string(v))
			v = json_object_get(cj, "dtype");
		if (json_is_string(v))
			json_object_set(cfg, "precision", v);
	}
	if (a->format)
		json_object_set_new(cfg, "format", json_string(a->format));
	out = json_pack("{s:{s:s,s:s,s:s},s:o,s:{s:s,s:O}}", "descriptor", "name", name, "revision", a->snap->commit,
			"sourceURL", source, "config", cfg, "modelfs", "type", "layers", "diffIds", a->diffs);
	json_decref(cj);
	free(name);
	free(source);
	return out;
}

void mirror__oci_art_release(struct oci_art *a)
{
	json_decref(a->layers);
	json_decref(a->diffs);
	json_decref(a->missing);
	json_decref(a->config);
	a->config = NULL;
	FREE_AND_NULL(&a->config_err);
	for (size_t i = 0; i < a->ndocs; i++)
		free(a->docs[i].text);
	a->ndocs = 0;
}

/* The ModelPack artifact: its config and its manifest, what the reference names. */
static int oci_art_modelpack(struct oci_art *a)
{
	json_t *config = oci_doc_add(a, oci_config_json(a), OCI_MODEL_CONFIG, false), *d;

	if (!config)
		return HM_ERR_NOT_FOUND; /* (a path that is not UTF-8) */
	d = oci_doc_add(a, json_pack("{s:i,s:s,s:s,s:o,s:O,s:{s:s}}", "schemaVersion", 2, "mediaType",
				     OCI_MANIFEST_TYPE, "artifactType", OCI_MODEL_ARTIFACT, "config", config, "layers",
				     a->layers, "annotations", "org.opencontainers.image.revision", a->snap->commit),
			OCI_MANIFEST_TYPE, true);
	if (!d)
		return HM_ERR_NOT_FOUND;
	json_decref(d);
	a->main = a->ndocs - 1;
	return 0;
}

/* The image: for each platform a config (rootfs: the tar layers) and a manifest, and the index of
 * them, what the reference names. A model's files are the same on every platform; containerd unpacks
 * only an image whose config names its own. */
static int oci_art_image(struct oci_art *a)
{
	const char *commit = a->snap->commit;
	char *source = oci_source_url(&a->o->repo);
	json_t *list = json_array(), *config, *d;
	int r = HM_ERR_NOT_FOUND;

	for (size_t i = 0; i < OCI_NPLAT; i++) {
		json_t *cj = json_pack("{s:s,s:s,s:{s:{s:s,s:s}},s:{s:s,s:O}}", "architecture", oci_arch[i], "os",
				       "linux", "config", "Labels", "org.opencontainers.image.revision", commit,
				       "org.opencontainers.image.source", source, "rootfs", "type", "layers",
				       "diff_ids", a->diffs);
		config = oci_doc_add(a, cj, OCI_IMAGE_CONFIG, false);
		if (!config)
			goto out;
		d = oci_doc_add(a, json_pack("{s:i,s:s,s:o,s:O,s:{s:s}}", "schemaVersion", 2, "mediaType",
					     OCI_MANIFEST_TYPE, "config", config, "layers", a->layers, "annotations",
					     "org.opencontainers.image.revision", commit),
				OCI_MANIFEST_TYPE, true);
		if (!d)
			goto out;
		json_object_set_new(d, "platform", json_pack("{s:s,s:s}", "architecture", oci_arch[i], "os", "linux"));
		json_array_append_new(list, d);
	}
	d = oci_doc_add(a, json_pack("{s:i,s:s,s:O,s:{s:s}}", "schemaVersion", 2, "mediaType", OCI_INDEX_TYPE,
				     "manifests", list, "annotations", "org.opencontainers.image.revision", commit),
			OCI_INDEX_TYPE, true);
	if (!d)
		goto out;
	json_decref(d);
	a->main = a->ndocs - 1;
	r = 0;
out:
	json_decref(list);
	free(source);
	return r;
}

int mirror__oci_art_build(struct oreq *o, const struct catalog_snapshot *snap, const char *want_layer,
			  struct oci_art *a)
{
	int r;

	memset(a, 0, sizeof(*a));
	a->layer_size = -1;
	a->o = o;
	a->snap = snap;
	a->want_layer = want_layer;
	a->layers = json_array();
	a->diffs = json_array();
	a->missing = json_array();
	r = catalog_snapshot_walk(o->rt->data->catalog, snap->id, NULL, NULL, 0, oci_art_layer, a);
	if (r)
		return r;
	if (json_array_size(a->missing))
		return OCI_INCOMPLETE;
	if (!o->image && (r = oci_read_config(a)))   /* (an image's configs do not say what config.json says) */
		return r;
	return o->image ? oci_art_image(a) : oci_art_modelpack(a);
}

const struct oci_doc *mirror__oci_art_doc(const struct oci_art *a, const char *digest, bool manifest)
{
	for (size_t i = 0; i < a->ndocs; i++)
		if (a->docs[i].manifest == manifest && !strcmp(a->docs[i].digest, digest))
			return &a->docs[i];
	return NULL;
}
