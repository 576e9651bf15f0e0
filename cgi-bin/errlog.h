/* errlog.h - the board's error lines: one line per error answer, to
 * stderr (the web server's error log, where it keeps one) and appended to
 * the file of the board's `error_log` setting, so that no deployment
 * loses them:
 *
 *   TIME BOARD STATUS METHOD URI [pid PID]: cause
 *
 * TIME is UTC ISO 8601 with milliseconds, BOARD the board's base_path
 * ("-" when no configuration could be loaded).  Control bytes of every
 * field become '?', so no request can forge or split a line. */
#ifndef BOARD_ERRLOG_H
#define BOARD_ERRLOG_H

/* Write one error line.  `file` may be NULL (stderr only); a file that
 * cannot be opened or written costs nothing but that copy of the line
 * (stderr still gets it, with the reason the file did not). */
void errlog_write(const char *file, const char *board, int status, const char *method, const char *uri,
                  const char *cause);

#endif
