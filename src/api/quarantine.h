/*
 * quarantine.h - node quarantine across restarts (ours, gate NodeQuarantine;
 * docs/node-quarantine.md): the rules a JobSet states in its annotations,
 * the list of nodes an attempt keeps off, its one text form, and how a
 * child Job carries it.
 *
 * The rules say which failed pods blame their node (exit codes, pod
 * conditions, the node lost) and for how many following attempts the node
 * is avoided. The list is what the core decided at a whole-JobSet restart:
 * node -> (reason, last attempt that avoids it). It is written as one text
 * (`node:lastAttempt:reason,...`) on every Job of the attempt (pod-template
 * annotation JS_ANN_QUARANTINED_NODES, beside a required node affinity
 * `metadata.name NotIn [...]` added to every nodeSelectorTerm), and read back
 * from there; the text is also the tail of the NodesQuarantined condition's
 * message, which bridges a restart until the attempt's first Job exists.
 *
 * Every value may be garbage or huge: parsing is bounded (JS_QUARANTINE_*
 * below), never allocates, and says what is wrong. Pure; thread-safe.
 */
#ifndef JS_QUARANTINE_H
#define JS_QUARANTINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/jobset.h"
#include "base/buf.h"
#include "base/common.h"
#include "base/diag.h"

/* ---- Keys (on the JobSet's metadata.annotations, written by the user) ---- */
#define JS_ANN_NQ_EXIT_CODES "jobset.sigs.k8s.io/node-quarantine-exit-codes"
#define JS_ANN_NQ_POD_CONDITIONS "jobset.sigs.k8s.io/node-quarantine-pod-conditions"
#define JS_ANN_NQ_NODE_LOST "jobset.sigs.k8s.io/node-quarantine-node-lost"
#define JS_ANN_NQ_ATTEMPTS "jobset.sigs.k8s.io/node-quarantine-attempts"
/* Written by the controller on each Job's pod template (and Job metadata). */
#define JS_ANN_QUARANTINED_NODES "jobset.sigs.k8s.io/quarantined-nodes"
/* The condition of ours, True while the current attempt avoids a node. */
#define JS_COND_NODES_QUARANTINED "NodesQuarantined"
/* The condition of ours, True while a pod of the current attempt cannot be
 * scheduled and the scheduler says nodes failed its node affinity, which
 * the list's NotIn requirement adds to (core/noroom.c). */
#define JS_COND_QUARANTINE_NO_ROOM "QuarantineLeavesNoRoom"

/* Between the human part of the NodesQuarantined message and the list's
 * text (core/avoid.c writes it, `kubectl jobset describe` reads it). */
#define JS_QUARANTINE_MARKER " (node:last attempt:reason): "

/* ---- Bounds ---- */
/* Nodes one attempt avoids at most: the list lives in an annotation and in
 * a condition message (at most 32768 bytes in the CRD): 32 entries of a
 * 253-byte node name and a 317-byte condition type stay below it. More bad
 * nodes than that in one JobSet is a cluster problem, not a node's. */
#define JS_QUARANTINE_MAX_NODES 32
/* Pod condition types a JobSet may name. */
#define JS_QUARANTINE_MAX_CONDITIONS 16
/* Exit codes a JobSet may name (1..255 each, so 255 at most). */
#define JS_QUARANTINE_MAX_ATTEMPTS 1000
/* A condition type is a qualified name: 253-byte prefix, '/', 63 bytes. */
#define JS_QUARANTINE_MAX_TYPE 317
#define JS_QUARANTINE_MAX_NODE 253
/* Bytes of one annotation value of the rules read at most. */
#define JS_QUARANTINE_MAX_RULE_TEXT 8192

/* ---- The rules ---- */

/** What a JobSet's annotations ask for. `any` is false when none is set. */
struct js_quarantine_rules {
	bool any;
	bool exit_code[256];   /* exit_code[n]: exit code n blames the node */
	size_t n_conditions;   /* pod condition types (status True) that do */
	char conditions[JS_QUARANTINE_MAX_CONDITIONS][JS_QUARANTINE_MAX_TYPE + 1];
	bool node_lost;        /* the failed pod's node is NotReady or gone */
	int32_t attempts;      /* following attempts that avoid the node (>= 1) */
};

/**
 * Read the rules from a JobSet's metadata.annotations (may be NULL). Each
 * problem is appended to `diag` (may be NULL) with its field path
 * `metadata.annotations[<key>]`. Returns 0 with *ret filled (ret->any false
 * when no rule key is present), or JS_EINVALID when a value is not valid
 * (then *ret holds the rules that were valid, so a caller that must go on
 * may use them).
 */
JS_WARN_UNUSED int js_quarantine_rules_read(const json_t *annotations, struct js_quarantine_rules *ret,
					    struct js_diag *diag);

/** True when `annotations` carries any of the four rule keys. */
bool js_quarantine_rules_present(const json_t *annotations);

/** True when pod condition type `type` blames the node. */
bool js_quarantine_rules_condition(const struct js_quarantine_rules *rules, const char *type);

/**
 * Validation (api/validate.c, shared by the webhook, `jobset validate` and
 * `jobset run`): with the gate NodeQuarantine off, any rule key is
 * Forbidden, naming the gate; with it on, each value is checked. Appends to
 * `diag`; returns 0 when valid, JS_EINVALID otherwise.
 */
int js_quarantine_validate(const struct js_jobset *js, const struct js_gates *gates, struct js_diag *diag);

/**
 * On update: when the four rule annotations are the same as in `old`,
 * nothing to say (a JobSet admitted with the gate on stays updatable after
 * the gate is turned off); otherwise as js_quarantine_validate on `js`.
 */
int js_quarantine_validate_update(const struct js_jobset *old, const struct js_jobset *js,
				  const struct js_gates *gates, struct js_diag *diag);

/* ---- The list ---- */

enum js_quarantine_why {
	JS_QUARANTINE_EXIT_CODE,     /* "exitCode=<n>" */
	JS_QUARANTINE_POD_CONDITION, /* "podCondition=<type>" */
	JS_QUARANTINE_NODE_LOST,     /* "nodeLost" */
};

/** One node an attempt avoids. */
struct js_quarantine_entry {
	char node[JS_QUARANTINE_MAX_NODE + 1];
	int32_t until;                 /* last attempt (status.restarts) that avoids it */
	enum js_quarantine_why why;
	int32_t exit_code;             /* JS_QUARANTINE_EXIT_CODE */
	char condition[JS_QUARANTINE_MAX_TYPE + 1]; /* JS_QUARANTINE_POD_CONDITION */
};

/** A list: at most JS_QUARANTINE_MAX_NODES entries, node names unique. */
struct js_quarantine_list {
	size_t n;
	struct js_quarantine_entry items[JS_QUARANTINE_MAX_NODES];
};

/**
 * Parse the text form `node:until:reason[,node:until:reason...]` (an empty
 * text is the empty list). Strict: node names are DNS subdomains, `until` a
 * whole number 0..INT32_MAX, reasons as enum js_quarantine_why, no
 * duplicate node, at most JS_QUARANTINE_MAX_NODES entries. Returns 0 with
 * *ret filled, or JS_EINVALID (then *ret is the empty list).
 */
JS_WARN_UNUSED int js_quarantine_list_parse(const char *text, struct js_quarantine_list *ret);

/** Append the text form of `l` to `out` (empty for an empty list). Returns 0
 * or the error of js_buf_add. */
JS_WARN_UNUSED int js_quarantine_list_format(const struct js_quarantine_list *l, struct js_buf *out);

/** The index of `node` in `l`, or -1. */
int js_quarantine_list_find(const struct js_quarantine_list *l, const char *node);

/** Human words for an entry's reason ("exit code 137", "pod condition
 * DisruptionTarget", "node lost") appended to `out`. Returns 0 or the error
 * of js_buf_add. */
JS_WARN_UNUSED int js_quarantine_why_text(const struct js_quarantine_entry *e, struct js_buf *out);

/**
 * Put list `l` (non-empty) on a rendered batch/v1 Job: the annotation
 * JS_ANN_QUARANTINED_NODES on the Job and on its pod template, and a
 * required node affinity `metadata.name NotIn [nodes]` (matchFields: the
 * node's name, which is what a pod's spec.nodeName holds) added to EVERY
 * nodeSelectorTerm of spec.template.spec.affinity.nodeAffinity's required
 * terms (they are ORed, so each must exclude the nodes), creating one term
 * when there is none. Nothing else is changed: the user's, exclusive
 * placement's and Kueue's selectors and affinities stay as they are.
 */
void js_quarantine_apply(json_t *job, const struct js_quarantine_list *l);

#endif
