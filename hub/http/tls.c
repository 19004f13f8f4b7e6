/*
 * tls.c - server certificates for httpd (see tls.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "base/xmalloc.h"
#include "tls.h"

struct hub_tls {
	char *cert_file;
	char *key_file;
	SSL_CTX *ctx;
};

/* OpenSSL's reason for the last failure, one line. */
static char *ssl_reason(void)
{
	unsigned long e = ERR_get_error();
	char buf[256];

	if (!e)
		return xstrdup("unknown error");
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return xstrdup(buf);
}

/* Only HTTP/1.1 is spoken: say so to clients that offer h2 too. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
		       unsigned int inlen, void *arg)
{
	static const unsigned char h11[] = "\x08http/1.1";

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto((unsigned char **)out, outlen, h11, sizeof(h11) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *load(const char *cert_file, const char *key_file, char **errmsg)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	const char *what = NULL, *file = NULL;

	if (!ctx) {
		what = "cannot make a TLS context";
		goto fail;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* kernel TLS where the kernel has it (SSL_sendfile); no renegotiation; a server's cipher order */
	SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* a body goes out record by record as the socket drains, from a buffer that may move between
	 * retries (httpd-tls.c); idle connections give their buffers back */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
			      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
		what = "cannot load the certificate";
		file = cert_file;
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
		what = ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH
			? "the private key does not match the certificate" : "cannot load the private key";
		file = key_file;
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		what = "the private key does not match the certificate";
		file = key_file;
		goto fail;
	}
	return ctx;
fail:
	if (errmsg) {
		char *why = ssl_reason();
		*errmsg = file ? xasprintf("%s %s: %s", what, file, why) : xasprintf("%s: %s", what, why);
		free(why);
	}
	SSL_CTX_free(ctx);
	return NULL;
}

int hub_tls_new(const char *cert_file, const char *key_file, struct hub_tls **out, char **errmsg)
{
	SSL_CTX *ctx = load(cert_file, key_file, errmsg);
	struct hub_tls *t;

	if (!ctx)
		return -1;
	t = xcalloc(1, sizeof(*t));
	t->cert_file = xstrdup(cert_file);
	t->key_file = xstrdup(key_file);
	t->ctx = ctx;
	*out = t;
	return 0;
}

int hub_tls_reload(struct hub_tls *t, char **errmsg)
{
	SSL_CTX *ctx = load(t->cert_file, t->key_file, errmsg);

	if (!ctx)
		return -1;
	SSL_CTX_free(t->ctx); /* connections made from it hold their own reference */
	t->ctx = ctx;
	return 0;
}

SSL_CTX *hub_tls_ctx(const struct hub_tls *t)
{
	return t->ctx;
}

char *hub_tls_describe(const struct hub_tls *t)
{
	X509 *x = SSL_CTX_get0_certificate(t->ctx);
	char cn[256] = "?", when[32] = "?";
	struct tm tm;

	if (x) {
		X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
		if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1)
			strftime(when, sizeof(when), "%Y-%m-%d", &tm);
	}
	return xasprintf("CN=%s, expires %s", cn, when);
}

void hub_tls_free(struct hub_tls **tp)
{
	struct hub_tls *t = tp ? *tp : NULL;

	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t->cert_file);
	free(t->key_file);
	free(t);
	*tp = NULL;
}
