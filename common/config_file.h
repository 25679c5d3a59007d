/*
 * config_file.h - configuration files for the daemons and tools (`-C FILE`).
 *
 * A file holds the same settings as the program's long options, one per
 * line:
 *
 *   # a comment
 *   connect = collector.example:7000
 *   filter  = "sched_switch where prev_comm == \"bash\"   # not a comment"
 *   filter  = irq:*                # repeated keys are kept, in order
 *
 * Keys are [a-z0-9_-]+. A value runs to the end of the line, or to a `#`
 * that starts it or follows whitespace; surrounding blanks are dropped. A
 * value in double quotes keeps everything inside, `#` and blanks included;
 * the only escapes are \" and \\. Control characters other than tab are
 * refused. Lines may end in \n or \r\n.
 *
 * The parser knows no keys: each program validates its own, in file
 * order, through a callback or from the returned list. Errors read
 * "FILE:LINE:COL: message" (1-based byte column).
 */
#ifndef TC_COMMON_CONFIG_FILE_H
#define TC_COMMON_CONFIG_FILE_H

#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_LINE	4096		/* bytes per line, without newline */
#define CONFIG_MAX_SIZE	(1u << 20)	/* bytes per file */

/*
 * config_fn - called once per setting, in file order.
 * @key and @value are NUL-terminated and valid only during the call.
 *
 * Return: 0 to go on; a negative code stops parsing and is returned by the
 * parser: TC_ERR_CONFIG_KEY for a key the program does not know (reported
 * at the key's column), anything else for a bad value (reported at the
 * value's column with tc_strerror() of the code).
 */
typedef int (*config_fn)(void *ctx, const char *key, const char *value,
			 unsigned line);

struct config_entry {
	char *key;
	char *value;
	unsigned line;
};

struct config_list {
	struct config_entry *items;
	size_t count;
};

/*
 * config_parse_buf - parse @len bytes of @buf, calling @fn for each setting.
 * @name: how errors name the input (normally the file name).
 * @err: receives "NAME:LINE:COL: message" on failure.
 *
 * Settings before a syntax error have already been passed to @fn.
 *
 * Return: 0; TC_ERR_CONFIG for a syntax error, a line longer than
 * CONFIG_MAX_LINE or an input larger than CONFIG_MAX_SIZE; -ENOMEM; or the
 * negative code @fn returned.
 */
int config_parse_buf(const char *name, const char *buf, size_t len,
		     config_fn fn, void *ctx, char *err, size_t errlen);

/*
 * config_parse_file - read @path and parse it as config_parse_buf() does.
 *
 * Return: as config_parse_buf(), plus -errno when @path cannot be read
 * (@err then says "PATH: reason").
 */
int config_parse_file(const char *path, config_fn fn, void *ctx,
		      char *err, size_t errlen);

/*
 * config_load_buf / config_load_file - parse into an ordered list instead
 * of calling back. On success *@out owns copies of all keys and values;
 * release them with config_list_free(). *@out is written only on success.
 *
 * Return: as config_parse_buf() / config_parse_file().
 */
int config_load_buf(const char *name, const char *buf, size_t len,
		    struct config_list *out, char *err, size_t errlen);
int config_load_file(const char *path, struct config_list *out,
		     char *err, size_t errlen);

/* config_list_free - release what config_load_*() returned; @l is emptied. */
void config_list_free(struct config_list *l);

/*
 * config_parse_size - a size value: a whole number of bytes with an
 * optional k/K, M, G or T suffix (powers of 1024): "1048576", "64k",
 * "500M", "10G". 0 and anything that does not fit 64 bits are refused.
 *
 * Return: 0 and *@out; TC_ERR_CONFIG.
 */
int config_parse_size(const char *v, uint64_t *out);

/*
 * config_parse_items - a list value: items separated by commas, each of
 * at least one character (blanks are kept), at most @max of them:
 * "g1,g2,g3".
 *
 * Return: 0 and *@items, *@n copies of the items (free them with
 * config_items_free()); TC_ERR_CONFIG for an empty item (",,", a comma
 * at either end, an empty value); TC_ERR_TOO_LONG for more than @max;
 * -ENOMEM. *@items and *@n only on success.
 */
int config_parse_items(const char *v, size_t max, char ***items, size_t *n);

/* config_items_free - free the @n strings of @items, and @items (NULL is fine). */
void config_items_free(char **items, size_t n);

#endif
