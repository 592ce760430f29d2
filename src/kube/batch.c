/*
 * batch.c - the sliding window of requests (kube/batch.h): a ring of
 * `window` slots, request i in slot i % window.
 */
#include "kube/batch.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	struct js_client_xfer *x;
	int submit_err;     /* building or submitting it failed */
	const char *method; /* for ops->answered */
};

/* Build and submit request `i` into `s`; the error stays in s->submit_err. */
static void submit(struct js_client *c, const struct js_batch_ops *ops, void *self, size_t i, struct slot *s)
{
	struct js_batch_req br = {0};
	js_buf_init(&br.path, 4096);
	s->x = NULL;
	int r = ops->request(self, i, &br);
	s->method = br.method ? br.method : "";
	struct js_client_req req = {
		.method = br.method,
		.path = js_buf_str(&br.path),
		.content_type = br.content_type,
		.body = br.body,
		.body_len = br.body ? strlen(br.body) : 0,
	};
	if (r == 0)
		r = js_client_submit(c, &req, &s->x); /* copies path and body */
	free(br.body);
	js_buf_done(&br.path);
	s->submit_err = r;
}

/* Wait for request `i`, repeating it while its answer asks to with
 * Retry-After; then its outcome by ops->finish. */
static int finish(struct js_client *c, const struct js_batch_ops *ops, void *self, size_t i, struct slot *s)
{
	int r = s->submit_err;
	struct js_apierr err = {0};
	for (int tries = 0; r == 0; tries++) {
		struct js_client_resp resp = {0};
		char why[256] = "";
		r = js_client_xfer_wait(s->x, &resp, why, sizeof(why));
		s->x = NULL;
		uint64_t again = r == 0 ? js_client_retry_after_ms(&resp, tries) : 0;
		if (r == 0) {
			if (ops->answered)
				ops->answered(self, i, s->method, resp.code);
			if (resp.code < 200 || resp.code > 299)
				r = js_apierr_decode(resp.code, resp.body, resp.len, resp.retry_after_s, &err);
			else if (ops->ok_body)
				ops->ok_body(self, i, resp.body, resp.len);
		} else {
			if (ops->answered)
				ops->answered(self, i, s->method, 0);
			js_apierr_set_transport(&err, r, why);
		}
		js_client_resp_done(&resp);
		if (!again || js_client_pause(c, again) < 0)
			break;
		js_apierr_done(&err);
		submit(c, ops, self, i, s);
		r = s->submit_err;
		if (r < 0)
			js_apierr_set_transport(&err, r, "submitting again after Retry-After");
	}
	r = ops->finish(self, i, r, &err);
	js_apierr_done(&err);
	return r;
}

int js_batch_run(struct js_client *c, size_t n, size_t window, const struct js_batch_ops *ops, void *self,
		 size_t *failed_at)
{
	if (failed_at)
		*failed_at = SIZE_MAX;
	if (n == 0)
		return 0;
	if (window < 1)
		window = 1;
	if (window > n)
		window = n;
	struct slot *slots = calloc(window, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	size_t sent = 0;
	for (; sent < n && sent < window; sent++)
		submit(c, ops, self, sent, &slots[sent]);
	int first = 0;
	for (size_t i = 0; i < sent; i++) {
		int r = finish(c, ops, self, i, &slots[i % window]);
		if (r < 0 && first == 0) {
			first = r;
			if (failed_at)
				*failed_at = i;
		}
		/* The oldest answer frees its slot for the next request, unless
		 * a request has failed: then nothing more is sent, and what is in
		 * flight is still waited for. */
		if (sent < n && first == 0) {
			submit(c, ops, self, sent, &slots[sent % window]);
			sent++;
		}
	}
	free(slots);
	return first;
}
