/*
 * clock.h - the monotonic clock of the threaded layers (kube, webhook,
 * ctrl, local): now in nanoseconds, a deadline some milliseconds from now,
 * and a deadline as the timespec pthread_cond_timedwait takes for a
 * condition variable whose clock is CLOCK_MONOTONIC. Here once, so the
 * carry of nanoseconds into seconds and the saturation of large waits are
 * written once.
 *
 * This reads the clock: the reconcile core is pure and never includes it
 * (its time comes in as `now`, core/reconcile.h).
 */
#ifndef JS_CLOCK_H
#define JS_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/** CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t js_clock_now_ns(void);

/** The monotonic instant `ms` milliseconds from now, in nanoseconds;
 * negative `ms` is taken as 0, and a sum past UINT64_MAX saturates. */
uint64_t js_clock_after_ns(int64_t ms);

/** A monotonic instant (nanoseconds) as a timespec, for
 * pthread_cond_timedwait on a CLOCK_MONOTONIC condition variable. */
struct timespec js_clock_ts(uint64_t ns);

/** js_clock_ts(js_clock_after_ns(ms)): the deadline `ms` from now. */
struct timespec js_clock_deadline_ts(int64_t ms);

/** Initialise `cond` with CLOCK_MONOTONIC for its timed waits (the
 * deadlines above), so a step of the wall clock moves no wait. */
void js_clock_cond_init(pthread_cond_t *cond);

#endif
