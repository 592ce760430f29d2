/*
 * ratelimit.c - token bucket with reservations (see ratelimit.h).
 */
#include "kube/ratelimit.h"

void js_ratelimit_init(struct js_ratelimit *rl, double qps, int burst, uint64_t now_ns)
{
	rl->qps = qps;
	rl->burst = burst < 1 ? 1.0 : (double)burst;
	rl->tokens = rl->burst;
	rl->last_ns = now_ns;
}

static void refill(struct js_ratelimit *rl, uint64_t now_ns)
{
	/* A clock that appears to go backwards (two threads' readings taken in
	 * the other order) refills nothing rather than wrapping. */
	if (now_ns <= rl->last_ns)
		return;
	double add = (double)(now_ns - rl->last_ns) * rl->qps / 1e9;
	rl->tokens += add;
	if (rl->tokens > rl->burst)
		rl->tokens = rl->burst;
	rl->last_ns = now_ns;
}

double js_ratelimit_tokens(struct js_ratelimit *rl, uint64_t now_ns)
{
	if (rl->qps <= 0)
		return rl->burst;
	refill(rl, now_ns);
	return rl->tokens;
}

uint64_t js_ratelimit_reserve(struct js_ratelimit *rl, uint64_t now_ns)
{
	if (rl->qps <= 0)
		return 0;
	refill(rl, now_ns);
	rl->tokens -= 1.0;
	if (rl->tokens >= 0)
		return 0;
	/* Round up so the caller never acts a fraction of a token early. */
	double wait_ns = -rl->tokens * 1e9 / rl->qps;
	return (uint64_t)wait_ns + 1;
}
