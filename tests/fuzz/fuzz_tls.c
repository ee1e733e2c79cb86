/* The direct path's TLS layer (tls.h) under every read boundary and broken
 * ciphertext. A server session (OpenSSL, in memory, a throwaway P-256 key
 * and self-signed certificate made at start) shakes hands with a client
 * session of tls.c and sends the input as its records; the server's bytes
 * (its handshake flight, tickets and records: the recorded stream) are fed
 * to the client whole, byte by byte (a boundary at every byte) and in two
 * at a point the first input byte chooses. Each must give back exactly the
 * input. Then a stream with one byte flipped (where the second input byte
 * says) and one cut short must end in TLS_FAILED, or TLS_MORE with a
 * prefix of the input: never a crash, never bytes that were not sent. A
 * quarter of the inputs also meet a TLS 1.2 server asking to renegotiate,
 * which the client refuses. Aborts on any difference. */
#include "config.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/tls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static SSL_CTX *server_ctx;
static struct tls_ctx *client_ctx;
static struct tls_target *target;

static void die(const char *what)
{
	fprintf(stderr, "fuzz_tls: %s\n", what);
	ERR_print_errors_fp(stderr);
	abort();
}

static void setup(void)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *cert = X509_new();
	if (!key || !cert)
		die("no key");
	X509_set_version(cert, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), 0);
	X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
	X509_set_pubkey(cert, key);
	X509_NAME *name = X509_get_subject_name(cert);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz.test", -1, -1, 0);
	X509_set_issuer_name(cert, name);
	if (!X509_sign(cert, key, EVP_sha256()))
		die("cannot sign");
	server_ctx = SSL_CTX_new(TLS_server_method());
	if (!server_ctx || SSL_CTX_use_certificate(server_ctx, cert) != 1 || SSL_CTX_use_PrivateKey(server_ctx, key) != 1)
		die("no server");
	X509_free(cert);
	EVP_PKEY_free(key);
	char err[256];
	struct tls_opts o = {.insecure = true};
	if (!(client_ctx = tls_ctx_new(&o, err, sizeof err)) || !(target = tls_target_get(client_ctx, "fuzz.test", 443)))
		die(err);
}

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		if (!(b->p = realloc(b->p, b->cap)))
			abort();
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* Moves what the client wrote into the server. */
static void client_to_server(struct tls_conn *c, BIO *srv_in)
{
	const char *p;
	size_t n;
	while ((n = tls_out(c, &p)) > 0) {
		BIO_write(srv_in, p, (int)n);
		tls_out_done(c, n);
	}
}

/* Feeds stream[0..n) to c in pieces of `step` (0: whole; else the first
 * piece `first` bytes, then `step` each), taking plaintext as it comes.
 * Returns the last result (TLS_MORE at the end of a good stream). */
static int feed(struct tls_conn *c, const unsigned char *s, size_t n, size_t first, size_t step, struct buf *plain,
		bool *shaken)
{
	size_t off = 0;
	int last = TLS_MORE;
	while (off < n) {
		size_t k = step == 0 ? n - off : off == 0 && first ? first : step;
		if (k > n - off)
			k = n - off;
		if (tls_feed(c, s + off, k) != 0)
			abort();
		off += k;
		if (!*shaken) {
			int h = tls_handshake(c);
			if (h == TLS_FAILED)
				return TLS_FAILED;
			if (h == TLS_MORE)
				continue;
			*shaken = true;
		}
		for (;;) {
			char out[4096];
			ssize_t r = tls_read(c, out, sizeof out);
			if (r > 0) {
				buf_add(plain, out, (size_t)r);
				continue;
			}
			last = (int)r;
			break;
		}
		if (last == TLS_FAILED || last == TLS_CLOSED)
			return last;
	}
	return last;
}

/* One recorded session read by a new client as `first`/`step` say: the
 * client's hello to a fresh server, the server's flight (the stream's
 * start), then, once the client has finished, the server's tickets, the
 * input as records of `rec` bytes (0: one write) and its close_notify.
 * A server answers only the hello it was sent, so each reading is of a
 * session of its own. */
static void replay(const uint8_t *data, size_t size, size_t rec, size_t first, size_t step, int flip, size_t cut)
{
	struct tls_conn *c = tls_conn_new(target);
	SSL *s = SSL_new(server_ctx);
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
	if (!c || !s || !in || !out)
		die("out of memory");
	SSL_set_bio(s, in, out);
	SSL_set_accept_state(s);
	struct buf stream = {0}, plain = {0};
	/* The client's hello, then the server's flight as the stream's start. */
	tls_handshake(c);
	client_to_server(c, in);
	SSL_do_handshake(s);
	char *p;
	long n = BIO_get_mem_data(out, &p);
	buf_add(&stream, p, (size_t)(n > 0 ? n : 0));
	(void)BIO_reset(out);
	size_t flight = stream.n;
	/* The client reads the flight as told. */
	bool shaken = false;
	int rc = feed(c, stream.p, flight, first < flight ? first : 0, step, &plain, &shaken);
	if (rc == TLS_FAILED || !shaken)
		die("handshake failed on a good flight");
	client_to_server(c, in);
	SSL_do_handshake(s); /* takes the client's Finished */
	for (size_t off = 0; off < size;) {
		size_t k = rec && rec < size - off ? rec : size - off;
		if (SSL_write(s, data + off, (int)k) != (int)k)
			die("server write");
		off += k;
	}
	SSL_shutdown(s);
	n = BIO_get_mem_data(out, &p);
	size_t start = stream.n;
	buf_add(&stream, p, (size_t)(n > 0 ? n : 0));
	size_t len = stream.n - start;
	if (flip >= 0 && len)
		stream.p[start + (size_t)flip % len] ^= 0x20;
	if (cut && cut < len)
		len = cut;
	rc = feed(c, stream.p + start, len, first, step, &plain, &shaken);
	bool broken = flip >= 0 || cut;
	if (!broken) {
		/* Every byte back, then the close_notify as the end. */
		if (rc != TLS_CLOSED || plain.n != size || (size && memcmp(plain.p, data, size) != 0))
			die("plaintext differs from what was sent");
	} else {
		if (rc == TLS_CLOSED && (plain.n != size || memcmp(plain.p, data, size) != 0))
			die("a broken stream closed with other bytes");
		if (plain.n > size || (plain.n && memcmp(plain.p, data, plain.n) != 0))
			die("a broken stream gave bytes that were not sent");
	}
	if (rc == TLS_FAILED) {
		const char *msg;
		if (tls_error(c, &msg) != CURLE_RECV_ERROR || !msg[0])
			die("a failed read not named as curl's CURLE_RECV_ERROR");
	}
	free(stream.p);
	free(plain.p);
	SSL_free(s);
	tls_conn_free(c, -1, false);
	ERR_clear_error();
}

/* A TLS 1.2 server that asks to renegotiate after the input: the client
 * keeps every byte, refuses (a no_renegotiation alert of its own), and the
 * server's fatal answer to that, where it sends one, ends the client's
 * reading as curl's CURLE_RECV_ERROR. */
static void renegotiation(const uint8_t *data, size_t size)
{
	struct tls_conn *c = tls_conn_new(target);
	SSL *s = SSL_new(server_ctx);
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
	if (!c || !s || !in || !out)
		die("out of memory");
	SSL_set_bio(s, in, out);
	SSL_set_accept_state(s);
	SSL_set_max_proto_version(s, TLS1_2_VERSION);
	struct buf plain = {0};
	bool shaken = false;
	for (int round = 0; round < 16 && !(shaken && SSL_is_init_finished(s)); round++) {
		if (tls_handshake(c) == TLS_DONE)
			shaken = true;
		client_to_server(c, in);
		SSL_do_handshake(s);
		char *p;
		long n = BIO_get_mem_data(out, &p);
		if (n > 0) {
			tls_feed(c, p, (size_t)n);
			(void)BIO_reset(out);
		}
	}
	if (!shaken || !SSL_is_init_finished(s))
		die("no TLS 1.2 handshake");
	if (size && SSL_write(s, data, (int)size) != (int)size)
		die("server write");
	if (SSL_renegotiate(s) != 1)
		die("the server cannot ask to renegotiate");
	SSL_do_handshake(s); /* the HelloRequest */
	char *p;
	long n = BIO_get_mem_data(out, &p);
	struct buf stream = {0};
	buf_add(&stream, p, (size_t)(n > 0 ? n : 0));
	(void)BIO_reset(out);
	int rc = feed(c, stream.p, stream.n, 0, 0, &plain, &shaken);
	if (rc != TLS_MORE || plain.n != size || (size && memcmp(plain.p, data, size) != 0))
		die("a renegotiation request lost bytes or ended the reading");
	const char *q;
	/* An alert record (type 21), not a new hello (handshake, 22). */
	if (tls_out(c, &q) == 0 || q[0] != 21)
		die("the client did not refuse the renegotiation");
	client_to_server(c, in);
	char sink[256];
	if (SSL_read(s, sink, sizeof sink) > 0)
		die("the server took a refused renegotiation as data");
	n = BIO_get_mem_data(out, &p);
	if (n > 0) {
		stream.n = 0;
		buf_add(&stream, p, (size_t)n);
		rc = feed(c, stream.p, stream.n, 0, 0, &plain, &shaken);
		const char *msg;
		if (rc != TLS_MORE && (rc != TLS_FAILED || tls_error(c, &msg) != CURLE_RECV_ERROR))
			die("the server's alert not read as curl's CURLE_RECV_ERROR");
	}
	free(stream.p);
	free(plain.p);
	SSL_free(s);
	tls_conn_free(c, -1, false);
	ERR_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!server_ctx)
		setup();
	if (size < 3 || size > 4096)
		return 0;
	size_t first = data[0], rec = data[1] * 16u;
	int flip = data[2];
	data += 3;
	size -= 3;
	replay(data, size, rec, 0, 0, -1, 0);     /* whole */
	replay(data, size, rec, 0, 1, -1, 0);     /* a boundary at every byte */
	replay(data, size, rec, first, 4096, -1, 0); /* in two */
	replay(data, size, rec, first, 7, flip, 0);  /* one byte flipped */
	replay(data, size, rec, 0, 3, -1, first + 1); /* cut short */
	if ((flip & 3) == 0) /* a quarter of the inputs: it is slower */
		renegotiation(data, size);
	return 0;
}
