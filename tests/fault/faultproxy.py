#!/usr/bin/python3
"""faultproxy - a fault-injecting HTTP/2 proxy between jobset-controller and
the kube-apiserver of hack/cluster (test tooling, issue 13).

It speaks what the controller speaks in production: HTTP/2 over TLS (ALPN
"h2"; the HTTP/1.1 option of the client is for comparisons only and is not
served). Each downstream connection gets its own upstream HTTP/2 connection to
the API server, so a dead upstream (an API server restart) ends exactly the
downstream connection that used it, as it would without the proxy.

Credentials: the proxy asks the controller for a client certificate (checked
against --ca). When the controller presented one, the upstream connection uses
--client-cert/--client-key (the controller's own identity, so RBAC and audit
see the controller); otherwise the request's Authorization header (a bearer
token) goes upstream as it came, on a connection without a certificate.

Faults are rules, set at start (--rules FILE) or at any time through the
control API, and every rule counts what it matched and what it injected, so a
test can prove a fault was real. A rule:

    {"name": "r429",                      # counters are kept by name
     "match": {"method": ["POST"],        # any of; omitted = any method
               "path": "/jobs$",          # regex searched in the path (no query)
               "watch": false,            # true: only watches, false: no watches
               "body": "\"restarts\":"},  # regex searched in the request body
     "skip": 0, "every": 1, "limit": 5,   # skip the first N matches, then every
                                          # Nth match injects, at most `limit` times
     "action": "status", ...}             # and the action's parameters:

    count         inject nothing: count matches (a trigger a test can wait on);
                  never stops other rules from matching
    status        answer `code` (409, 410, 429, 500, 503, ...) with a Kubernetes
                  Status body (reason from the code, or `reason`) and, when
                  `retry_after` is set, a Retry-After header; never forwarded
    delay         forward after `delay_ms` + uniform(0, `jitter_ms`); delays
                  add up and never stop other rules from matching
    reset         forward, then send the answer's headers and half its body
                  (a watch: `after_events` events) and reset: `reset` "stream"
                  (RST_STREAM) or "connection" (the TCP connection)
    duplicate     hold the request `hold_ms`, send it upstream twice, one after
                  the other, and answer with the second answer (a create: 409
                  AlreadyExists)
    watch_drop    forward a watch and end it cleanly after `after_events`
                  events or `after_ms`
    watch_gone    same, but first send an ERROR event with a 410 Expired Status
                  ("too old resource version"), as the API server does
    watch_stall   forward a watch, then after `after_events` events hold every
                  further byte for `stall_ms` and deliver them afterwards
    hold          hold the request until released (control API /release,
                  forwarded or dropped: the stream is reset) or until the
                  client gives up on it

Control API (plain HTTP/1.1, JSON, on --control):

    GET  /stats       counters: per rule {matched, injected}; requests, answers by
                      code, in-flight upstream requests (watches apart), held
                      requests, connections, upstream failures
    PUT  /rules       replace the rules (a JSON list); counters stay by name
    POST /reset       zero every counter
    POST /release     {"drop": true|false}: end every held request
    POST /mark        {"epoch": "..."}: tag later log lines (e.g. a new controller)
    POST /disconnect  abort every downstream connection (and its upstream)
    POST /refuse      {"on": true|false}: close new connections at once

Log (--log): one JSON line per request when it ends: start and end (wall
clock, s), epoch (the /mark when the request came), conn, method, path,
watch, code (what the client got; 0 = none), retry_after (when the answer had
one), up (what the API server answered; 0 = not sent), fault (rule name or
""), delivered (the whole answer reached the client), and: for Job creates
job {name, attempt, jra, owner, codes: the API server's answer to each try};
for JobSet status writes restarts (when the patch sets it); for Event creates
reason.

Started with --ready-file, the proxy writes {"port": P, "control": C} there
once it listens.
"""
import argparse
import asyncio
import json
import os
import random
import re
import signal
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
           410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}
MESSAGES = {409: "Operation cannot be fulfilled: the object has been modified; please apply your changes "
                 "to the latest version and try again",
            410: "too old resource version",
            429: "Too many requests, please try again later.",
            500: "Internal error occurred: injected by faultproxy",
            503: "the server is currently unable to handle the request",
            504: "the server was unable to return a response in the time allotted"}
# Downstream receive windows: large, so that the controller never waits on us.
WINDOW = 16 * 1024 * 1024


def status_body(code, reason=None, message=None):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message or MESSAGES.get(code, "injected by faultproxy"),
                       "reason": reason or REASONS.get(code, ""), "code": code}).encode()


class Reset(Exception):
    """The peer reset the stream, or the connection died."""


class Rule:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec.get("name") or spec["action"]
        self.action = spec["action"]
        if self.action not in ("count", "status", "delay", "reset", "duplicate", "watch_drop", "watch_gone",
                               "watch_stall", "hold"):
            raise ValueError(f"rule {self.name}: unknown action {self.action!r}")
        m = spec.get("match") or {}
        self.methods = set(m.get("method") or [])
        self.path = re.compile(m["path"]) if m.get("path") else None
        self.watch = m.get("watch")
        self.body = re.compile(m["body"].encode()) if m.get("body") else None
        self.skip = int(spec.get("skip", 0))
        self.every = max(1, int(spec.get("every", 1)))
        self.limit = spec.get("limit")
        self.seen = 0

    def matches(self, method, path, watch, body):
        if self.methods and method not in self.methods:
            return False
        if self.body and not self.body.search(body):
            return False
        if self.path and not self.path.search(path):
            return False
        if self.watch is not None and bool(self.watch) != watch:
            return False
        return True

    def fire(self, stats):
        """Count a match; True when this match injects (never for `count`)."""
        c = stats.setdefault(self.name, {"matched": 0, "injected": 0})
        c["matched"] += 1
        self.seen += 1
        if self.action == "count":
            return False
        n = self.seen - self.skip
        if n <= 0 or (n - 1) % self.every != 0:
            return False
        if self.limit is not None and c["injected"] >= int(self.limit):
            return False
        c["injected"] += 1
        return True


class Proxy:
    def __init__(self, args):
        self.args = args
        self.rules = []
        self.rule_stats = {}
        self.counts = {}
        self.inflight = 0
        self.held = []          # futures of held requests
        self.conns = set()
        self.refuse = False
        self.epoch = ""
        self.rng = random.Random(args.seed)
        self.t0 = time.monotonic()
        self.log = open(args.log, "a", buffering=1) if args.log else None
        up = args.upstream.split("://", 1)[-1].rstrip("/")
        self.up_host, _, port = up.rpartition(":")
        self.up_port = int(port)
        self.authority = up.encode()

    def count(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def set_rules(self, specs):
        self.rules = [Rule(s) for s in specs]

    def stats(self):
        return {"rules": self.rule_stats, "counts": self.counts, "inflight": self.inflight,
                "held": len(self.held), "connections": len(self.conns), "epoch": self.epoch}

    def write_log(self, entry):
        if self.log:
            entry["end"] = round(time.time(), 4)
            self.log.write(json.dumps(entry) + "\n")

    def ssl_server(self):
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.args.cert, self.args.key)
        ctx.load_verify_locations(self.args.ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.set_alpn_protocols(["h2"])
        return ctx

    def ssl_client(self, with_cert):
        ctx = ssl.create_default_context(cafile=self.args.ca)
        if with_cert and self.args.client_cert:
            ctx.load_cert_chain(self.args.client_cert, self.args.client_key)
        ctx.set_alpn_protocols(["h2"])
        return ctx


class H2Endpoint(asyncio.Protocol):
    """One HTTP/2 connection (either side) driven by h2, with flow-controlled
    sends. Subclasses handle the events."""

    client_side = False

    def __init__(self):
        cfg = h2.config.H2Configuration(client_side=self.client_side, header_encoding=None,
                                        validate_inbound_headers=False, normalize_inbound_headers=False,
                                        validate_outbound_headers=False, normalize_outbound_headers=False)
        self.h2 = h2.connection.H2Connection(cfg)
        self.transport = None
        self.closed = False
        self.window = asyncio.Event()
        self.done = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport
        self.h2.local_settings = h2.settings.Settings(client=self.client_side, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW,
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000})
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(WINDOW)
        self.flush()

    def flush(self):
        if not self.closed and self.transport:
            data = self.h2.data_to_send()
            if data:
                self.transport.write(data)

    def abort(self):
        if self.transport and not self.closed:
            self.transport.abort()

    def connection_lost(self, exc):
        self.closed = True
        self.window.set()
        if not self.done.done():
            self.done.set_result(None)
        self.lost()

    def lost(self):
        pass

    def data_received(self, data):
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self.abort()
            return
        for ev in events:
            if isinstance(ev, h2.events.DataReceived):
                # Acknowledge at once: what we receive we buffer or forward.
                if ev.flow_controlled_length:
                    try:
                        self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    except h2.exceptions.StreamClosedError:
                        pass
            if isinstance(ev, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                self.window.set()
            self.event(ev)
        self.flush()

    def event(self, ev):
        pass

    async def send_data(self, sid, data, end=False):
        view = memoryview(data)
        while len(view):
            if self.closed:
                raise Reset("connection closed")
            try:
                w = min(self.h2.local_flow_control_window(sid), self.h2.max_outbound_frame_size)
            except (h2.exceptions.StreamClosedError, KeyError):
                raise Reset("stream closed")
            if w <= 0:
                self.window.clear()
                await self.window.wait()
                continue
            try:
                self.h2.send_data(sid, bytes(view[:w]))
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
                raise Reset("stream closed")
            view = view[w:]
            self.flush()
        if end:
            self.end(sid)

    def end(self, sid):
        if self.closed:
            raise Reset("connection closed")
        try:
            self.h2.end_stream(sid)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
            raise Reset("stream closed")
        self.flush()

    def reset(self, sid, code=h2.errors.ErrorCodes.INTERNAL_ERROR):
        if self.closed:
            return
        try:
            self.h2.reset_stream(sid, code)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
            pass
        self.flush()


class UpStream:
    """An upstream response: headers, then chunks, then None."""

    def __init__(self):
        self.headers = asyncio.get_running_loop().create_future()
        self.q = asyncio.Queue()

    async def chunks(self):
        while True:
            c = await self.q.get()
            if c is None:
                return
            if isinstance(c, Exception):
                raise c
            yield c

    async def read_all(self):
        body = bytearray()
        async for c in self.chunks():
            body += c
        return bytes(body)


class Upstream(H2Endpoint):
    client_side = True

    def __init__(self):
        super().__init__()
        self.streams = {}
        self.goaway = False
        self.slot = asyncio.Event()

    def event(self, ev):
        st = self.streams.get(getattr(ev, "stream_id", None))
        if isinstance(ev, h2.events.ResponseReceived) and st:
            if not st.headers.done():
                st.headers.set_result(ev.headers)
        elif isinstance(ev, h2.events.DataReceived) and st:
            st.q.put_nowait(ev.data)
        elif isinstance(ev, h2.events.StreamEnded) and st:
            st.q.put_nowait(None)
            self.forget(ev.stream_id)
        elif isinstance(ev, h2.events.StreamReset) and st:
            self.fail(st, Reset(f"upstream reset stream ({ev.error_code})"))
            self.forget(ev.stream_id)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = True

    def forget(self, sid):
        self.streams.pop(sid, None)
        self.slot.set()

    @staticmethod
    def fail(st, exc):
        if not st.headers.done():
            st.headers.set_exception(exc)
        st.q.put_nowait(exc)

    def lost(self):
        for st in self.streams.values():
            self.fail(st, Reset("upstream connection lost"))
        self.streams.clear()
        self.slot.set()
        # The API server went away (not a graceful GOAWAY): the client's
        # connection dies with it, as it would without the proxy.
        owner = getattr(self, "owner", None)
        if owner and not self.goaway:
            owner.abort()

    def usable(self):
        return not self.closed and not self.goaway

    async def request(self, headers, body):
        while len(self.streams) >= self.h2.remote_settings.max_concurrent_streams:
            if not self.usable():
                raise Reset("upstream gone")
            self.slot.clear()
            await self.slot.wait()
        if not self.usable():
            raise Reset("upstream gone")
        sid = self.h2.get_next_available_stream_id()
        st = UpStream()
        st.sid = sid
        self.streams[sid] = st
        self.h2.send_headers(sid, headers, end_stream=not body)
        self.flush()
        if body:
            await self.send_data(sid, body, end=True)
        return st

    def cancel(self, st):
        if st.sid in self.streams:
            self.forget(st.sid)
            self.reset(st.sid, h2.errors.ErrorCodes.CANCEL)


class Request:
    def __init__(self, sid, headers):
        self.sid = sid
        self.headers = headers
        h = dict((k, v) for k, v in headers if k.startswith(b":"))
        self.method = h.get(b":method", b"").decode()
        full = h.get(b":path", b"").decode()
        self.path, _, self.query = full.partition("?")
        self.watch = bool(re.search(r"(^|&)watch=(1|true)(&|$)", self.query))
        self.body = bytearray()
        self.cancelled = asyncio.get_running_loop().create_future()
        self.log = {"method": self.method, "path": self.path, "watch": self.watch, "code": 0, "up": 0,
                    "fault": "", "delivered": False, "start": round(time.time(), 4)}


class Downstream(H2Endpoint):
    def __init__(self, proxy):
        super().__init__()
        self.proxy = proxy
        self.reqs = {}
        self.up = None
        self.up_lock = asyncio.Lock()
        self.with_cert = False
        self.id = 0
        self.tasks = set()

    def connection_made(self, transport):
        p = self.proxy
        if p.refuse:
            transport.abort()
            self.closed = True
            return
        sslobj = transport.get_extra_info("ssl_object")
        if not sslobj or sslobj.selected_alpn_protocol() != "h2":
            transport.abort()  # HTTP/2 only (module docstring)
            self.closed = True
            return
        self.with_cert = bool(transport.get_extra_info("peercert"))
        p.count("connections_total")
        self.id = p.counts["connections_total"]
        p.conns.add(self)
        super().connection_made(transport)

    def lost(self):
        self.proxy.conns.discard(self)
        for r in self.reqs.values():
            if not r.cancelled.done():
                r.cancelled.set_result(True)
        if self.up:
            self.up.abort()

    def event(self, ev):
        if isinstance(ev, h2.events.RequestReceived):
            # h2 reports the end of a bodiless request as a StreamEnded too.
            r = self.reqs[ev.stream_id] = Request(ev.stream_id, ev.headers)
            r.log["epoch"] = self.proxy.epoch
            r.log["conn"] = self.id
        elif isinstance(ev, h2.events.DataReceived):
            r = self.reqs.get(ev.stream_id)
            if r:
                r.body += ev.data
        elif isinstance(ev, h2.events.StreamEnded):
            self.start(ev.stream_id)
        elif isinstance(ev, h2.events.StreamReset):
            r = self.reqs.pop(ev.stream_id, None)
            if r and not r.cancelled.done():
                r.cancelled.set_result(True)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            pass

    def start(self, sid):
        r = self.reqs.get(sid)
        if r:
            t = asyncio.get_running_loop().create_task(self.handle(r))
            self.tasks.add(t)
            t.add_done_callback(self.tasks.discard)

    async def upstream(self):
        async with self.up_lock:
            if self.up and self.up.usable():
                return self.up
            loop = asyncio.get_running_loop()
            p = self.proxy
            try:
                _, up = await loop.create_connection(Upstream, p.up_host, p.up_port,
                                                     ssl=p.ssl_client(self.with_cert),
                                                     server_hostname=p.up_host)
            except OSError as e:
                p.count("upstream_connect_failures")
                raise Reset(f"upstream connect: {e}")
            up.owner = self
            self.up = up
            return up

    def up_headers(self, r):
        out = []
        for k, v in r.headers:
            if k == b":authority":
                v = self.proxy.authority
            elif k == b":scheme":
                v = b"https"
            elif k == b"authorization" and self.with_cert:
                continue  # the upstream certificate is the identity
            out.append((k, v))
        return out

    # ---- request handling ----

    async def handle(self, r):
        p = self.proxy
        p.count("requests_total")
        note_request(r)
        delay = 0.0
        rule = None
        for ru in p.rules:
            if not ru.matches(r.method, r.path, r.watch, r.body):
                continue
            if ru.action == "count":
                ru.fire(p.rule_stats)
                continue
            if ru.action == "delay":
                if ru.fire(p.rule_stats):
                    delay += (ru.spec.get("delay_ms", 0) + p.rng.uniform(0, ru.spec.get("jitter_ms", 0))) / 1000
                    r.log["fault"] = ru.name
                continue
            if ru.fire(p.rule_stats):
                rule = ru
                r.log["fault"] = ru.name
                break
        try:
            if delay:
                await self.wait_or_cancel(r, asyncio.sleep(delay))
            if rule is None:
                await self.forward(r)
            else:
                await getattr(self, "do_" + rule.action)(r, rule.spec)
        except Reset:
            self.reset(r.sid)
        except Exception as e:  # a bug here must not take the proxy down
            print(f"faultproxy: {r.method} {r.path}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            self.reset(r.sid)
        finally:
            self.reqs.pop(r.sid, None)
            p.count(f"answers_{r.log['code']}")
            p.write_log(r.log)

    async def wait_or_cancel(self, r, aw):
        """Await `aw` unless the client resets the stream first (Reset)."""
        t = asyncio.ensure_future(aw)
        done, _ = await asyncio.wait({t, r.cancelled}, return_when=asyncio.FIRST_COMPLETED)
        if t not in done:
            t.cancel()
            raise Reset("client cancelled")
        return t.result()

    async def send_upstream(self, r):
        """Send `r` upstream; returns (stream, headers)."""
        p = self.proxy
        up = await self.upstream()
        watch = r.watch
        if not watch:
            p.inflight += 1
        try:
            st = await up.request(self.up_headers(r), bytes(r.body))
            st.up = up
            try:
                headers = await self.wait_or_cancel(r, asyncio.shield(st.headers))
            except Reset:
                up.cancel(st)
                raise
        finally:
            if not watch:
                p.inflight -= 1
        code = int(dict(headers).get(b":status", b"0"))
        r.log["up"] = code
        return st, headers

    async def forward(self, r, body_filter=None):
        st, headers = await self.send_upstream(r)
        if "job" in r.log:
            r.log["job"]["codes"].append(int(dict(headers).get(b":status", b"0")))
        self.answer_headers_only(r, headers)
        await self.pump(r, st, body_filter)

    def answer_headers_only(self, r, headers):
        h = dict(headers)
        r.log["code"] = int(h.get(b":status", b"0"))
        if b"retry-after" in h:
            r.log["retry_after"] = h[b"retry-after"].decode()
        if self.closed:
            raise Reset("connection closed")
        try:
            self.h2.send_headers(r.sid, headers)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
            raise Reset("stream closed")
        self.flush()

    async def pump(self, r, st, body_filter=None):
        """Copy the upstream body to the client (through body_filter, an
        async generator over chunks, for watch faults), then end."""
        src = st.chunks() if body_filter is None else body_filter(st.chunks())
        try:
            while True:
                nxt = asyncio.ensure_future(src.__anext__())
                done, _ = await asyncio.wait({nxt, r.cancelled}, return_when=asyncio.FIRST_COMPLETED)
                if nxt not in done:
                    nxt.cancel()
                    st.up.cancel(st)
                    raise Reset("client cancelled")
                try:
                    chunk = nxt.result()
                except StopAsyncIteration:
                    break
                if chunk:
                    await self.send_data(r.sid, chunk)
        except Reset:
            st.up.cancel(st)
            raise
        self.finish(r)

    def finish(self, r):
        """End the answer. A client that reset the stream once it had the
        whole body (curl does, when Content-Length is reached) got it all."""
        try:
            self.end(r.sid)
        except Reset:
            if self.closed:
                raise
        r.log["delivered"] = True

    async def do_status(self, r, spec):
        code = int(spec.get("code", 500))
        body = status_body(code, spec.get("reason"), spec.get("message"))
        hdrs = [(b":status", str(code).encode()), (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode())]
        if spec.get("retry_after") is not None:
            hdrs.append((b"retry-after", str(spec["retry_after"]).encode()))
        self.answer_headers_only(r, hdrs)
        await self.send_data(r.sid, body)
        self.finish(r)

    async def do_reset(self, r, spec):
        st, headers = await self.send_upstream(r)
        if "job" in r.log:
            r.log["job"]["codes"].append(int(dict(headers).get(b":status", b"0")))
        self.answer_headers_only(r, headers)
        if r.watch:
            n = int(spec.get("after_events", 1))
            sent = 0
            async for line in lines(st.chunks()):
                await self.send_data(r.sid, line)
                sent += 1
                if sent >= n:
                    break
            st.up.cancel(st)
        else:
            body = await self.wait_or_cancel(r, st.read_all())
            await self.send_data(r.sid, body[:max(1, len(body) // 2)])
        if spec.get("reset", "stream") == "connection":
            self.abort()
        else:
            self.reset(r.sid)
        self.proxy.count("resets_mid_body")

    async def do_duplicate(self, r, spec):
        await self.wait_or_cancel(r, asyncio.sleep(spec.get("hold_ms", 200) / 1000))
        st, headers = await self.send_upstream(r)
        first = int(dict(headers).get(b":status", b"0"))
        await self.wait_or_cancel(r, st.read_all())
        if "job" in r.log:
            r.log["job"]["codes"].append(first)
        r.log["first"] = first
        await self.forward(r)

    async def do_hold(self, r, spec):
        p = self.proxy
        fut = asyncio.get_running_loop().create_future()
        p.held.append(fut)
        try:
            drop = await self.wait_or_cancel(r, asyncio.shield(fut))
        finally:
            if fut in p.held:
                p.held.remove(fut)
        if drop:
            r.log["dropped"] = True
            raise Reset("held request dropped")
        await self.forward(r)

    def watch_end_after(self, spec, gone):
        """A body filter that ends the watch after `after_events` events or
        `after_ms`, with an ERROR 410 event first when `gone`."""
        n = spec.get("after_events")
        ms = spec.get("after_ms")

        async def filt(chunks):
            deadline = time.monotonic() + ms / 1000 if ms is not None else None
            sent = 0
            it = lines(chunks).__aiter__()
            while n is None or sent < int(n):
                try:
                    if deadline is None:
                        line = await it.__anext__()
                    else:
                        line = await asyncio.wait_for(it.__anext__(), max(0.0, deadline - time.monotonic()))
                except (StopAsyncIteration, asyncio.TimeoutError):
                    break
                yield line
                sent += 1
            if gone:
                yield json.dumps({"type": "ERROR", "object": json.loads(status_body(410))}).encode() + b"\n"
        return filt

    async def do_watch_drop(self, r, spec):
        st, headers = await self.send_upstream(r)
        self.answer_headers_only(r, headers)
        await self.pump(r, st, self.watch_end_after(spec, False))
        st.up.cancel(st)

    async def do_watch_gone(self, r, spec):
        st, headers = await self.send_upstream(r)
        self.answer_headers_only(r, headers)
        await self.pump(r, st, self.watch_end_after(spec, True))
        st.up.cancel(st)

    async def do_watch_stall(self, r, spec):
        st, headers = await self.send_upstream(r)
        self.answer_headers_only(r, headers)
        n = int(spec.get("after_events", 0))
        stall = spec.get("stall_ms", 5000) / 1000
        p = self.proxy

        async def filt(chunks):
            it = lines(chunks).__aiter__()
            for _ in range(n):
                try:
                    yield await it.__anext__()
                except StopAsyncIteration:
                    return
            # Hold everything that comes during the stall, then deliver it.
            held = bytearray()
            deadline = time.monotonic() + stall
            p.count("watch_stalls")
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    held += await asyncio.wait_for(it.__anext__(), left)
                except asyncio.TimeoutError:
                    break
                except StopAsyncIteration:
                    yield bytes(held)
                    return
            yield bytes(held)
            async for line in it:
                yield line
        await self.pump(r, st, filt)


async def lines(chunks):
    """Re-frame a watch body into whole lines (events)."""
    buf = bytearray()
    async for c in chunks:
        buf += c
        while True:
            i = buf.find(b"\n")
            if i < 0:
                break
            yield bytes(buf[:i + 1])
            del buf[:i + 1]
    if buf:
        yield bytes(buf)


JOBS_PATH = re.compile(r"^/apis/batch/v1/namespaces/[^/]+/jobs$")
STATUS_PATH = re.compile(r"^/apis/jobset\.x-k8s\.io/v1alpha2/namespaces/[^/]+/jobsets/[^/]+/status$")
EVENTS_PATH = re.compile(r"^/apis/events\.k8s\.io/v1/namespaces/[^/]+/events$")
LABEL = "jobset.sigs.k8s.io/"


def note_request(r):
    """What the log keeps of Job creates and JobSet status writes."""
    try:
        if r.method == "POST" and JOBS_PATH.match(r.path):
            obj = json.loads(r.body)
            md = obj.get("metadata", {})
            lb = md.get("labels", {})
            owner = [o.get("uid") for o in md.get("ownerReferences") or [] if o.get("controller")]
            r.log["job"] = {"name": md.get("name"), "attempt": lb.get(LABEL + "restart-attempt"),
                            "jra": lb.get(LABEL + "job-restart-attempt", "0"),
                            "owner": owner[0] if owner else None, "codes": []}
        elif r.method == "POST" and EVENTS_PATH.match(r.path):
            r.log["reason"] = json.loads(r.body).get("reason")
        elif r.method in ("PATCH", "PUT") and STATUS_PATH.match(r.path):
            st = json.loads(r.body).get("status") or {}
            if "restarts" in st:
                r.log["restarts"] = st["restarts"]
    except (ValueError, AttributeError):
        pass


# ---- control API ----

async def control(proxy, reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *hdrs = head.decode().split("\r\n")
        method, path, _ = line.split(" ", 2)
        n = 0
        for h in hdrs:
            k, _, v = h.partition(":")
            if k.strip().lower() == "content-length":
                n = int(v)
        body = json.loads(await reader.readexactly(n)) if n else None
        code, out = 200, None
        if method == "GET" and path == "/stats":
            out = proxy.stats()
        elif method == "GET" and path == "/healthz":
            out = {"ok": True}
        elif method == "PUT" and path == "/rules":
            try:
                proxy.set_rules(body or [])
                out = {"rules": len(proxy.rules)}
            except (ValueError, KeyError, re.error) as e:
                code, out = 400, {"error": str(e)}
        elif method == "POST" and path == "/reset":
            proxy.rule_stats.clear()
            proxy.counts.clear()
            for ru in proxy.rules:
                ru.seen = 0
            out = proxy.stats()
        elif method == "POST" and path == "/release":
            drop = bool((body or {}).get("drop"))
            held, proxy.held = proxy.held, []
            for f in held:
                if not f.done():
                    f.set_result(drop)
            out = {"released": len(held)}
        elif method == "POST" and path == "/mark":
            proxy.epoch = str((body or {}).get("epoch", ""))
            out = {"epoch": proxy.epoch}
        elif method == "POST" and path == "/disconnect":
            conns = list(proxy.conns)
            for c in conns:
                c.abort()
            out = {"disconnected": len(conns)}
        elif method == "POST" and path == "/refuse":
            proxy.refuse = bool((body or {}).get("on", True))
            out = {"refuse": proxy.refuse}
        else:
            code, out = 404, {"error": f"no {method} {path}"}
        data = json.dumps(out).encode()
        writer.write(f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + data)
        await writer.drain()
    except (asyncio.IncompleteReadError, ValueError, ConnectionError) as e:
        print(f"faultproxy: control: {e}", file=sys.stderr, flush=True)
    finally:
        writer.close()


def parse_addr(s):
    host, _, port = s.rpartition(":")
    return host or "127.0.0.1", int(port)


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--control", default="127.0.0.1:0")
    ap.add_argument("--upstream", required=True, help="https://HOST:PORT of the kube-apiserver")
    ap.add_argument("--ca", required=True, help="CA bundle: verifies the API server and client certificates")
    ap.add_argument("--cert", required=True, help="serving certificate (signed by --ca)")
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-cert", help="upstream client certificate (the controller's identity)")
    ap.add_argument("--client-key")
    ap.add_argument("--rules", help="JSON file with the initial rules")
    ap.add_argument("--log", help="JSON-lines request log")
    ap.add_argument("--seed", type=int, default=1, help="seed of the jitter")
    ap.add_argument("--ready-file")
    args = ap.parse_args()
    proxy = Proxy(args)
    if args.rules:
        with open(args.rules) as f:
            proxy.set_rules(json.load(f))
    loop = asyncio.get_running_loop()
    host, port = parse_addr(args.listen)
    srv = await loop.create_server(lambda: Downstream(proxy), host, port, ssl=proxy.ssl_server())
    chost, cport = parse_addr(args.control)
    csrv = await asyncio.start_server(lambda r, w: control(proxy, r, w), chost, cport)
    ready = {"port": srv.sockets[0].getsockname()[1], "control": csrv.sockets[0].getsockname()[1]}
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(ready, f)
        os.replace(tmp, args.ready_file)
    print(f"faultproxy: listening on {host}:{ready['port']}, control on {chost}:{ready['control']}, "
          f"upstream {args.upstream}", file=sys.stderr, flush=True)
    stop = loop.create_future()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, lambda: stop.done() or stop.set_result(None))
    await stop
    srv.close()
    csrv.close()
    for c in list(proxy.conns):
        c.abort()


if __name__ == "__main__":
    asyncio.run(main())
