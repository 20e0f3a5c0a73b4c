/* cli_yaml.c - `-o yaml`: a JSON value written as YAML by libyaml's emitter,
 * so quoting (strings that look like numbers, booleans, "null", multi-line
 * policy text) is the emitter's, never ours. Integers and reals stay plain
 * scalars; strings that YAML would read as another type are quoted. */
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "cli.h"

static bool emit(yaml_emitter_t *e, yaml_event_t *ev)
{
	return yaml_emitter_emit(e, ev) != 0;
}

/* Strings YAML 1.1/1.2 would resolve to null, a boolean or a number. */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = { "",     "~",    "null",  "Null",  "NULL",	"true",
					     "True", "TRUE", "false", "False", "FALSE", "yes",
					     "no",   "on",   "off",   "y",     "n",	NULL };
	for (size_t i = 0; words[i]; i++)
		if (!strcmp(s, words[i]))
			return true;
	/* Numbers in any of YAML's spellings (1, -2.5e3, 0x1f, 0o7, 1_000, 1:20). */
	return strchr("0123456789+-.", s[0]) &&
	       strspn(s, "0123456789+-.eE_:xXoObBaAcCdDfF") == strlen(s);
}

/* Numbers, booleans and null are written plain; strings in the style the
 * emitter finds safe, quoted when YAML would read them as another type, as a
 * literal block when they span lines (policy text). */
static bool scalar(yaml_emitter_t *e, const char *text, bool typed)
{
	yaml_event_t ev;
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	if (typed)
		style = YAML_PLAIN_SCALAR_STYLE;
	else if (strchr(text, '\n'))
		style = YAML_LITERAL_SCALAR_STYLE;
	else if (needs_quotes(text))
		style = YAML_SINGLE_QUOTED_SCALAR_STYLE;
	yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text),
				     typed || style == YAML_ANY_SCALAR_STYLE, !typed, style);
	return emit(e, &ev);
}

static bool node(yaml_emitter_t *e, const json_t *v)
{
	yaml_event_t ev;
	char num[64];
	if (json_is_object(v)) {
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
		if (!emit(e, &ev))
			return false;
		const char *k;
		json_t *m;
		json_object_foreach ((json_t *)v, k, m)
			if (!scalar(e, k, false) || !node(e, m))
				return false;
		yaml_mapping_end_event_initialize(&ev);
		return emit(e, &ev);
	}
	if (json_is_array(v)) {
		yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
						     json_array_size(v) ? YAML_BLOCK_SEQUENCE_STYLE
									: YAML_FLOW_SEQUENCE_STYLE);
		if (!emit(e, &ev))
			return false;
		size_t i;
		json_t *m;
		json_array_foreach (v, i, m)
			if (!node(e, m))
				return false;
		yaml_sequence_end_event_initialize(&ev);
		return emit(e, &ev);
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		return scalar(e, s, false);
	}
	if (json_is_integer(v))
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(num, sizeof num, "%.17g", json_real_value(v));
	else
		snprintf(num, sizeof num, "%s",
			 json_is_true(v)    ? "true"
			 : json_is_false(v) ? "false"
					    : "null");
	return scalar(e, num, true);
}

int cli_yaml_dump(const json_t *v, FILE *f)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	if (!yaml_emitter_initialize(&e))
		return -1;
	yaml_emitter_set_output_file(&e, f);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	bool ok = emit(&e, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	ok = ok && emit(&e, &ev) && node(&e, v);
	yaml_document_end_event_initialize(&ev, 1);
	ok = ok && emit(&e, &ev);
	yaml_stream_end_event_initialize(&ev);
	ok = ok && emit(&e, &ev);
	yaml_emitter_delete(&e);
	return ok ? 0 : -1;
}
