/*
 * splicefloor: the cheapest relay this machine can run, the bench's floor.
 *
 * NOT part of the product. vendor-patches/run.sh bench builds it with gcc and the
 * bench runs a pair of it where the proxy pairs run (source: unix socket -> TCP,
 * target: TCP -> unix socket), so "patched vs floor" says how far the patched
 * proxy is from any relay, and "floor vs direct" what a relay pair costs at all
 * on this machine. Per connection: two threads, one per direction, each a tight
 * loop of blocking splice(2) socket -> pipe -> socket (no poller, no scheduler,
 * no user-space copy), EOF passed on as shutdown(SHUT_WR), connections dialled
 * onward in accept order (QEMU's multifd channels need it). No TLS.
 *
 *   splicefloor LISTEN DIAL [PIPE_BYTES]
 *
 * LISTEN and DIAL are "tcp:HOST:PORT" (IPv4) or "unix:PATH"; a TCP LISTEN port 0
 * picks one. Once listening it prints "port N" (0 for unix). Then each line on
 * stdin "cpu" is answered "cpu NS SWITCHES" (getrusage of the whole process:
 * user + system nanoseconds, voluntary + involuntary context switches of every
 * thread, exited ones included); stdin closed ends it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int pipe_bytes = 1 << 20;
static int nodelay = 1;
static const int one = 1;

static void die(const char *what) {
	perror(what);
	exit(1);
}

/* addr fills sa from "tcp:HOST:PORT" or "unix:PATH" and returns its length. */
static socklen_t addr(const char *spec, struct sockaddr_storage *sa, int *family) {
	memset(sa, 0, sizeof(*sa));
	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un *u = (struct sockaddr_un *)sa;
		u->sun_family = AF_UNIX;
		if (strlen(spec + 5) >= sizeof(u->sun_path)) {
			fprintf(stderr, "socket path too long: %s\n", spec + 5);
			exit(2);
		}
		strcpy(u->sun_path, spec + 5);
		*family = AF_UNIX;
		return sizeof(*u);
	}
	if (strncmp(spec, "tcp:", 4) == 0) {
		char host[64];
		const char *colon = strrchr(spec + 4, ':');
		struct sockaddr_in *in = (struct sockaddr_in *)sa;
		if (!colon || colon - (spec + 4) >= (long)sizeof(host)) {
			fprintf(stderr, "bad address: %s\n", spec);
			exit(2);
		}
		memcpy(host, spec + 4, colon - (spec + 4));
		host[colon - (spec + 4)] = 0;
		in->sin_family = AF_INET;
		in->sin_port = htons(atoi(colon + 1));
		if (inet_pton(AF_INET, host, &in->sin_addr) != 1) {
			fprintf(stderr, "bad IPv4 address: %s\n", host);
			exit(2);
		}
		*family = AF_INET;
		return sizeof(*in);
	}
	fprintf(stderr, "address must be tcp:HOST:PORT or unix:PATH: %s\n", spec);
	exit(2);
}

struct conn {
	int a, b;
	int left; /* directions still running; the last one closes both fds */
	pthread_mutex_t mu;
};

struct dir {
	struct conn *c;
	int src, dst;
};

/* relay moves src to dst through a pipe with blocking splice(2) until EOF. */
static void *relay(void *arg) {
	struct dir *d = arg;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe2");
	if (fcntl(p[1], F_SETPIPE_SZ, pipe_bytes) < 0)
		die("F_SETPIPE_SZ");
	for (;;) {
		ssize_t n = splice(d->src, NULL, p[1], NULL, pipe_bytes, SPLICE_F_MOVE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EOF, or the connection broke */
		while (n > 0) {
			ssize_t m = splice(p[0], NULL, d->dst, NULL, n, SPLICE_F_MOVE);
			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				goto out;
			n -= m;
		}
	}
out:
	shutdown(d->dst, SHUT_WR);
	close(p[0]);
	close(p[1]);
	pthread_mutex_lock(&d->c->mu);
	int last = --d->c->left == 0;
	pthread_mutex_unlock(&d->c->mu);
	if (last) {
		close(d->c->a);
		close(d->c->b);
		free(d->c);
	}
	free(d);
	return NULL;
}

static void start(struct conn *c, int src, int dst) {
	pthread_t t;
	pthread_attr_t attr;
	struct dir *d = malloc(sizeof(*d));
	d->c = c;
	d->src = src;
	d->dst = dst;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, relay, d) != 0)
		die("pthread_create");
	pthread_attr_destroy(&attr);
}

struct listener {
	int fd;
	struct sockaddr_storage dial;
	socklen_t dial_len;
	int dial_family;
};

/* serve accepts forever; each connection is dialled onward before the next
 * accept, so the onward connections open in accept order. */
static void *serve(void *arg) {
	struct listener *l = arg;
	for (;;) {
		int in = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (in < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		int out = socket(l->dial_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (out < 0)
			die("socket");
		if (nodelay) {
			setsockopt(in, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		if (connect(out, (struct sockaddr *)&l->dial, l->dial_len) < 0) {
			perror("connect");
			close(in);
			close(out);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		c->a = in;
		c->b = out;
		c->left = 2;
		pthread_mutex_init(&c->mu, NULL);
		start(c, in, out);
		start(c, out, in);
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: splicefloor LISTEN DIAL [PIPE_BYTES]\n");
		return 2;
	}
	if (argc == 4)
		pipe_bytes = atoi(argv[3]);
	if (getenv("SPLICEFLOOR_NAGLE"))
		nodelay = 0;
	struct listener l;
	struct sockaddr_storage la;
	int lfam;
	socklen_t llen = addr(argv[1], &la, &lfam);
	l.dial_len = addr(argv[2], &l.dial, &l.dial_family);
	l.fd = socket(lfam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l.fd < 0)
		die("socket");
	if (lfam == AF_INET)
		setsockopt(l.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l.fd, (struct sockaddr *)&la, llen) < 0)
		die("bind");
	if (listen(l.fd, 64) < 0)
		die("listen");
	int port = 0;
	if (lfam == AF_INET) {
		struct sockaddr_in got;
		socklen_t gl = sizeof(got);
		if (getsockname(l.fd, (struct sockaddr *)&got, &gl) < 0)
			die("getsockname");
		port = ntohs(got.sin_port);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, serve, &l) != 0)
		die("pthread_create");
	printf("port %d\n", port);
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "cpu", 3) != 0) {
			printf("error unknown command\n");
			fflush(stdout);
			continue;
		}
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		long long ns = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
			       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
		printf("cpu %lld %ld\n", ns, ru.ru_nvcsw + ru.ru_nivcsw);
		fflush(stdout);
	}
	if (lfam == AF_UNIX)
		unlink(((struct sockaddr_un *)&la)->sun_path);
	return 0;
}
