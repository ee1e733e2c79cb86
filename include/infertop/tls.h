#ifndef INFERTOP_TLS_H
#define INFERTOP_TLS_H

/* TLS for the direct transport (direct.h): an OpenSSL session over memory
 * buffers, never over the socket. The transport reads the socket itself
 * (each recvmsg() keeps its kernel receive stamp), feeds the ciphertext
 * in (tls_feed), takes the plaintext out (tls_read) into the same HTTP/1.x
 * reader as plain http, and sends what the session wrote (tls_out) with
 * its own sendmsg(). So this layer does no I/O and knows no socket: the
 * fuzz target drives it with recorded bytes.
 *
 * One tls_ctx per thread (per struct http): the settings (CA store, -k),
 * and per target (host and port) the last session a handshake gave, to
 * resume on the next connection. Sessions and keys stay in memory: no key
 * log, no session file. Errors are named as libcurl names the same
 * failures (its CURLcode and wording), so a request fails with the same
 * error kind on either path. */

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tls_opts {
	bool insecure;         /* -k: no certificate or name check */
	const char *cafile;    /* --cacert: these CAs instead of the system's */
};

struct tls_ctx;
struct tls_target;
struct tls_conn;

/* NULL with why in err (curl's CURLE_SSL_CACERT_BADFILE wording for an
 * unreadable --cacert). */
struct tls_ctx *tls_ctx_new(const struct tls_opts *o, char *err, size_t cap);
void tls_ctx_free(struct tls_ctx *c);
/* The target host:port (a name or an IP address, no brackets), kept for
 * the context's life; NULL: out of memory. */
struct tls_target *tls_target_get(struct tls_ctx *c, const char *host, long port);

/* A client session to t, resuming t's last session when it has one. NULL:
 * out of memory. */
struct tls_conn *tls_conn_new(struct tls_target *t);
/* close_notify: sent (best effort, never blocking) when the session ended
 * well (ok), which also keeps its session resumable; then freed. */
void tls_conn_free(struct tls_conn *c, int fd, bool ok);

/* What the calls below return besides a byte count. */
#define TLS_MORE 0       /* it needs more ciphertext (tls_feed) */
#define TLS_DONE 1       /* tls_handshake: done */
#define TLS_CLOSED (-1)  /* tls_read: the peer's close_notify (EOF) */
#define TLS_FAILED (-2)  /* tls_error says what */

/* Ciphertext read from the socket. 0, or -1: out of memory. */
int tls_feed(struct tls_conn *c, const void *data, size_t len);
/* Drives the handshake: TLS_DONE, TLS_MORE or TLS_FAILED. */
int tls_handshake(struct tls_conn *c);
/* Plaintext into buf (> 0 bytes), or TLS_MORE, TLS_CLOSED, TLS_FAILED. */
ssize_t tls_read(struct tls_conn *c, void *buf, size_t cap);
/* Takes all of data (memory buffers never refuse); -1: failed. */
int tls_write(struct tls_conn *c, const void *data, size_t len);
/* The ciphertext waiting to be sent: its length, *data at it. */
size_t tls_out(struct tls_conn *c, const char **data);
/* n bytes of it were sent. */
void tls_out_done(struct tls_conn *c, size_t n);
/* Bytes are buffered past what was read (ciphertext not yet taken, or
 * part of a record): the session is not at a clean boundary. */
bool tls_buffered(struct tls_conn *c);
/* The TCP connection closed without close_notify: the failure it is
 * during a handshake (curl's SSL_ERROR_SYSCALL wording). */
void tls_note_eof(struct tls_conn *c);
/* The last failure: curl's code for it, and why. */
CURLcode tls_error(const struct tls_conn *c, const char **msg);

/* The protocol version and cipher the first handshake of the process
 * agreed on (the result records them); false before any. */
bool tls_negotiated(const char **version, const char **cipher);

#endif
