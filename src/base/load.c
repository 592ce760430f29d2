/*
 * load.c - YAML/JSON streams to jansson trees with positions (libyaml events).
 */
#include "base/load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "base/buf.h"
#include "base/file.h"
#include "base/json.h"
#include "base/limits.h"
#include "base/scalar.h"

/* ---- pointer -> position map (open addressing) ---- */

struct pos {
	const json_t *node;
	int line, col;
};

struct posmap {
	struct pos *slots;
	size_t cap, n;
};

static size_t hash_ptr(const void *p)
{
	uintptr_t x = (uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static void posmap_put(struct posmap *m, const json_t *node, int line, int col)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 256;
		struct pos *ns = js_xcalloc(ncap, sizeof(*ns));
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->slots[i].node)
				continue;
			size_t h = hash_ptr(m->slots[i].node) & (ncap - 1);
			while (ns[h].node)
				h = (h + 1) & (ncap - 1);
			ns[h] = m->slots[i];
		}
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
	}
	size_t h = hash_ptr(node) & (m->cap - 1);
	while (m->slots[h].node && m->slots[h].node != node)
		h = (h + 1) & (m->cap - 1);
	if (!m->slots[h].node)
		m->n++;
	m->slots[h] = (struct pos){node, line, col};
}

static const struct pos *posmap_get(const struct posmap *m, const json_t *node)
{
	if (!m->cap)
		return NULL;
	size_t h = hash_ptr(node) & (m->cap - 1);
	while (m->slots[h].node) {
		if (m->slots[h].node == node)
			return &m->slots[h];
		h = (h + 1) & (m->cap - 1);
	}
	return NULL;
}

/* ---- documents ---- */

struct doc {
	json_t *root;
	int line;
};

struct js_docs {
	char *file;
	struct doc *docs;
	size_t n, cap;
	struct posmap pos;
};

/* ---- builder state ---- */

struct anchor {
	char *name;
	json_t *node;
	size_t nodes; /* size of the subtree, for the expansion bound */
};

struct frame {
	json_t *node;
	bool is_map;
	char *key; /* pending key in a mapping, owned */
	int key_line, key_col;
	char *anchor;
	size_t nodes_at_start;
	bool has_merge; /* saw a "<<" key, so later explicit keys may override merged ones */
	json_t *merged_keys; /* keys that came from a merge, may be overridden */
};

struct builder {
	const char *file;
	struct js_docs *docs;
	struct js_diag *diag;
	struct frame *stack;
	size_t depth, cap;
	struct anchor *anchors;
	size_t n_anchors, cap_anchors;
	size_t nodes; /* nodes in the current document, aliases expanded */
	json_t *root;
	int doc_line;
	int err;
};

static void fail(struct builder *b, int err, const yaml_mark_t *m, enum js_diag_type type, const char *fmt, ...)
	JS_PRINTF(5, 6);

static void fail(struct builder *b, int err, const yaml_mark_t *m, enum js_diag_type type, const char *fmt, ...)
{
	if (b->err)
		return;
	char msg[JS_LIMIT_DIAG_MSG];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct js_diag_entry *e = js_diag_add(b->diag, type, NULL, NULL, "%s", msg);
	js_diag_set_pos(e, b->file, m ? (int)m->line + 1 : 0, m ? (int)m->column + 1 : 0);
	b->err = err;
}

static void clear_anchors(struct builder *b)
{
	for (size_t i = 0; i < b->n_anchors; i++) {
		free(b->anchors[i].name);
		json_decref(b->anchors[i].node);
	}
	b->n_anchors = 0;
}

static void add_anchor(struct builder *b, const char *name, json_t *node, size_t nodes)
{
	/* A redefined anchor shadows the earlier one (YAML 1.1 §3.2.2.2). */
	if (b->n_anchors == b->cap_anchors) {
		b->cap_anchors = b->cap_anchors ? b->cap_anchors * 2 : 16;
		b->anchors = js_xrealloc(b->anchors, b->cap_anchors * sizeof(*b->anchors));
	}
	b->anchors[b->n_anchors++] = (struct anchor){js_xstrdup(name), json_incref(node), nodes};
}

static const struct anchor *find_anchor(const struct builder *b, const char *name)
{
	for (size_t i = b->n_anchors; i-- > 0;)
		if (strcmp(b->anchors[i].name, name) == 0)
			return &b->anchors[i];
	return NULL;
}

static bool count_nodes(struct builder *b, size_t n, const yaml_mark_t *m)
{
	if (n > JS_LIMIT_DOC_NODES || b->nodes > JS_LIMIT_DOC_NODES - n) {
		fail(b, JS_ETOOLARGE, m, JS_DIAG_LIMIT,
		     "document expands to more than %u values (are aliases nested too deeply?)",
		     JS_LIMIT_DOC_NODES);
		return false;
	}
	b->nodes += n;
	return true;
}

/* Merge key "<<": copy keys of a mapping (or a list of mappings) that the
 * current mapping does not have yet (YAML merge key type). */
static void merge_into(struct builder *b, struct frame *f, const json_t *src, const yaml_mark_t *m)
{
	if (json_is_array(src)) {
		size_t i;
		json_t *e;
		json_array_foreach(src, i, e) merge_into(b, f, e, m);
		return;
	}
	if (!json_is_object(src)) {
		fail(b, JS_EINVALID, m, JS_DIAG_SYNTAX, "merge key '<<' needs a mapping or a list of mappings");
		return;
	}
	if (!f->merged_keys)
		f->merged_keys = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(js_json_unconst(src), k, v) {
		if (json_object_get(f->node, k))
			continue;
		json_object_set_new(f->node, k, json_deep_copy(v));
		json_object_set_new(f->merged_keys, k, json_true());
	}
	f->has_merge = true;
}

/* Attach a finished value to its parent (or make it the root). */
static void attach(struct builder *b, json_t *v, const yaml_mark_t *m)
{
	if (b->depth == 0) {
		b->root = v;
		return;
	}
	struct frame *f = &b->stack[b->depth - 1];
	if (!f->is_map) {
		json_array_append_new(f->node, v);
		return;
	}
	if (!f->key) {
		/* A collection or alias used as a mapping key. */
		fail(b, JS_EINVALID, m, JS_DIAG_SYNTAX,
		     "a mapping key must be a scalar (Kubernetes objects have string keys)");
		json_decref(v);
		return;
	}
	char *key = f->key;
	f->key = NULL;
	if (strcmp(key, "<<") == 0) {
		merge_into(b, f, v, m);
		json_decref(v);
		free(key);
		return;
	}
	if (json_object_get(f->node, key) && !(f->merged_keys && json_object_get(f->merged_keys, key))) {
		yaml_mark_t km = {0, (size_t)f->key_line, (size_t)f->key_col};
		fail(b, JS_EINVALID, &km, JS_DIAG_DUPLICATE, "key \"%s\" appears twice in this mapping", key);
		json_decref(v);
		free(key);
		return;
	}
	if (f->merged_keys)
		json_object_del(f->merged_keys, key);
	json_object_set_new(f->node, key, v);
	/* Point the value at its key: "replicas: -1" is where a user looks. */
	posmap_put(&b->docs->pos, v, f->key_line + 1, f->key_col + 1);
	free(key);
}

static void push_frame(struct builder *b, json_t *node, bool is_map, const char *anchor, const yaml_mark_t *m)
{
	if (b->depth >= JS_LIMIT_NESTING_DEPTH) {
		fail(b, JS_ETOOLARGE, m, JS_DIAG_LIMIT, "nesting deeper than %d levels", JS_LIMIT_NESTING_DEPTH);
		json_decref(node);
		return;
	}
	if (b->depth == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 32;
		b->stack = js_xrealloc(b->stack, b->cap * sizeof(*b->stack));
	}
	posmap_put(&b->docs->pos, node, (int)m->line + 1, (int)m->column + 1);
	b->stack[b->depth++] = (struct frame){
		.node = node, .is_map = is_map, .anchor = anchor ? js_xstrdup(anchor) : NULL,
		.nodes_at_start = b->nodes,
	};
}

static void pop_frame(struct builder *b, const yaml_mark_t *m)
{
	struct frame f = b->stack[--b->depth];
	free(f.key);
	json_decref(f.merged_keys);
	if (f.anchor) {
		add_anchor(b, f.anchor, f.node, b->nodes - f.nodes_at_start + 1);
		free(f.anchor);
	}
	attach(b, f.node, m);
}

static void on_scalar(struct builder *b, const yaml_event_t *ev)
{
	const char *text = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	bool quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	if (!count_nodes(b, 1, &ev->start_mark))
		return;

	if (len != strlen(text)) {
		fail(b, JS_EINVALID, &ev->start_mark, JS_DIAG_SYNTAX, "a scalar contains a NUL character");
		return;
	}

	struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
	if (f && f->is_map && !f->key) {
		/* Mapping key: JSON keys are strings; kubectl stringifies non-string keys. */
		char *key = NULL;
		int r = js_scalar_key(text, tag, quoted, &key);
		if (r < 0) {
			fail(b, JS_EINVALID, &ev->start_mark, JS_DIAG_SYNTAX, "unsupported key tag '%s'",
			     tag ? tag : "");
			return;
		}
		f->key = key;
		f->key_line = (int)ev->start_mark.line;
		f->key_col = (int)ev->start_mark.column;
		return;
	}
	json_t *v = NULL;
	int r = js_scalar_resolve(text, tag, quoted, &v);
	if (r < 0) {
		fail(b, JS_EINVALID, &ev->start_mark, JS_DIAG_SYNTAX, "'%s' is not a valid %s", text,
		     tag ? tag : "scalar");
		return;
	}
	posmap_put(&b->docs->pos, v, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1);
	if (ev->data.scalar.anchor)
		add_anchor(b, (const char *)ev->data.scalar.anchor, v, 1);
	attach(b, v, &ev->start_mark);
}

static void on_alias(struct builder *b, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	const struct anchor *a = find_anchor(b, name);
	if (!a) {
		fail(b, JS_EINVALID, &ev->start_mark, JS_DIAG_SYNTAX, "alias *%s names no anchor defined before it",
		     name);
		return;
	}
	if (!count_nodes(b, a->nodes, &ev->start_mark))
		return;
	struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
	if (f && f->is_map && !f->key) {
		if (!json_is_string(a->node)) {
			fail(b, JS_EINVALID, &ev->start_mark, JS_DIAG_SYNTAX, "an alias used as a key must be a string");
			return;
		}
		f->key = js_xstrdup(json_string_value(a->node));
		f->key_line = (int)ev->start_mark.line;
		f->key_col = (int)ev->start_mark.column;
		return;
	}
	/* Copy, so that later changes to one place (defaulting) do not show up in
	 * the other; the node bound above keeps the copy small. */
	json_t *v = json_deep_copy(a->node);
	posmap_put(&b->docs->pos, v, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1);
	attach(b, v, &ev->start_mark);
}

static void add_doc(struct builder *b, const yaml_mark_t *m)
{
	json_t *root = b->root;
	b->root = NULL;
	if (!root || json_is_null(root)) {
		json_decref(root); /* an empty document, e.g. a trailing "---" */
		return;
	}
	if (b->docs->n >= JS_LIMIT_DOCUMENTS) {
		json_decref(root);
		fail(b, JS_ETOOLARGE, m, JS_DIAG_LIMIT, "more than %u documents in one stream", JS_LIMIT_DOCUMENTS);
		return;
	}
	if (b->docs->n == b->docs->cap) {
		b->docs->cap = b->docs->cap ? b->docs->cap * 2 : 4;
		b->docs->docs = js_xrealloc(b->docs->docs, b->docs->cap * sizeof(*b->docs->docs));
	}
	b->docs->docs[b->docs->n++] = (struct doc){root, b->doc_line};
}

static void run_parser(struct builder *b, yaml_parser_t *p)
{
	bool done = false;
	while (!done && !b->err) {
		yaml_event_t ev;
		if (!yaml_parser_parse(p, &ev)) {
			yaml_mark_t m = p->problem_mark;
			if (p->error == YAML_READER_ERROR) {
				/* Reader errors carry a byte offset, not a line. */
				m.line = p->mark.line;
				m.column = p->mark.column;
			}
			fail(b, JS_EINVALID, &m, JS_DIAG_SYNTAX, "%s%s%s", p->problem ? p->problem : "malformed input",
			     p->context ? " " : "", p->context ? p->context : "");
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			b->nodes = 0;
			b->doc_line = (int)ev.start_mark.line + 1;
			clear_anchors(b);
			break;
		case YAML_DOCUMENT_END_EVENT:
			add_doc(b, &ev.start_mark);
			break;
		case YAML_MAPPING_START_EVENT:
			if (count_nodes(b, 1, &ev.start_mark))
				push_frame(b, json_object(), true, (const char *)ev.data.mapping_start.anchor,
					   &ev.start_mark);
			break;
		case YAML_SEQUENCE_START_EVENT:
			if (count_nodes(b, 1, &ev.start_mark))
				push_frame(b, json_array(), false, (const char *)ev.data.sequence_start.anchor,
					   &ev.start_mark);
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			pop_frame(b, &ev.start_mark);
			break;
		case YAML_SCALAR_EVENT:
			on_scalar(b, &ev);
			break;
		case YAML_ALIAS_EVENT:
			on_alias(b, &ev);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
}

static int too_large(struct js_diag *diag, const char *file)
{
	struct js_diag_entry *e = js_diag_add(diag, JS_DIAG_LIMIT, NULL, NULL,
					      "input is larger than %u bytes, the limit for one manifest",
					      JS_LIMIT_MANIFEST_BYTES);
	js_diag_set_pos(e, file, 0, 0);
	return JS_ETOOLARGE;
}

int js_docs_load(const char *file, const char *data, size_t len, struct js_diag *diag, struct js_docs **ret_docs)
{
	if (len > JS_LIMIT_MANIFEST_BYTES)
		return too_large(diag, file);
	struct js_docs *docs = js_xcalloc(1, sizeof(*docs));
	docs->file = js_xstrdup(file);
	struct builder b = {.file = file, .docs = docs, .diag = diag};

	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		js_docs_free(docs);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
	run_parser(&b, &p);
	yaml_parser_delete(&p);

	while (b.depth > 0) {
		struct frame *f = &b.stack[--b.depth];
		free(f->key);
		free(f->anchor);
		json_decref(f->merged_keys);
		json_decref(f->node);
	}
	free(b.stack);
	json_decref(b.root);
	clear_anchors(&b);
	free(b.anchors);
	if (b.err) {
		js_docs_free(docs);
		return b.err;
	}
	*ret_docs = docs;
	return 0;
}

int js_docs_load_file(const char *path, struct js_diag *diag, struct js_docs **ret_docs)
{
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "<stdin>" : path;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		struct js_diag_entry *e = js_diag_add(diag, JS_DIAG_INVALID, NULL, NULL, "cannot open: %s",
						      strerror(errno));
		js_diag_set_pos(e, name, 0, 0);
		return err;
	}
	char *data = NULL;
	size_t len = 0;
	int err = js_file_read_fd(fd, JS_LIMIT_MANIFEST_BYTES, &data, &len);
	if (!is_stdin)
		close(fd);
	if (err == JS_ETOOLARGE) {
		(void)too_large(diag, name);
	} else if (err < 0) {
		struct js_diag_entry *e = js_diag_add(diag, JS_DIAG_INVALID, NULL, NULL, "cannot read: %s",
						      strerror(-err));
		js_diag_set_pos(e, name, 0, 0);
	} else {
		err = js_docs_load(name, data, len, diag, ret_docs);
	}
	free(data);
	return err;
}

struct js_docs *js_docs_free(struct js_docs *docs)
{
	if (!docs)
		return NULL;
	for (size_t i = 0; i < docs->n; i++)
		json_decref(docs->docs[i].root);
	free(docs->docs);
	free(docs->pos.slots);
	free(docs->file);
	free(docs);
	return NULL;
}

size_t js_docs_count(const struct js_docs *docs) { return docs->n; }

const json_t *js_docs_root(const struct js_docs *docs, size_t i) { return i < docs->n ? docs->docs[i].root : NULL; }

int js_docs_line(const struct js_docs *docs, size_t i) { return i < docs->n ? docs->docs[i].line : 0; }

const char *js_docs_file(const struct js_docs *docs) { return docs->file; }

/* Walk `path` from the root; return the deepest node reached. */
static const json_t *walk(const json_t *node, const char *path)
{
	const char *p = path;
	while (*p && node) {
		const json_t *next = NULL;
		if (*p == '.') {
			p++;
			continue;
		}
		if (*p == '[') {
			const char *end = strchr(p, ']');
			if (!end)
				break;
			char key[256];
			size_t n = (size_t)(end - p - 1);
			if (n >= sizeof(key))
				break;
			memcpy(key, p + 1, n);
			key[n] = '\0';
			if (json_is_array(node)) {
				char *e = NULL;
				unsigned long idx = strtoul(key, &e, 10);
				if (e && *e == '\0')
					next = json_array_get(node, idx);
			} else if (json_is_object(node)) {
				next = json_object_get(node, key);
			}
			p = end + 1;
		} else {
			size_t n = strcspn(p, ".[");
			char key[256];
			if (n >= sizeof(key))
				break;
			memcpy(key, p, n);
			key[n] = '\0';
			if (json_is_object(node))
				next = json_object_get(node, key);
			p += n;
		}
		if (!next)
			break;
		node = next;
	}
	return node;
}

bool js_docs_pos(const struct js_docs *docs, size_t i, const char *path, int *ret_line, int *ret_col)
{
	if (i >= docs->n)
		return false;
	const json_t *node = walk(docs->docs[i].root, path);
	const struct pos *pp = node ? posmap_get(&docs->pos, node) : NULL;
	if (!pp)
		return false;
	*ret_line = pp->line;
	*ret_col = pp->col;
	return true;
}

void js_docs_locate(const struct js_docs *docs, size_t i, struct js_diag *diag, size_t from)
{
	for (size_t k = from; k < diag->n; k++) {
		struct js_diag_entry *e = &diag->items[k];
		if (e->line > 0)
			continue;
		int line = 0, col = 0;
		if (!js_docs_pos(docs, i, e->path, &line, &col)) {
			line = js_docs_line(docs, i);
			col = 1;
		}
		js_diag_set_pos(e, docs->file, line, col);
	}
}
