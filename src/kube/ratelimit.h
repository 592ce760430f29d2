/*
 * ratelimit.h - a token bucket with reservations (client-go's
 * flowcontrol.NewTokenBucketRateLimiter, Go's rate.Limiter.Reserve).
 *
 * The bucket holds up to `burst` tokens and refills at `qps` tokens per
 * second. A reservation always succeeds: it takes one token, possibly going
 * into debt, and says how long the caller must wait before acting. Waiting
 * callers are therefore served in reservation order (FIFO) and the long-run
 * rate never exceeds qps: over any window of W seconds at most
 * burst + qps * W reservations become due.
 *
 * Pure: time comes in as an argument (nanoseconds of any monotonic clock).
 * Plain data, no locking; the owner serialises access.
 */
#ifndef JS_RATELIMIT_H
#define JS_RATELIMIT_H

#include <stdint.h>

/** Token bucket state. Initialise with js_ratelimit_init. */
struct js_ratelimit {
	double qps;      /* refill rate, tokens per second; <= 0 means unlimited */
	double burst;    /* capacity, tokens (at least 1) */
	double tokens;   /* current balance; negative = reserved in advance */
	uint64_t last_ns; /* time of the last refill */
};

/** Start with a full bucket at time `now_ns`. `burst` < 1 is taken as 1. */
void js_ratelimit_init(struct js_ratelimit *rl, double qps, int burst, uint64_t now_ns);

/** Reserve one token at `now_ns`. Returns how long to wait before acting, in
 * nanoseconds (0 = act now). */
uint64_t js_ratelimit_reserve(struct js_ratelimit *rl, uint64_t now_ns);

/** Tokens available at `now_ns` without reserving (may be negative). */
double js_ratelimit_tokens(struct js_ratelimit *rl, uint64_t now_ns);

#endif
