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

/* Longest message kept in a diagnostic, bytes. */
#define JS_LIMIT_DIAG_MSG 4096

_Static_assert(JS_LIMIT_LABEL_LEN < JS_LIMIT_SUBDOMAIN_LEN, "label fits in a subdomain");
_Static_assert(JS_LIMIT_NESTING_DEPTH < 1000, "tree walks recurse once per level");

#endif
