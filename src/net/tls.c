#include "config.h"

#include "infertop/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct tls_target {
	struct tls_target *next;
	SSL_SESSION *session;  /* the last resumable one, or NULL */
	struct tls_ctx *ctx;
	bool is_ip;            /* no SNI; the certificate names the address */
	long port;
	char host[];
};

struct tls_ctx {
	SSL_CTX *ssl;
	struct tls_target *targets;
	bool insecure;
};

struct tls_conn {
	SSL *ssl;
	BIO *in, *out;         /* ciphertext from the socket, to the socket */
	struct tls_target *target;
	CURLcode rc;
	char msg[CURL_ERROR_SIZE];
};

/* The one handshake the result records (tls_negotiated): written once, by
 * whichever thread's first handshake ends first. */
static atomic_int tls_noted;   /* 0 none, 1 being written, 2 readable */
static char tls_noted_version[32], tls_noted_cipher[96];

/* A session the server gave (after the handshake in TLS 1.2, in a ticket
 * after it in 1.3) replaces the target's last: the next connection to
 * it resumes. */
static int tls_on_session(SSL *ssl, SSL_SESSION *s)
{
	struct tls_conn *c = SSL_get_app_data(ssl);
	if (!c || !SSL_SESSION_is_resumable(s))
		return 0;
	if (c->target->session)
		SSL_SESSION_free(c->target->session);
	c->target->session = s;
	return 1; /* the reference is the target's now */
}

/* OpenSSL's reason for the oldest error queued, the queue emptied (a
 * failure must not be read again by the next connection of the thread). */
static void tls_reason(char *buf, size_t cap)
{
	unsigned long e = ERR_get_error();
	if (e)
		ERR_error_string_n(e, buf, cap);
	else
		snprintf(buf, cap, "unknown error");
	ERR_clear_error();
}

struct tls_ctx *tls_ctx_new(const struct tls_opts *o, char *err, size_t cap)
{
	struct tls_ctx *c = calloc(1, sizeof *c);
	if (!c || !(c->ssl = SSL_CTX_new(TLS_client_method()))) {
		snprintf(err, cap, "out of memory for TLS");
		free(c);
		return NULL;
	}
	c->insecure = o->insecure;
	SSL_CTX *s = c->ssl;
	SSL_CTX_set_min_proto_version(s, TLS1_2_VERSION);
	/* A server's renegotiation request is refused: it would let the
	 * peer change the session mid-stream for nothing we need. */
	SSL_CTX_set_options(s, SSL_OP_NO_RENEGOTIATION);
	static const unsigned char alpn[] = "\x08http/1.1";
	SSL_CTX_set_alpn_protos(s, alpn, sizeof alpn - 1);
	SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(s, tls_on_session);
	SSL_CTX_set_verify(s, o->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
	/* As libcurl: --cacert's CAs replace the system store. With -k none
	 * is read: the system bundle alone is 250M instructions (~60 ms) to
	 * parse, for checks that are not made. */
	if (o->insecure) {
		ERR_clear_error();
		return c;
	}
	int ok = o->cafile ? SSL_CTX_load_verify_locations(s, o->cafile, NULL)
			   : SSL_CTX_set_default_verify_paths(s);
	if (!ok) {
		ERR_clear_error();
		snprintf(err, cap, "error setting certificate file: %s", o->cafile ? o->cafile : "(system)");
		tls_ctx_free(c);
		return NULL;
	}
	ERR_clear_error();
	return c;
}

void tls_ctx_free(struct tls_ctx *c)
{
	if (!c)
		return;
	for (struct tls_target *t = c->targets, *next; t; t = next) {
		next = t->next;
		if (t->session)
			SSL_SESSION_free(t->session);
		free(t);
	}
	SSL_CTX_free(c->ssl);
	free(c);
}

struct tls_target *tls_target_get(struct tls_ctx *c, const char *host, long port)
{
	for (struct tls_target *t = c->targets; t; t = t->next)
		if (t->port == port && strcmp(t->host, host) == 0)
			return t;
	size_t n = strlen(host);
	struct tls_target *t = calloc(1, sizeof *t + n + 1);
	if (!t)
		return NULL;
	memcpy(t->host, host, n + 1);
	t->port = port;
	t->ctx = c;
	unsigned char addr[16];
	t->is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
	t->next = c->targets;
	c->targets = t;
	return t;
}

struct tls_conn *tls_conn_new(struct tls_target *t)
{
	struct tls_conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->target = t;
	c->in = BIO_new(BIO_s_mem());
	c->out = BIO_new(BIO_s_mem());
	c->ssl = SSL_new(t->ctx->ssl);
	if (!c->in || !c->out || !c->ssl) {
		BIO_free(c->in);
		BIO_free(c->out);
		SSL_free(c->ssl);
		free(c);
		ERR_clear_error();
		return NULL;
	}
	/* An empty input buffer is "more to come", not an end. */
	BIO_set_mem_eof_return(c->in, -1);
	SSL_set_bio(c->ssl, c->in, c->out); /* the session owns both now */
	SSL_set_app_data(c->ssl, c);
	SSL_set_connect_state(c->ssl);
	SSL_set_read_ahead(c->ssl, 1);
	int ok = 1;
	if (!t->is_ip) /* RFC 6066: no SNI for an address */
		ok = SSL_set_tlsext_host_name(c->ssl, t->host);
	if (ok && !t->ctx->insecure) {
		X509_VERIFY_PARAM *p = SSL_get0_param(c->ssl);
		ok = t->is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, t->host) : SSL_set1_host(c->ssl, t->host);
	}
	if (ok && t->session)
		ok = SSL_set_session(c->ssl, t->session);
	if (!ok) {
		tls_conn_free(c, -1, false);
		return NULL;
	}
	return c;
}

void tls_conn_free(struct tls_conn *c, int fd, bool ok)
{
	if (!c)
		return;
	if (ok && fd >= 0 && SSL_is_init_finished(c->ssl)) {
		const char *p;
		if (SSL_shutdown(c->ssl) >= 0) {
			size_t n = tls_out(c, &p);
			if (n)
				(void)send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
	}
	SSL_free(c->ssl); /* and its BIOs */
	ERR_clear_error();
	free(c);
}

int tls_feed(struct tls_conn *c, const void *data, size_t len)
{
	return len > (size_t)INT32_MAX || BIO_write(c->in, data, (int)len) != (int)len ? -1 : 0;
}

static void tls_note(SSL *ssl)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&tls_noted, &expect, 1))
		return;
	snprintf(tls_noted_version, sizeof tls_noted_version, "%s", SSL_get_version(ssl));
	const char *cipher = SSL_get_cipher_name(ssl);
	snprintf(tls_noted_cipher, sizeof tls_noted_cipher, "%s", cipher ? cipher : "");
	atomic_store(&tls_noted, 2);
}

bool tls_negotiated(const char **version, const char **cipher)
{
	if (atomic_load(&tls_noted) != 2)
		return false;
	*version = tls_noted_version;
	*cipher = tls_noted_cipher;
	return true;
}

static void tls_fail(struct tls_conn *c, CURLcode rc, const char *fmt, const char *what)
{
	c->rc = rc;
	snprintf(c->msg, sizeof c->msg, fmt, what);
}

int tls_handshake(struct tls_conn *c)
{
	int k = SSL_do_handshake(c->ssl);
	if (k == 1) {
		tls_note(c->ssl);
		return TLS_DONE;
	}
	int e = SSL_get_error(c->ssl, k);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return TLS_MORE;
	char reason[200];
	long v = SSL_get_verify_result(c->ssl);
	if (v != X509_V_OK && !c->target->ctx->insecure) {
		/* curl's words, and its code (CURLE_PEER_FAILED_VERIFICATION). */
		ERR_clear_error();
		if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
			tls_fail(c, CURLE_PEER_FAILED_VERIFICATION,
				 "SSL: no alternative certificate subject name matches target host name '%s'",
				 c->target->host);
		else
			tls_fail(c, CURLE_PEER_FAILED_VERIFICATION, "SSL certificate problem: %s",
				 X509_verify_cert_error_string(v));
		return TLS_FAILED;
	}
	tls_reason(reason, sizeof reason);
	tls_fail(c, CURLE_SSL_CONNECT_ERROR, "%s", reason);
	return TLS_FAILED;
}

ssize_t tls_read(struct tls_conn *c, void *buf, size_t cap)
{
	/* Nothing to decrypt: the SSL_read after a record's plaintext, which
	 * would say so after a walk through the record layer (every token). */
	if (BIO_ctrl_pending(c->in) == 0 && !SSL_has_pending(c->ssl))
		return TLS_MORE;
	int k = SSL_read(c->ssl, buf, cap > (size_t)INT32_MAX ? INT32_MAX : (int)cap);
	if (k > 0)
		return k;
	switch (SSL_get_error(c->ssl, k)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return TLS_MORE;
	case SSL_ERROR_ZERO_RETURN:
		return TLS_CLOSED;
	default: {
		/* An alert, a record that fails its check, a renegotiation:
		 * libcurl's CURLE_RECV_ERROR, in its words. */
		char reason[200];
		tls_reason(reason, sizeof reason);
		tls_fail(c, CURLE_RECV_ERROR, "OpenSSL SSL_read: %s, errno 0", reason);
		return TLS_FAILED;
	}
	}
}

int tls_write(struct tls_conn *c, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		int n = len > (size_t)INT32_MAX ? INT32_MAX : (int)len;
		int k = SSL_write(c->ssl, p, n);
		if (k <= 0) {
			char reason[200];
			tls_reason(reason, sizeof reason);
			tls_fail(c, CURLE_SEND_ERROR, "SSL_write() returned error: %s", reason);
			return -1;
		}
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

size_t tls_out(struct tls_conn *c, const char **data)
{
	char *p = NULL;
	long n = BIO_get_mem_data(c->out, &p);
	*data = p;
	return n > 0 ? (size_t)n : 0;
}

void tls_out_done(struct tls_conn *c, size_t n)
{
	/* A memory buffer gives bytes up only by reading them out. */
	char drop[4096];
	while (n > 0) {
		int k = BIO_read(c->out, drop, n < sizeof drop ? (int)n : (int)sizeof drop);
		if (k <= 0)
			break;
		n -= (size_t)k;
	}
}

bool tls_buffered(struct tls_conn *c)
{
	return BIO_ctrl_pending(c->in) > 0 || SSL_has_pending(c->ssl);
}

void tls_note_eof(struct tls_conn *c)
{
	/* curl 7.88's words for a connection closed in the handshake. */
	c->rc = CURLE_SSL_CONNECT_ERROR;
	snprintf(c->msg, sizeof c->msg, "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to %.150s:%ld ",
		 c->target->host, c->target->port);
}

CURLcode tls_error(const struct tls_conn *c, const char **msg)
{
	*msg = c->msg;
	return c->rc;
}
