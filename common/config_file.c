/*
 * config_file.c - a small line-oriented `key = value` parser (see
 * config_file.h).
 *
 * The input is split into lines; each line is scanned once, left to
 * right, by cfg_line(): blanks, key, '=', then a quoted or a plain value.
 * The first problem stops the parse with its line and column, since a
 * daemon should refuse a config it does not fully understand.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config_file.h"
#include "common/tc_error.h"
#include "common/util.h"

struct cfg_parser {
	const char *name;
	config_fn fn;
	void *ctx;
	char *err;
	size_t errlen;
	unsigned line;
	const char *s;		/* the current line */
	size_t n;		/* its length, without the line end */
	size_t i;		/* scan position in it */
	char key[CONFIG_MAX_LINE + 1];
	char value[CONFIG_MAX_LINE + 1];
};

/* Report a problem at byte @pos of the current line; returns TC_ERR_CONFIG. */
__attribute__((format(printf, 3, 4)))
static int cfg_error(struct cfg_parser *p, size_t pos, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "%s:%u:%zu: %s", p->name, p->line, pos + 1,
		 msg);
	return TC_ERR_CONFIG;
}

static bool cfg_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool cfg_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static bool cfg_control(char c)
{
	return ((unsigned char)c < 0x20 && c != '\t') || c == 0x7f;
}

static void cfg_skip_blanks(struct cfg_parser *p)
{
	while (p->i < p->n && cfg_blank(p->s[p->i]))
		p->i++;
}

/* Describe character @c for an error message. */
static const char *cfg_show(char c, char buf[8])
{
	if (cfg_control(c) || (unsigned char)c >= 0x80)
		snprintf(buf, 8, "0x%02x", (unsigned char)c);
	else
		snprintf(buf, 8, "'%c'", c);
	return buf;
}

static int cfg_key(struct cfg_parser *p)
{
	size_t start = p->i;
	char show[8];

	while (p->i < p->n && cfg_key_char(p->s[p->i]))
		p->i++;
	if (p->i == start)
		return cfg_error(p, p->i, "expected a key ([a-z0-9_-]), found %s",
				 cfg_show(p->s[p->i], show));
	if (p->i < p->n && !cfg_blank(p->s[p->i]) && p->s[p->i] != '=')
		return cfg_error(p, p->i, "invalid character %s in key",
				 cfg_show(p->s[p->i], show));
	memcpy(p->key, p->s + start, p->i - start);
	p->key[p->i - start] = '\0';
	return 0;
}

/* After a value only blanks and a comment may follow. */
static int cfg_line_end(struct cfg_parser *p)
{
	cfg_skip_blanks(p);
	if (p->i < p->n && p->s[p->i] != '#')
		return cfg_error(p, p->i, "unexpected text after quoted value");
	return 0;
}

static int cfg_value_quoted(struct cfg_parser *p)
{
	size_t open = p->i++, out = 0;
	char c, show[8];

	while (p->i < p->n && p->s[p->i] != '"') {
		c = p->s[p->i];
		if (c == '\\') {
			if (p->i + 1 >= p->n)
				return cfg_error(p, p->i, "backslash at end of line");
			c = p->s[p->i + 1];
			if (c != '"' && c != '\\')
				return cfg_error(p, p->i, "unknown escape \\%s "
						 "(only \\\" and \\\\)",
						 cfg_show(c, show));
			p->i++;
		} else if (cfg_control(c)) {
			return cfg_error(p, p->i, "control character %s in value",
					 cfg_show(c, show));
		}
		p->value[out++] = c;
		p->i++;
	}
	if (p->i >= p->n)
		return cfg_error(p, open, "unterminated quoted value");
	p->value[out] = '\0';
	p->i++;
	return cfg_line_end(p);
}

static int cfg_value_plain(struct cfg_parser *p)
{
	size_t start = p->i, end;
	char show[8];

	while (p->i < p->n && !(p->s[p->i] == '#' &&
				(p->i == start || cfg_blank(p->s[p->i - 1])))) {
		if (cfg_control(p->s[p->i]))
			return cfg_error(p, p->i, "control character %s in value",
					 cfg_show(p->s[p->i], show));
		p->i++;
	}
	end = p->i;
	while (end > start && cfg_blank(p->s[end - 1]))
		end--;
	memcpy(p->value, p->s + start, end - start);
	p->value[end - start] = '\0';
	return 0;
}

/* Hand a parsed setting to the program and place its verdict. */
static int cfg_deliver(struct cfg_parser *p, size_t key_pos, size_t val_pos)
{
	int rc = p->fn(p->ctx, p->key, p->value, p->line);

	if (rc >= 0)
		return 0;
	if (rc == TC_ERR_CONFIG_KEY)
		cfg_error(p, key_pos, "unknown key '%s'", p->key);
	else
		cfg_error(p, val_pos, "invalid value for '%s': %s", p->key,
			  tc_strerror(rc));
	return rc;
}

static int cfg_line(struct cfg_parser *p)
{
	size_t key_pos, val_pos;
	int rc;

	p->i = 0;
	cfg_skip_blanks(p);
	if (p->i == p->n || p->s[p->i] == '#')
		return 0;
	key_pos = p->i;
	rc = cfg_key(p);
	if (rc < 0)
		return rc;
	cfg_skip_blanks(p);
	if (p->i == p->n || p->s[p->i] != '=')
		return cfg_error(p, p->i, "expected '=' after key '%s'", p->key);
	p->i++;
	cfg_skip_blanks(p);
	val_pos = p->i;
	if (p->i < p->n && p->s[p->i] == '"')
		rc = cfg_value_quoted(p);
	else
		rc = cfg_value_plain(p);
	return rc < 0 ? rc : cfg_deliver(p, key_pos, val_pos);
}

static int cfg_run(struct cfg_parser *p, const char *buf, size_t len)
{
	const char *end = buf + len, *nl;
	int rc = 0;

	if (len > CONFIG_MAX_SIZE) {
		snprintf(p->err, p->errlen, "%s: larger than %u bytes", p->name,
			 CONFIG_MAX_SIZE);
		return TC_ERR_CONFIG;
	}
	while (buf < end && rc == 0) {
		nl = memchr(buf, '\n', (size_t)(end - buf));
		p->s = buf;
		p->n = (size_t)((nl ? nl : end) - buf);
		p->line++;
		buf += p->n + (nl ? 1 : 0);
		if (p->n && p->s[p->n - 1] == '\r')
			p->n--;
		if (p->n > CONFIG_MAX_LINE)
			return cfg_error(p, CONFIG_MAX_LINE,
					 "line longer than %u bytes",
					 CONFIG_MAX_LINE);
		rc = cfg_line(p);
	}
	return rc;
}

int config_parse_buf(const char *name, const char *buf, size_t len,
		     config_fn fn, void *ctx, char *err, size_t errlen)
{
	struct cfg_parser *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	p->name = name;
	p->fn = fn;
	p->ctx = ctx;
	p->err = err;
	p->errlen = errlen;
	rc = cfg_run(p, buf, len);
	free(p);
	return rc;
}

/*
 * cfg_read - read all of @path into a malloc'ed buffer, refusing files
 * larger than CONFIG_MAX_SIZE without reading them whole.
 */
static int cfg_read(const char *path, char **out, size_t *outlen,
		    char *err, size_t errlen)
{
	size_t len = 0, cap = CONFIG_MAX_SIZE + 1;
	char *buf = NULL;
	ssize_t n = 1;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	while (len < cap && n > 0) {
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n > 0)
			len += (size_t)n;
		else if (n < 0)
			n = 1;
	}
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		free(buf);
		return rc;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

int config_parse_file(const char *path, config_fn fn, void *ctx,
		      char *err, size_t errlen)
{
	size_t len;
	char *buf;
	int rc;

	rc = cfg_read(path, &buf, &len, err, errlen);
	if (rc < 0)
		return rc;
	rc = config_parse_buf(path, buf, len, fn, ctx, err, errlen);
	free(buf);
	return rc;
}

/* The callback behind config_load_*(): append a copy of each setting. */
static int cfg_collect(void *ctx, const char *key, const char *value,
		       unsigned line)
{
	struct config_list *l = ctx;
	struct config_entry *items, *e;

	/* capacity doubles at each power of two of count */
	if ((l->count & (l->count - 1)) == 0) {
		items = realloc(l->items, (l->count ? l->count * 2 : 1) *
					  sizeof(*items));
		if (!items)
			return -ENOMEM;
		l->items = items;
	}
	items = l->items;
	e = &items[l->count];
	e->key = strdup(key);
	e->value = strdup(value);
	e->line = line;
	l->count++;
	if (!e->key || !e->value)
		return -ENOMEM;
	return 0;
}

void config_list_free(struct config_list *l)
{
	size_t i;

	for (i = 0; i < l->count; i++) {
		free(l->items[i].key);
		free(l->items[i].value);
	}
	free(l->items);
	l->items = NULL;
	l->count = 0;
}

int config_load_buf(const char *name, const char *buf, size_t len,
		    struct config_list *out, char *err, size_t errlen)
{
	struct config_list l = { NULL, 0 };
	int rc = config_parse_buf(name, buf, len, cfg_collect, &l, err, errlen);

	if (rc < 0) {
		config_list_free(&l);
		return rc;
	}
	*out = l;
	return 0;
}

int config_load_file(const char *path, struct config_list *out,
		     char *err, size_t errlen)
{
	struct config_list l = { NULL, 0 };
	int rc = config_parse_file(path, cfg_collect, &l, err, errlen);

	if (rc < 0) {
		config_list_free(&l);
		return rc;
	}
	*out = l;
	return 0;
}

int config_parse_size(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long n;
	unsigned shift = 0;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v || *v == '-' || (*end && end[1]))
		return TC_ERR_CONFIG;
	if (*end)
		shift = *end == 'k' || *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 :
			*end == 'T' ? 40 : 64;
	if (shift == 64 || n == 0 || n > (UINT64_MAX >> shift))
		return TC_ERR_CONFIG;
	*out = (uint64_t)n << shift;
	return 0;
}

int config_parse_items(const char *v, size_t max, char ***items, size_t *n)
{
	char **a = NULL, **g;
	size_t k = 0, cap = 0, len;
	const char *p = v;
	int ret = 0;

	for (;; p += len + 1) {
		len = strcspn(p, ",");
		if (!len) {
			ret = TC_ERR_CONFIG;
			break;
		}
		if (k == max) {
			ret = TC_ERR_TOO_LONG;
			break;
		}
		g = util_grow(a, &cap, k, sizeof(*a), 8);
		if (g)
			a = g;
		if (!g || !(a[k] = strndup(p, len))) {
			ret = -ENOMEM;
			break;
		}
		k++;
		if (!p[len])
			break;
	}
	if (ret < 0) {
		config_items_free(a, k);
		return ret;
	}
	*items = a;
	*n = k;
	return 0;
}

void config_items_free(char **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(items[i]);
	free(items);
}
