#!/usr/bin/env python3
"""Scan test logs for secrets (issue 13 item 5): bearer tokens and private
key material must never reach a log.

    scan_secrets.py [--tokens-from FILE]... PATH...
    scan_secrets.py --selftest

Every log-like file under each PATH (names ending in .log, .out, .err,
.txt, .xml: controller and component logs, pytest's captured output as
JUnit XML, ctest's LastTest.log) is searched for

* the literal tokens listed in the --tokens-from files (one per line: the
  tokens the run minted),
* anything shaped like a JWT (a ServiceAccount token: eyJ<b64>.eyJ<b64>.<b64>),
* a PEM private key header (-----BEGIN ... PRIVATE KEY-----), also base64
  encoded as a Secret's data carries it.

Certificates and kubeconfigs are not logs and are not read. A finding is
reported as file:line and its kind, with the secret cut to a few
characters; exit status 1 when anything was found, 0 when clean, 2 on a
usage error. --selftest plants each kind in a temporary tree and checks
that all are found and nothing else is.
"""
import argparse
import base64
import os
import re
import sys
import tempfile
from pathlib import Path

LOG_SUFFIXES = (".log", ".out", ".err", ".txt", ".xml")
JWT = re.compile(rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
PEM_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
# A Secret's data holds the PEM base64-encoded: its start is fixed text.
B64_KEYS = [base64.b64encode(h.encode()).rstrip(b"=")[:-2] for h in
            ("-----BEGIN PRIVATE KEY-----", "-----BEGIN EC PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
             "-----BEGIN ENCRYPTED PRIVATE KEY-----")]


def log_files(paths):
    for p in paths:
        p = Path(p)
        if p.is_file():
            yield p
        elif p.is_dir():
            for root, _, files in os.walk(p):
                for f in files:
                    if f.endswith(LOG_SUFFIXES) or f.startswith("LastTest"):
                        yield Path(root) / f


def redact(s):
    s = s.decode(errors="replace")
    return s[:6] + "..." if len(s) > 6 else "..."


def scan(paths, tokens):
    findings = []
    tokens = [t.encode() for t in tokens if len(t) >= 16]
    for f in log_files(paths):
        try:
            data = f.read_bytes()
        except OSError as e:
            findings.append((str(f), 0, f"unreadable: {e}"))
            continue
        for no, line in enumerate(data.splitlines(), 1):
            for t in tokens:
                if t in line:
                    findings.append((str(f), no, f"a token of this run ({redact(t)})"))
            for m in JWT.finditer(line):
                findings.append((str(f), no, f"a JWT-shaped token ({redact(m.group(0))})"))
            for m in PEM_KEY.finditer(line):
                findings.append((str(f), no, f"private key material ({m.group(0).decode()})"))
            for h in B64_KEYS:
                if h in line:
                    findings.append((str(f), no, "private key material, base64-encoded"))
    return findings


def read_tokens(files):
    out = []
    for f in files or []:
        p = Path(f)
        if p.exists():
            out += [line.strip() for line in p.read_text().splitlines() if line.strip()]
    return out


def selftest():
    jwt = "eyJhbGciOiJFUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
    key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB...\n-----END EC PRIVATE KEY-----\n"
    literal = "not-shaped-like-a-jwt-but-minted-0123456789"
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "a").mkdir()
        (d / "a" / "controller-1.log").write_text(f"INFO ok\nERROR Authorization: Bearer {jwt}\n")
        (d / "a" / "kube-apiserver.log").write_text("I1201 clean line\n" + key)
        (d / "junit.xml").write_text("<system-out>data: " + base64.b64encode(key.encode()).decode() + "</system-out>")
        (d / "LastTest.log").write_text(f"token {literal} in a test's output\n")
        (d / "clean.log").write_text("eyJ-but-not-a-token caBundle LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n")
        # Not logs: never read.
        (d / "tls.key").write_text(key)
        (d / "kubeconfig").write_text(f"token: {jwt}\n")
        (d / "tokens").write_text(literal + "\n")
        found = scan([d], read_tokens([d / "tokens"]))
    kinds = sorted((Path(f).name, n, k.split(" (")[0]) for f, n, k in found)
    want = sorted([("controller-1.log", 2, "a JWT-shaped token"), ("kube-apiserver.log", 2, "private key material"),
                   ("junit.xml", 1, "private key material, base64-encoded"),
                   ("LastTest.log", 1, "a token of this run")])
    if kinds != want:
        print(f"scan_secrets selftest FAILED:\n  found {kinds}\n  want  {want}", file=sys.stderr)
        return 1
    if any(jwt in k or literal in k for _, _, k in found):
        print("scan_secrets selftest FAILED: a report printed the secret", file=sys.stderr)
        return 1
    print("scan_secrets selftest: ok (4 planted secrets found, clean lines and non-log files left alone)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens-from", action="append", help="file of tokens (one per line) to look for")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    if not a.paths:
        ap.error("no paths")
    n_files = sum(1 for _ in log_files(a.paths))
    findings = scan(a.paths, read_tokens(a.tokens_from))
    for f, no, what in findings:
        print(f"{f}:{no}: {what}")
    print(f"scan_secrets: {n_files} log files, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
