/*
 * format_check.c - the FORMAT_MAX_* bounds on an event format's text (see
 * format_check.h), in one pass over the bytes.
 *
 * The scan reads the text as libtraceevent's lexer (__read_token in
 * event-parse.c) does: words of [A-Za-z0-9_], "..." and '...' literals,
 * the delimiters ( ) , and every other printable byte as an operator. It
 * keeps one small record per open ( [ { level, in an array bounded by
 * FORMAT_MAX_DEPTH, and a running sum over them, so that each byte costs
 * O(1) and nothing recurses.
 *
 * Where the parser recurses, and what bounds it here:
 *   ( [ { nesting (process_paren, process_array, function arguments):
 *       the depth;
 *   operator chains, unary runs, ?: chains (process_op, process_cond), and
 *   typecast chains `(a)(b)(c)x` (process_paren into process_arg_token):
 *       the operators of the term, a typecast counting as one;
 *   the argument tree (free_arg, arg_num_eval, consolidate_op_arg): the
 *       height of each term, its operators plus its tallest closed group;
 *   all of them stacked: the nest sum.
 * Long word runs cost libtraceevent quadratic time (it appends word by
 * word), hence FORMAT_MAX_WORDS.
 *
 * Besides the caps, three shapes its field parser crashes or leaks on
 * (found by tests/fuzz/fuzz_format_page.c) are refused as malformed:
 * unreadable bytes, groups left open at the end, one-word field types.
 * So are the print arguments its print-argument parser crashes on
 * (found by tests/fuzz/fuzz_tracedat_write.c through traceq/render.c):
 * see check_print(), which reads the field names as event_read_fields()
 * does to know which `REC->NAME` the event has.
 */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/tc_error.h"
#include "common/format_check.h"

#define FC_STR_(x)	#x
#define FC_STR(x)	FC_STR_(x)

struct level {
	unsigned ops;		/* operators of the current term */
	unsigned child;		/* height of the tallest group closed in it */
	unsigned done;		/* height of the tallest finished term */
};

struct scan {
	const unsigned char *s;
	size_t len, pos;
	unsigned depth;
	unsigned nest;		/* depth + sum of (ops + child) of the open levels */
	unsigned words;		/* adjacent words so far */
	bool closed;		/* the last token closed a group */
	struct level lv[FORMAT_MAX_DEPTH + 1];
	struct format_stats max;
	const char *what;	/* the cap exceeded, NULL while none is */
	unsigned cap;
	size_t at;
};

static bool is_word(unsigned c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static bool is_space(unsigned c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static bool is_print(unsigned c)
{
	return c >= 0x20 && c < 0x7f;
}

static void scan_fail(struct scan *sc, const char *what, unsigned cap)
{
	if (sc->what)
		return;
	sc->what = what;
	sc->cap = cap;
	sc->at = sc->pos;
}

static void scan_op(struct scan *sc)
{
	sc->lv[sc->depth].ops++;
	sc->nest++;
}

/* An operand right after a closed group: libtraceevent reads a typecast. */
static void scan_operand(struct scan *sc)
{
	if (sc->closed)
		scan_op(sc);
	sc->closed = false;
}

static void scan_open(struct scan *sc)
{
	if (sc->depth == FORMAT_MAX_DEPTH) {
		scan_fail(sc, "nests ( [ { deeper than", FORMAT_MAX_DEPTH);
		return;
	}
	sc->depth++;
	sc->lv[sc->depth] = (struct level){ 0 };
	sc->nest++;
}

/* The group's height (its tallest term, plus itself) joins the parent's term. */
static void scan_close(struct scan *sc)
{
	struct level *l = &sc->lv[sc->depth], *up;
	unsigned h = l->ops + l->child;

	if (sc->depth == 0)
		return;		/* libtraceevent stops at a stray closer */
	h = (h > l->done ? h : l->done) + 1;
	sc->nest -= l->ops + l->child + 1;
	up = &sc->lv[--sc->depth];
	if (h > up->child) {
		sc->nest += h - up->child;
		up->child = h;
	}
}

static void scan_comma(struct scan *sc)
{
	struct level *l = &sc->lv[sc->depth];

	if (l->ops + l->child > l->done)
		l->done = l->ops + l->child;
	sc->nest -= l->ops + l->child;
	l->ops = l->child = 0;
}

/* `;` ends every term: the print fmt's parser fails on one, and stops. */
static void scan_semicolon(struct scan *sc)
{
	for (unsigned d = 0; d <= sc->depth; d++)
		sc->lv[d] = (struct level){ 0 };
	sc->nest = sc->depth;
}

/*
 * A "..." or '...' literal, ended where __read_token ends it: at its
 * quote unless a backslash precedes it, at an unprintable byte other than
 * a newline (unless a backslash precedes it), at a NUL or at the end. A
 * byte >= 0x80 ends it too: with a signed char libtraceevent ends the
 * whole parse there, with an unsigned one the literal or not; ending the
 * literal here only counts more.
 */
static void scan_literal(struct scan *sc)
{
	unsigned quote = sc->s[sc->pos++], ch = quote, last;

	do {
		last = ch;
		if (sc->pos >= sc->len)
			return;
		ch = sc->s[sc->pos++];
		if (ch == '\\' && last == '\\')
			last = 0;
		if (ch == 0 || ch >= 0x80)
			return;
	} while ((ch != quote && is_print(ch)) || last == '\\' || ch == '\n');
}

static void scan_word(struct scan *sc)
{
	while (sc->pos < sc->len && is_word(sc->s[sc->pos]))
		sc->pos++;
	sc->words++;
}

/* A byte that is neither a word, a literal nor a space. */
static void scan_punct(struct scan *sc, unsigned c)
{
	sc->words = 0;
	switch (c) {
	case '(':
		scan_operand(sc);
		scan_open(sc);
		break;
	case '[':
		scan_op(sc);	/* an index: process_op("[") */
		scan_open(sc);
		break;
	case '{':
		scan_open(sc);
		break;
	case ')': case ']': case '}':
		scan_close(sc);
		sc->closed = true;
		return;
	case ',':
		scan_comma(sc);
		break;
	case ';':
		scan_semicolon(sc);
		break;
	default:
		/*
		 * Other unprintable bytes end libtraceevent's parse; a byte >=
		 * 0x80 does too in the C locale, and counts in case not.
		 */
		if (is_print(c) || c >= 0x80)
			scan_op(sc);
		break;
	}
	sc->closed = false;
}

static void scan_token(struct scan *sc)
{
	unsigned c = sc->s[sc->pos];

	if (c == '"' || c == '\'') {
		scan_operand(sc);
		scan_literal(sc);
		sc->words = 0;
	} else if (is_word(c)) {
		scan_operand(sc);
		scan_word(sc);
	} else {
		sc->pos++;
		if (!is_space(c))
			scan_punct(sc, c);
	}
}

static void scan_limits(struct scan *sc)
{
	const struct level *l = &sc->lv[sc->depth];

	if (l->ops > FORMAT_MAX_OPS)
		scan_fail(sc, "has more operators in one term than", FORMAT_MAX_OPS);
	else if (sc->nest > FORMAT_MAX_NEST)
		scan_fail(sc, "nests expressions deeper than", FORMAT_MAX_NEST);
	else if (sc->words > FORMAT_MAX_WORDS)
		scan_fail(sc, "has more adjacent words than", FORMAT_MAX_WORDS);
	if (sc->depth > sc->max.depth)
		sc->max.depth = sc->depth;
	if (l->ops > sc->max.ops)
		sc->max.ops = l->ops;
	if (sc->nest > sc->max.nest)
		sc->max.nest = sc->nest;
	if (sc->words > sc->max.words)
		sc->max.words = sc->words;
}

/*
 * Bytes libtraceevent's lexer cannot read (neither printable ASCII nor a
 * space: a NUL, a control byte, >= 0x80) end its token stream with a NULL
 * token, which event_read_fields() passes to strcmp() when it comes right
 * after a field's '['; so does the end of the text there. Return: the
 * offset of the first such byte, or @len.
 */
static size_t unreadable_byte(const unsigned char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_print(s[i]) && !is_space(s[i]))
			break;
	return i;
}

/*
 * The words libtraceevent's lexer turns into string literals (a
 * workaround for old mac80211 formats): *_PR_FMT at @at.
 */
static bool pr_fmt_word(const unsigned char *s, size_t at, size_t end)
{
	static const char *const words[] = { "LOCAL_PR_FMT", "STA_PR_FMT", "VIF_PR_FMT" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i]);

		if (end - at >= n && !memcmp(s + at, words[i], n) &&
		    (end - at == n || !is_word(s[at + n])))
			return true;
	}
	return false;
}

/*
 * Field lines, up to @end (the print fmt's string): the word after
 * `field:` must be followed by another word (not one that pr_fmt_word()
 * knows) or a '*', not by the end. event_read_fields() leaks that word
 * when it is all the type there is, and appends to a NULL type
 * (strlen(NULL)) when it is __attribute__ followed by '('. And at most
 * FORMAT_MAX_FIELD_TOKENS tokens up to each ';': it appends a field's
 * type, [ ] and __attribute__(( )) token by token, in quadratic time.
 *
 * Return: NULL, or what is wrong, with the offset in *@at.
 */
static const char *check_fields(const unsigned char *s, size_t end, size_t *at)
{
	struct scan sc = { .s = s, .len = end };
	unsigned state = 0;	/* 1: `field`, 2: `field:`, 3: `field:WORD` */
	unsigned tokens = 0;	/* since the last ';' */
	size_t word = 0;	/* where that WORD starts */

	while (sc.pos < sc.len) {
		size_t start = sc.pos;
		unsigned c = s[start];

		if (is_space(c) && c != '\n') {	/* a newline is a token there */
			sc.pos++;
			continue;
		}
		*at = start;
		if (state == 3 && ((!is_word(c) && c != '*') || pr_fmt_word(s, start, end)))
			return "has a field type of one word";
		if (c != '\n' && ++tokens > FORMAT_MAX_FIELD_TOKENS)
			return "has more tokens in one field line than " FC_STR(FORMAT_MAX_FIELD_TOKENS);
		if (c == '"' || c == '\'') {
			scan_literal(&sc);
			state = 0;
		} else if (is_word(c)) {
			scan_word(&sc);
			word = start;
			state = state == 2 ? 3 :
				sc.pos - start == 5 && !memcmp(s + start, "field", 5) ? 1 : 0;
		} else {
			sc.pos++;
			state = state == 1 && c == ':' ? 2 : 0;
			if (c == ';')
				tokens = 0;
		}
	}
	*at = word;
	return state == 3 ? "has a field type of one word" : NULL;	/* ends there */
}

/* ---- the print fmt's arguments: shapes libtraceevent 1.7 crashes on ---- */

/*
 * One token as __read_token() cuts it: a word, a literal, a delimiter
 * ( ) , or an operator (`->`, `<<=`, `!=`... as one). Blanks are skipped,
 * a newline is a token of its own (TK_NL), as read_token() returns it.
 */
enum tk_kind { TK_END, TK_NL, TK_WORD, TK_STR, TK_DELIM, TK_OP };

struct tk {
	enum tk_kind kind;
	size_t at, len;
};

/* The length of the operator __read_token() reads at @pos. */
static size_t op_len(const unsigned char *s, size_t pos, size_t len)
{
	unsigned c = s[pos];
	unsigned next = pos + 1 < len ? s[pos + 1] : 0;
	size_t n = 1;

	switch (c) {
	case '-':
		if (next == '>')
			return 2;
		/* fall through */
	case '+': case '|': case '&': case '>': case '<':
		if (next == c) {
			n = 2;
			if (c != '<' && c != '>')
				return n;
		}
		break;
	case '!': case '=':
		break;
	default:
		return 1;
	}
	return pos + n < len && s[pos + n] == '=' ? n + 1 : n;	/* test_equal */
}

static struct tk next_tk(struct scan *sc)
{
	struct tk t = { TK_END, 0, 0 };
	unsigned c;

	while (sc->pos < sc->len && is_space(sc->s[sc->pos]) && sc->s[sc->pos] != '\n')
		sc->pos++;
	if (sc->pos >= sc->len)
		return t;
	t.at = sc->pos;
	c = sc->s[sc->pos];
	if (c == '\n') {
		t.kind = TK_NL;
		sc->pos++;
	} else if (c == '"' || c == '\'') {
		t.kind = TK_STR;
		scan_literal(sc);
	} else if (is_word(c)) {
		scan_word(sc);
		t.kind = pr_fmt_word(sc->s, t.at, sc->len) ? TK_STR : TK_WORD;
	} else if (c == '(' || c == ')' || c == ',') {
		t.kind = TK_DELIM;
		sc->pos++;
	} else {
		t.kind = TK_OP;
		sc->pos += op_len(sc->s, sc->pos, sc->len);
	}
	t.len = sc->pos - t.at;
	return t;
}

static bool tk_is(const struct scan *sc, struct tk t, enum tk_kind kind, const char *w)
{
	return t.kind == kind && t.len == strlen(w) && !memcmp(sc->s + t.at, w, t.len);
}

/* The field names libtraceevent would give the event: where each is. */
struct names {
	struct tk name[FORMAT_MAX_FIELDS];
	unsigned n;
	bool over;		/* more than FORMAT_MAX_FIELDS */
};

/*
 * One field line after its `field`, as event_read_fields() reads it: the
 * name is the last word of the declaration (its tokens up to the first
 * operator other than '*', the contents of __attribute__((...)) read
 * through), or the word after its "[...]". Return: false where
 * libtraceevent fails the field (then it parses no print fmt at all).
 */
static bool read_field(struct scan *sc, struct names *nm)
{
	struct tk t = next_tk(sc), last, name;
	bool typed = false;

	if (tk_is(sc, t, TK_WORD, "special"))	/* old ftrace fields */
		t = next_tk(sc);
	if (!tk_is(sc, t, TK_OP, ":"))
		return false;
	last = next_tk(sc);
	if (last.kind != TK_WORD)
		return false;
	for (;;) {
		t = next_tk(sc);
		if (t.kind == TK_WORD || tk_is(sc, t, TK_OP, "*") || tk_is(sc, t, TK_OP, ".")) {
			typed = true;
			last = t;
			continue;
		}
		if (t.kind == TK_DELIM && sc->s[t.at] == '(' && tk_is(sc, last, TK_WORD, "__attribute__")) {
			unsigned depth = 1;

			typed = true;
			while ((t = next_tk(sc)).kind != TK_END) {
				if (t.kind == TK_DELIM && sc->s[t.at] == '(')
					depth++;
				else if (t.kind == TK_DELIM && sc->s[t.at] == ')' && !--depth)
					break;
				last = t;
			}
			continue;
		}
		break;
	}
	if (!typed || t.kind != TK_OP)
		return false;
	name = last;
	if (tk_is(sc, t, TK_OP, "[")) {
		/* it ends at a "]" literal too: give up on literals there */
		do
			t = next_tk(sc);
		while (t.kind != TK_END && t.kind != TK_STR && !tk_is(sc, t, TK_OP, "]"));
		if (t.kind != TK_OP)
			return false;
		t = next_tk(sc);
		if (t.kind == TK_WORD) {
			name = t;
			t = next_tk(sc);
		}
	}
	if (!tk_is(sc, t, TK_OP, ";"))
		return false;
	if (name.kind == TK_WORD) {
		if (nm->n == FORMAT_MAX_FIELDS) {
			nm->over = true;
			return false;
		}
		nm->name[nm->n++] = name;
	}
	/* offset:N; size:N; [signed:N;] then the line's end */
	while ((t = next_tk(sc)).kind != TK_END && t.kind != TK_NL)
		;
	return true;
}

/*
 * The names of the fields before @end (the print fmt's string), read as
 * libtraceevent reads them: the lines after `format:`, up to the second
 * empty line. Where our reading stops early, fewer names are known and
 * more references refused; it never knows a name libtraceevent does not.
 */
static void read_names(const unsigned char *s, size_t end, struct names *nm)
{
	struct scan sc = { .s = s, .len = end };
	struct tk t;
	unsigned lists = 0;

	nm->n = 0;
	nm->over = false;
	do
		t = next_tk(&sc);
	while (t.kind != TK_END && !tk_is(&sc, t, TK_WORD, "format"));
	if (t.kind == TK_END || !tk_is(&sc, next_tk(&sc), TK_OP, ":") ||
	    next_tk(&sc).kind != TK_NL)
		return;
	while (lists < 2) {
		t = next_tk(&sc);
		if (t.kind == TK_NL) {
			lists++;	/* common fields, then the event's */
			continue;
		}
		if (!tk_is(&sc, t, TK_WORD, "field") || !read_field(&sc, nm))
			return;
	}
}

static bool known_name(const struct scan *sc, const struct names *nm, struct tk t)
{
	for (unsigned i = 0; i < nm->n; i++)
		if (nm->name[i].len == t.len && !memcmp(sc->s + nm->name[i].at, sc->s + t.at, t.len))
			return true;
	return false;
}

/* An operator get_op_prio() knows (`:` aside): one with a priority. */
static bool op_known(const struct scan *sc, struct tk t)
{
	static const char *const ops[] = {
		"~", "!", "*", "/", "%", "+", "-", "<", ">", "&", "^", "|", "?",
		"++", "--", ">>", "<<", ">=", "<=", "==", "!=", "&&", "||",
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (tk_is(sc, t, TK_OP, ops[i]))
			return true;
	return false;
}

/*
 * The print fmt's arguments, from @start (its format string), against
 * what crashes libtraceevent 1.7's parser within every cap (traceq parses
 * them; the collector does not, see format_print_start()):
 *
 * - `REC->NAME` where the event has no field NAME: process_entry() sets
 *   TEP_FIELD_IS_FLAG (or _SYMBOLIC) on the field it did not find, a
 *   NULL one, when __print_flags() (__print_symbolic()) was seen before
 *   it; the flag is a global that a __print_flags() whose first argument
 *   is no field leaves set for any later REC->, in any event.
 * - an operator without a priority (anything but the C operators
 *   get_op_prio() knows, and `:`) right after an index `x[i]`, or after
 *   the last operand of a `?:`: process_op() recurses into a NULL right
 *   operand. `x[0][0]` and `a ? b : c . d` are two. Refused after a `:`
 *   anywhere up to the end of its argument (what follows the operand only
 *   matters when nothing came between).
 *
 * Return: NULL, or what is wrong, with the offset in *@at.
 */
static const char *check_print(const unsigned char *s, size_t start, size_t len,
			       const struct names *nm, size_t *at)
{
	struct scan sc = { .s = s, .len = len, .pos = start };
	bool colon[FORMAT_MAX_DEPTH + 2] = { false };
	unsigned depth = 0, rec = 0;
	bool index = false;	/* the last token closed a non-empty [ ] */
	struct tk t, prev = { TK_END, 0, 0 };

	while ((t = next_tk(&sc)).kind != TK_END) {
		bool op = t.kind == TK_OP, odd = op && !op_known(&sc, t) && !tk_is(&sc, t, TK_OP, ":") &&
			!(rec == 1 && tk_is(&sc, t, TK_OP, "->"));	/* process_entry()'s */
		unsigned c = s[t.at];

		*at = t.at;
		if (t.kind == TK_NL)
			continue;
		if (index && odd)
			return "has an operator libtraceevent does not know after an index";
		if (colon[depth] && odd)
			return "has an operator libtraceevent does not know after a ?:";
		index = false;
		if (rec == 2 && t.kind == TK_WORD && !known_name(&sc, nm, t))
			return "refers to a field it does not declare (REC->)";
		rec = tk_is(&sc, t, TK_WORD, "REC") ? 1 :
		      rec == 1 && tk_is(&sc, t, TK_OP, "->") ? 2 : 0;
		if (tk_is(&sc, t, TK_OP, ":")) {
			colon[depth] = true;
		} else if (t.kind == TK_DELIM && c == ',') {
			colon[depth] = false;
		} else if ((op || t.kind == TK_DELIM) && (c == '(' || c == '[' || c == '{')) {
			if (depth <= FORMAT_MAX_DEPTH)
				colon[++depth] = false;
		} else if ((op || t.kind == TK_DELIM) && (c == ')' || c == ']' || c == '}')) {
			colon[depth] = false;
			if (depth)
				depth--;
			index = c == ']' && !tk_is(&sc, prev, TK_OP, "[");
		}
		prev = t;
	}
	return NULL;
}

int format_check(const char *text, size_t len, struct format_stats *stats,
		 char *err, size_t errlen)
{
	struct scan sc = { .s = (const unsigned char *)text, .len = len };
	struct names names;
	const char *what;
	size_t bad, cut;

	if (len > FORMAT_MAX_LEN) {
		tc_seterr(err, errlen, "format is %zu bytes, more than %u", len,
			  (unsigned)FORMAT_MAX_LEN);
		return TC_ERR_FORMAT_LIMIT;
	}
	bad = unreadable_byte(sc.s, len);
	if (bad < len) {
		tc_seterr(err, errlen, "format has byte 0x%02x, not printable ASCII (at byte %zu)",
			  sc.s[bad], bad);
		return TC_ERR_FORMAT_PARSE;
	}
	while (sc.pos < sc.len && !sc.what) {
		scan_token(&sc);
		scan_limits(&sc);
	}
	if (sc.what) {
		tc_seterr(err, errlen, "format %s %u (at byte %zu)", sc.what, sc.cap, sc.at);
		return TC_ERR_FORMAT_LIMIT;
	}
	if (sc.depth) {
		tc_seterr(err, errlen, "format ends with %u ( [ { open", sc.depth);
		return TC_ERR_FORMAT_PARSE;
	}
	cut = format_print_start(text, len);
	what = check_fields(sc.s, cut, &bad);
	if (!what) {
		read_names(sc.s, cut, &names);
		if (names.over) {
			tc_seterr(err, errlen, "format has more fields than %u",
				  (unsigned)FORMAT_MAX_FIELDS);
			return TC_ERR_FORMAT_LIMIT;
		}
		if (cut < len)
			what = check_print(sc.s, cut, len, &names, &bad);
	}
	if (what) {
		tc_seterr(err, errlen, "format %s (at byte %zu)", what, bad);
		return strstr(what, "tokens") ? TC_ERR_FORMAT_LIMIT : TC_ERR_FORMAT_PARSE;
	}
	if (stats) {
		*stats = sc.max;
		stats->len = len;
	}
	return 0;
}

/* Whether the word just scanned, from @start, is @w. */
static bool word_is(const struct scan *sc, size_t start, const char *w)
{
	size_t n = strlen(w);

	return sc->pos - start == n && !memcmp(sc->s + start, w, n);
}

/*
 * The lexing of scan_token(), keeping only whether the tokens so far end
 * in `print fmt :` (@seen counts how many of the three), and the offset of
 * the '"' that follows them.
 */
size_t format_print_start(const char *text, size_t len)
{
	struct scan sc = { .s = (const unsigned char *)text, .len = len };
	unsigned seen = 0;

	while (sc.pos < sc.len) {
		size_t start = sc.pos;
		unsigned c = sc.s[start];

		if (c == '"' && seen == 3)
			return start;
		if (c == '"' || c == '\'') {
			scan_literal(&sc);
			seen = 0;
		} else if (is_word(c)) {
			scan_word(&sc);
			seen = word_is(&sc, start, "print") ? 1 :
			       seen == 1 && word_is(&sc, start, "fmt") ? 2 : 0;
		} else {
			sc.pos++;
			if (!is_space(c))
				seen = seen == 2 && c == ':' ? 3 : 0;
		}
	}
	return len;
}
