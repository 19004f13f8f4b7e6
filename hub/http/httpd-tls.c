/*
 * httpd-tls.c - TLS on the HTTP server's connections (see httpd-int.h).
 *
 * One port serves both: a connection whose first byte is 0x16 (a TLS handshake record; no HTTP
 * method starts with it) gets an OpenSSL session on its socket, the others stay plain. The session
 * is non-blocking like the socket: a call that cannot go on says which way it waits (c->tls_want) and
 * the connection's poll watches that too. File bodies leave with SSL_sendfile when the kernel took
 * over the encryption (kernel TLS), and otherwise are read a slice at a time into a buffer that
 * SSL_write encrypts; docs/benchmarks.md ("HTTPS") has the numbers. The process must ignore SIGPIPE (serve
 * does): OpenSSL writes to the socket with write().
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "base/xmalloc.h"
#include "httpd-int.h"
#include "tls.h"

#define TLS_COPY (256 << 10)   /* a file body's slice per SSL_write without kernel TLS */

int httpd__tls_detect(struct conn *c)
{
	unsigned char b;
	ssize_t n;

	if (c->tls_checked)
		return 0;
	if (!c->h->cfg.tls) {
		c->tls_checked = true;
		return 0;
	}
	n = recv(c->fd, &b, 1, MSG_PEEK);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -1;
	if (n == 0)
		return -1;
	c->tls_checked = true;
	if (b != 0x16)
		return 0;
	c->ssl = SSL_new(hub_tls_ctx(c->h->cfg.tls));
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
		SSL_free(c->ssl);
		c->ssl = NULL;
		ERR_clear_error();
		return -1;
	}
	SSL_set_accept_state(c->ssl);
	c->h->stats.tls_connections++;
	return 0;
}

/* A TLS call returned ret <= 0: -1 with errno EAGAIN (c->tls_want set when it waits for the other
 * direction than own), 0 for the peer's close_notify when reading, else -1 with ECONNRESET. */
static ssize_t tls_fail(struct conn *c, int ret, int own)
{
	switch (SSL_get_error(c->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		c->tls_want = own == UV_READABLE ? 0 : UV_READABLE;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		c->tls_want = own == UV_WRITABLE ? 0 : UV_WRITABLE;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		if (own == UV_READABLE)
			return 0;
		/* fall through */
	default:
		c->tls_dead = true; /* a handshake that failed, a bad record, a reset */
		c->h->stats.tls_errors++;
		ERR_clear_error();
		errno = ECONNRESET;
		return -1;
	}
}

ssize_t httpd__recv(struct conn *c, void *buf, size_t n)
{
	size_t got = 0;
	int r;

	if (!c->ssl)
		return recv(c->fd, buf, n, 0);
	c->tls_want = 0;
	ERR_clear_error();
	r = SSL_read_ex(c->ssl, buf, n, &got);
	return r == 1 ? (ssize_t)got : tls_fail(c, r, UV_READABLE);
}

ssize_t httpd__send(struct conn *c, const void *buf, size_t n)
{
	size_t put = 0;
	int r;

	if (!c->ssl)
		return send(c->fd, buf, n, MSG_NOSIGNAL);
	c->tls_want = 0;
	ERR_clear_error();
	r = SSL_write_ex(c->ssl, buf, n, &put);
	return r == 1 ? (ssize_t)put : tls_fail(c, r, UV_WRITABLE);
}

ssize_t httpd__sendfile(struct conn *c, int fd, off_t *off, size_t n)
{
	ssize_t got;

	if (!c->ssl)
		return sendfile(c->fd, fd, off, n);
	c->tls_want = 0;
	ERR_clear_error();
	if (BIO_get_ktls_send(SSL_get_wbio(c->ssl))) {
		/* the kernel encrypts: the page cache goes out as it does for plain HTTP */
		ossl_ssize_t w = SSL_sendfile(c->ssl, fd, *off, n, 0);
		if (w < 0)
			return tls_fail(c, (int)w, UV_WRITABLE);
		*off += (off_t)w;
		return (ssize_t)w;
	}
	/* A slice through a buffer, read once and sent as the socket takes it (a congested socket takes
	 * a record or two per call: reading the slice again each time cost more than the encryption).
	 * After a WANT_WRITE the same bytes are offered again from where the offset stands, as OpenSSL
	 * wants; the buffer may move meanwhile (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). */
	if (!c->tls_buf) {
		c->tls_buf = xmalloc(TLS_COPY);
		c->tls_buf_len = 0;
	}
	if ((int64_t)*off < c->tls_buf_off || (int64_t)*off >= c->tls_buf_off + (int64_t)c->tls_buf_len) {
		size_t want = n > TLS_COPY ? TLS_COPY : n;
		c->tls_buf_len = 0;
		do
			got = pread(fd, c->tls_buf, want, *off);
		while (got < 0 && errno == EINTR);
		if (got <= 0)
			return got < 0 ? -1 : 0;
		c->tls_buf_off = (int64_t)*off;
		c->tls_buf_len = (size_t)got;
	}
	{
		size_t skip = (size_t)((int64_t)*off - c->tls_buf_off), have = c->tls_buf_len - skip;
		got = httpd__send(c, c->tls_buf + skip, have < n ? have : n);
	}
	if (got > 0)
		*off += (off_t)got;
	return got;
}

bool httpd__tls_pending(const struct conn *c)
{
	return c->ssl && SSL_has_pending(c->ssl);
}

void httpd__tls_close(struct conn *c)
{
	free(c->tls_buf);
	c->tls_buf = NULL;
	if (!c->ssl)
		return;
	if (!c->tls_dead && SSL_is_init_finished(c->ssl)) {
		ERR_clear_error();
		SSL_shutdown(c->ssl); /* one try: close_notify if the socket takes it */
	}
	SSL_free(c->ssl);
	c->ssl = NULL;
	ERR_clear_error();
}
