/*
 * httpd.c - plain-HTTP server for metrics and probes. See httpd.h.
 */
#include "ctrl/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HTTPD_MAX_BODY (64u << 20)

struct js_httpd {
	struct MHD_Daemon *d;
	js_httpd_handler_fn *handler;
	void *user;
	int port;
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	(void)version;
	(void)upload_data;
	(void)con_cls;
	struct js_httpd *h = cls;
	struct js_buf body;
	js_buf_init(&body, HTTPD_MAX_BODY);
	const char *ctype = "text/plain; charset=utf-8";
	int code;
	if (*upload_size) {
		*upload_size = 0;
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		(void)!js_buf_puts(&body, "method not allowed\n");
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		(void)!js_buf_puts(&body, "method not allowed\n");
	} else {
		code = h->handler(h->user, url, &body, &ctype);
	}
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(body.len, body.len ? body.p : (void *)"", MHD_RESPMEM_MUST_COPY);
	js_buf_done(&body);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	enum MHD_Result r = MHD_queue_response(conn, (unsigned)code, resp);
	MHD_destroy_response(resp);
	return r;
}

int js_httpd_new(const struct js_httpd_opts *opts, struct js_httpd **ret)
{
	if (!opts->handler || opts->port < 0 || opts->port > 65535)
		return JS_EINVALID;
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
	const char *host = opts->host;
	if (host && strcmp(host, "localhost") == 0)
		host = "127.0.0.1";
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (!host || !*host) {
		/* All interfaces, IPv4 and IPv6 where available. */
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		s6->sin6_port = htons((uint16_t)opts->port);
		flags |= MHD_USE_DUAL_STACK;
	} else if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)opts->port);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)opts->port);
		flags |= MHD_USE_IPv6;
	} else {
		return JS_EINVALID;
	}
	struct js_httpd *h = js_xcalloc(1, sizeof(*h));
	h->handler = opts->handler;
	h->user = opts->user;
	errno = 0;
	h->d = MHD_start_daemon(flags, (uint16_t)opts->port, NULL, NULL, answer, h, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
	if (!h->d && (flags & MHD_USE_DUAL_STACK)) {
		/* No IPv6 on this machine: fall back to IPv4 any. */
		memset(&ss, 0, sizeof(ss));
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		s4->sin_port = htons((uint16_t)opts->port);
		h->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, (uint16_t)opts->port, NULL, NULL, answer, h,
					MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_END);
	}
	if (!h->d) {
		int e = errno ? -errno : -EADDRINUSE;
		free(h);
		return e;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : opts->port;
	*ret = h;
	return 0;
}

int js_httpd_port(const struct js_httpd *h)
{
	return h->port;
}

struct js_httpd *js_httpd_free(struct js_httpd *h)
{
	if (!h)
		return NULL;
	MHD_stop_daemon(h->d);
	free(h);
	return NULL;
}
