/*
 * ctrprobe.c - the one program of the test images (built with gcc -static
 * into a FROM scratch image by test_containers.py): there is no shell in
 * such an image, so each subcommand is one thing a test wants a container
 * to do. Names resolve through /etc/hosts only (a static binary has no NSS
 * modules to load).
 *
 *   ctrprobe info [ARGS...]     hostname, cwd, argv and env, one per line
 *   ctrprobe write FILE TEXT    write TEXT and a newline to FILE
 *   ctrprobe cat FILE           copy FILE to stdout
 *   ctrprobe exit N             exit with status N
 *   ctrprobe serve PORT         answer one TCP connection with the hostname
 *   ctrprobe dial HOST PORT     connect (retrying up to 20 s), print what
 *                               the server says
 *   ctrprobe term [PORT]        (answer one TCP connection on PORT with
 *                               "ready",) wait for SIGTERM, say so, exit 0
 *   ctrprobe beat FILE A N      touch FILE (a heartbeat) N times, 300 ms
 *                               apart; then in restart attempt A "0" hang
 *                               until SIGTERM (exit 0), else exit 0
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int lookup(const char *host, struct in_addr *out)
{
	if (inet_pton(AF_INET, host, out) == 1)
		return 0;
	FILE *f = fopen("/etc/hosts", "r");
	char line[1024];
	while (f && fgets(line, sizeof(line), f)) {
		char *save = NULL, *ip = strtok_r(line, " \t\n", &save);
		if (!ip || ip[0] == '#')
			continue;
		for (char *n = strtok_r(NULL, " \t\n", &save); n; n = strtok_r(NULL, " \t\n", &save)) {
			if (strcmp(n, host) == 0 && inet_pton(AF_INET, ip, out) == 1) {
				fclose(f);
				return 0;
			}
		}
	}
	if (f)
		fclose(f);
	return -1;
}

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *cmd = argc > 1 ? argv[1] : "info";
	if (strcmp(cmd, "info") == 0) {
		char h[256] = "", cwd[1024] = "";
		gethostname(h, sizeof(h));
		printf("hostname=%s\ncwd=%s\n", h, getcwd(cwd, sizeof(cwd)) ? cwd : "?");
		for (int i = 0; i < argc; i++)
			printf("arg=%s\n", argv[i]);
		for (char **e = environ; *e; e++)
			printf("env=%s\n", *e);
		return 0;
	}
	if (strcmp(cmd, "write") == 0 && argc == 4) {
		FILE *f = fopen(argv[2], "w");
		if (!f || fprintf(f, "%s\n", argv[3]) < 0 || fclose(f) != 0) {
			printf("write %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		return 0;
	}
	if (strcmp(cmd, "cat") == 0 && argc == 3) {
		FILE *f = fopen(argv[2], "r");
		int c;
		if (!f) {
			printf("cat %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		while ((c = fgetc(f)) != EOF)
			putchar(c);
		fclose(f);
		return 0;
	}
	if (strcmp(cmd, "exit") == 0 && argc == 3)
		return atoi(argv[2]);
	if (strcmp(cmd, "serve") == 0 && argc == 3) {
		int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 4) < 0) {
			printf("serve: %s\n", strerror(errno));
			return 1;
		}
		int c = accept(s, NULL, NULL);
		char h[256] = "";
		gethostname(h, sizeof(h));
		dprintf(c, "hello from %s\n", h);
		close(c);
		printf("served\n");
		return 0;
	}
	if (strcmp(cmd, "dial") == 0 && argc == 4) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[3]))};
		if (lookup(argv[2], &a.sin_addr) < 0) {
			printf("dial: %s not in /etc/hosts\n", argv[2]);
			return 1;
		}
		for (int i = 0; i < 200; i++) {
			int s = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
				char buf[256];
				ssize_t n = read(s, buf, sizeof(buf) - 1);
				buf[n > 0 ? n : 0] = '\0';
				printf("got: %s", buf);
				return 0;
			}
			close(s);
			struct timespec ts = {0, 100 * 1000 * 1000};
			nanosleep(&ts, NULL); /* the server may not listen yet */
		}
		printf("dial: %s\n", strerror(errno));
		return 1;
	}
	if (strcmp(cmd, "term") == 0) {
		signal(SIGTERM, on_term);
		printf("waiting\n");
		if (argc == 3) {
			int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
			struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
			setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 4) < 0)
				return 1;
			int c = accept(s, NULL, NULL);
			if (c >= 0) {
				dprintf(c, "ready\n");
				close(c);
			}
		}
		while (!got_term)
			pause();
		printf("got SIGTERM\n");
		return 0;
	}
	if (strcmp(cmd, "attempt") == 0 && argc == 5) {
		/* attempt A CODE LINGER_MS: in a restart attempt other than "0",
		 * succeed at once; in attempt 0 exit CODE after a moment (CODE
		 * != 0), or wait for SIGTERM and stop LINGER_MS after it, so the
		 * pod still holds its address through its grace period. */
		if (strcmp(argv[2], "0") != 0) {
			printf("attempt %s: done\n", argv[2]);
			return 0;
		}
		struct timespec ts = {0, 300 * 1000 * 1000};
		if (atoi(argv[3]) != 0) {
			nanosleep(&ts, NULL);
			printf("attempt 0: failing\n");
			return atoi(argv[3]);
		}
		signal(SIGTERM, on_term);
		printf("waiting\n");
		while (!got_term)
			pause();
		long ms = atol(argv[4]);
		ts = (struct timespec){ms / 1000, (ms % 1000) * 1000 * 1000};
		nanosleep(&ts, NULL);
		printf("got SIGTERM, stopped %ld ms later\n", ms);
		return 0;
	}
	if (strcmp(cmd, "beat") == 0 && argc == 5) {
		struct timespec ts = {0, 300 * 1000 * 1000};
		for (int i = 0; i < atoi(argv[4]); i++) {
			int fd = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd < 0 || futimens(fd, NULL) < 0) {
				printf("beat %s: %s\n", argv[2], strerror(errno));
				return 1;
			}
			close(fd);
			printf("beat %d\n", i + 1);
			nanosleep(&ts, NULL);
		}
		if (strcmp(argv[3], "0") != 0) {
			printf("attempt %s: done\n", argv[3]);
			return 0;
		}
		signal(SIGTERM, on_term);
		printf("hanging\n");
		while (!got_term)
			pause();
		printf("got SIGTERM\n");
		return 0;
	}
	fprintf(stderr, "usage: ctrprobe info|write|cat|exit|serve|dial|term|attempt|beat ...\n");
	return 2;
}
