/* SPDX-License-Identifier: MIT */
/* jsonkeys.c - the one naming scheme of every --format=json report.
 *
 * Reports build their objects with the names their code grew up with; the
 * printer (sl_report_json_print) passes every object through here, so the
 * scheme lives in one table: snake_case, units as suffixes (_s, _bytes,
 * _flop, _flop_per_s, _bytes_per_s, _per_s), shardlab_version and
 * format_version first.  A new field that already follows the scheme needs
 * no line here; tests/test_json.c checks every key of every command against
 * the rules the man page's OUTPUT section states.  Renaming in one table
 * keeps the commands' code unchanged, so a field added to one of them
 * merges without touching this file. */
#include "config.h"

#include <string.h>

#include "report.h"

/* Old name -> the scheme's, wherever it appears. */
static const struct {
	const char *from, *to;
} renames[] = {
	{"bandwidth_Bps", "bandwidth_bytes_per_s"},
	{"inter_bandwidth_Bps", "inter_bandwidth_bytes_per_s"},
	{"algbw_Bps", "algbw_bytes_per_s"},
	{"busbw_Bps", "busbw_bytes_per_s"},
	{"bytes_sent", "sent_bytes"},
	{"bytes_received", "received_bytes"},
	{"bytes_moved", "moved_bytes"},
	{"bytes_sent_max", "max_sent_bytes"},
	{"mem_peak_bytes", "memory_peak_bytes"},
	{"flops_per_device", "device_flop_per_s"},           /* a rate */
	{"model_flops_per_device", "device_model_flop_per_s"}, /* a rate */
	{"flops", "flop"},                                   /* a count */
	{"flops_per_step", "step_flop"},
	{"model_flops_per_step", "step_model_flop"},
	{"step_s", "step_time_s"},
	{"comm_share", "comm_fraction"},
};

/* Keys renamed only inside one kind of object: coll's rows call the buffer
 * "bytes" and its emulated time "time_s". */
static const char *rename_key(const char *k, int coll_row)
{
	if (coll_row && strcmp(k, "bytes") == 0)
		return "size_bytes";
	if (coll_row && strcmp(k, "time_s") == 0)
		return "emulated_time_s";
	for (size_t i = 0; i < sizeof renames / sizeof *renames; i++)
		if (strcmp(k, renames[i].from) == 0)
			return renames[i].to;
	return k;
}

/* A coll row (or coll's top level, which repeats the first row): it has
 * algbw_Bps. */
static int is_coll_row(json_t *o)
{
	return json_object_get(o, "algbw_Bps") != NULL;
}

/* A copy of j under the scheme's names (steals j); NULL if out of memory. */
static json_t *scheme(json_t *j)
{
	if (json_is_array(j)) {
		json_t *a = json_array();
		size_t i;
		json_t *v;
		json_array_foreach(j, i, v)
		{
			json_t *c = scheme(json_incref(v));
			if (!a || !c || json_array_append_new(a, c)) {
				json_decref(a);
				json_decref(j);
				return NULL;
			}
		}
		json_decref(j);
		return a;
	}
	if (!json_is_object(j))
		return j;
	json_t *o = json_object();
	int row = is_coll_row(j);
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v)
	{
		/* ckpt inspect's manifest is the checkpoint's file format, with
		 * its own version: as it is on disk. */
		json_t *c = strcmp(k, "manifest") == 0 ? json_incref(v) : scheme(json_incref(v));
		if (!o || !c || json_object_set_new(o, rename_key(k, row), c)) {
			json_decref(o);
			json_decref(j);
			return NULL;
		}
	}
	json_decref(j);
	return o;
}

json_t *sl_report_json_scheme(json_t *j)
{
	if (!j)
		return NULL;
	json_t *body = json_is_object(j) ? scheme(j) : j;
	json_t *o = json_object();
	if (!body || !o) {
		json_decref(body);
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "shardlab_version", json_string(PACKAGE_VERSION));
	json_object_set_new(o, "format_version", json_integer(SL_JSON_FORMAT_VERSION));
	if (json_object_update(o, body)) {
		json_decref(body);
		json_decref(o);
		return NULL;
	}
	json_decref(body);
	return o;
}
