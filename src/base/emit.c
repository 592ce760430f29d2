/*
 * emit.c - YAML/JSON output through libyaml's emitter, keys sorted.
 */
#include "base/emit.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/json.h"
#include "base/scalar.h"

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
	return js_buf_add(data, buffer, size) == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int scalar(yaml_emitter_t *em, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)(uintptr_t)s, (int)strlen(s), 1, 1, style))
		return -ENOMEM;
	return yaml_emitter_emit(em, &ev) ? 0 : -EIO;
}

static int string_scalar(yaml_emitter_t *em, const char *s)
{
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	if (!js_scalar_plain_is_string(s))
		style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	else if (strchr(s, '\n'))
		style = YAML_LITERAL_SCALAR_STYLE;
	return scalar(em, s, style);
}

static int emit_node(yaml_emitter_t *em, const json_t *v)
{
	yaml_event_t ev;
	int r = 0;
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		size_t n = json_object_size(v);
		yaml_mapping_style_t st = n ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE;
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, st) || !yaml_emitter_emit(em, &ev))
			return -EIO;
		const char **keys = js_xcalloc(n, sizeof(*keys));
		size_t i = 0;
		const char *k;
		json_t *e;
		json_object_foreach(js_json_unconst(v), k, e) keys[i++] = k;
		qsort(keys, n, sizeof(*keys), cmp_str);
		for (i = 0; i < n && r == 0; i++) {
			r = string_scalar(em, keys[i]);
			if (r == 0)
				r = emit_node(em, json_object_get(v, keys[i]));
		}
		free(keys);
		if (r == 0 && (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev)))
			r = -EIO;
		return r;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		yaml_sequence_style_t st = n ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE;
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, st) || !yaml_emitter_emit(em, &ev))
			return -EIO;
		for (size_t i = 0; i < n && r == 0; i++)
			r = emit_node(em, json_array_get(v, i));
		if (r == 0 && (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev)))
			r = -EIO;
		return r;
	}
	case JSON_STRING:
		return string_scalar(em, json_string_value(v));
	case JSON_NULL:
		return scalar(em, "null", YAML_PLAIN_SCALAR_STYLE);
	default: {
		char *s = json_dumps(v, JSON_ENCODE_ANY);
		if (!s)
			return -ENOMEM;
		r = scalar(em, s, YAML_PLAIN_SCALAR_STYLE);
		free(s);
		return r;
	}
	}
}

int js_emit_yaml(const json_t *v, int doc_start, struct js_buf *out)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	if (!yaml_emitter_initialize(&em))
		return -ENOMEM;
	yaml_emitter_set_output(&em, write_handler, out);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	int r = -EIO;
	if (yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&em, &ev) &&
	    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, !doc_start) && yaml_emitter_emit(&em, &ev)) {
		r = emit_node(&em, v);
		if (r == 0 && !(yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
				yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev)))
			r = -EIO;
	}
	if (r == 0 && !yaml_emitter_flush(&em))
		r = -EIO;
	yaml_emitter_delete(&em);
	return r;
}

int js_emit_json(const json_t *v, struct js_buf *out)
{
	char *s = js_json_dump_sorted(v, true);
	int r = js_buf_puts(out, s);
	if (r == 0)
		r = js_buf_puts(out, "\n");
	free(s);
	return r;
}
