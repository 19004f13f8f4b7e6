/*
 * tls.h - the server side of TLS: a certificate chain and its private key in an OpenSSL context that
 * can be replaced while serving (serve reloads it on SIGHUP). A connection keeps the context it
 * started with; new ones get the new one. TLS 1.2 and 1.3 only; kernel TLS is asked for, so file
 * bodies can leave with SSL_sendfile where the kernel offers it (docs/commands/serve.md, under --tls-cert).
 */
#ifndef HM_HUB_TLS_H
#define HM_HUB_TLS_H

#include <stdbool.h>

#include <openssl/ssl.h>

struct hub_tls;

/* Load cert_file (PEM: the certificate, then its chain) and key_file (PEM). Returns 0 (and *out,
 * owned: hub_tls_free) or -1 with *errmsg (malloc'd) naming the file and OpenSSL's reason. */
int hub_tls_new(const char *cert_file, const char *key_file, struct hub_tls **out, char **errmsg);

/* Load the files again; on failure the context in use stays and -1 is returned with *errmsg. */
int hub_tls_reload(struct hub_tls *t, char **errmsg);

/* The context new connections get (borrowed; SSL_new takes its own reference). */
SSL_CTX *hub_tls_ctx(const struct hub_tls *t);

/* "CN=mirror.example, expires 2027-12-01" for the logs; malloc'd. */
char *hub_tls_describe(const struct hub_tls *t);

void hub_tls_free(struct hub_tls **t);

#endif
