/* process.h - a process named in file names so that a reused pid cannot
 * pass for it: "PID-START", its pid and its start time (clock ticks since
 * boot, dirlock_process_start()), judged with the library's
 * dirlock_process_alive().  The group-commit claims (postqueue.c) and the
 * temp files (tempname.h) carry such names.
 *
 * Names written before the start time was added carry the pid alone,
 * "PID".  They are still read, and judged by the pid alone: no such
 * process, or this process's own pid (this process writes only the long
 * form, so an earlier process with the same pid wrote it), means gone;
 * any other live pid means perhaps not gone. */
#ifndef BOARD_PROCESS_H
#define BOARD_PROCESS_H

#include <stddef.h>

struct process_id {
        long pid;
        unsigned long long start; /* 0: not in the name (the older form), or unknown */
};

/* Longest formatted name, NUL included. */
#define PROCESS_ID_MAX 48

/* This process (its start time read once per process, again after fork,
 * and again while it could not be read). */
void process_self(struct process_id *out);

/* "PID-START" (or "PID" when the start time is unknown) into out. */
void process_format(const struct process_id *p, char out[PROCESS_ID_MAX]);

/* Parse "PID-START" or "PID" (decimal, no leading zeros) at the start of
 * s; the end of what was read, or NULL when s does not start with one. */
const char *process_parse(const char *s, struct process_id *out);

/* 1 when p is this process. */
int process_is_self(const struct process_id *p);

/* 1 when p provably no longer runs (see the top of this file). */
int process_gone(const struct process_id *p);

/* Wait until p is gone (1), or `also_fd` (>= 0) polls readable or
 * `timeout` seconds pass (0); -1 with errno when p cannot be watched
 * (no pidfd here): the caller looks again later. */
int process_wait_gone(const struct process_id *p, double timeout, int also_fd);

#endif
