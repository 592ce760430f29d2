/*
 * fakeapi.h - an in-process HTTPS/1.1 server for unit tests that play just
 * enough of an API server: each request goes to the test's handler, which
 * answers it (a status code, a JSON body, optionally Retry-After), starts a
 * watch (200, chunked, then held open), or holds it unanswered until the
 * client gives up or the fixture stops. One thread per connection, so a
 * held request blocks only its own connection. The certificate is a fresh
 * self-signed one (clients connect with `insecure`).
 *
 * Not a Kubernetes: behaviour against a real API server is tested on
 * hack/cluster. Fails the test (cmocka) when it cannot start.
 */
#ifndef JS_FAKEAPI_H
#define JS_FAKEAPI_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct fakeapi;

/** One request as the handler sees it (borrowed for the call). */
struct fakeapi_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* with the query */
	const char *body;   /* "" when none */
	int fd;             /* the connection's socket (to peek whether it is still open) */
};

enum fakeapi_how {
	FAKEAPI_ANSWER, /* code, body, retry_after_s */
	FAKEAPI_WATCH,  /* 200 with a chunked body that never ends; held until the client closes */
	FAKEAPI_HOLD,   /* no answer; held until the client closes or the fixture stops */
};

/** What the handler fills in (zeroed before the call: FAKEAPI_ANSWER, code
 * 0 is taken as 200, no body as {}). */
struct fakeapi_resp {
	enum fakeapi_how how;
	int code;
	json_t *body;       /* owned by the fixture once the handler returns */
	long retry_after_s; /* > 0: a Retry-After header */
	/* FAKEAPI_HOLD: called (on the connection's thread) once the hold ends. */
	void (*released)(void *user);
};

/** Handler: runs on the connection's thread, possibly several at once. */
typedef void fakeapi_handler(void *user, const struct fakeapi_req *req, struct fakeapi_resp *resp);

/** Start serving on 127.0.0.1 (a free port). */
struct fakeapi *fakeapi_start(fakeapi_handler *h, void *user);

/** "https://127.0.0.1:<port>" (owned by the fixture). */
const char *fakeapi_server(const struct fakeapi *f);

/** Stop: close the listener and every connection (held ones included),
 * join the threads, free. NULL is a no-op. */
void fakeapi_stop(struct fakeapi *f);

struct js_client;

/** A client of the fixture as the kube tests use it (insecure TLS, a
 * token, no client-side rate limit); caller frees with js_client_free.
 * Fails the test when it cannot be made. */
struct js_client *fakeapi_client(const struct fakeapi *f);

/** A Kubernetes Status object of `code` and `reason` (caller owns). */
json_t *fakeapi_status(int code, const char *reason);

/** Wait until *what >= want, reading it under `mu` and waking on `cond`
 * (CLOCK_REALTIME, as pthread_cond_init makes it), for at most `timeout_s`:
 * how the tests wait for what their handlers count, never by sleeping.
 * Returns whether it got there. */
bool fakeapi_wait_count(pthread_mutex_t *mu, pthread_cond_t *cond, const int *what, int want, int timeout_s);

#endif
