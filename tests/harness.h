/* SPDX-License-Identifier: MIT */
/* tests/harness.h - the test harness: each case passes, fails (named, with a reason) or is
   skipped (named, with a reason). Failures print at once. Skips are counted per reason and
   th_summary() prints one line per reason, "SKIP 507 cases (no CUDA device): first 'name'" (or
   "SKIP name: why" for a reason met once), then the last line, "N passed, N failed, N skipped",
   and returns the exit status. Plain C99 and C++, header only, no allocation, one program each. */
#ifndef GPUOPS_TESTS_HARNESS_H
#define GPUOPS_TESTS_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int th_passed, th_failed, th_skipped;

/* Record one case: ok != 0 passes; otherwise print FAIL, the name and the formatted reason. */
static inline int th_case(int ok, const char *name, const char *fmt, ...) {
  if (ok) {
    ++th_passed;
  } else {
    va_list ap;
    ++th_failed;
    printf("FAIL %s: ", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
  }
  return ok;
}

/* Skipped cases, grouped by reason: a fixed table of TH_SKIP_GROUPS distinct reasons, each with
   its count and its first case's name (both copied, cut to fit). A reason that finds the table
   full is printed at once, "SKIP name: why", as it comes. */
#define TH_SKIP_GROUPS 16
#define TH_SKIP_TEXT 256
static struct th_skip_group {
  int count;
  char why[TH_SKIP_TEXT], first[TH_SKIP_TEXT];
} th_skip_groups[TH_SKIP_GROUPS];
static int th_skip_ngroups;

static inline void th_copy_text(char *dst, const char *src) {
  const size_t n = strlen(src);
  if (n < TH_SKIP_TEXT) {
    memcpy(dst, src, n + 1);
  } else { /* cut, marked with "..." */
    memcpy(dst, src, TH_SKIP_TEXT - 4);
    memcpy(dst + TH_SKIP_TEXT - 4, "...", 4);
  }
}

/* Whether text is what th_copy_text made of src. */
static inline int th_same_text(const char *text, const char *src) {
  if (strlen(src) < TH_SKIP_TEXT) return strcmp(text, src) == 0;
  return strncmp(text, src, TH_SKIP_TEXT - 4) == 0 && strcmp(text + TH_SKIP_TEXT - 4, "...") == 0;
}

static inline void th_skip(const char *name, const char *why) {
  int g;
  ++th_skipped;
  for (g = 0; g < th_skip_ngroups; ++g)
    if (th_same_text(th_skip_groups[g].why, why)) {
      ++th_skip_groups[g].count;
      return;
    }
  if (th_skip_ngroups == TH_SKIP_GROUPS) {
    printf("SKIP %s: %s\n", name, why);
    return;
  }
  th_skip_groups[g].count = 1;
  th_copy_text(th_skip_groups[g].why, why);
  th_copy_text(th_skip_groups[g].first, name);
  ++th_skip_ngroups;
}

static inline int th_summary(void) {
  int g;
  for (g = 0; g < th_skip_ngroups; ++g) {
    const struct th_skip_group *s = &th_skip_groups[g];
    if (s->count == 1)
      printf("SKIP %s: %s\n", s->first, s->why);
    else
      printf("SKIP %d cases (%s): first '%s'\n", s->count, s->why, s->first);
  }
  printf("%d passed, %d failed, %d skipped\n", th_passed, th_failed, th_skipped);
  return th_failed ? 1 : 0;
}

#endif
