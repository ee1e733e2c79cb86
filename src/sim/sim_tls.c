#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim_internal.h"

/* A PEM file larger than this is not a certificate chain or a key. */
#define PEM_MAX (1 << 20)

/* The whole of path, NUL-terminated (malloc'd), or NULL after saying why
 * on stderr. */
static char *pem_read(const char *opt, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "infertop sim: cannot read --%s %s: %s\n", opt, path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > PEM_MAX) {
		fprintf(stderr, "infertop sim: cannot read --%s %s: not a regular file of at most 1 MiB\n", opt,
			path);
		close(fd);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t len = 0;
	while (buf && len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "infertop sim: cannot read --%s %s: %s\n", opt, path,
				n < 0 ? strerror(errno) : "the file shrank while read");
			free(buf);
			buf = NULL;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[len] = '\0';
	return buf;
}

/* What GnuTLS says of a file that is not PEM ("The requested data were
 * not available") names neither the file nor the fault. */
static int pem_has(const char *opt, const char *path, const char *pem, const char *marker, const char *what)
{
	if (strstr(pem, marker))
		return 0;
	fprintf(stderr, "infertop sim: --%s %s: no PEM %s in it (a \"-----BEGIN %s-----\" block)\n", opt, path,
		what, what);
	return -1;
}

int sim_tls_load(struct sim_server *s)
{
	if (!s->opt.tls_cert[0])
		return 0;
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		fputs("infertop sim: --tls-cert: this libmicrohttpd was built without TLS support "
		      "(MHD_FEATURE_TLS); https needs one built with GnuTLS\n",
		      stderr);
		return -1;
	}
	s->tls_cert_pem = pem_read("tls-cert", s->opt.tls_cert);
	if (!s->tls_cert_pem ||
	    pem_has("tls-cert", s->opt.tls_cert, s->tls_cert_pem, "-----BEGIN CERTIFICATE-----", "CERTIFICATE") != 0)
		return -1;
	s->tls_key_pem = pem_read("tls-key", s->opt.tls_key);
	if (!s->tls_key_pem ||
	    pem_has("tls-key", s->opt.tls_key, s->tls_key_pem, "PRIVATE KEY-----", "PRIVATE KEY") != 0)
		return -1;
	return 0;
}

void sim_tls_fini(struct sim_server *s)
{
	free(s->tls_cert_pem);
	s->tls_cert_pem = NULL;
	/* The key leaves memory with the server. */
	if (s->tls_key_pem) {
		explicit_bzero(s->tls_key_pem, strlen(s->tls_key_pem));
		free(s->tls_key_pem);
		s->tls_key_pem = NULL;
	}
}
