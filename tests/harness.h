/* SPDX-License-Identifier: MIT */
/* tests/harness.h - the test harness: each case passes, fails (named, with a reason) or is
   skipped (named, with a reason); th_summary() prints the last line, "N passed, N failed,
   N skipped", and returns the exit status. Plain C99 and C++, header only, one program each. */
#ifndef GPUOPS_TESTS_HARNESS_H
#define GPUOPS_TESTS_HARNESS_H

#include <stdarg.h>
#include <stdio.h>

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

static inline void th_skip(const char *name, const char *why) {
  ++th_skipped;
  printf("SKIP %s: %s\n", name, why);
}

static inline int th_summary(void) {
  printf("%d passed, %d failed, %d skipped\n", th_passed, th_failed, th_skipped);
  return th_failed ? 1 : 0;
}

#endif
