// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcinfo - print what /dev/zcrecv answers to the handshake, and the module's
 * counters; or, with --env, every ZCRECV_* variable of the library's table
 * (lib/base/config.c) with its value here, default and help, also as the
 * roff and Markdown that zcrecv(7) and Documentation/configuration.md
 * carry. Usage: zcinfo [--env[=text|man|markdown]] [-h|--help]
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/zcrecv.h>

#include "zcrecv.h"
#include "base/config.h"

#define COUNTERS "/sys/class/misc/zcrecv/counters"

static void print_counters(void)
{
	struct dirent *de;
	DIR *d = opendir(COUNTERS);

	if (!d)
		return;
	printf("counters (%s):\n", COUNTERS);
	while ((de = readdir(d))) {
		char path[512], val[64] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), COUNTERS "/%s", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(val, sizeof(val), f))
			val[strcspn(val, "\n")] = 0;
		fclose(f);
		printf("  %-24s %s\n", de->d_name, val);
	}
	closedir(d);
}

/* Words of text on lines of at most width columns, each after indent. */
static void wrap(const char *text, const char *indent, int width)
{
	int col = 0, n;

	while (*text) {
		n = (int)strcspn(text, " ");
		if (col && col + 1 + n > width) {
			putchar('\n');
			col = 0;
		}
		if (!col)
			col = printf("%s", indent);
		else
			col += printf(" ");
		col += printf("%.*s", n, text);
		text += n;
		text += strspn(text, " ");
	}
	if (col)
		putchar('\n');
}

/*
 * Each variable: its value here (or unset), what it accepts, its default,
 * who reads it and its help. Returns how many set values are bad.
 */
static int env_text(void)
{
	char acc[160], def[80], line[320];
	int id, bad = 0;

	for (id = 0; id < ZCR_ENV_COUNT; id++) {
		const struct zcr_env_var *v = &__zcr_env_vars[id];
		struct zcr_env_val val;
		int ret = __zcr_env_parse(id, getenv(v->name), &val, NULL, 0);

		__zcr_env_accepts(id, acc, sizeof(acc));
		__zcr_env_default(id, def, sizeof(def));
		if (!val.s)
			printf("%s (unset)\n", v->name);
		else
			printf("%s=%s%s\n", v->name,
			       v->secret ? "..." : val.s,
			       ret ? "   <- bad value" : "");
		snprintf(line, sizeof(line),
			 "%s: %s; default %s; read by the %s",
			 __zcr_env_type_name(v->type), acc, def,
			 __zcr_env_reader_name(v->reader));
		wrap(line, "    ", 76);
		wrap(v->help, "      ", 76);
		bad += ret != 0;
	}
	return bad;
}

/*
 * roff: hyphens as minus signs, where they could be read as options; a
 * line never starts as a request.
 */
static void roff(const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", stdout);
	for (; *s; s++) {
		if (*s == '-' || *s == '\\')
			putchar('\\');
		putchar(*s == '\\' ? 'e' : *s);
	}
}

/* The entries of zcrecv(7)'s ENVIRONMENT section. */
static void env_man(void)
{
	char acc[160], def[80];
	int id;

	for (id = 0; id < ZCR_ENV_COUNT; id++) {
		const struct zcr_env_var *v = &__zcr_env_vars[id];

		__zcr_env_accepts(id, acc, sizeof(acc));
		__zcr_env_default(id, def, sizeof(def));
		printf(".TP\n.B ");
		roff(v->name);
		printf("\n");
		roff(v->help);
		printf("\n.br\nTakes ");
		roff(acc);
		printf("; default ");
		roff(def);
		printf(" (%s, read by the %s).\n", __zcr_env_type_name(v->type),
		       __zcr_env_reader_name(v->reader));
	}
}

/* The table of Documentation/configuration.md. */
static void env_markdown(void)
{
	char acc[160], def[80];
	int id;

	printf("| variable | type | accepts | default | read by | what |\n");
	printf("|---|---|---|---|---|---|\n");
	for (id = 0; id < ZCR_ENV_COUNT; id++) {
		const struct zcr_env_var *v = &__zcr_env_vars[id];

		__zcr_env_accepts(id, acc, sizeof(acc));
		__zcr_env_default(id, def, sizeof(def));
		printf("| `%s` | %s | %s | %s | %s | %s |\n", v->name,
		       __zcr_env_type_name(v->type), acc, def,
		       __zcr_env_reader_name(v->reader), v->help);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: zcinfo [--env[=text|man|markdown]] [-h|--help]\n"
		"Prints the library version, what /dev/zcrecv answers to the\n"
		"handshake and the module's counters. Exit status 1 when the\n"
		"device cannot be used.\n"
		"  --env    instead, every ZCRECV_* variable: its value\n"
		"           here, what it accepts, its default, who reads\n"
		"           it and what it does; exit status 1 when a value\n"
		"           set is bad. =man and =markdown print the list as\n"
		"           zcrecv(7) and Documentation/configuration.md\n"
		"           carry it.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "env", optional_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	struct zcr_kmod_info info;
	const char *env = NULL;
	int ret, c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'e') {
			env = optarg ? optarg : "text";
			continue;
		}
		usage(stderr);
		return 2;
	}
	if (optind < argc || (env && strcmp(env, "text") &&
			      strcmp(env, "man") && strcmp(env, "markdown"))) {
		usage(stderr);
		return 2;
	}
	if (env && !strcmp(env, "man")) {
		env_man();
		return 0;
	}
	if (env && !strcmp(env, "markdown")) {
		env_markdown();
		return 0;
	}
	if (env)
		return env_text() ? 1 : 0;
	printf("libzcrecv %s\n", zcr_version());
	ret = zcr_kmod_probe_sized(&info, sizeof(info));
	if (ret < 0) {
		printf("/dev/zcrecv: %s%s\n", strerror(-ret),
		       ret == -ENOENT ? " (module not loaded)" : "");
		return 1;
	}
	printf("/dev/zcrecv handshake:\n");
	printf("  abi_version        %u\n", info.abi_version);
	printf("  page_size          %u\n", info.page_size);
	printf("  max_batch          %u\n", info.max_batch);
	printf("  features           0x%llx%s%s%s%s\n",
	       (unsigned long long)info.features,
	       info.features & ZCRECV_FEATURE_ZONES ? " zones" : "",
	       info.features & ZCRECV_FEATURE_REMAP ? " remap" : "",
	       info.features & ZCRECV_FEATURE_PINCHECK ? " pincheck" : "",
	       info.features & ZCRECV_FEATURE_HUGE ? " huge" : "");
	printf("  max_zone_pages     %llu\n",
	       (unsigned long long)info.max_zone_pages);
	printf("  max_process_pages  %llu\n",
	       (unsigned long long)info.max_process_pages);
	printf("  huge_unit_size     %llu\n",
	       (unsigned long long)info.huge_unit_size);
	print_counters();
	return 0;
}
