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

/* The values of one ConfigMap or Secret of a manifest, bytes: the API
 * server's own limit for either (1 MiB), so what runs locally would also
 * be accepted by a cluster. */
#define JS_LIMIT_CONFIGMAP_BYTES (1u * 1024u * 1024u)

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

/* Child Jobs of one JobSet: the sum of replicas over its ReplicatedJobs
 * (docs/differences.md, "Size limits"; upstream has no bound). The schema
 * allows 2^31 - 1 per ReplicatedJob, and every runtime's plan is linear in
 * the Jobs it must create, so without a bound one JobSet could take a
 * controller's memory (issue 22: 0.45 GB/s at 2,000,000,000). 100,000 is
 * the Job API's own cap on the indexes of one Indexed Job, and above the
 * 150,000 pods a whole cluster is sized for (Kubernetes' scalability
 * thresholds) once each Job runs a pod or two; the controller holds about
 * 2 KB per child Job (BENCHMARKS.md, issue 9), so a JobSet at the bound
 * costs it some 200 MB at most. */
#define JS_LIMIT_JOBS 100000

/* ReplicatedJobs of one JobSet. Each has its own status entry, and the
 * runtimes look a ReplicatedJob up by name for each child Job, so a pass is
 * O(Jobs x ReplicatedJobs). An object of 1,000 ReplicatedJobs with real pod
 * templates is already near etcd's 1.5 MiB object limit. */
#define JS_LIMIT_REPLICATED_JOBS 1000

/* Failure-policy rules, the entries of each rule's lists
 * (targetReplicatedJobs, onJobFailureReasons), and the message patterns of
 * all rules together. Every rule is matched against each failed Job and
 * every pattern compiled and run against its message, so these bound a
 * failure pass. The Job API allows 20 podFailurePolicy rules; five times
 * that leaves room, and a list can name every ReplicatedJob. */
#define JS_LIMIT_FP_RULES 100
#define JS_LIMIT_FP_RULE_LIST JS_LIMIT_REPLICATED_JOBS
#define JS_LIMIT_FP_PATTERNS 1000

/* Bytes of one onJobFailureMessagePatterns entry: RE2 compiles and runs it
 * in time linear in its length; real patterns are tens of bytes. */
#define JS_LIMIT_PATTERN_LEN 4096

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
