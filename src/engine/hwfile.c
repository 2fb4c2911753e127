/* SPDX-License-Identifier: MIT */
/* hwfile.c - hardware and model description files (hwfile.h). */
#include "hwfile.h"
#include "knobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "device.h"
#include "model.h"
#include "text.h"
#include "units.h"

#ifndef SL_PKGDATADIR
#define SL_PKGDATADIR "/usr/local/share/shardlab"
#endif

#define MAX_DIRS 10
#define PATH_LEN 512
#define MAX_FILE_BYTES (1 << 20)
#define MAX_FILES 256

/* ---- reading one object, field by field ---- */

/* Where a field is: the file and the object path ("" at the top, "device",
 * "intra_node"), so a message reads "FILE: device.memory_bytes: ...". */
typedef struct rd {
	const char *file;
	const char *obj;
	sl_err *err;
} rd;

static int bad(const rd *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(const rd *r, const char *key, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return sl_fail(r->err, SL_EINVAL, "%s: %s%s%s: %s", r->file, r->obj, *r->obj ? "." : "",
	               key, what);
}

/* Every key of o must be one of keys (NULL-terminated), and every one of
 * them must be there. */
/* Every key of o is one of keys; all of them are there but the first
 * `optional` ones counted from the list's end. */
static int keys_known(const rd *r, const json_t *o, const char *const *keys, int optional)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
	{
		int known = 0;
		for (const char *const *p = keys; *p; p++)
			known |= strcmp(*p, k) == 0;
		if (!known) {
			char list[400] = "";
			size_t len = 0;
			for (const char *const *p = keys; *p && len < sizeof list - 1; p++)
				len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
				                        p == keys ? "" : ", ", *p);
			char safe[64], full[1024];
			sl_escape(k, safe, sizeof safe);
			/* The key itself is the field; the keys known there, when the
			 * line has room for them. */
			snprintf(full, sizeof full, "%s: %s%s%s: unknown key (known: %s)", r->file,
			         r->obj, *r->obj ? "." : "", safe, list);
			if (strlen(full) < sizeof r->err->msg)
				return sl_fail(r->err, SL_EINVAL, "%s", full);
			return sl_fail(r->err, SL_EINVAL,
			               "%s: %s%s%s: unknown key (see shardlab-hardware(5))",
			               r->file, r->obj, *r->obj ? "." : "", safe);
		}
	}
	int n = 0;
	while (keys[n])
		n++;
	for (int i = 0; i < n - optional; i++)
		if (!json_object_get(o, keys[i]))
			return bad(r, keys[i], "missing");
	return SL_OK;
}

static int keys_exact(const rd *r, const json_t *o, const char *const *keys)
{
	return keys_known(r, o, keys, 0);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* A number in [lo, hi]; null_ok: null reads as 0. */
static int get_num(const rd *r, const json_t *o, const char *key, double lo, double hi,
                   const char *range, int null_ok, double *out)
{
	json_t *v = json_object_get(o, key);
	if (null_ok && json_is_null(v)) {
		*out = 0;
		return SL_OK;
	}
	if (!json_is_number(v))
		return bad(r, key, "must be a number%s, not %s", null_ok ? " or null" : "",
		           type_name(v));
	double d = json_number_value(v);
	char num[40];
	snprintf(num, sizeof num, "%.17g", d);
	/* One rule for every figure: a subnormal passes a range that starts at
	 * 0, yet a rate or fraction that small turns every time into inf and
	 * every share into NaN (5e-324 as gemm_peak_fraction did).  So a figure
	 * is a normal finite number, or zero where its range holds zero. */
	if (!isfinite(d))
		return bad(r, key, "%s is not a finite number (%s)", num, range);
	if (d != 0 && !isnormal(d))
		return bad(r, key, "%s is subnormal: too close to zero to compute with (%s)", num,
		           range);
	if (!(d >= lo && d <= hi))
		return bad(r, key, "%s is out of range (%s)", num, range);
	*out = d == 0 ? 0 : d; /* -0 reads as 0: nothing divides by a negative zero */
	return SL_OK;
}

/* A whole number in [lo, hi] (written 8 or 8.0 alike). */
static int get_int(const rd *r, const json_t *o, const char *key, double lo, double hi,
                   const char *range, double *out)
{
	int rc = get_num(r, o, key, -INFINITY, INFINITY, range, 0, out);
	if (rc)
		return rc;
	if (*out != floor(*out)) {
		char num[40];
		snprintf(num, sizeof num, "%.17g", *out);
		return bad(r, key, "%s is not a whole number", num);
	}
	if (!(*out >= lo && *out <= hi)) {
		char num[40];
		snprintf(num, sizeof num, "%.17g", *out);
		return bad(r, key, "%s is out of range (%s)", num, range);
	}
	return SL_OK;
}

/* A string of 1 to max-1 bytes that text.h's rule lets reach a terminal;
 * name: only letters, digits, '.', '_' and '-', not starting with '.' or '-'. */
static int get_str(const rd *r, const json_t *o, const char *key, size_t max, int name,
                   const char **out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v))
		return bad(r, key, "must be a string, not %s", type_name(v));
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	char lim[24];
	snprintf(lim, sizeof lim, "%zu", max - 1);
	if (n == 0)
		return bad(r, key, "is empty");
	if (n >= max)
		return bad(r, key, "is longer than %s bytes", lim);
	unsigned cp;
	size_t at = sl_text_check(s, n, &cp);
	if (at < n)
		return bad(r, key, "holds %s U+%04X at byte %zu", sl_text_what(cp), cp, at + 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (name && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return bad(r, key, "may hold only letters, digits, '.', '_' and '-'");
	}
	if (name && (s[0] == '.' || s[0] == '-'))
		return bad(r, key, "may not start with '.' or '-'");
	*out = s;
	return SL_OK;
}

static int get_obj(const rd *r, const json_t *o, const char *key, const json_t **out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_object(v))
		return bad(r, key, "must be an object, not %s", type_name(v));
	*out = v;
	return SL_OK;
}

/* Read a whole file as JSON: a regular file of at most 1 MiB, no
 * duplicate keys, an object at the top. */
static json_t *read_json(const char *path, sl_err *err)
{
	char safe[PATH_LEN];
	sl_escape(path, safe, sizeof safe);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		sl_fail(err, SL_EINVAL, "%s: cannot open: %s", safe, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		sl_fail(err, SL_EINVAL, "%s: not a regular file", safe);
		return NULL;
	}
	if (st.st_size > MAX_FILE_BYTES) {
		close(fd);
		sl_fail(err, SL_EINVAL, "%s: larger than 1 MiB", safe);
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		sl_fail(err, SL_ENOMEM, "%s: out of memory", safe);
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	fclose(f);
	if (!j) {
		sl_fail(err, SL_EINVAL, "%s: line %d, column %d: %s", safe, je.line, je.column,
		        je.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		sl_fail(err, SL_EINVAL, "%s: (top level): must be an object, not %s", safe,
		        type_name(j));
		json_decref(j);
		return NULL;
	}
	return j;
}

/* ---- hardware ---- */

static const char *const hw_keys[] = {
    "name", "title", "source", "device", "devices_per_node", "intra_node", "inter_node", NULL};
static const char *const dev_keys[] = {
    "bf16_flop_per_s", "fp32_flop_per_s", "memory_bytes", "gemm_peak_fraction", "gemm_units",
    "gemm_tile_m", "gemm_tile_n", "gemm_k_half", "default_precision", "default_efficiency",
    /* optional: the last two */
    "attention_peak_fraction", "memory_bandwidth_fraction", NULL};
static const char *const link_keys[] = {"bandwidth_bytes_per_s", "latency_s", "achievable_fraction",
                                        NULL};

/* ---- the device figures that are options (knobs.h, SL_KF_HWFILE) ---- */

static const sl_knob *hw_knob(int i)
{
	for (int r = 0, n = 0; r < sl_knob_count(); r++)
		if ((sl_knobs()[r].flags & SL_KF_HWFILE) && n++ == i)
			return &sl_knobs()[r];
	return NULL;
}

/* A device figure's value in the file's JSON. */
static json_t *knob_json(const sl_preset *p, const sl_knob *k)
{
	sl_cluster_config c = {.dm = p->dm};
	const sl_knob_dest d = {.cluster = &c};
	double v = sl_knob_load(k, &d);
	return k->ctype == SL_KC_INT || k->ctype == SL_KC_U64 ? json_integer((json_int_t)v)
	                                                      : json_real(v);
}

/* The device keys known: the fixed ones, then the options'; the optional
 * ones last (*optional of them). */
static const char **device_keys(const char **keys, char (*names)[64], int cap, int *optional)
{
	int n = 0;
	while (dev_keys[n])
		keys[n] = dev_keys[n], n++;
	int fixed_optional = 2;
	const sl_knob *k;
	for (int i = 0; (k = hw_knob(i)) && i < cap && n + 1 < 64; i++) {
		sl_knob_json_key(k, names[i], sizeof names[i]);
		keys[n++] = names[i];
	}
	keys[n] = NULL;
	*optional = fixed_optional + (n - (int)(sizeof dev_keys / sizeof *dev_keys - 1));
	return keys;
}

/* A rate of 0 (the host's) is written null: measured at start-up. */
static json_t *rate_json(double r)
{
	return r > 0 ? json_real(r) : json_null();
}

static json_t *link_json(sl_link_spec s, double frac)
{
	json_t *o = json_object();
	json_object_set_new(o, "bandwidth_bytes_per_s", json_real(s.bandwidth));
	json_object_set_new(o, "latency_s", json_real(s.latency));
	json_object_set_new(o, "achievable_fraction", json_real(frac));
	return o;
}

json_t *sl_hw_to_json(const sl_preset *p)
{
	json_t *o = json_object(), *d = json_object();
	if (!o || !d) {
		json_decref(o);
		json_decref(d);
		return NULL;
	}
	json_object_set_new(o, "name", json_string(p->name));
	json_object_set_new(o, "title", json_string(p->title));
	json_object_set_new(o, "source", json_string(p->source));
	json_object_set_new(d, "bf16_flop_per_s", rate_json(p->flops));
	json_object_set_new(d, "fp32_flop_per_s", rate_json(p->flops_fp32));
	json_object_set_new(d, "memory_bytes", json_integer((json_int_t)p->memory));
	json_object_set_new(d, "memory_bandwidth_bytes_per_s",
	                    knob_json(p, sl_knob_of(SL_OPT_MEMORY_BW)));
	json_object_set_new(d, "memory_bandwidth_fraction", json_real(p->dm.mem_frac));
	json_object_set_new(d, "gemm_peak_fraction", json_real(p->dm.gemm_frac));
	json_object_set_new(d, "gemm_units", json_integer(p->dm.units));
	json_object_set_new(d, "gemm_tile_m", json_integer(p->dm.tile_m));
	json_object_set_new(d, "gemm_tile_n", json_integer(p->dm.tile_n));
	json_object_set_new(d, "gemm_k_half", json_real(p->dm.k_half));
	json_object_set_new(d, "kernel_launch_s", knob_json(p, sl_knob_of(SL_OPT_KERNEL_LAUNCH)));
	json_object_set_new(d, "attention_peak_fraction", json_real(p->dm.attn_frac));
	json_object_set_new(d, "default_precision", json_string(sl_precision_name(p->precision)));
	json_object_set_new(d, "default_efficiency",
	                    json_string(sl_efficiency_name(p->efficiency)));
	/* The options' device figures not written above, in the table's order. */
	const sl_knob *k;
	for (int i = 0; (k = hw_knob(i)); i++) {
		char key[64];
		sl_knob_json_key(k, key, sizeof key);
		if (!json_object_get(d, key))
			json_object_set_new(d, key, knob_json(p, k));
	}
	json_object_set_new(o, "device", d);
	json_object_set_new(o, "devices_per_node", json_integer(p->devices_per_node));
	json_object_set_new(o, "intra_node", link_json(p->intra, p->intra_frac));
	json_object_set_new(o, "inter_node", link_json(p->inter, p->inter_frac));
	return o;
}

static int link_from(const rd *top, const json_t *o, const char *key, sl_link_spec *out,
                     double *frac)
{
	const json_t *l = NULL;
	int rc = get_obj(top, o, key, &l);
	if (rc)
		return rc;
	rd r = {top->file, key, top->err};
	double bw, lat;
	/* The options' limits for a link (knobs.c). */
	const sl_knob *kb = sl_knob_of(SL_OPT_BANDWIDTH), *kl = sl_knob_of(SL_OPT_LATENCY);
	if ((rc = keys_exact(&r, l, link_keys)) ||
	    (rc = get_num(&r, l, "bandwidth_bytes_per_s", kb->lo, kb->hi, kb->range, 0, &bw)) ||
	    (rc = get_num(&r, l, "latency_s", kl->lo, kl->hi, kl->range, 0, &lat)) ||
	    (rc = get_num(&r, l, "achievable_fraction", 0, 1, "0 (the line rate) to 1", 0, frac)))
		return rc;
	out->bandwidth = bw;
	out->latency = lat;
	return SL_OK;
}

void sl_hw_free_strings(sl_preset *p)
{
	free((char *)p->name);
	free((char *)p->title);
	free((char *)p->source);
	p->name = p->title = p->source = NULL;
}

int sl_hw_from_json(const json_t *j, const char *file, sl_preset *out, sl_err *err)
{
	char safe[PATH_LEN];
	sl_escape(file, safe, sizeof safe);
	rd r = {safe, "", err};
	memset(out, 0, sizeof *out);
	const char *name, *title, *source, *ps, *es;
	const json_t *d = NULL;
	double v[13];
	int rc;
	if (!json_is_object(j))
		return sl_fail(err, SL_EINVAL, "%s: (top level): must be an object", safe);
	if ((rc = keys_exact(&r, j, hw_keys)) || (rc = get_str(&r, j, "name", 32, 1, &name)) ||
	    (rc = get_str(&r, j, "title", 256, 0, &title)) ||
	    (rc = get_str(&r, j, "source", 2048, 0, &source)) ||
	    (rc = get_obj(&r, j, "device", &d)))
		return rc;
	rd rdv = {safe, "device", err};
	v[11] = v[12] = 0;
	/* The options' limits for a device (knobs.c). */
	const sl_knob *kf = sl_knob_of(SL_OPT_FLOPS), *km = sl_knob_of(SL_OPT_MEMORY);
	char frange[80];
	snprintf(frange, sizeof frange, "%s, or null: measured", kf->range);
	char knob_names[16][64];
	const char *known_keys[64];
	int optional;
	const char **known = device_keys(known_keys, knob_names, 16, &optional);
	if ((rc = keys_known(&rdv, d, known, optional)) ||
	    (json_object_get(d, "attention_peak_fraction") &&
	     (rc = get_num(&rdv, d, "attention_peak_fraction", 0, 1, "0 (the GEMM fraction) to 1",
	                   0, &v[11]))) ||
	    (json_object_get(d, "memory_bandwidth_fraction") &&
	     (rc = get_num(&rdv, d, "memory_bandwidth_fraction", 0, 1, "0 (all of it) to 1", 0,
	                   &v[12]))) ||
	    (rc = get_num(&rdv, d, "bf16_flop_per_s", kf->lo, kf->hi, frange, 1, &v[0])) ||
	    (rc = get_num(&rdv, d, "fp32_flop_per_s", kf->lo, kf->hi, frange, 1, &v[1])) ||
	    (rc = get_int(&rdv, d, "memory_bytes", km->lo, km->hi, km->range, &v[2])) ||
	    (rc =
	         get_num(&rdv, d, "gemm_peak_fraction", 0, 1, "0 (not modelled) to 1", 0, &v[4])) ||
	    (rc = get_int(&rdv, d, "gemm_units", 0, 1e6, "0 (not modelled) to 1e6", &v[5])) ||
	    (rc = get_int(&rdv, d, "gemm_tile_m", 0, 65536, "0 (not modelled) to 65536", &v[6])) ||
	    (rc = get_int(&rdv, d, "gemm_tile_n", 0, 65536, "0 (not modelled) to 65536", &v[7])) ||
	    (rc = get_num(&rdv, d, "gemm_k_half", 0, 1e9, "0 (not modelled) to 1e9", 0, &v[8])) ||
	    (rc = get_str(&rdv, d, "default_precision", 16, 0, &ps)) ||
	    (rc = get_str(&rdv, d, "default_efficiency", 16, 0, &es)))
		return rc;
	if (sl_precision_parse(ps, &out->precision))
		return bad(&rdv, "default_precision", "must be \"bf16\" or \"fp32\"");
	if (sl_efficiency_parse(es, &out->efficiency))
		return bad(&rdv, "default_efficiency", "must be \"realistic\" or \"ideal\"");
	if ((rc = get_int(&r, j, "devices_per_node", 0, SL_MAX_DEVICES, "0 (any) to 1024",
	                  &v[10])) ||
	    (rc = link_from(&r, j, "intra_node", &out->intra, &out->intra_frac)) ||
	    (rc = link_from(&r, j, "inter_node", &out->inter, &out->inter_frac)))
		return rc;
	out->flops = v[0];
	out->flops_fp32 = v[1];
	out->memory = v[2];
	out->dm = (sl_device_model){0,    v[4], (int)v[5], (int)v[6], (int)v[7],
	                            v[8], 0,    v[11],     v[12],     SL_OVERLAP_SLOWDOWN};
	/* The device figures that are options, as their rows parse them. */
	sl_cluster_config dc = {.dm = out->dm};
	const sl_knob_dest dd = {.cluster = &dc};
	const sl_knob *hk;
	for (int i = 0; i < 16 && (hk = hw_knob(i)); i++) {
		double x;
		if (!json_object_get(d, knob_names[i]))
			continue; /* 0: not modelled */
		if ((rc = get_num(&rdv, d, knob_names[i], hk->lo, hk->hi, hk->range, 0, &x)))
			return rc;
		sl_knob_store(hk, &(sl_knob_val){.d = x}, &dd);
	}
	out->dm = dc.dm;
	out->devices_per_node = (int)v[10];
	out->name = strdup(name);
	out->title = strdup(title);
	out->source = strdup(source);
	if (!out->name || !out->title || !out->source) {
		sl_hw_free_strings(out);
		return sl_fail(err, SL_ENOMEM, "%s: out of memory", safe);
	}
	return SL_OK;
}

/* Loaded presets stay for the process: callers hold plain pointers, as to
 * the built-in table. */
struct loaded {
	struct loaded *next;
	char path[PATH_LEN];
	sl_preset p;
};
static struct loaded *loaded;
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;

const sl_preset *sl_hw_load(const char *path, sl_err *err)
{
	pthread_mutex_lock(&loaded_lock);
	for (struct loaded *l = loaded; l; l = l->next)
		if (strcmp(l->path, path) == 0) {
			pthread_mutex_unlock(&loaded_lock);
			return &l->p;
		}
	pthread_mutex_unlock(&loaded_lock);
	json_t *j = read_json(path, err);
	if (!j)
		return NULL;
	struct loaded *l = calloc(1, sizeof *l);
	if (!l) {
		json_decref(j);
		sl_fail(err, SL_ENOMEM, "out of memory");
		return NULL;
	}
	int rc = sl_hw_from_json(j, path, &l->p, err);
	json_decref(j);
	if (rc) {
		free(l);
		return NULL;
	}
	snprintf(l->path, sizeof l->path, "%s", path);
	pthread_mutex_lock(&loaded_lock);
	l->next = loaded;
	loaded = l;
	pthread_mutex_unlock(&loaded_lock);
	return &l->p;
}

/* ---- where files are ---- */

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* The search path of kind ("hardware", "models"), in order. */
static int dirs(const char *kind, const char *env_name, char d[MAX_DIRS][PATH_LEN])
{
	int n = 0;
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	/* XDG: a relative XDG_CONFIG_HOME is invalid and ignored. */
	if (xdg && xdg[0] == '/')
		snprintf(d[n++], PATH_LEN, "%s/shardlab/%s", xdg, kind);
	else if (home && home[0] == '/')
		snprintf(d[n++], PATH_LEN, "%s/.config/shardlab/%s", home, kind);
	const char *env = getenv(env_name);
	if (env && *env) {
		while (env && n < MAX_DIRS) {
			const char *c = strchr(env, ':');
			size_t len = c ? (size_t)(c - env) : strlen(env);
			if (len > 0 && len < PATH_LEN) {
				memcpy(d[n], env, len);
				d[n++][len] = 0;
			}
			env = c ? c + 1 : NULL;
		}
		return n;
	}
	/* A program in its build tree sees the source tree's files, not an
	 * older installed copy (as lessons are found, src/lesson/catalog.c). */
	char exe[400];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(d[n], PATH_LEN, "%s/data/%s", exe, kind);
			if (is_dir(d[n]))
				n++;
			snprintf(d[n], PATH_LEN, "%s/../data/%s", exe, kind);
			if (is_dir(d[n]))
				n++;
		}
	}
	snprintf(d[n++], PATH_LEN, "%s/%s", SL_PKGDATADIR, kind);
	return n;
}

/* The first dir/NAME.json that exists, in path; 0 if none. */
static int find_file(const char *kind, const char *env, const char *name, char *path)
{
	char d[MAX_DIRS][PATH_LEN];
	int n = dirs(kind, env, d);
	for (int i = 0; i < n; i++) {
		if (snprintf(path, PATH_LEN, "%s/%s.json", d[i], name) >= PATH_LEN)
			continue;
		if (exists(path))
			return 1;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names (without .json) of every file of kind, directory by directory,
 * each directory's sorted, without repeats; *out allocated. */
static int all_names(const char *kind, const char *env, char ***out)
{
	char d[MAX_DIRS][PATH_LEN];
	int nd = dirs(kind, env, d), n = 0;
	char **names = calloc(MAX_FILES, sizeof *names);
	for (int i = 0; names && i < nd; i++) {
		DIR *dir = opendir(d[i]);
		if (!dir)
			continue;
		int first = n;
		struct dirent *e;
		while ((e = readdir(dir)) && n < MAX_FILES) {
			size_t l = strlen(e->d_name);
			if (l <= 5 || l - 5 >= 32 || e->d_name[0] == '.' ||
			    strcmp(e->d_name + l - 5, ".json") != 0)
				continue;
			int seen = 0;
			for (int k = 0; k < n && !seen; k++)
				seen = strncmp(names[k], e->d_name, l - 5) == 0 && !names[k][l - 5];
			if (!seen && (names[n] = strndup(e->d_name, l - 5)))
				n++;
		}
		closedir(dir);
		qsort(names + first, (size_t)(n - first), sizeof *names, cmp_str);
	}
	*out = names;
	return n;
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= 32 || s[0] == '.' || s[0] == '-')
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* The file's name must be the file's: NAME.json holds "name": "NAME". */
static int name_matches(const char *path, const char *name, const char *got, sl_err *err)
{
	if (strcmp(name, got) == 0)
		return SL_OK;
	char safe[PATH_LEN];
	sl_escape(path, safe, sizeof safe);
	return sl_fail(err, SL_EINVAL,
	               "%s: name: \"%s\" is not the file's name (%s.json holds \"%s\")", safe, got,
	               name, name);
}

static int known_list(const char *kind, const char *env, char *buf, size_t n)
{
	char **names;
	int k = all_names(kind, env, &names);
	size_t len = 0;
	buf[0] = 0;
	if (strcmp(kind, "hardware") == 0)
		for (const sl_preset *p = sl_presets(); p->name && len < n; p++)
			len +=
			    (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", p->name);
	for (int i = 0; i < k && len < n; i++) {
		if (strcmp(kind, "hardware") == 0 && sl_preset_find(names[i]))
			continue;
		len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", names[i]);
	}
	free_names(names, k);
	return SL_OK;
}

const sl_preset *sl_hw_find(const char *name, const char **from, sl_err *err)
{
	static const char empty[] = "";
	char path[PATH_LEN];
	if (from)
		*from = empty;
	if (valid_name(name) && find_file("hardware", "SHARDLAB_HARDWARE_PATH", name, path)) {
		const sl_preset *p = sl_hw_load(path, err);
		if (!p || name_matches(path, name, p->name, err))
			return NULL;
		if (from) {
			pthread_mutex_lock(&loaded_lock);
			for (struct loaded *l = loaded; l; l = l->next)
				if (&l->p == p)
					*from = l->path;
			pthread_mutex_unlock(&loaded_lock);
		}
		return p;
	}
	const sl_preset *p = sl_preset_find(name);
	if (p)
		return p;
	char known[200], safe[64], near[64];
	if (from)
		*from = NULL; /* no such name */
	known_list("hardware", "SHARDLAB_HARDWARE_PATH", known, sizeof known);
	sl_escape(name, safe, sizeof safe);
	if (sl_closest_in(name, known, near, sizeof near))
		sl_fail(err, SL_EINVAL, "unknown preset '%s': did you mean '%s'? (one of: %s)",
		        safe, near, known);
	else
		sl_fail(err, SL_EINVAL, "unknown preset '%s' (one of: %s)", safe, known);
	return NULL;
}

/* A file that cannot be read: kept in *bad (if bad), so the list goes on. */
static int add_bad(sl_err **bad, int *nbad, const sl_err *e)
{
	if (!bad)
		return SL_OK;
	sl_err *b = realloc(*bad, (size_t)(*nbad + 1) * sizeof *b);
	if (!b)
		return SL_ENOMEM;
	b[(*nbad)++] = *e;
	*bad = b;
	return SL_OK;
}

int sl_hw_list(const sl_preset ***out, int *n, sl_err **bad, int *nbad, sl_err *err)
{
	char **names;
	int k = all_names("hardware", "SHARDLAB_HARDWARE_PATH", &names);
	int nb = 0;
	for (const sl_preset *p = sl_presets(); p->name; p++)
		nb++;
	const sl_preset **list = calloc((size_t)(nb + k + 1), sizeof *list);
	int m = 0, rc = SL_OK;
	if (bad) {
		*bad = NULL;
		*nbad = 0;
	}
	if (!list || !names) {
		rc = sl_fail(err, SL_ENOMEM, "out of memory");
		goto done;
	}
	/* The built-in names first, then the files' own; one bad file (a
	 * directory, a FIFO, bad JSON) is left out and named, not the end of
	 * the list: it hides no other preset. */
	for (int i = -nb; i < k && !rc; i++) {
		const char *name = i < 0 ? sl_presets()[nb + i].name : names[i];
		if (i >= 0 && (sl_preset_find(name) || !valid_name(name)))
			continue;
		sl_err e = {0};
		if ((list[m] = sl_hw_find(name, NULL, &e)))
			m++;
		else if (e.code == SL_ENOMEM || add_bad(bad, nbad, &e))
			rc = sl_fail(err, SL_ENOMEM, "out of memory");
	}
done:
	free_names(names, k);
	if (rc) {
		free(list);
		list = NULL;
		m = 0;
		if (bad) {
			free(*bad);
			*bad = NULL;
			*nbad = 0;
		}
	}
	*out = list;
	*n = m;
	return rc;
}

/* ---- models ---- */

/* kv_heads, ffn_kind, norm, vocab, untie_embeddings and
 * position_embedding may be left out: 0 (as many as the heads), "gelu",
 * "none", 0 (no embeddings), false and "learned". */
static const char *const model_keys[] = {"name",
                                         "title",
                                         "source",
                                         "layers",
                                         "hidden",
                                         "ffn",
                                         "heads",
                                         "seq",
                                         "batch",
                                         "kv_heads",
                                         "ffn_kind",
                                         "norm",
                                         "vocab",
                                         "untie_embeddings",
                                         "position_embedding",
                                         NULL};

int sl_model_file_from_json(const json_t *j, const char *file, sl_model_file *out, sl_err *err)
{
	char safe[PATH_LEN];
	sl_escape(file, safe, sizeof safe);
	rd r = {safe, "", err};
	memset(out, 0, sizeof *out);
	const char *name, *title, *source;
	double v[7] = {0};
	int rc;
	if (!json_is_object(j))
		return sl_fail(err, SL_EINVAL, "%s: (top level): must be an object", safe);
	/* The limits of --layers ... --batch (model.c). */
	if ((rc = keys_known(&r, j, model_keys, 6)) ||
	    (rc = get_str(&r, j, "name", 32, 1, &name)) ||
	    (rc = get_str(&r, j, "title", sizeof out->title, 0, &title)) ||
	    (rc = get_str(&r, j, "source", sizeof out->source, 0, &source)) ||
	    (rc = get_int(&r, j, "layers", 1, SL_MODEL_MAX_LAYERS, "1 to 4096", &v[0])) ||
	    (rc = get_int(&r, j, "hidden", 1, SL_MODEL_MAX_DIM, "1 to 65536", &v[1])) ||
	    (rc = get_int(&r, j, "ffn", 1, SL_MODEL_MAX_FFN, "1 to 1048576", &v[2])) ||
	    (rc = get_int(&r, j, "heads", 0, SL_MODEL_MAX_DIM, "0 to 65536", &v[3])) ||
	    (rc = get_int(&r, j, "seq", 1, SL_MODEL_MAX_SEQ, "1 to 1048576", &v[4])) ||
	    (rc = get_int(&r, j, "batch", 1, SL_MODEL_MAX_BATCH, "1 to 1048576", &v[5])))
		return rc;
	if (v[3] > 0 && fmod(v[1], v[3]) != 0) {
		char a[24], b[24];
		snprintf(a, sizeof a, "%.0f", v[3]);
		snprintf(b, sizeof b, "%.0f", v[1]);
		return bad(&r, "heads", "%s heads do not divide hidden %s", a, b);
	}
	if (json_object_get(j, "kv_heads")) {
		if ((rc = get_int(&r, j, "kv_heads", 0, SL_MODEL_MAX_DIM, "0 to 65536", &v[6])))
			return rc;
		if (v[6] > 0 && (v[3] == 0 || v[6] > v[3] || fmod(v[3], v[6]) != 0)) {
			char a[24], b[24];
			snprintf(a, sizeof a, "%.0f", v[6]);
			snprintf(b, sizeof b, "%.0f", v[3]);
			return bad(&r, "kv_heads", "%s key/value heads do not group %s heads", a,
			           b);
		}
	}
	out->ffn_kind = SL_FFN_GELU;
	if (json_object_get(j, "ffn_kind")) {
		const char *kind;
		if ((rc = get_str(&r, j, "ffn_kind", 16, 1, &kind)))
			return rc;
		if (sl_ffn_kind_parse(kind, &out->ffn_kind))
			return bad(&r, "ffn_kind", "must be \"gelu\" or \"swiglu\"");
	}
	out->norm = SL_NORM_NONE;
	if (json_object_get(j, "norm")) {
		const char *norm;
		if ((rc = get_str(&r, j, "norm", 16, 1, &norm)))
			return rc;
		if (sl_norm_parse(norm, &out->norm))
			return bad(&r, "norm", "must be \"none\", \"layernorm\" or \"rmsnorm\"");
	}
	double vocab = 0;
	if (json_object_get(j, "vocab") &&
	    (rc = get_int(&r, j, "vocab", 0, SL_MODEL_MAX_VOCAB, "0 to 4194304", &vocab)))
		return rc;
	json_t *untie = json_object_get(j, "untie_embeddings");
	if (untie && !json_is_boolean(untie))
		return bad(&r, "untie_embeddings", "must be true or false");
	out->untie = untie && json_is_true(untie);
	out->pos_emb = SL_POS_LEARNED;
	if (json_object_get(j, "position_embedding")) {
		const char *pos;
		if ((rc = get_str(&r, j, "position_embedding", 16, 1, &pos)))
			return rc;
		if (sl_pos_parse(pos, &out->pos_emb))
			return bad(&r, "position_embedding", "must be \"learned\" or \"rope\"");
	}
	out->vocab = (int)vocab;
	snprintf(out->name, sizeof out->name, "%s", name);
	snprintf(out->title, sizeof out->title, "%s", title);
	snprintf(out->source, sizeof out->source, "%s", source);
	out->layers = (int)v[0];
	out->hidden = (int)v[1];
	out->ffn = (int)v[2];
	out->heads = (int)v[3];
	out->seq = (int)v[4];
	out->batch = (int)v[5];
	out->kv_heads = (int)v[6];
	return SL_OK;
}

json_t *sl_model_file_to_json(const sl_model_file *m)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(m->name));
	json_object_set_new(o, "title", json_string(m->title));
	json_object_set_new(o, "source", json_string(m->source));
	json_object_set_new(o, "layers", json_integer(m->layers));
	json_object_set_new(o, "hidden", json_integer(m->hidden));
	json_object_set_new(o, "ffn", json_integer(m->ffn));
	json_object_set_new(o, "heads", json_integer(m->heads));
	json_object_set_new(o, "seq", json_integer(m->seq));
	json_object_set_new(o, "batch", json_integer(m->batch));
	json_object_set_new(o, "kv_heads", json_integer(m->kv_heads));
	json_object_set_new(o, "ffn_kind", json_string(sl_ffn_kind_name(m->ffn_kind)));
	json_object_set_new(o, "norm", json_string(sl_norm_name(m->norm)));
	json_object_set_new(o, "vocab", json_integer(m->vocab));
	json_object_set_new(o, "untie_embeddings", json_boolean(m->untie));
	json_object_set_new(o, "position_embedding", json_string(sl_pos_name(m->pos_emb)));
	return o;
}

int sl_model_file_load(const char *path, sl_model_file *out, sl_err *err)
{
	json_t *j = read_json(path, err);
	if (!j)
		return err ? err->code : SL_EINVAL;
	int rc = sl_model_file_from_json(j, path, out, err);
	json_decref(j);
	return rc;
}

int sl_model_file_find(const char *s, sl_model_file *out, sl_err *err)
{
	size_t n = strlen(s);
	struct stat st;
	if (strchr(s, '/') || (n > 5 && strcmp(s + n - 5, ".json") == 0) ||
	    (stat(s, &st) == 0 && S_ISREG(st.st_mode)))
		return sl_model_file_load(s, out, err);
	char path[PATH_LEN];
	if (valid_name(s) && find_file("models", "SHARDLAB_MODEL_PATH", s, path)) {
		int rc = sl_model_file_load(path, out, err);
		return rc ? rc : name_matches(path, s, out->name, err);
	}
	char known[200], safe[64], near[64];
	known_list("models", "SHARDLAB_MODEL_PATH", known, sizeof known);
	sl_escape(s, safe, sizeof safe);
	if (sl_closest_in(s, known, near, sizeof near))
		return sl_fail(err, SL_EINVAL,
		               "unknown model '%s': did you mean '%s'? (one of: %s)", safe, near,
		               known);
	return sl_fail(err, SL_EINVAL, "unknown model '%s' (one of: %s)", safe,
	               known[0] ? known : "none installed");
}

/* ---- shared ---- */

char *sl_json_dump_exact(const json_t *j)
{
	for (int prec = 15; prec <= 17; prec++) {
		char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(prec));
		if (!s)
			return NULL;
		json_t *back = json_loads(s, 0, NULL);
		int same = back && json_equal(back, (json_t *)j);
		json_decref(back);
		if (same || prec == 17) {
			size_t n = strlen(s);
			char *t = realloc(s, n + 2);
			if (!t) {
				free(s);
				return NULL;
			}
			t[n] = '\n';
			t[n + 1] = 0;
			return t;
		}
		free(s);
	}
	return NULL;
}

void sl_model_json_kinds(json_t *o, const sl_model_spec *m)
{
	if (!o)
		return;
	json_object_set_new(o, "kv_heads", json_integer(sl_model_kv_heads(m)));
	json_object_set_new(o, "ffn_kind", json_string(sl_ffn_kind_name(m->ffn_kind)));
	json_object_set_new(o, "norm", json_string(sl_norm_name(m->norm)));
	json_object_set_new(o, "vocab", json_integer(m->vocab));
	json_object_set_new(o, "untie_embeddings", json_boolean(m->untie));
	json_object_set_new(o, "position_embedding", json_string(sl_pos_name(m->pos_emb)));
	json_object_set_new(o, "attention_mask", json_string(sl_mask_name(m->mask)));
	json_object_set_new(o, "attention_dropout_fraction",
	                    json_real(sl_float_decimal(m->attn_dropout)));
	json_object_set_new(o, "hidden_dropout_fraction",
	                    json_real(sl_float_decimal(m->hidden_dropout)));
	json_object_set_new(o, "grad_accumulation", json_string(sl_grad_accum_name(m->grad_accum)));
}
