/*
 * limits.h - every bound on external input, in one place, with its reason.
 *
 * Each limit is checked before the allocation it guards. Related limits are
 * tied together by _Static_assert so that changing one cannot silently break
 * another. (STYLE.md convention 13.)
 */
#ifndef JS_LIMITS_H
#define JS_LIMITS_H

/* A manifest file or stdin stream. The API server refuses request bodies over
 * 3 MiB and etcd objects over 1.5 MiB; 8 MiB leaves room for multi-document
 * streams while bounding memory for a mistaken 100 MB input. */
#define JS_LIMIT_MANIFEST_BYTES (8u * 1024u * 1024u)

/* Nesting of YAML/JSON collections. Real JobSets nest about 15 levels deep;
 * 100 bounds recursion in every tree walk (decode, encode, compare). */
#define JS_LIMIT_NESTING_DEPTH 100

/* Total nodes a document may expand to, aliases counted at their full size.
 * Defeats "billion laughs" alias bombs; a 1,000-rjob JobSet has ~50k nodes. */
#define JS_LIMIT_DOC_NODES 1000000u

/* Documents in one stream. */
#define JS_LIMIT_DOCUMENTS 10000u

/* DNS-1035 label / label value length (RFC 1035, Kubernetes validation). */
#define JS_LIMIT_LABEL_LEN 63

/* DNS-1123 subdomain length. */
#define JS_LIMIT_SUBDOMAIN_LEN 253

/* Failure-policy rule names (SPEC 5.3.1 F3). */
#define JS_LIMIT_RULE_NAME_LEN 128

/* dependsOn entries per ReplicatedJob (SPEC 5.2 S11). */
#define JS_LIMIT_DEPENDS_ON 5

/* volumeClaimPolicies and templates per policy (SPEC 5.2 S18). */
#define JS_LIMIT_VCP 50

/* jobRestarts lists (SPEC 5.2 S20) and the RestartJob replicas bound (F2). */
#define JS_LIMIT_JOB_RESTARTS 1024

/* Objects `jobset render` prints in one call. Each child Job is a few KiB of
 * output and tens of KiB of tree while it is built; past this the output is
 * no longer something a person reads (use `jobset simulate` instead). */
#define JS_LIMIT_RENDER_OBJECTS 10000

/* Longest message kept in a diagnostic, bytes. */
#define JS_LIMIT_DIAG_MSG 4096

/* An AdmissionReview request body (src/webhook). It carries the object and
 * the old object; the API server refuses request bodies over 3 MiB, so two
 * of them plus the envelope stay well under 16 MiB. Larger bodies are
 * answered 413 before anything is buffered. */
#define JS_LIMIT_WEBHOOK_BODY (16u * 1024u * 1024u)

/* A PEM certificate chain or key file the webhook server loads: a few KiB in
 * practice; 1 MiB bounds a wrong path (a log file, a device). */
#define JS_LIMIT_WEBHOOK_PEM (1u * 1024u * 1024u)

/* Request line plus headers of one request to the webhook, metrics or probe
 * server. The API server sends a few hundred bytes and a scraper's bearer
 * token is a few KiB; 64 KiB leaves room for proxies' additions while a
 * client cannot make the server hold an endless header block. */
#define JS_LIMIT_WEBHOOK_HEADERS (64u * 1024u)

/* Seconds before an idle webhook connection is closed, so clients that
 * connect and go quiet cannot hold connection slots forever. */
#define JS_LIMIT_WEBHOOK_IDLE_S 30u

/* Concurrent webhook connections: the API server keeps a handful open per
 * webhook (per API server replica); 512 caps memory and fds under a flood. */
#define JS_LIMIT_WEBHOOK_CONNS 512u

/* Concurrent connections to the controller's /metrics and probe servers:
 * the kubelet and a scraper or two keep one each; 64 leaves room for
 * retries while a flood cannot take hundreds of fds from the process. */
#define JS_LIMIT_PROBE_CONNS 64u

_Static_assert(JS_LIMIT_PROBE_CONNS <= JS_LIMIT_WEBHOOK_CONNS, "the server caps connections at the webhook bound");
_Static_assert(JS_LIMIT_WEBHOOK_BODY >= 2u * 3u * 1024u * 1024u + 64u * 1024u,
	       "a review holds two objects of the API server's 3 MiB maximum");
_Static_assert(JS_LIMIT_LABEL_LEN < JS_LIMIT_SUBDOMAIN_LEN, "label fits in a subdomain");
_Static_assert(JS_LIMIT_NESTING_DEPTH < 1000, "tree walks recurse once per level");

#endif
